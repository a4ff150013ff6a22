package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/sse"
)

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chunks returns the responses of a recorded stream: each SSE event's
// data, or each element of a JSON array.
func chunks(t testing.TB, name string) [][]byte {
	t.Helper()
	b := read(t, name)
	var out [][]byte
	if strings.HasSuffix(name, ".sse") {
		for _, ev := range sse.Parse(b) {
			out = append(out, []byte(ev.Data))
		}
		return out
	}
	var r ArrayReader
	if err := r.Write(b, func(e Element) bool {
		out = append(out, bytes.Clone(e.Value))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

type wantCall struct {
	choice, position int
	id, name, args   string
	signed           bool
}

func checkCalls(t *testing.T, what string, got []provider.Call, want []wantCall) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d calls, want %d: %+v", what, len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Choice != w.choice || g.Position != w.position || g.ID != w.id || g.Name != w.name || g.Type != "function" {
			t.Errorf("%s call %d: %+v, want %+v", what, i, g, w)
		}
		if w.args != "" && compact(t, g.Arguments) != w.args {
			t.Errorf("%s call %d: args %s, want %s", what, i, g.Arguments, w.args)
		}
		if s := gjson.GetBytes(g.Raw, "thoughtSignature").Exists(); s != w.signed {
			t.Errorf("%s call %d: signed %v, want %v", what, i, s, w.signed)
		}
	}
}

func compact(t testing.TB, b []byte) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return out.String()
}

func TestCallsInRecordings(t *testing.T) {
	for _, c := range []struct {
		name  string
		chunk int // for streams, the chunk holding the calls
		want  []wantCall
	}{
		{"function-call.json", -1, []wantCall{{0, 0, "gemini-position-0", "weather", `{"latitude":"52.5200","longitude":"13.4050"}`, true}}},
		{"parallel-function-calls.json", -1, []wantCall{
			{0, 0, "gemini-position-0", "weather", `{"latitude":"52.5200","longitude":"13.4050"}`, true},
			{0, 1, "gemini-position-1", "best_language_to_learn", `{}`, false},
		}},
		{"vertex-parallel-function-calls-3.json", -1, []wantCall{
			{0, 0, "gemini-position-0", "dice_roll", `{}`, true},
			{0, 1, "gemini-position-1", "dice_roll", `{}`, false},
			{0, 2, "gemini-position-2", "dice_roll", `{}`, false},
		}},
		{"gemini3-thought-then-function-call.json", -1, []wantCall{{0, 0, "call_883098", "weather", `{"latitude":"52.5200","longitude":"13.4050"}`, true}}},
		{"stream-function-call.sse", 0, []wantCall{{0, 0, "gemini-position-0", "weather", `{"latitude":"52.5200","longitude":"13.4050"}`, true}}},
		{"stream-function-call-gemini3.sse", 0, []wantCall{{0, 0, "gemini-position-0", "get_country", `{}`, true}}},
		{"stream-parallel-function-calls.sse", 0, []wantCall{
			{0, 0, "gemini-position-0", "secret_retrieval_tool", `{"password":"mellon"}`, true},
			{0, 1, "gemini-position-1", "secret_retrieval_tool", `{"password":"radiance"}`, false},
		}},
		{"stream-json-array-function-call.json", 1, []wantCall{{0, 0, "gemini-position-0", "pelican_name_generator", `{}`, true}}},
		{"stream-json-array-function-call-id.json", 0, []wantCall{{0, 0, "whZntcQw", "add_person", `{"age":30,"name":"Alice","address":{"street":"123 Main St","city":"San Francisco","zipcode":"94102"}}`, true}}},
		{"vertex-stream-thought-no-args-and-partial-args.sse", 1, []wantCall{{0, 0, "gemini-position-0", "read_theme", `{}`, true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.chunk < 0 {
				calls, err := Calls(read(t, c.name))
				if err != nil {
					t.Fatal(err)
				}
				checkCalls(t, c.name, calls, c.want)
				return
			}
			for i, ch := range chunks(t, c.name) {
				calls, err := Calls(ch)
				if errors.Is(err, ErrStreamedArguments) && i > c.chunk {
					continue // the streamed calls after it
				}
				if err != nil {
					t.Fatalf("chunk %d: %v", i, err)
				}
				if i != c.chunk {
					if len(calls) != 0 {
						t.Fatalf("chunk %d: calls %+v", i, calls)
					}
					continue
				}
				checkCalls(t, c.name, calls, c.want)
			}
		})
	}
}

// TestCallsStreamedArguments: Vertex's streamed arguments fail closed,
// from the first fragment (name and willContinue) to the empty {} that
// ends them.
func TestCallsStreamedArguments(t *testing.T) {
	evs := chunks(t, "vertex-stream-partial-args.sse")
	if len(evs) != 8 {
		t.Fatalf("%d events", len(evs))
	}
	for i, ev := range evs {
		if _, err := Calls(ev); !errors.Is(err, ErrStreamedArguments) {
			t.Errorf("event %d: %v", i, err)
		}
	}
}

func TestCallsEdgeCases(t *testing.T) {
	for _, c := range []struct {
		name, body string
		n          int
		err        string
	}{
		{"no call bytes", `{"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}`, 0, ""},
		{"snake case", `{"candidates":[{"content":{"parts":[{"function_call":{"name":"a","args":{}}}]}}]}`, 1, ""},
		{"go reads any case", `{"candidates":[{"content":{"parts":[{"FunctionCall":{"Name":"a"}}]}}]}`, 1, ""},
		{"escaped key", `{"candidates":[{"content":{"parts":[{"function\u0043all":{"name":"a"}}]}}]}`, 1, ""},
		{"twice", `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"a"},"function_call":{"name":"b"}}]}}]}`, 0, "given 2 times"},
		{"name twice", `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"a","name":"b"}}]}}]}`, 0, "given 2 times"},
		{"invalid", `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"a"}]}}]}`, 0, "invalid JSON"},
		{"no name", `{"candidates":[{"content":{"parts":[{"functionCall":{"args":{}}}]}}]}`, 0, "without a name"},
		{"args a string", `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"a","args":"{}"}}]}}]}`, 0, "not an object"},
		{"not an object", `{"candidates":[{"content":{"parts":[{"functionCall":"a"}]}}]}`, 0, "not an object"},
		{"null call", `{"candidates":[{"content":{"parts":[{"functionCall":null,"text":"x"}]}}]}`, 0, ""},
		{"id like a synthetic one", `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"a"}},{"functionCall":{"name":"b","id":"gemini-position-0"}}]}}]}`, 0, "have the id"},
		{"one index twice", `{"candidates":[{"index":0,"content":{"parts":[{"functionCall":{"name":"a"}}]}},{"index":0,"content":{"parts":[{"text":"b"}]}}]}`, 0, "the index 0"},
		{"two candidates", `{"candidates":[{"index":0,"content":{"parts":[{"functionCall":{"name":"a"}}]}},{"index":1,"content":{"parts":[{"functionCall":{"name":"b"}}]}}]}`, 2, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls, err := Calls([]byte(c.body))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || len(calls) != c.n {
				t.Fatalf("%d calls, %v", len(calls), err)
			}
		})
	}
}

