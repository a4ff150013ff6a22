package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testkit"
)

// reloadPolicy edits the env's policy file (from → to, APP standing for
// the app's URL) and reloads Caddy's config, as an operator's caddy
// reload after changing the file does.
func (e *env) reloadPolicy(t *testing.T, from, to string) {
	t.Helper()
	reloadPolicy(t, e.caddy, e.app.URL, from, to)
}

// reloadPolicy edits the policy file the Caddyfile caddyfile names and
// reloads it.
func reloadPolicy(t *testing.T, caddyfile, appURL, from, to string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*policy (\S+)$`).FindStringSubmatch(caddyfile)
	if m == nil {
		t.Fatal("the Caddyfile names no policy")
	}
	old, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	from, to = strings.ReplaceAll(from, "APP", appURL), strings.ReplaceAll(to, "APP", appURL)
	edited := strings.Replace(string(old), from, to, 1)
	if edited == string(old) {
		t.Fatalf("%q is not in the policy", from)
	}
	if err := os.WriteFile(m[1], []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := testkit.Load(t, caddyfile); err != nil {
		t.Fatalf("reloading: %v", err)
	}
	waitServing(t, caddyfile)
}

// waitServing returns once every site of the Caddyfile accepts a
// connection after a reload (a dial only: a request could reach the
// provider or the app behind the site): a connection dialled while the old
// server let go of its listener was reset (CI saw "connection reset by
// peer" on the pages' GET), and the idle connections to the old server
// are closed, not reused (a POST on one of them is not retried).
func waitServing(t *testing.T, caddyfile string) {
	t.Helper()
	http.DefaultClient.CloseIdleConnections()
	for _, m := range regexp.MustCompile(`(?m)^\S*:(\d+)\s*\{`).FindAllStringSubmatch(caddyfile, -1) {
		var err error
		for range 200 {
			var c net.Conn
			if c, err = net.DialTimeout("tcp", "127.0.0.1:"+m[1], time.Second); err == nil {
				c.Close()
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("after the reload, :%s accepts no connection: %v", m[1], err)
		}
	}
}

// pageText is the person's HTML page of a step, as ana's browser gets it.
func (e *env) pageText(t *testing.T, link string) string {
	t.Helper()
	req, err := http.NewRequest("GET", link, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(ana.name, ana.password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("page: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// TestPolicyReloadedBeforeConfirm: through a real Caddy and Badger, the
// policy file is edited and the config reloaded between the hold and the
// person's confirm. A change to delete_post's endpoint runs nothing, and
// both the model (through openai-go) and the person's page say the policy
// changed; an edit to another action lets the confirm run as asked.
func TestPolicyReloadedBeforeConfirm(t *testing.T) {
	const changed = "The gate's policy for this action was changed after the person was asked; nothing ran. Call it again to ask the person under the current policy."
	for _, tt := range []struct {
		name, from, to string
		model          string
		runs           int
	}{
		{"its endpoint changed", "url: APP/posts/{post}\n    reply: Removed.", "url: APP/archive/{post}\n    reply: Removed.", changed, 0},
		{"another action edited", "url: APP/emails", "url: APP/v2/emails", "The person confirmed. Removed.", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			setupPost(e)
			l, msg := e.hold(t, "ana")
			e.reloadPolicy(t, tt.from, tt.to)
			if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
				t.Fatalf("confirm: %d", st)
			}
			_, _, s := e.view(ana, l)
			model := toolResult(e.next(t, "ana", msg, "ok"), "call_del7")
			if model != tt.model || s.Holds[0].Outcome != tt.model {
				t.Errorf("model read %q\npage JSON says %q\nwant %q", model, s.Holds[0].Outcome, tt.model)
			}
			if n := len(e.app.Calls()); n != tt.runs {
				t.Errorf("the app got %d releases, want %d", n, tt.runs)
			}
			html := e.pageText(t, l)
			if said := strings.Contains(html, "policy for this action changed after you were asked"); said != (tt.runs == 0) {
				t.Errorf("the person's page says the policy changed: %v, want %v:\n%s", said, tt.runs == 0, html)
			}
		})
	}
}

// TestMCPPolicyReloadedBeforeConfirm: on an MCP route, the card a client
// opened is confirmed after the policy changed the action's card: the
// client's retry gets a tool error saying the policy changed, and the MCP
// server never gets the call.
func TestMCPPolicyReloadedBeforeConfirm(t *testing.T) {
	e := newMCPEnv(t, mcpEnvOptions{stateless: true, confirmWait: "0"})
	e.app.SetRecord("/posts/7", postRecord)
	cs := e.connect(t, "ana", &mcp.ClientOptions{
		Capabilities: urlCaps,
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, fmt.Errorf("not by hand")
		},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}, "")
	args := map[string]any{"post": 7}
	first := callTool(t, cs, &mcp.CallToolParams{Name: "delete_post", Arguments: args})
	var key, url string
	for k, ir := range first.InputRequests {
		if p, _ := ir.(*mcp.ElicitParams); p != nil && p.Mode == "url" {
			key, url = k, p.URL
		}
	}
	if url == "" {
		t.Fatalf("no URL-mode request: %+v", first.InputRequests)
	}
	reloadPolicy(t, e.caddy, e.app.URL, "rows:\n        Post: title\n", "rows:\n        Post: title\n        Author: author\n")
	pg := &env{t: t}
	if st := pg.answerOnly(ana, url, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirming: %d", st)
	}
	consent := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept"}}
	wantToolError(t, callTool(t, cs, &mcp.CallToolParams{Name: "delete_post", Arguments: args, RequestState: first.RequestState, InputResponses: consent}),
		"policy for this action was changed after the person was asked", "nothing ran")
	e.wantNoCalls(t, "delete_post")
}
