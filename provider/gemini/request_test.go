package gemini

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/gemini/geminitest"
)

// testLinks finds links as the gate writes them: prefix and a 26-character
// step id of [a-z2-7] (interceptor/chatrequest.go's rule).
type testLinks struct{ prefix string }

func (l testLinks) Has(b []byte) bool { return strings.Contains(string(b), l.prefix) }

func (l testLinks) Steps(s string) []string {
	var out []string
	for {
		i := strings.Index(s, l.prefix)
		if i < 0 || len(s) < i+len(l.prefix)+26 {
			return out
		}
		s = s[i+len(l.prefix):]
		out = append(out, s[:26])
		s = s[26:]
	}
}

func (l testLinks) After(s string) (string, bool) {
	i := strings.LastIndex(s, l.prefix)
	if i < 0 || len(s) < i+len(l.prefix)+26 {
		return "", false
	}
	return strings.TrimLeft(s[i+len(l.prefix)+26:], " \t\r\n"), true
}

const (
	prefix = "https://gate.example/toolgate/h/"
	step   = "abcdefghijklmnopqrstuvwxyz"
	wait   = "Waiting for your confirmation: Delete? Answer here: " + prefix + step
)

// restorer answers for one step.
type restorer struct {
	step        string
	r           provider.Restored
	userFollows []bool
}

func (s *restorer) Restore(_ context.Context, id string, userFollows bool) (provider.Restored, bool) {
	s.userFollows = append(s.userFollows, userFollows)
	return s.r, id == s.step
}

// appContent is the model content the app read after Rewrite: candidate
// 0's content of the rewritten body.
func appContent(t *testing.T, body []byte, fates []Fate) string {
	t.Helper()
	calls, err := Calls(body)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Rewrite(body, calls, fates, map[int]string{0: wait})
	if err != nil {
		t.Fatal(err)
	}
	return gjson.GetBytes(out, "candidates.0.content").Raw
}

func request(contents ...string) []byte {
	return []byte(`{"contents":[` + strings.Join(contents, ",") + `],"tools":[{"functionDeclarations":[{"name":"weather"}]}]}`)
}

func restore(t *testing.T, body []byte, r *restorer) []byte {
	t.Helper()
	out, err := RewriteRequest(context.Background(), body, testLinks{prefix}, r)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) {
		t.Fatalf("invalid JSON: %s", out)
	}
	return out
}

