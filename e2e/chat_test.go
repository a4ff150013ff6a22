package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/toolgate/toolgate/internal/testkit"
)

func userAsks(text string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
	}
}

// rawPost sends a body straight to the gate and returns what came back.
func (e *env) rawPost(t *testing.T, owner string, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", e.apiURL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if owner != "" {
		req.Header.Set("X-User-Id", owner)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// streamWith runs a streamed completion through openai-go's accumulator,
// failing if any chunk is refused, and returns the accumulated completion.
func streamWith(t *testing.T, c *openai.Client, params openai.ChatCompletionNewParams) openai.ChatCompletionAccumulator {
	t.Helper()
	s := c.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	n := 0
	for s.Next() {
		n++
		if !acc.AddChunk(s.Current()) {
			t.Fatalf("accumulator refused chunk %d: %s", n, s.Current().RawJSON())
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if n == 0 {
		t.Fatal("no chunks")
	}
	return acc
}

func callNames(calls []openai.ChatCompletionMessageToolCallUnion) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Function.Name+c.Custom.Name)
	}
	return out
}

func TestFixturesPassOrHoldJSON(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.app.SetRecord("/posts/7", `{"title":"Spring meetup","status":"draft"}`)
	tests := []struct {
		fixture   string
		wantCalls []string
		heldID    string
	}{
		{"json-one-tool.json", nil, "call_Y6qJ7ofLgOrBnMD5WbVAeiRV"},
		{"json-parallel-tools.json", []string{"get_stock_price"}, "call_fdNz3vOBKYgOIpMdWotB9MjY"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			e.provider.Enqueue(testkit.Reply{Body: testkit.Fixture(t, "openai-chat", tt.fixture)})
			got, err := e.client("ana").Chat.Completions.New(ctx, userAsks("weather?"))
			if err != nil {
				t.Fatal(err)
			}
			msg := got.Choices[0].Message
			if names := callNames(msg.ToolCalls); strings.Join(names, ",") != strings.Join(tt.wantCalls, ",") {
				t.Errorf("calls = %v, want %v", names, tt.wantCalls)
			}
			if !strings.HasPrefix(msg.Content, "Waiting for your confirmation: Look up the weather for you?") {
				t.Errorf("content = %q", msg.Content)
			}
			link(t, msg.Content)
			wantFinish := "stop"
			if len(tt.wantCalls) > 0 {
				wantFinish = "tool_calls"
			}
			if got.Choices[0].FinishReason != wantFinish {
				t.Errorf("finish_reason = %q, want %q", got.Choices[0].FinishReason, wantFinish)
			}
			raw := got.RawJSON()
			for _, leak := range []string{tt.heldID, "GetWeatherArgs", "Edinburgh"} {
				if strings.Contains(raw, leak) {
					t.Errorf("held call's %q reached the app: %s", leak, raw)
				}
			}
			if !strings.Contains(raw, `chatcmpl-ABfv`) || !strings.Contains(raw, `"total_tokens": `) {
				t.Errorf("envelope changed: %s", raw)
			}
		})
	}
}

