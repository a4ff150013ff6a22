package e2e

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/toolgate/toolgate/internal/testkit"
)

// Answers that spell a call so that some reader sees it while a plain
// reading does not: escaped keys are read as every decoder reads them (the
// call is held); keys given twice or in another case, calls of an unknown
// type and legacy function_calls are refused with 502, since a Node client
// (last key wins), Go's encoding/json (any case) or an app reading the name
// whatever the type would see a call the gate did not judge.

const chatEnvelope = `{"id":"chatcmpl-k","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":`

func chatAnswer(msg string) []byte {
	return []byte(chatEnvelope + msg + `,"logprobs":null,"finish_reason":"stop"}]}`)
}

const delCall = `{"id":"call_del7","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}"}}`

func TestChatAnswersSpeltOtherwise(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	c := e.client("ana")

	e.provider.Enqueue(testkit.Reply{Body: chatAnswer(`{"role":"assistant","content":null,"\u0074ool_calls":[` + delCall + `]}`)})
	got, err := c.Chat.Completions.New(ctx, userAsks("Delete post 7."))
	if err != nil {
		t.Fatal(err)
	}
	if m := got.Choices[0].Message; len(m.ToolCalls) != 0 || !strings.Contains(m.Content, "Waiting for your confirmation") {
		t.Errorf("escaped key: the app reads %q with calls %v", m.Content, callNames(m.ToolCalls))
	}

	for name, msg := range map[string]string{
		"tool_calls twice": `{"role":"assistant","content":null,"tool_calls":[],"tool_calls":[` + delCall + `]}`,
		"another case":     `{"role":"assistant","content":null,"Tool_Calls":[` + delCall + `]}`,
		"unknown type":     `{"role":"assistant","content":null,"tool_calls":[{"id":"call_x","type":"function_v2","function":{"name":"delete_post","arguments":"{\"post\":7}"}}]}`,
		"legacy call":      `{"role":"assistant","content":null,"function_call":{"name":"delete_post","arguments":"{\"post\":7}"}}`,
	} {
		e.provider.Enqueue(testkit.Reply{Body: chatAnswer(msg)})
		got, err := c.Chat.Completions.New(ctx, userAsks("Delete post 7."))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway {
			t.Errorf("%s: the app got %v, %+v", name, err, got)
		}
	}
	if len(e.app.Calls()) != 0 {
		t.Errorf("the app was reached: %v", e.app.Calls())
	}
}

func TestAnthropicAnswersSpeltOtherwise(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	c := e.anthropicClient("ana")
	answer := func(blocks string) []byte {
		return []byte(`{"id":"msg_k","type":"message","role":"assistant","model":"m","content":[` + blocks + `],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
	}
	e.provider.Enqueue(testkit.Reply{Body: answer(`{"type":"tool\u005fuse","id":"toolu_del","name":"delete_post","input":{"post":7}}`)})
	m, err := c.Messages.New(ctx, anthropicAsk("Delete post 7."))
	if err != nil {
		t.Fatal(err)
	}
	if len(toolUses(*m)) != 0 || !strings.Contains(textOf(*m), "Waiting for your confirmation") {
		t.Errorf("escaped type: the app reads %q with calls %v", textOf(*m), toolUses(*m))
	}
	for name, blocks := range map[string]string{
		"name twice":   `{"type":"tool_use","id":"toolu_del","name":"get_post","name":"delete_post","input":{"post":7}}`,
		"unknown type": `{"type":"tool_call","id":"toolu_del","name":"delete_post","input":{"post":7}}`,
	} {
		e.provider.Enqueue(testkit.Reply{Body: answer(blocks)})
		got, err := c.Messages.New(ctx, anthropicAsk("Delete post 7."))
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway {
			t.Errorf("%s: the app got %v, %+v", name, err, got)
		}
	}
}

func TestResponsesAnswersSpeltOtherwise(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	answer := func(item string) []byte {
		return []byte(`{"id":"resp_k","object":"response","created_at":1,"status":"completed","model":"gpt-5","output":[` + item + `],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
	}
	e.provider.Enqueue(testkit.Reply{Body: answer(`{"id":"fc_del","type":"function\u005fcall","status":"completed","arguments":"{\"post\":7}","call_id":"call_del","name":"delete_post"}`)})
	st, _, body := e.rawResponses(t, "ana", `{"model":"gpt-5","input":"Delete post 7."}`)
	if st != 200 || strings.Contains(string(body), "delete_post") || !strings.Contains(string(body), "Waiting for your confirmation") {
		t.Errorf("escaped type: the app got %d %s", st, body)
	}
	e.provider.Enqueue(testkit.Reply{Body: answer(`{"id":"fc_del","type":"tool_call","status":"completed","arguments":"{\"post\":7}","call_id":"call_del","name":"delete_post"}`)})
	if st, _, body := e.rawResponses(t, "ana", `{"model":"gpt-5","input":"Delete post 7."}`); st != http.StatusBadGateway {
		t.Errorf("unknown type: the app got %d %s", st, body)
	}
}