// rewritten rewrites body with fates per call and text for candidate 0
// and checks the result is valid JSON.
func rewritten(t *testing.T, body []byte, fates []Fate, text string) gjson.Result {
	t.Helper()
	calls, err := Calls(body)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Rewrite(body, calls, fates, map[int]string{0: text})
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) {
		t.Fatalf("invalid JSON: %s", out)
	}
	return gjson.ParseBytes(out)
}

func partsOf(r gjson.Result) []gjson.Result { return r.Get("candidates.0.content.parts").Array() }

func TestRewrite(t *testing.T) {
	const wait = "Waiting for your confirmation: https://gate/h/x"
	t.Run("held alone", func(t *testing.T) {
		body := read(t, "function-call.json")
		r := rewritten(t, body, []Fate{Held}, wait)
		ps := partsOf(r)
		if len(ps) != 1 || ps[0].Raw != `{"text":"`+wait+`"}` {
			t.Fatalf("parts %v", ps)
		}
		if r.Get("candidates.0.finishReason").Str != "STOP" || r.Get("candidates.0.finishMessage").Exists() {
			t.Fatalf("finish: %s", r.Get("candidates.0").Raw)
		}
		if r.Get("usageMetadata").Raw != gjson.GetBytes(body, "usageMetadata").Raw {
			t.Fatal("usage changed")
		}
	})
	t.Run("first of a parallel set held: the signature moves to the passed call", func(t *testing.T) {
		body := read(t, "parallel-function-calls.json")
		sig := gjson.GetBytes(body, "candidates.0.content.parts.0.thoughtSignature").Str
		ps := partsOf(rewritten(t, body, []Fate{Held, Passed}, wait))
		if len(ps) != 2 || ps[0].Get("text").Str != wait || ps[0].Get("thoughtSignature").Exists() {
			t.Fatalf("parts %v", ps)
		}
		if ps[1].Get("functionCall.name").Str != "best_language_to_learn" || ps[1].Get("thoughtSignature").Str != sig {
			t.Fatalf("passed call %s", ps[1].Raw)
		}
	})
	t.Run("second of a parallel set held", func(t *testing.T) {
		body := read(t, "parallel-function-calls.json")
		r := rewritten(t, body, []Fate{Passed, Held}, wait)
		ps := partsOf(r)
		if len(ps) != 2 || ps[0].Raw != gjson.GetBytes(body, "candidates.0.content.parts.0").Raw || ps[1].Get("text").Str != wait {
			t.Fatalf("parts %v", ps)
		}
		if r.Get("candidates.0.finishMessage").Str == "" {
			t.Fatal("finishMessage dropped while a call stays")
		}
	})
	t.Run("vertex: middle call refused, last held", func(t *testing.T) {
		body := read(t, "vertex-parallel-function-calls-3.json")
		ps := partsOf(rewritten(t, body, []Fate{Passed, Refused, Held}, wait))
		if len(ps) != 2 || !ps[0].Get("thoughtSignature").Exists() || ps[1].Get("text").Str != wait {
			t.Fatalf("parts %v", ps)
		}
	})
	t.Run("thought summary before: no blank line", func(t *testing.T) {
		ps := partsOf(rewritten(t, read(t, "gemini3-thought-then-function-call.json"), []Fate{Held}, wait))
		if len(ps) != 2 || !ps[0].Get("thought").Bool() || ps[1].Get("text").Str != wait {
			t.Fatalf("parts %v", ps)
		}
	})
	t.Run("visible text before: a blank line", func(t *testing.T) {
		body := []byte(`{"candidates":[{"content":{"parts":[{"text":"I'll delete it."},{"functionCall":{"name":"delete_post","args":{"id":7}},"thoughtSignature":"c2ln"},{"text":" Done soon."}],"role":"model"},"finishReason":"STOP","index":0,"finishMessage":"Model generated function call(s)."}]}`)
		ps := partsOf(rewritten(t, body, []Fate{Held}, wait))
		if len(ps) != 3 || ps[0].Get("text").Str != "I'll delete it." || ps[1].Get("text").Str != "\n\n"+wait || ps[2].Get("text").Str != " Done soon." {
			t.Fatalf("parts %v", ps)
		}
	})
	t.Run("refused for a continuation: no text", func(t *testing.T) {
		r := rewritten(t, read(t, "function-call.json"), []Fate{Refused}, "")
		if ps := partsOf(r); len(ps) != 0 || r.Get("candidates.0.finishMessage").Exists() {
			t.Fatalf("candidate %s", r.Get("candidates.0").Raw)
		}
	})
	t.Run("refusal shown in place: text appended", func(t *testing.T) {
		body := read(t, "parallel-function-calls.json")
		ps := partsOf(rewritten(t, body, []Fate{Passed, Refused}, "Refused: no."))
		if len(ps) != 2 || ps[1].Get("text").Str != "Refused: no." {
			t.Fatalf("parts %v", ps)
		}
	})
	t.Run("stream chunk, gemini 3: the finish chunk is another", func(t *testing.T) {
		evs := chunks(t, "stream-function-call-gemini3.sse")
		ps := partsOf(rewritten(t, evs[0], []Fate{Held}, wait))
		if len(ps) != 1 || ps[0].Get("text").Str != wait {
			t.Fatalf("parts %v", ps)
		}
	})
	t.Run("vertex key order and snake case keys", func(t *testing.T) {
		body := []byte(`{"candidates":[{"content":{"role":"model","parts":[{"thought_signature":"c2ln","function_call":{"args":{},"name":"a"}},{"function_call":{"name":"b"}}]},"finishReason":"STOP"}]}`)
		ps := partsOf(rewritten(t, body, []Fate{Held, Passed}, wait))
		if len(ps) != 2 || ps[1].Get("thought_signature").Str != "c2ln" {
			t.Fatalf("parts %v", ps)
		}
	})
	t.Run("all passed: the same slice", func(t *testing.T) {
		body := read(t, "parallel-function-calls.json")
		calls, _ := Calls(body)
		out, err := Rewrite(body, calls, []Fate{Passed, Passed}, nil)
		if err != nil || &out[0] != &body[0] {
			t.Fatalf("changed: %v", err)
		}
	})
	t.Run("two candidates: only the one with a held call changes", func(t *testing.T) {
		body := []byte(`{"candidates":[{"index":0,"content":{"parts":[{"functionCall":{"name":"a"}}]}},{"index":1,"content":{"parts":[{"functionCall":{"name":"b"}}]}}]}`)
		calls, _ := Calls(body)
		out, err := Rewrite(body, calls, []Fate{Passed, Held}, map[int]string{1: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(out); got != `{"candidates":[{"index":0,"content":{"parts":[{"functionCall":{"name":"a"}}]}},{"index":1,"content":{"parts":[{"text":"w"}]}}]}` {
			t.Fatal(got)
		}
	})
}

func TestFates(t *testing.T) {
	calls := []provider.Call{{ID: "gemini-position-0"}, {ID: "gemini-position-1"}, {ID: "gemini-position-2"}}
	v := provider.Verdict{Pass: []bool{true, true}, Refusals: []provider.Refusal{{CallID: "gemini-position-1", Content: "no"}}}
	f, c, _, _ := v.Fates(calls) // synthetic ids pair refusals as real ones do
	if f[0] != Passed || f[1] != Refused || f[2] != Held || c[1] != "no" {
		t.Fatalf("%v %q", f, c)
	}
}

func TestContent(t *testing.T) {
	body := read(t, "gemini3-thought-then-function-call.json")
	c, err := Content(body, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := gjson.ParseBytes(c)
	if r.Get("role").Str != "model" || compact(t, []byte(r.Get("parts").Raw)) != compact(t, []byte(gjson.GetBytes(body, "candidates.0.content.parts").Raw)) {
		t.Fatalf("%s", c)
	}
}
