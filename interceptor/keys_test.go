package interceptor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// Bodies that spell a call's key or type with \u escapes, which every
// JSON decoder reads as the plain key, and a byte search for the plain key
// missed (a body that also says finish_reason "tool_calls" or stop_reason
// "tool_use" was read): the SDKs then saw a call the gate had not judged.
const (
	chatEscapedJSON = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"\u0074ool_calls":[{"id":"call_1","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}"}}]},"logprobs":null,"finish_reason":"stop"}]}`
	anthEscapedJSON = `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"Deleting."},{"type":"tool\u005fuse","id":"toolu_1","name":"delete_post","input":{"post":7}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
	respEscapedJSON = `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4o","output":[{"id":"fc_1","type":"function\u005fcall","status":"completed","arguments":"{\"post\":7}","call_id":"call_1","name":"delete_post"}],"usage":null}`
)

func TestEscapedKeysAreRead(t *testing.T) {
	ctx := context.Background()
	t.Run("chat json", func(t *testing.T) {
		h := newHolder("delete_post")
		out, err := Chat{}.RewriteJSON(ctx, []byte(chatEscapedJSON), h)
		if err != nil {
			t.Fatal(err)
		}
		var c openai.ChatCompletion
		if err := json.Unmarshal(out, &c); err != nil {
			t.Fatal(err)
		}
		if len(h.holds) != 1 || len(c.Choices[0].Message.ToolCalls) != 0 || !strings.Contains(c.Choices[0].Message.Content, waitText) {
			t.Fatalf("held %d times; openai-go reads %s", len(h.holds), out)
		}
	})
	t.Run("chat stream", func(t *testing.T) {
		in := strings.Replace(chunk(deltaChoice(0, toolDelta(toolHeader(0, "call_1", "delete_post")))), `"tool_calls"`, `"\u0074ool_calls"`, 1) +
			chunk(deltaChoice(0, strings.Replace(toolDelta(toolArgs(0, `{"post":7}`)), `"tool_calls"`, `"tool\u005fcalls"`, 1))) +
			chunk(finishChoice(0, "tool_calls")) + "data: [DONE]\n\n"
		h := newHolder("delete_post")
		out, _, err := rewriteStream([]byte(in), h)
		if err != nil {
			t.Fatal(err)
		}
		if acc := accumulate(t, out); len(h.holds) != 1 || len(acc.Choices[0].Message.ToolCalls) != 0 {
			t.Fatalf("held %d times; openai-go reads %s", len(h.holds), out)
		}
	})
	t.Run("anthropic json", func(t *testing.T) {
		h := newHolder("delete_post")
		out, err := Anthropic{}.RewriteJSON(ctx, []byte(anthEscapedJSON), h)
		if err != nil {
			t.Fatal(err)
		}
		var m anthropic.Message
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		if len(h.holds) != 1 || strings.Contains(string(out), "delete_post") {
			t.Fatalf("held %d times; anthropic-sdk-go reads %+v", len(h.holds), m.Content)
		}
	})
	t.Run("responses json", func(t *testing.T) {
		h := newHolder("delete_post")
		out, err := Responses{}.RewriteJSON(ctx, []byte(respEscapedJSON), h)
		if err != nil {
			t.Fatal(err)
		}
		var r responses.Response
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		if len(h.holds) != 1 || strings.Contains(string(out), "delete_post") {
			t.Fatalf("held %d times; openai-go reads %s", len(h.holds), out)
		}
	})
}