func TestFixturesPassOrHoldStream(t *testing.T) {
	e := newEnv(t, envOptions{})
	tests := []struct {
		fixture   string
		wantCalls []string
		heldID    string
		leaks     []string
	}{
		{"stream-one-tool-1.sse", nil, "call_c91SqDXlYFuETYv8mUHzz6pp", []string{"GetWeatherArgs", "Edinburgh"}},
		{"stream-one-tool-2.sse", nil, "call_4XzlGBLtUe9dy3GVNV4jhq7h", []string{"get_weather", "New York"}},
		{"stream-parallel-tools.sse", []string{"get_stock_price"}, "call_JMW1whyEaYG438VE1OIflxA2", []string{"GetWeatherArgs", "Edinburgh"}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			e.provider.Enqueue(testkit.Reply{Events: testkit.SSEEvents(testkit.Fixture(t, "openai-chat", tt.fixture))})
			acc := streamWith(t, e.client("ana"), userAsks("weather?"))
			msg := acc.Choices[0].Message
			if names := callNames(msg.ToolCalls); strings.Join(names, ",") != strings.Join(tt.wantCalls, ",") {
				t.Errorf("calls = %v, want %v", names, tt.wantCalls)
			}
			for i, c := range msg.ToolCalls {
				if c.ID == "" || c.Function.Arguments == "" {
					t.Errorf("call %d incomplete: %+v", i, c)
				}
			}
			if !strings.Contains(msg.Content, "Waiting for your confirmation: Look up the weather for you?") {
				t.Errorf("content = %q", msg.Content)
			}
			wantFinish := "stop"
			if len(tt.wantCalls) > 0 {
				wantFinish = "tool_calls"
			}
			if acc.Choices[0].FinishReason != wantFinish {
				t.Errorf("finish_reason = %q, want %q", acc.Choices[0].FinishReason, wantFinish)
			}
			if acc.Usage.TotalTokens == 0 {
				t.Error("usage chunk lost")
			}
		})
	}
	// And the bytes: nothing of the held call anywhere in the stream.
	for _, tt := range tests {
		e.provider.Enqueue(testkit.Reply{Events: testkit.SSEEvents(testkit.Fixture(t, "openai-chat", tt.fixture))})
		_, _, body := e.rawPost(t, "ana", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"weather?"}]}`)
		for _, leak := range append(tt.leaks, tt.heldID) {
			if bytes.Contains(body, []byte(leak)) {
				t.Errorf("%s: held call's %q reached the app", tt.fixture, leak)
			}
		}
		if !bytes.HasSuffix(body, []byte("data: [DONE]\n\n")) {
			t.Errorf("%s: [DONE] lost", tt.fixture)
		}
	}
}

func TestPassThroughIsByteForByte(t *testing.T) {
	e := newEnv(t, envOptions{})
	stream := testkit.Fixture(t, "openai-chat", "stream-text.sse")
	e.provider.Enqueue(testkit.Reply{Events: testkit.SSEEvents(stream)})
	_, _, got := e.rawPost(t, "ana", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if !bytes.Equal(got, stream) {
		t.Errorf("text stream changed:\n%s", got)
	}
	// A call the policy does not gate passes untouched too.
	body := jsonCompletion("", call{"call_pass", "lookup_thing", `{"q":"x"}`, false})
	e.provider.Enqueue(testkit.Reply{Body: body})
	_, _, got = e.rawPost(t, "ana", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	if !bytes.Equal(got, body) {
		t.Errorf("ungated JSON changed:\n%s", got)
	}
	// A read action passes: only destructive and external ones wait.
	body = jsonCompletion("", call{"call_read", "get_stock_price", `{"ticker":"AAPL"}`, false})
	e.provider.Enqueue(testkit.Reply{Body: body})
	_, _, got = e.rawPost(t, "ana", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	if !bytes.Equal(got, body) {
		t.Errorf("read call changed:\n%s", got)
	}
	// The upstream was asked for a body the gate can read.
	for i, h := range e.provider.Headers() {
		if ae := h.Get("Accept-Encoding"); ae != "identity" {
			t.Errorf("request %d went upstream with Accept-Encoding %q", i, ae)
		}
	}
}

func TestSyntheticSteps(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.app.SetRecord("/posts/7", `{"title":"Spring meetup","status":"draft"}`)
	e.app.SetRecord("/posts/8", `{"title":"Autumn meetup","status":"published"}`)
	del7 := call{"call_del7", "delete_post", `{"post":7}`, false}
	del8 := call{"call_del8", "delete_post", `{"post":8}`, false}
	pass := call{"call_pass", "lookup_thing", `{"q":"meetups"}`, false}
	note := call{"call_note", "post_note", "Meetup moved to Friday", true}
	tests := []struct {
		name      string
		text      []string
		calls     []call
		wantCalls []string
		wantCards int
	}{
		{"text before a call", []string{"Sure, ", "deleting it."}, []call{del7}, nil, 1},
		{"gated beside pass-through", nil, []call{del7, pass}, []string{"lookup_thing"}, 1},
		{"pass-through before gated", nil, []call{pass, del7}, []string{"lookup_thing"}, 1},
		{"two gated calls", []string{"Both."}, []call{del7, del8}, nil, 2},
		{"custom tool type", nil, []call{note, pass}, []string{"lookup_thing"}, 1},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			name := tt.name + map[bool]string{false: "/json", true: "/stream"}[stream]
			t.Run(name, func(t *testing.T) {
				var msg openai.ChatCompletionMessage
				var finish string
				if stream {
					e.provider.Enqueue(testkit.Reply{Events: streamEvents(tt.text, tt.calls...)})
					acc := streamWith(t, e.client("ana"), userAsks("go"))
					msg, finish = acc.Choices[0].Message, acc.Choices[0].FinishReason
				} else {
					e.provider.Enqueue(testkit.Reply{Body: jsonCompletion(strings.Join(tt.text, ""), tt.calls...)})
					got, err := e.client("ana").Chat.Completions.New(ctx, userAsks("go"))
					if err != nil {
						t.Fatal(err)
					}
					msg, finish = got.Choices[0].Message, got.Choices[0].FinishReason
				}
				if names := callNames(msg.ToolCalls); strings.Join(names, ",") != strings.Join(tt.wantCalls, ",") {
					t.Errorf("calls = %v, want %v", names, tt.wantCalls)
				}
				for _, c := range msg.ToolCalls {
					if c.ID != "call_pass" || c.Function.Arguments != `{"q":"meetups"}` {
						t.Errorf("passed call changed: %+v", c)
					}
				}
				if want := strings.Join(tt.text, ""); !strings.HasPrefix(msg.Content, want) {
					t.Errorf("model text lost: %q", msg.Content)
				}
				wantFinish := "stop"
				if len(tt.wantCalls) > 0 {
					wantFinish = "tool_calls"
				}
				if finish != wantFinish {
					t.Errorf("finish = %q, want %q", finish, wantFinish)
				}
				l := link(t, msg.Content)
				_, _, s := e.view(ana, l)
				if len(s.Holds) != tt.wantCards {
					t.Errorf("page shows %d holds, want %d", len(s.Holds), tt.wantCards)
				}
				// Decline what waits: the same call again while its hold
				// waits would attach to it (one card per intent), and the
				// next case asks for its own cards.
				for _, h := range s.Holds {
					if h.State == "waiting" {
						if st, body := e.answer(ana, l, h.ID, s.Tokens[h.ID], "decline", nil); st != http.StatusSeeOther {
							t.Fatalf("declining %s: %d %s", h.ID, st, body)
						}
					}
				}
			})
		}
	}
}

// The app reads the first text delta while the upstream still holds the
// rest of the stream back: text is never buffered behind the gate.
func TestStreamTextIsNotHeldBack(t *testing.T) {
	e := newEnv(t, envOptions{})
	release := make(chan struct{})
	events := streamEvents([]string{"Hello", " there"}, call{"call_del7", "delete_post", `{"post":7}`, false})
	e.app.SetRecord("/posts/7", `{"title":"Spring meetup","status":"draft"}`)
	e.provider.Enqueue(testkit.Reply{Events: events, Gate: release, GateAt: 2})
	s := e.client("ana").Chat.Completions.NewStreaming(ctx, func() openai.ChatCompletionNewParams { p := userAsks("hi"); return p }())
	got := make(chan string, 1)
	go func() {
		for s.Next() {
			if c := s.Current(); len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
				got <- c.Choices[0].Delta.Content
				return
			}
		}
		got <- ""
	}()
	select {
	case first := <-got:
		if first != "Hello" {
			t.Errorf("first delta = %q", first)
		}
	case <-time.After(20 * time.Second): // a deadlock guard, not a speed check
		t.Fatal("the first text delta did not reach the app while the upstream held the rest back")
	}
	close(release)
	var rest strings.Builder
	for s.Next() {
		if c := s.Current(); len(c.Choices) > 0 {
			rest.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rest.String(), " there") || !strings.Contains(rest.String(), "Waiting for your confirmation") {
		t.Errorf("rest of the stream = %q", rest.String())
	}
}

func TestWebSocketUpgradeRefused(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, path := range gatedPaths {
		req, err := http.NewRequest("GET", e.apiURL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: upgrade got %d, want 400", path, resp.StatusCode)
		}
	}
	if n := len(e.provider.Requests()); n != 0 {
		t.Errorf("an upgrade reached the provider (%d requests)", n)
	}
}

// gatedPaths are the endpoints the default route gates.
var gatedPaths = []string{"/v1/chat/completions", "/v1/responses", "/v1/messages"}
