package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit"
)

// Shadow rollout: the same traffic through a gate whose policy is in
// shadow mode and through one in enforce mode. In shadow the app reads
// the provider's bytes exactly; in enforce the same responses are held.
// Shadow mode's audit log names each call enforce mode held.

// shadowTraffic is one response of each kind, with the calls enforce mode
// holds: a card (delete_post, from its record), a form (draft_post
// missing its body), a card without record (send_email), streamed and not.
func shadowTraffic() map[string]testkit.Reply {
	calls := []call{del7, {"call_draft", "draft_post", `{"title":"Launch notes"}`, false}, {"call_mail", "send_email", `{"to":"bo@example.com","subject":"Agenda"}`, false}}
	return map[string]testkit.Reply{
		"json":   {Body: jsonCompletion("On it.", calls...)},
		"stream": {ContentType: "text/event-stream", Events: streamEvents([]string{"On ", "it."}, calls...)},
	}
}

// shadowRequest offers draft_post, whose definition enforce mode
// rewrites (ask_for_missing adds a hint for the model).
const shadowRequest = `{"model":"gpt-4o","messages":[{"role":"user","content":"Tidy up my posts."}],"tools":[{"type":"function","function":{"name":"draft_post","description":"Draft a post.","parameters":{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}}}]}`

