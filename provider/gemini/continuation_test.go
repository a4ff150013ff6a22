package gemini

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestContinuation(t *testing.T) {
	req := read(t, "request-parallel-function-responses.json")
	// The first request: the user's question only.
	first, err := json.Marshal(map[string]any{"contents": []any{gjson.GetBytes(req, "contents.0").Value()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("signed call held, the other refused", func(t *testing.T) {
		body := read(t, "parallel-function-calls.json")
		calls, _ := Calls(body)
		content, _ := Content(body, 0)
		out, err := Continuation(first, content, calls, []Fate{Held, Refused}, []string{"", "Refused: no."})
		if err != nil {
			t.Fatal(err)
		}
		cs := gjson.GetBytes(out, "contents").Array()
		if len(cs) != 3 {
			t.Fatalf("%s", out)
		}
		model, user := cs[1], cs[2]
		mp := model.Get("parts").Array()
		if model.Get("role").Str != "model" || len(mp) != 1 || mp[0].Get("functionCall.name").Str != "best_language_to_learn" {
			t.Fatalf("model %s", model.Raw)
		}
		if mp[0].Get("thoughtSignature").Str != gjson.GetBytes(body, "candidates.0.content.parts.0.thoughtSignature").Str {
			t.Fatal("the set's signature did not move to the call sent back")
		}
		if user.Get("role").Str != "user" || user.Get("parts.#").Int() != 1 ||
			user.Get("parts.0").Raw != `{"functionResponse":{"name":"best_language_to_learn","response":{"error":"Refused: no."}}}` {
			t.Fatalf("user %s", user.Raw)
		}
	})
	t.Run("a call with an id keeps it, the thought before it stays", func(t *testing.T) {
		body := read(t, "gemini3-thought-then-function-call.json")
		calls, _ := Calls(body)
		content, _ := Content(body, 0)
		out, err := Continuation(first, content, calls, []Fate{Refused}, []string{"no"})
		if err != nil {
			t.Fatal(err)
		}
		cs := gjson.GetBytes(out, "contents").Array()
		if n := cs[1].Get("parts.#").Int(); n != 2 || !cs[1].Get("parts.0.thought").Bool() {
			t.Fatalf("model %s", cs[1].Raw)
		}
		if got := cs[2].Get("parts.0.functionResponse.id").Str; got != "call_883098" {
			t.Fatalf("id %q", got)
		}
	})
	t.Run("no refused call", func(t *testing.T) {
		body := read(t, "function-call.json")
		calls, _ := Calls(body)
		content, _ := Content(body, 0)
		if _, err := Continuation(first, content, calls, []Fate{Held}, []string{""}); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("no contents", func(t *testing.T) {
		body := read(t, "function-call.json")
		calls, _ := Calls(body)
		content, _ := Content(body, 0)
		if _, err := Continuation([]byte(`{}`), content, calls, []Fate{Refused}, []string{"x"}); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestMerge(t *testing.T) {
	body := read(t, "function-call.json")
	calls, _ := Calls(body)
	acc, err := Rewrite(body, calls, []Fate{Refused}, nil)
	if err != nil {
		t.Fatal(err)
	}
	acc, err = AppendText(acc, "Before.")
	if err != nil {
		t.Fatal(err)
	}
	next := []byte(`{"candidates":[{"content":{"parts":[{"text":"It is sunny."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":200,"candidatesTokenCount":5,"totalTokenCount":205,"promptTokensDetails":[{"modality":"TEXT","tokenCount":200}]},"modelVersion":"gemini-2.5-flash","responseId":"other"}`)
	out, err := Merge(acc, next)
	if err != nil {
		t.Fatal(err)
	}
	r := gjson.ParseBytes(out)
	ps := r.Get("candidates.0.content.parts").Array()
	if len(ps) != 2 || ps[0].Get("text").Str != "Before." || ps[1].Get("text").Str != "\n\nIt is sunny." {
		t.Fatalf("parts %v", ps)
	}
	if r.Get("responseId").Str != gjson.GetBytes(body, "responseId").Str || r.Get("candidates.0.finishMessage").Exists() {
		t.Fatalf("%s", out)
	}
	u := r.Get("usageMetadata")
	if u.Get("promptTokenCount").Int() != 303 || u.Get("totalTokenCount").Int() != 444 || u.Get("thoughtsTokenCount").Int() != 106 ||
		u.Get("promptTokensDetails.0.tokenCount").Int() != 303 || u.Get("serviceTier").Str != "standard" {
		t.Fatalf("usage %s", u.Raw)
	}
}

func TestAppendResumeContent(t *testing.T) {
	out, err := AppendResumeContent([]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`), "Waiting: https://g/h/x")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"Waiting: https://g/h/x"}]}]}` {
		t.Fatal(got)
	}
}

func TestStreamsArguments(t *testing.T) {
	for body, want := range map[string]bool{
		`{"contents":[]}`: false,
		`{"toolConfig":{"functionCallingConfig":{"mode":"AUTO","streamFunctionCallArguments":true}}}`:                       true,
		`{"tool_config":{"function_calling_config":{"stream_function_call_arguments":true}}}`:                               true,
		`{"toolConfig":{"functionCallingConfig":{"streamFunctionCallArguments":false}}}`:                                    false,
		`{"toolConfig":{"functionCallingConfig":{"streamFunctionCallArguments":true,"STREAMFUNCTIONCALLARGUMENTS":false}}}`: true,
		`{"toolConfig":{"functionCallingConfig":{"streamFunctionCallArguments":tr`:                                          true,
	} {
		if got := StreamsArguments([]byte(body)); got != want {
			t.Errorf("%s: %v", body, got)
		}
	}
}

// TestStreamsArgumentsAtEveryPlace: the key is found in each case at each
// place in a request, around the 8- and 16-byte blocks its search reads
// (keyscan.IndexFold), after text that holds "arguments" alone, and at the
// end of a body cut short.
func TestStreamsArgumentsAtEveryPlace(t *testing.T) {
	for _, key := range []string{"streamFunctionCallArguments", "STREAM_FUNCTION_CALL_ARGUMENTS", "stream_function_call_ARGUMENTS", "StreamFunctionCallArgUmentS"} {
		for _, text := range []string{"", "x", "the arguments", "ARGUMENTS and Arguments"} {
			for pad := range 40 {
				body := `{"contents":[{"parts":[{"text":"` + text + strings.Repeat(" ", pad) + `"}]}],"toolConfig":{"functionCallingConfig":{"` + key + `":true}}}`
				if !StreamsArguments([]byte(body)) {
					t.Fatalf("%s: not found", body)
				}
				if b := strings.Replace(body, key, key[:len(key)-1], 1); StreamsArguments([]byte(b)) {
					t.Fatalf("%s: found", b)
				}
				// Cut after the key, the body's last bytes: invalid JSON
				// naming the key, which cannot be told and is refused.
				if cut := body[:strings.Index(body, key)+len(key)]; !StreamsArguments([]byte(cut)) {
					t.Fatalf("%s: not found", cut)
				}
			}
		}
	}
}

// FuzzStreamedArgumentsAsTwoSearches: the one search for "arguments" with
// either head before it finds what the two whole-key searches it replaced
// find.
func FuzzStreamedArgumentsAsTwoSearches(f *testing.F) {
	f.Add([]byte(`{"toolConfig":{"functionCallingConfig":{"streamFunctionCallArguments":true}}}`))
	f.Add([]byte(`{"tool_config":{"function_calling_config":{"STREAM_function_CALL_arguments":true}}}`))
	f.Add([]byte(`{"x":"arguments streamfunctioncall arguments stream_function_callarguments"}`))
	f.Add([]byte(`streamFunctionCallArgumentS`))
	f.Add([]byte(`stream_function_call_ARGUMENTSstreamfunctioncallargument`))
	f.Fuzz(func(t *testing.T, b []byte) {
		want := asciiContainsFold(b, "streamfunctioncallarguments") || asciiContainsFold(b, "stream_function_call_arguments")
		if got := namesStreamedArguments(b); got != want {
			t.Fatalf("%q: %v, the two searches say %v", b, got, want)
		}
	})
}

// BenchmarkStreamsArgumentsMeetup is BenchmarkStreamsArguments on
// meetupRequest, whose every message has a g ("spring").
func BenchmarkStreamsArgumentsMeetup(b *testing.B) {
	req := meetupRequest()
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		if StreamsArguments(req) {
			b.Fatal("streams")
		}
	}
}
