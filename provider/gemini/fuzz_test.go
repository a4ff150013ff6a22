package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
)

// The fuzz targets for the parsers and rewriters: whatever the bytes, no
// panic, and what comes out is valid JSON in which no reader finds a call
// that was taken out.

func responseSeeds(f *testing.F) {
	for _, n := range []string{"function-call.json", "parallel-function-calls.json", "vertex-parallel-function-calls-3.json", "gemini3-thought-then-function-call.json"} {
		f.Add(read(f, n), uint8(0b101))
	}
	for _, n := range []string{"stream-parallel-function-calls.sse", "stream-function-call-gemini3.sse", "vertex-stream-partial-args.sse"} {
		for _, c := range chunks(f, n) {
			f.Add(c, uint8(0b10))
		}
	}
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"text":"a"},{"function_call":{"name":"x"}},{"FunctionCall":{"name":"y","args":{"k":1}},"thoughtSignature":"c2ln"}]}}]}`), uint8(1))
}

// FuzzRewrite: Calls then Rewrite with fates from the bits of pick; the
// result is valid JSON, and the calls it holds are exactly the passed ones,
// in order.
func FuzzRewrite(f *testing.F) {
	responseSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte, pick uint8) {
		calls, err := Calls(body)
		if err != nil || len(calls) == 0 {
			return
		}
		fates := make([]Fate, len(calls))
		var passed []string
		for i := range calls {
			fates[i] = []Fate{Passed, Held, Refused}[(pick>>(2*(i%4)))&3%3]
			if fates[i] == Passed {
				passed = append(passed, calls[i].Name)
			}
		}
		texts := map[int]string{}
		for _, c := range calls {
			texts[c.Choice] = "wait"
		}
		out, err := Rewrite(body, calls, fates, texts)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out of %q", body)
		}
		again, err := Calls(out)
		if err != nil {
			t.Fatalf("the rewritten body does not read: %v\n%s", err, out)
		}
		var names []string
		for _, c := range again {
			names = append(names, c.Name)
		}
		if len(names) != len(passed) {
			t.Fatalf("calls left %q, passed %q\nin %s\nout %s", names, passed, body, out)
		}
		for i := range names {
			if names[i] != passed[i] {
				t.Fatalf("calls left %q, passed %q", names, passed)
			}
		}
	})
}

// FuzzMayHoldCall: a body MayHoldCall says no to holds no call for Calls,
// nor for go-genai's types decoded by encoding/json (any case).
func FuzzMayHoldCall(f *testing.F) {
	responseSeeds(f)
	for _, k := range callSpellings {
		f.Add([]byte(spelledCall(k)), uint8(0))
	}
	f.Fuzz(func(t *testing.T, body []byte, _ uint8) {
		if MayHoldCall(body) {
			return
		}
		if genaiFindsCall(body) {
			t.Fatalf("MayHoldCall missed a call go-genai reads in %s", body)
		}
		if !gjson.ValidBytes(body) {
			return
		}
		// Read it the slow way: every part of every candidate, every key.
		found := false
		gjson.ParseBytes(body).Get("candidates").ForEach(func(_, c gjson.Result) bool {
			c.ForEach(func(_, v gjson.Result) bool {
				v.ForEach(func(_, ps gjson.Result) bool {
					ps.ForEach(func(_, p gjson.Result) bool {
						p.ForEach(func(k, _ gjson.Result) bool {
							found = found || fold(k.Str) == "functioncall"
							return true
						})
						return true
					})
					return true
				})
				return true
			})
			return true
		})
		if found {
			t.Fatalf("MayHoldCall missed a call in %s", body)
		}
	})
}

// FuzzRewriteRequest: whatever the app's history, restoring it errs or
// gives valid JSON, and a body without a link comes back as it was.
func FuzzRewriteRequest(f *testing.F) {
	for _, n := range []string{"request-parallel-function-responses.json", "request-snake-case-client-id.json", "request-stream-parallel-function-responses.json", "vertex-request-three-function-responses.json"} {
		f.Add(read(f, n))
	}
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"` + wait + `"},{"functionCall":{"name":"best_language_to_learn","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"best_language_to_learn","response":{}}}]}]}`))
	stored, err := Content(read(f, "parallel-function-calls.json"), 0)
	if err != nil {
		f.Fatal(err)
	}
	r := &restorer{step: step, r: provider.Restored{Message: stored, Results: []provider.Result{{CallID: "gemini-position-0", Content: "ok"}}}}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := RewriteRequest(context.Background(), body, testLinks{prefix}, r)
		if err != nil {
			return
		}
		if !bytes.Contains(body, []byte(prefix)) && !bytes.Equal(out, body) {
			t.Fatal("a body without a link changed")
		}
		if !bytes.Equal(out, body) && !json.Valid(out) {
			t.Fatalf("invalid JSON out of %q", body)
		}
	})
}

// FuzzRewriteTools: the result is valid JSON and the declarations keep
// their names and order.
func FuzzRewriteTools(f *testing.F) {
	f.Add(read(f, "request-parallel-function-responses.json"))
	f.Add([]byte(`{"tools":[{"function_declarations":[{"name":"a","parameters":{"type":"OBJECT","nullable":true}}]},{"googleSearch":{}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := RewriteTools(body, func(name string, params []byte) ([]byte, string, bool) {
			if params != nil && !json.Valid(params) && gjson.ValidBytes(params) {
				t.Fatalf("schema given is not JSON: %q", params)
			}
			return []byte(`{"type":"object"}`), " note", true
		})
		if err != nil {
			return
		}
		if !bytes.Equal(out, body) && !json.Valid(out) {
			t.Fatalf("invalid JSON out of %q", body)
		}
		_ = ToolSchema(body, "a")
	})
}

// FuzzContinuation: a follow-up body built from any response is valid
// JSON, ends with a user content of one functionResponse per refused call.
func FuzzContinuation(f *testing.F) {
	responseSeeds(f)
	req := []byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	f.Fuzz(func(t *testing.T, body []byte, pick uint8) {
		calls, err := Calls(body)
		if err != nil || len(calls) == 0 {
			return
		}
		ch := calls[0].Choice
		var mine []provider.Call
		for _, c := range calls {
			if c.Choice == ch {
				mine = append(mine, c)
			}
		}
		fates := make([]Fate, len(mine))
		contents := make([]string, len(mine))
		refused := 0
		for i := range mine {
			fates[i] = []Fate{Passed, Refused}[(pick>>i)&1]
			if fates[i] == Refused {
				refused++
				contents[i] = "no"
			}
		}
		content, err := Content(body, ch)
		if err != nil {
			return
		}
		out, err := Continuation(req, content, mine, fates, contents)
		if refused == 0 {
			if err == nil {
				t.Fatal("a continuation without a refused call")
			}
			return
		}
		if err != nil {
			if errors.Is(err, ErrStreamedArguments) {
				return
			}
			t.Fatalf("%v\n%s", err, content)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %s", out)
		}
		cs := gjson.GetBytes(out, "contents").Array()
		if n := len(cs[len(cs)-1].Get("parts").Array()); n != refused {
			t.Fatalf("%d responses for %d refused calls", n, refused)
		}
	})
}