func TestRewriteRequest(t *testing.T) {
	question := `{"role":"user","parts":[{"text":"What's the weather in Berlin and the best language to learn?"}]}`
	t.Run("parallel: the signed call held, the other passed and answered by the app", func(t *testing.T) {
		resp := read(t, "parallel-function-calls.json")
		stored, _ := Content(resp, 0)
		app := appContent(t, resp, []Fate{Held, Passed})
		appAnswer := `{"role":"user","parts":[{"functionResponse":{"name":"best_language_to_learn","response":{"name":"best_language_to_learn","content":[{"text":"Ruby"}]}}}]}`
		r := &restorer{step: step, r: provider.Restored{Message: stored, Results: []provider.Result{{CallID: "gemini-position-0", Content: "The person confirmed. 15°C."}}}}
		out := restore(t, request(question, app, appAnswer), r)
		cs := gjson.GetBytes(out, "contents").Array()
		if len(cs) != 3 || compact(t, []byte(cs[1].Raw)) != compact(t, stored) {
			t.Fatalf("model content %s", cs[1].Raw)
		}
		want := `[{"functionResponse":{"name":"weather","response":{"output":"The person confirmed. 15°C."}}},{"functionResponse":{"name":"best_language_to_learn","response":{"name":"best_language_to_learn","content":[{"text":"Ruby"}]}}}]`
		if got := cs[2].Get("parts").Raw; got != want {
			t.Fatalf("responses %s", got)
		}
		if r.userFollows[0] {
			t.Fatal("userFollows for a content of responses")
		}
		if err := geminitest.Check("/v1beta/models/gemini-2.5-flash:", out); err != nil {
			t.Fatal(err)
		}
		// The restored history reads as the recorded one Gemini answered.
		rec := gjson.GetBytes(read(t, "request-parallel-function-responses.json"), "contents").Array()
		for i, c := range cs {
			if len(c.Get("parts").Array()) != len(rec[i].Get("parts").Array()) || c.Get("role").Str != rec[i].Get("role").Str {
				t.Fatalf("content %d differs in shape from the recording", i)
			}
		}
	})
	t.Run("gemini 3, resumed: no user content after, one inserted with the id", func(t *testing.T) {
		resp := read(t, "gemini3-thought-then-function-call.json")
		stored, _ := Content(resp, 0)
		body, err := AppendResumeContent(request(question), wait)
		if err != nil {
			t.Fatal(err)
		}
		r := &restorer{step: step, r: provider.Restored{Message: stored, Results: []provider.Result{{CallID: "call_883098", Content: "The person declined; nothing ran."}}}}
		out := restore(t, body, r)
		cs := gjson.GetBytes(out, "contents").Array()
		if len(cs) != 3 || !cs[1].Get("parts.0.thought").Bool() || cs[1].Get("parts.1.thoughtSignature").Str == "" {
			t.Fatalf("%s", out)
		}
		if got := cs[2].Raw; got != `{"role":"user","parts":[{"functionResponse":{"name":"weather","id":"call_883098","response":{"output":"The person declined; nothing ran."}}}]}` {
			t.Fatal(got)
		}
		if err := geminitest.Check("/v1beta/models/gemini-3.1-pro-preview:", out); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("snake case, an id the app invented for its passed call", func(t *testing.T) {
		resp := read(t, "parallel-function-calls.json")
		stored, _ := Content(resp, 0)
		sig := gjson.GetBytes(resp, "candidates.0.content.parts.0.thoughtSignature").Raw
		app := `{"role":"model","parts":[{"text":` + string(gjson.AppendJSONString(nil, wait)) + `},{"function_call":{"name":"best_language_to_learn","args":{},"id":"call_27db"},"thoughtSignature":` + sig + `}]}`
		answer := `{"role":"user","parts":[{"function_response":{"name":"best_language_to_learn","response":{"output":"Ruby"},"id":"call_27db"}}]}`
		r := &restorer{step: step, r: provider.Restored{Message: stored, Results: []provider.Result{{CallID: "gemini-position-0", Content: "ok"}}}}
		out := restore(t, request(question, app, answer), r)
		want := `[{"function_response":{"name":"weather","response":{"output":"ok"}}},{"function_response":{"name":"best_language_to_learn","response":{"output":"Ruby"}}}]`
		if got := gjson.GetBytes(out, "contents.2.parts").Raw; got != want {
			t.Fatal(got)
		}
		if err := geminitest.Check("/v1beta/models/gemini-2.5-flash:", out); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the person wrote: results first, then the words", func(t *testing.T) {
		resp := read(t, "function-call.json")
		stored, _ := Content(resp, 0)
		app := appContent(t, resp, []Fate{Held})
		r := &restorer{step: step, r: provider.Restored{Message: stored, Results: []provider.Result{{CallID: "gemini-position-0", Content: "The person moved on; nothing ran."}}}}
		out := restore(t, request(question, app, `{"role":"user","parts":[{"text":"never mind"}]}`), r)
		ps := gjson.GetBytes(out, "contents.2.parts").Array()
		if len(ps) != 2 || ps[0].Get("functionResponse.name").Str != "weather" || ps[1].Get("text").Str != "never mind" || !r.userFollows[0] {
			t.Fatalf("%s %v", out, r.userFollows)
		}
		if err := geminitest.Check("/v1beta/models/gemini-2.5-flash:", out); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the model's reply after the link: it follows the results", func(t *testing.T) {
		resp := read(t, "function-call.json")
		stored, _ := Content(resp, 0)
		app := `{"role":"model","parts":[{"text":` + string(gjson.AppendJSONString(nil, wait)) + `},{"text":"\n\nIt is 15°C in Berlin."}]}`
		r := &restorer{step: step, r: provider.Restored{Message: stored, Results: []provider.Result{{CallID: "gemini-position-0", Content: "The person confirmed."}}}}
		out := restore(t, request(question, app, `{"role":"user","parts":[{"text":"thanks"}]}`), r)
		cs := gjson.GetBytes(out, "contents").Array()
		if len(cs) != 5 || cs[2].Get("parts.0.functionResponse.name").Str != "weather" || cs[3].Get("parts.0.text").Str != "It is 15°C in Berlin." || cs[4].Get("parts.0.text").Str != "thanks" {
			t.Fatalf("%s", out)
		}
		if err := geminitest.Check("/v1beta/models/gemini-2.5-flash:", out); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no link, unknown step: the same slice", func(t *testing.T) {
		body := request(question)
		if out := restore(t, body, &restorer{}); &out[0] != &body[0] {
			t.Fatal("changed")
		}
		body = request(question, `{"role":"model","parts":[{"text":"`+wait+`"}]}`)
		if out := restore(t, body, &restorer{step: "other"}); &out[0] != &body[0] {
			t.Fatal("changed")
		}
	})
	t.Run("the app's call does not match the stored one", func(t *testing.T) {
		resp := read(t, "parallel-function-calls.json")
		stored, _ := Content(resp, 0)
		app := `{"role":"model","parts":[{"text":"` + wait + `"},{"functionCall":{"name":"other"}}]}`
		r := &restorer{step: step, r: provider.Restored{Message: stored, Results: []provider.Result{{CallID: "gemini-position-0", Content: "ok"}}}}
		if _, err := RewriteRequest(context.Background(), request(question, app), testLinks{prefix}, r); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("invalid JSON with a link", func(t *testing.T) {
		if _, err := RewriteRequest(context.Background(), []byte(`{"contents":[`+prefix), testLinks{prefix}, &restorer{}); err == nil {
			t.Fatal("no error")
		}
	})
}
