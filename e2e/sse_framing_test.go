package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
	evstream "github.com/toolgate/toolgate/wire/sse"
)

// rawStream posts a streamed chat request to the gate and returns the
// body as the app's HTTP client got it.
func (e *env) rawStream(t *testing.T, owner string) []byte {
	t.Helper()
	req, err := http.NewRequest("POST", e.apiURL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Delete post 7."}]}`))
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

// nodeReadsCall reports whether a reader of event streams as the Node SDKs
// read them (lines end at CR, LF or CRLF; a BOM dropped at a line start)
// finds a chunk carrying a tool call named name.
func nodeReadsCall(body []byte, name string) bool {
	for _, ev := range evstream.Parse(body) {
		found := false
		gjson.Get(ev.Data, "choices.#.delta.tool_calls").ForEach(func(_, tcs gjson.Result) bool {
			tcs.ForEach(func(_, tc gjson.Result) bool {
				found = found || tc.Get("function.name").String() == name
				return true
			})
			return true
		})
		if found {
			return true
		}
	}
	return false
}

// A call chunk framed so that a reader splitting lines at LF only (as the
// gate did) reads no call, while the Node SDKs, which split at CR too and
// drop a BOM at each line start, dispatch it: it must be held all the
// same, for every client.
func TestStreamCallsBehindOddLineEndsAreHeld(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	evs := streamEvents([]string{"Deleting."}, del7)
	for name, frame := range map[string]func(ev []byte) []byte{
		"a comment ended by a bare CR": func(ev []byte) []byte { return append([]byte(": keep-alive\r"), ev...) },
		"a BOM at a line start":        func(ev []byte) []byte { return append([]byte("\ufeff"), ev...) },
		"bare CR line ends":            func(ev []byte) []byte { return bytes.ReplaceAll(ev, []byte("\n"), []byte("\r")) },
	} {
		t.Run(name, func(t *testing.T) {
			var framed [][]byte
			for _, ev := range evs {
				if bytes.Contains(ev, []byte("tool_calls")) {
					ev = frame(ev)
				}
				framed = append(framed, ev)
			}
			e.provider.Enqueue(testkit.Reply{Events: framed})
			body := e.rawStream(t, "ana")
			if nodeReadsCall(body, "delete_post") {
				t.Fatalf("a Node client reads the gated call:\n%q", body)
			}
			if !strings.Contains(string(body), "Waiting for your confirmation") {
				t.Fatalf("the call was not held:\n%q", body)
			}

			// openai-go reads the answer whole.
			e.provider.Enqueue(testkit.Reply{Events: framed})
			acc := streamWith(t, e.client("ana"), userAsks("Delete post 7."))
			if m := acc.Choices[0].Message; len(m.ToolCalls) != 0 || !strings.Contains(m.Content, "Waiting for your confirmation") {
				t.Errorf("openai-go reads %q with calls %v", m.Content, callNames(m.ToolCalls))
			}
		})
	}
}

// An event the gate rewrites whose data spans two data lines reaches
// openai-go whole: its data goes back over several lines, never as one
// line holding a line end.
func TestRewrittenEventWithSeveralDataLines(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	evs := streamEvents([]string{"Deleting."}, del7)
	for i, ev := range evs {
		if bytes.Contains(ev, []byte(`"finish_reason":"tool_calls"`)) {
			evs[i] = bytes.Replace(ev, []byte(`"logprobs":null,`), []byte("\"logprobs\":null,\ndata: "), 1)
		}
	}
	e.provider.Enqueue(testkit.Reply{Events: evs})
	acc := streamWith(t, e.client("ana"), userAsks("Delete post 7."))
	if c := acc.Choices[0]; c.FinishReason != "stop" || len(c.Message.ToolCalls) != 0 || !strings.Contains(c.Message.Content, "Waiting for your confirmation") {
		t.Errorf("openai-go reads finish %q, %q, calls %v", c.FinishReason, c.Message.Content, callNames(c.Message.ToolCalls))
	}
}

// A stream the gate stops (here for a legacy function_call naming a gated
// tool) ends with an error openai-go reports, not a clean end.
func TestStoppedStreamIsAnErrorForTheApp(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	e.provider.Enqueue(testkit.Reply{Events: [][]byte{
		chunk(`{"role":"assistant","content":"Deleting."}`, ""),
		chunk(`{"function_call":{"name":"delete_post","arguments":"{\"post\":7}"}}`, ""),
		chunk(`{}`, "function_call"),
		[]byte("data: [DONE]\n\n"),
	}})
	s := e.client("ana").Chat.Completions.NewStreaming(ctx, userAsks("Delete post 7."))
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
		if name := gjson.Get(s.Current().RawJSON(), "choices.0.delta.function_call.name").String(); name != "" {
			t.Fatalf("the app read the legacy call %q", name)
		}
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "Toolgate stopped this response") {
		t.Errorf("stream error %v; the app read %+v", err, acc.Choices)
	}
}