// through posts a Chat request as ana through the gate and returns the
// bytes the app read.
func (e *env) through(t *testing.T, stream bool) []byte {
	t.Helper()
	body := shadowRequest
	if stream {
		body = strings.Replace(body, `{"model":"gpt-4o",`, `{"model":"gpt-4o","stream":true,`, 1)
	}
	e.lastSent = body
	req, err := http.NewRequest("POST", e.apiURL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-Id", "ana")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return b
}

// postAs posts a body to a path of the model route as owner and returns
// the bytes the app read.
func (e *env) postAs(t *testing.T, owner, path, body string) []byte {
	t.Helper()
	req, err := http.NewRequest("POST", e.apiURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-Id", owner)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func direct(r testkit.Reply) []byte {
	if r.Events != nil {
		return bytes.Join(r.Events, nil)
	}
	return r.Body
}

// TestShadowAndEnforceSameTraffic: the same responses through a gate in
// shadow mode and one in enforce mode. In shadow the app reads the
// provider's bytes; in enforce the calls are held. Then each gate's audit
// log is exported (toolgate audit export, Caddy stopped): for every call
// enforce mode held there is a shadowed event with the same action,
// owner, protocol and kind of hold, showing what enforce mode's page
// showed (a card's sentence and rows, a form's message and fields).
func TestShadowAndEnforceSameTraffic(t *testing.T) {
	audits := map[string][]auditLine{}
	shown := map[string]json.RawMessage{} // enforce mode's cards as its pages showed them, by hold id
	for _, mode := range []string{"shadow", "enforce"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, envOptions{policy: "mode: " + mode + "\n" + policyYAML})
			setupPost(e)
			start := time.Now().Add(-time.Second)
			var links []string
			for name, reply := range shadowTraffic() {
				e.provider.Enqueue(reply)
				got := e.through(t, reply.Events != nil)
				reqs := e.provider.Requests()
				sent := bytes.Equal(reqs[len(reqs)-1], []byte(e.lastSent))
				if mode == "shadow" != sent {
					t.Errorf("%s: the provider read %s", name, reqs[len(reqs)-1])
				}
				same := bytes.Equal(got, direct(reply))
				switch {
				case mode == "shadow" && !same:
					t.Errorf("%s: the app read other bytes than the provider sent:\n%s\nwant\n%s", name, got, direct(reply))
				case mode == "enforce" && (same || !linkRe.Match(got) || bytes.Contains(got, []byte(`"name":"delete_post"`))):
					t.Errorf("%s: enforce mode did not hold the calls:\n%s", name, got)
				}
				links = append(links, linkRe.FindString(string(got)))
			}
			// Recorded responses of the other providers, each with a call
			// the policy gates (Anthropic's get_weather streamed and
			// updateIssueList in JSON, a Responses weather call streamed).
			for _, rec := range []struct{ provider, fixture, path, request string }{
				{"anthropic", "stream-1.sse", "/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"go"}]}`},
				{"anthropic", "tool-no-args.json", "/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"go"}]}`},
				{"openai-responses", "azure-tool-call.sse", "/v1/responses", `{"model":"gpt-5","stream":true,"input":"go"}`},
			} {
				raw := testkit.Fixture(t, rec.provider, rec.fixture)
				reply := testkit.Reply{Body: raw}
				if strings.HasSuffix(rec.fixture, ".sse") {
					reply = testkit.Reply{Events: testkit.SSEEvents(raw)}
				}
				e.provider.Enqueue(reply)
				got := e.postAs(t, "ana", rec.path, rec.request)
				same := bytes.Equal(got, raw)
				switch {
				case mode == "shadow" && !same:
					t.Errorf("%s: the app read other bytes than the provider sent:\n%s", rec.fixture, got)
				case mode == "enforce" && (same || !linkRe.Match(got)):
					t.Errorf("%s: enforce mode did not hold the call:\n%s", rec.fixture, got)
				}
				links = append(links, linkRe.FindString(string(got)))
			}
			if mode == "enforce" {
				for _, l := range links {
					if l == "" {
						continue // reported above
					}
					status, body, _ := e.view(ana, l)
					var page struct {
						Holds []struct {
							ID   string          `json:"id"`
							Card json.RawMessage `json:"card"`
						} `json:"holds"`
					}
					if status != 200 || json.Unmarshal(body, &page) != nil {
						t.Fatalf("enforce's page: %d %s", status, body)
					}
					for _, h := range page.Holds {
						shown[h.ID] = h.Card
					}
				}
				audits[mode] = e.auditExport(t, start)
				return
			}
			// The card shadow mode would have shown was built from the
			// record, read as ana, on the side.
			deadline := time.Now().Add(10 * time.Second)
			for recordReads(e, "/posts/7", "ana") < 2 {
				if time.Now().After(deadline) {
					t.Fatalf("shadow mode never read the record: %+v", e.app.Reads())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if n := len(e.app.Calls()); n != 0 || recordReads(e, "/posts/7", "ana") != 2 {
				t.Errorf("shadow mode ran %d actions, read the record %d times", n, recordReads(e, "/posts/7", "ana"))
			}
			audits[mode] = e.auditExport(t, start)
		})
	}
	if t.Failed() {
		return
	}
	var held, shadowed []auditLine
	for _, l := range audits["enforce"] {
		switch l.Kind {
		case "held":
			held = append(held, l)
		case "shadowed":
			t.Errorf("enforce mode audited a shadowed event: %+v", l)
		}
	}
	for _, l := range audits["shadow"] {
		switch l.Kind {
		case "shadowed":
			shadowed = append(shadowed, l)
		case "held", "refused":
			t.Errorf("shadow mode audited a %s event: %+v", l.Kind, l)
		}
	}
	// Enforce mode held the three calls of each Chat response, Anthropic's
	// two and the Responses call: nine holds. The second Chat response's
	// cards are repeats of the first's: holds of their own step that share
	// the first card (one card per intent), audited with the card they
	// share ("primary", dropped by key). Shadow mode audits each of the
	// nine.
	if len(held) != 9 || len(shadowed) != 9 {
		t.Fatalf("enforce mode audited %d held calls, want 9: %+v\nshadow mode %d shadowed, want 9: %+v", len(held), held, len(shadowed), shadowed)
	}
	repeats := 0
	for _, h := range held {
		if strings.Contains(string(h.Shown), `"primary"`) {
			repeats++
		}
	}
	if repeats < 2 {
		t.Errorf("enforce mode audited %d repeats sharing a card, want the second response's delete_post and send_email", repeats)
	}
	heldKeys := map[string]bool{}
	for _, h := range held {
		if h.HoldKind == "card" {
			if page, ok := shown[h.HoldID]; !ok || !sameJSON(page, withoutPrimary(h.Shown)) {
				t.Errorf("enforce held %s showing %s; its page showed %s", h.Action, h.Shown, page)
			}
		}
		heldKeys[h.key()] = true
		found := -1
		for i, s := range shadowed {
			if s.key() == h.key() {
				found = i
				break
			}
		}
		if found < 0 {
			t.Errorf("enforce held %s for %s (%s, %s showing %s); shadow mode audited no such call: %+v", h.Action, h.Owner, h.Protocol, h.HoldKind, h.Shown, shadowed)
			continue
		}
		shadowed = append(shadowed[:found], shadowed[found+1:]...)
	}
	for _, s := range shadowed { // the repeats: each one of a call enforce held
		if !heldKeys[s.key()] {
			t.Errorf("shadow mode audited %s (%s, %s showing %s), which enforce mode did not hold", s.Action, s.Protocol, s.HoldKind, s.Shown)
		}
	}
}

// auditLine is one event of an audit export, the fields this file reads.
type auditLine struct {
	Kind     string          `json:"kind"`
	HoldID   string          `json:"hold_id"`
	Action   string          `json:"action"`
	Owner    string          `json:"owner"`
	Tenant   string          `json:"tenant"`
	Protocol string          `json:"protocol"`
	HoldKind string          `json:"hold_kind"`
	Reason   string          `json:"reason"` // a refusal's fixed word, or rule_allow
	Detail   string          `json:"detail"` // a refusal's text, as the model would read it
	Shown    json.RawMessage `json:"shown"`
}

// key is what a held and a shadowed event of the same call share: the
// action, the person, the protocol, the kind of hold and what it shows
// (re-encoded, so that only the value counts).
func (l auditLine) key() string {
	var shown any
	if json.Unmarshal(withoutPrimary(l.Shown), &shown) != nil {
		shown = string(l.Shown)
	}
	b, _ := json.Marshal([]any{l.Action, l.Owner, l.Tenant, l.Protocol, l.HoldKind, shown})
	return string(b)
}

// withoutPrimary is an audited card without the "primary" member a
// repeat's card carries (the hold whose card it shares).
func withoutPrimary(shown json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(shown, &m) != nil || m["primary"] == nil {
		return shown
	}
	delete(m, "primary")
	b, _ := json.Marshal(m)
	return b
}

// String is how a failing test names an event.
func (l auditLine) String() string { return l.Kind + " " + l.key() }

// auditExport stops the env's Caddy (the gate waits for its work on the
// side) and returns the audit events from since on, as `toolgate audit
// export` writes them.
func (e *env) auditExport(t *testing.T, since time.Time) []auditLine {
	t.Helper()
	testkit.Stop(t)
	flags := e.storeFlags(t)
	out, errOut, err := auditCommand(t, append([]string{"export", "--since", since.Format(time.RFC3339Nano), "--until", time.Now().Add(time.Second).Format(time.RFC3339Nano)}, flags...)...)
	if err != nil {
		t.Fatalf("audit export: %v\n%s", err, errOut)
	}
	var lines []auditLine
	for _, raw := range strings.Split(out, "\n") {
		if raw == "" || strings.HasPrefix(raw, `{"export":`) {
			continue // the end, or an empty export; the export's end line
		}
		var l auditLine
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("export line %q: %v", raw, err)
		}
		lines = append(lines, l)
	}
	return lines
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// recordReads counts the reads of a record as a person.
func recordReads(e *env, uri, person string) int {
	n := 0
	for _, r := range e.app.Reads() {
		if r.URI == uri && r.Header.Get("X-Toolgate-Person") == person {
			n++
		}
	}
	return n
}
