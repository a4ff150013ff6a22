package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit"
)

// Shadow rollout: the same traffic through a gate whose policy is in
// shadow mode and through one in enforce mode. In shadow the app reads
// the provider's bytes exactly; in enforce the same responses are held.

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

func TestShadowAndEnforceSameTraffic(t *testing.T) {
	for _, mode := range []string{"shadow", "enforce"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, envOptions{policy: "mode: " + mode + "\n" + policyYAML})
			setupPost(e)
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
			}
			if mode == "enforce" {
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
		})
	}
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
