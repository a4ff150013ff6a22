package e2e

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// anthropicClient is the app on Anthropic: anthropic-sdk-go pointed at the
// gate, as owner.
func (e *env) anthropicClient(owner string) *anthropic.Client {
	c := anthropic.NewClient(aoption.WithBaseURL(e.apiURL), aoption.WithAPIKey("test"), aoption.WithMaxRetries(0), aoption.WithHeader("X-User-Id", owner))
	return &c
}

func anthropicAsk(text string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 512,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
	}
}

// anthropicStream runs a streamed message through the SDK's accumulator.
func anthropicStream(t *testing.T, c *anthropic.Client, params anthropic.MessageNewParams) anthropic.Message {
	t.Helper()
	s := c.Messages.NewStreaming(ctx, params)
	var msg anthropic.Message
	n := 0
	for s.Next() {
		n++
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatalf("accumulating event %d: %v", n, err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return msg
}

func toolUses(m anthropic.Message) []string {
	var out []string
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			out = append(out, b.Name)
		}
	}
	return out
}

func textOf(m anthropic.Message) string {
	var sb strings.Builder
	for _, b := range m.Content {
		if b.Type == "text" {
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}

func TestAnthropicFixtures(t *testing.T) {
	e := newEnv(t, envOptions{})
	tests := []struct {
		fixture string
		held    string // the held tool_use id, "" when nothing is held
		leaks   []string
	}{
		{"stream-1.sse", "toolu_01RaX2WYWRWCbaeFHssmGJXG", []string{"San Francisco\\\", \\\"units", "get_weather"}},
		{"stream-tool-no-args.sse", "toolu_01QE1WLsSVp5hy5Q3GmGTmjP", []string{"updateIssueList"}},
		{"stream-json-tool-text-first.sse", "", nil},
		{"stream-json-tool-no-text.sse", "", nil},
		{"stream-2.sse", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			raw := testkit.Fixture(t, "anthropic", tt.fixture)
			e.provider.Enqueue(testkit.Reply{Events: testkit.SSEEvents(raw)})
			msg := anthropicStream(t, e.anthropicClient("ana"), anthropicAsk("go"))
			if tt.held == "" {
				if len(toolUses(msg)) == 0 && strings.Contains(string(raw), `"tool_use"`) {
					t.Errorf("a call the policy does not gate was taken out")
				}
				// And byte for byte:
				e.provider.Enqueue(testkit.Reply{Events: testkit.SSEEvents(raw)})
				if _, _, got := e.rawAnthropic(t, "ana", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"go"}]}`); !bytes.Equal(got, raw) {
					t.Errorf("pass-through changed the stream:\n%s", got)
				}
				return
			}
			if n := toolUses(msg); len(n) != 0 {
				t.Errorf("held call reached the app: %v", n)
			}
			if msg.StopReason != "end_turn" {
				t.Errorf("stop_reason = %q", msg.StopReason)
			}
			if !strings.Contains(textOf(msg), "Waiting for your confirmation") {
				t.Errorf("text = %q", textOf(msg))
			}
			link(t, textOf(msg))
			e.provider.Enqueue(testkit.Reply{Events: testkit.SSEEvents(raw)})
			_, _, got := e.rawAnthropic(t, "ana", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"go"}]}`)
			for _, leak := range append(tt.leaks, tt.held, "input_json_delta") {
				if bytes.Contains(got, []byte(leak)) {
					t.Errorf("held call's %q reached the app", leak)
				}
			}
			if bytes.Count(got, []byte("event: ")) != bytes.Count(got, []byte("data: ")) {
				t.Errorf("an event lost its event: line")
			}
		})
	}
	t.Run("tool-no-args.json", func(t *testing.T) {
		e.provider.Enqueue(testkit.Reply{Body: testkit.Fixture(t, "anthropic", "tool-no-args.json")})
		msg, err := e.anthropicClient("ana").Messages.New(ctx, anthropicAsk("go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(toolUses(*msg)) != 0 || msg.StopReason != "end_turn" || !strings.Contains(textOf(*msg), "Waiting for your confirmation") {
			t.Errorf("message = %+v", msg.Content)
		}
	})
}

// rawAnthropic posts a body to the gate's Messages endpoint.
func (e *env) rawAnthropic(t *testing.T, owner, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", e.apiURL+"/v1/messages", strings.NewReader(body))
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
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, buf.Bytes()
}

