package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// newOwnerEnv is newEnv with the toolgate block's owner lines given: lines
// replaces "owner {http.request.header.X-User-Id}".
func newOwnerEnv(t *testing.T, lines string) *env {
	t.Helper()
	e := &env{t: t, provider: testkit.NewProvider(t), app: testkit.NewApp(t, []byte(secret))}
	dir := t.TempDir()
	e.storeDir = filepath.Join(dir, "store")
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(strings.ReplaceAll(policyYAML, "APP", e.app.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	apiPort, pagesPort := testkit.FreePort(t), testkit.FreePort(t)
	e.apiURL = fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	pagesHost := fmt.Sprintf("127.0.0.1:%d", pagesPort)
	e.pagesURL = "http://" + pagesHost + "/toolgate"
	e.caddy = fmt.Sprintf(`{
	admin off
	auto_https off
	default_bind 127.0.0.1
	log {
		level WARN
	}
	persist_config off
	grace_period 1ns
	toolgate {
		store badger %s
		secret %s
		pages %s
	}
}

http://127.0.0.1:%d {
	toolgate {
		policy %s
		%s
	}
	reverse_proxy %s
}

http://%s {
	route /toolgate/* {
		basic_auth {
			ana %s
			bo %s
		}
		toolgate_pages
	}
}
`, e.storeDir, secret, e.pagesURL, apiPort, policyFile, lines, e.provider.URL, pagesHost, hash(t, "ana-pw"), hash(t, "bo-pw"))
	testkit.Run(t, e.caddy)
	return e
}

// ownerOf sends a chat request (X-User-Id header, if any, and body) whose
// answer is a delete_post, and returns who may see the card it waits on:
// "ana", "bo", or "" when the call was refused for want of an owner.
func (e *env) ownerOf(t *testing.T, header, body string) string {
	t.Helper()
	e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", del7)}, testkit.Reply{Body: textCompletion("MODEL-FOLLOW-UP")})
	status, _, got := e.rawPost(t, header, body)
	if status != 200 {
		t.Fatalf("status %d: %s", status, got)
	}
	if gjson.GetBytes(got, "choices.0.message.tool_calls.#").Int() != 0 {
		t.Fatalf("the call reached the app: %s", got)
	}
	l := linkRe.FindString(gjson.GetBytes(got, "choices.0.message.content").String())
	if l == "" {
		reqs := e.provider.Requests()
		if len(reqs) != 2 || !strings.Contains(toolResult(reqs[1], "call_del7"), "whose conversation") {
			t.Fatalf("neither held nor refused for want of an owner: %s", got)
		}
		return ""
	}
	for _, p := range []person{ana, bo} {
		if st, _, _ := e.view(p, l); st == 200 {
			return p.name
		}
	}
	t.Fatalf("nobody can see the card at %s", l)
	return ""
}

// When owner is configured and gives nothing, the owner does not come
// from the body: an app user could name someone else there. Only
// owner_fields, given explicitly, turns the body's fields on as a
// fallback; with no owner configured at all the body's
// safety_identifier, then user, name the owner.
func TestOwnerFallbackOnlyWhereConfigured(t *testing.T) {
	named := `{"model":"gpt-4o","safety_identifier":"bo","user":"ana","messages":[{"role":"user","content":"x"}]}`
	userOnly := `{"model":"gpt-4o","user":"ana","messages":[{"role":"user","content":"x"}]}`
	for _, tc := range []struct {
		name, lines, header, body, want string
	}{
		{"owner configured, empty: no fallback", "owner {http.request.header.X-User-Id}", "", named, ""},
		{"owner configured, given", "owner {http.request.header.X-User-Id}", "ana", named, "ana"},
		{"owner_fields explicit: fallback", "owner {http.request.header.X-User-Id}\n\t\towner_fields user", "", named, "ana"},
		{"owner_fields explicit: the placeholder wins", "owner {http.request.header.X-User-Id}\n\t\towner_fields user", "bo", named, "bo"},
		{"no owner: safety_identifier first", "", "", named, "bo"},
		{"no owner: then user", "", "", userOnly, "ana"},
		{"no owner: a header is not read", "", "ana", `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`, ""},
		{"no owner: a field given twice names nobody", "", "", `{"model":"gpt-4o","user":"ana","user":"bo","messages":[]}`, ""},
		{"no owner: a field in another case names nobody", "", "", `{"model":"gpt-4o","user":"ana","User":"bo","messages":[]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newOwnerEnv(t, tc.lines)
			setupPost(e)
			if got := e.ownerOf(t, tc.header, tc.body); got != tc.want {
				t.Errorf("owner %q, want %q", got, tc.want)
			}
			if n := len(e.app.Calls()); n != 0 {
				t.Errorf("the app ran %d calls", n)
			}
		})
	}
}