// anthropicResult is the tool_result content for an id in a request.
func anthropicResult(body []byte, id string) string {
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		for _, b := range m.Get("content").Array() {
			if b.Get("type").String() == "tool_result" && b.Get("tool_use_id").String() == id {
				if c := b.Get("content"); c.Type == gjson.String {
					return c.String()
				}
				return b.Get("content.0.text").String()
			}
		}
	}
	return ""
}

func TestAnthropicCardAndFormFlows(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	// A card from a stream: the recorded get_weather call, held.
	raw := testkit.Fixture(t, "anthropic", "stream-1.sse")
	e.provider.Enqueue(testkit.Reply{Events: testkit.SSEEvents(raw)})
	c := e.anthropicClient("ana")
	params := anthropicAsk("Weather in SF in fahrenheit?")
	msg := anthropicStream(t, c, params)
	l := link(t, textOf(msg))
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if calls := e.app.Calls(); len(calls) != 1 || gjson.GetBytes(calls[0].Body, "city").String() != "San Francisco" {
		t.Fatalf("the action got %v", calls)
	}
	e.provider.Enqueue(testkit.Reply{Events: testkit.SSEEvents(testkit.Fixture(t, "anthropic", "stream-2.sse"))})
	params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("Thanks!")))
	after := anthropicStream(t, c, params)
	if !strings.Contains(textOf(after), "68 degrees") {
		t.Errorf("the provider refused the restored history: %q", textOf(after))
	}
	reqs := e.provider.Requests()
	last := reqs[len(reqs)-1]
	if got := anthropicResult(last, "toolu_01RaX2WYWRWCbaeFHssmGJXG"); got != "The person confirmed. Done." {
		t.Errorf("tool_result = %q in %s", got, last)
	}
	if got := gjson.GetBytes(last, "messages.2.content.0.type").String(); got != "tool_result" {
		t.Errorf("the next user message does not start with the tool_result: %s", last)
	}
	if got := gjson.GetBytes(last, "messages.2.content.#(type==\"text\").text").String(); got != "Thanks!" {
		t.Errorf("the person's text moved: %s", last)
	}

	// A form from a JSON message.
	body := `{"id":"msg_form","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Drafting."},{"type":"tool_use","id":"toolu_form","name":"draft_post","input":{"title":"Launch notes"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
	e.provider.Enqueue(testkit.Reply{Body: []byte(body)})
	p2 := anthropicAsk("Draft a post called Launch notes")
	m2, err := c.Messages.New(ctx, p2)
	if err != nil {
		t.Fatal(err)
	}
	l2 := link(t, textOf(*m2))
	_, _, s := e.view(ana, l2)
	id := s.Holds[0].ID
	if st, b := e.formPost(ana, l2, id, s.Tokens[id], url.Values{"title": {"Launch notes"}, "body": {"SECRET-BODY"}, "status": {"draft"}}, false); st != http.StatusSeeOther {
		t.Fatalf("submit: %d %s", st, b)
	}
	e.provider.Enqueue(testkit.Reply{Body: []byte(`{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)})
	p2.Messages = append(p2.Messages, m2.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("ok")))
	if _, err := c.Messages.New(ctx, p2); err != nil {
		t.Fatalf("the provider refused the restored history: %v", err)
	}
	reqs = e.provider.Requests()
	last = reqs[len(reqs)-1]
	if got := anthropicResult(last, "toolu_form"); got != "The person filled in: title, body, status. Drafted." {
		t.Errorf("tool_result = %q", got)
	}
	if bytes.Contains(last, []byte("SECRET-BODY")) {
		t.Error("the person's value reached the model")
	}
}

func TestAnthropicRefusalContinues(t *testing.T) {
	e := newEnv(t, envOptions{})
	first := `{"id":"msg_k","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_key","name":"rotate_key","input":{"service":"mail"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
	follow := `{"id":"msg_k2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Please set the key yourself in the mail settings."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":7}}`
	e.provider.Enqueue(testkit.Reply{Body: []byte(first)}, testkit.Reply{Body: []byte(follow)})
	m, err := e.anthropicClient("ana").Messages.New(ctx, anthropicAsk("rotate my mail key"))
	if err != nil {
		t.Fatal(err)
	}
	if len(toolUses(*m)) != 0 || !strings.Contains(textOf(*m), "set the key yourself") || strings.Contains(textOf(*m), "Toolgate refused") {
		t.Errorf("app got %+v", m.Content)
	}
	reqs := e.provider.Requests()
	if len(reqs) != 2 || !strings.Contains(anthropicResult(reqs[1], "toolu_key"), "apiKey") {
		t.Errorf("the refusal did not go back to the model")
	}
}
