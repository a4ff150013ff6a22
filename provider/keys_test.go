package provider_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	anthropicadapter "github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/anthropic/anthropictest"
	"github.com/toolgate/toolgate/provider/chat"
	"github.com/toolgate/toolgate/provider/chat/chattest"
	"github.com/toolgate/toolgate/provider/providertest"
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
	"github.com/toolgate/toolgate/provider/responses/responsestest"
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
		h := providertest.NewHolder("delete_post")
		out, err := chat.Chat{}.RewriteJSON(ctx, []byte(chatEscapedJSON), h)
		if err != nil {
			t.Fatal(err)
		}
		var c openai.ChatCompletion
		if err := json.Unmarshal(out, &c); err != nil {
			t.Fatal(err)
		}
		if len(h.Holds()) != 1 || len(c.Choices[0].Message.ToolCalls) != 0 || !strings.Contains(c.Choices[0].Message.Content, waitText) {
			t.Fatalf("held %d times; openai-go reads %s", len(h.Holds()), out)
		}
	})
	t.Run("chat stream", func(t *testing.T) {
		in := strings.Replace(chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_1", "delete_post")))), `"tool_calls"`, `"\u0074ool_calls"`, 1) +
			chattest.Chunk(chattest.DeltaChoice(0, strings.Replace(chattest.ToolDelta(chattest.ToolArgs(0, `{"post":7}`)), `"tool_calls"`, `"tool\u005fcalls"`, 1))) +
			chattest.Chunk(chattest.FinishChoice(0, "tool_calls")) + "data: [DONE]\n\n"
		h := providertest.NewHolder("delete_post")
		out, _, err := rewriteStream([]byte(in), h)
		if err != nil {
			t.Fatal(err)
		}
		if acc := chattest.Accumulate(t, out); len(h.Holds()) != 1 || len(acc.Choices[0].Message.ToolCalls) != 0 {
			t.Fatalf("held %d times; openai-go reads %s", len(h.Holds()), out)
		}
	})
	t.Run("anthropic json", func(t *testing.T) {
		h := providertest.NewHolder("delete_post")
		out, err := anthropicadapter.Anthropic{}.RewriteJSON(ctx, []byte(anthEscapedJSON), h)
		if err != nil {
			t.Fatal(err)
		}
		var m anthropic.Message
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		if len(h.Holds()) != 1 || strings.Contains(string(out), "delete_post") {
			t.Fatalf("held %d times; anthropic-sdk-go reads %+v", len(h.Holds()), m.Content)
		}
	})
	t.Run("responses json", func(t *testing.T) {
		h := providertest.NewHolder("delete_post")
		out, err := responsesadapter.Responses{}.RewriteJSON(ctx, []byte(respEscapedJSON), h)
		if err != nil {
			t.Fatal(err)
		}
		var r responses.Response
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		if len(h.Holds()) != 1 || strings.Contains(string(out), "delete_post") {
			t.Fatalf("held %d times; openai-go reads %s", len(h.Holds()), out)
		}
	})
}

// lastReaderSees checks that a reader taking the last of two keys reads
// the gated call in body: encoding/json does, as JSON.parse does in the
// Node SDKs (openai-go and anthropic-sdk-go read the first, as gjson does:
// their apijson decodes from gjson's Map, which keeps the first, gjson.go
// arrayOrMap). A key in another case stays in the map (a struct would
// take it).
func lastReaderSees(t *testing.T, name, body string) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	b, _ := json.Marshal(v)
	if !strings.Contains(string(b), "delete_post") {
		t.Errorf("%s: a reader taking the last key does not read the gated call: %s", name, b)
	}
}

// Bodies in which a reader that takes the last of two keys (the Node SDKs,
// encoding/json) or a key in another case (encoding/json) reads a gated
// call that the first key, which gjson reads, does not show. Each must be
// refused.
func TestAmbiguousResponsesAreRefused(t *testing.T) {
	const (
		chatCall = `{"id":"call_1","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}"}}`
		chatRead = `{"id":"call_2","type":"function","function":{"name":"read_post","arguments":"{}"}}`
		chatEnv  = `"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o",`
	)
	chatMsg := func(msg string) string {
		return `{` + chatEnv + `"choices":[{"index":0,"message":` + msg + `,"logprobs":null,"finish_reason":"tool_calls"}]}`
	}
	chatJSON := map[string]string{
		"choices twice":    `{` + chatEnv + `"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` + chatCall + `]},"finish_reason":"tool_calls"}]}`,
		"message twice":    chatMsg(`{"role":"assistant","content":"Hi"},"message":{"role":"assistant","tool_calls":[` + chatCall + `]}`),
		"tool_calls twice": chatMsg(`{"role":"assistant","content":null,"tool_calls":[` + chatRead + `],"tool_calls":[` + chatCall + `]}`),
		"function twice":   chatMsg(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_post","arguments":"{}"},"function":{"name":"delete_post","arguments":"{}"}}]}`),
		"name twice":       chatMsg(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_post","name":"delete_post","arguments":"{}"}}]}`),
		"arguments twice":  chatMsg(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}","arguments":"{\"post\":8}"}}]}`),
		"type twice":       chatMsg(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"custom","type":"function","custom":{"name":"read_post","input":"x"},"function":{"name":"delete_post","arguments":"{}"}}]}`),
		"content twice":    chatMsg(`{"role":"assistant","content":"Hi","content":"Bye","tool_calls":[` + chatCall + `]}`),
		"another case":     chatMsg(`{"role":"assistant","content":null,"tool_calls":[` + chatRead + `],"Tool_Calls":[` + chatCall + `]}`),
		"escaped twice":    chatMsg(`{"role":"assistant","content":null,"tool_calls":[` + chatRead + `],"\u0074ool_calls":[` + chatCall + `]}`),
	}
	for name, body := range chatJSON {
		lastReaderSees(t, "chat json, "+name, body)
		h := providertest.NewHolder("delete_post").Passing("read_post")
		out, err := chat.Chat{}.RewriteJSON(context.Background(), []byte(body), h)
		if err == nil {
			t.Errorf("chat json, %s: not refused; the app reads %s", name, out)
		}
	}

	const anthEnv = `{"id":"msg_1","type":"message","role":"assistant","model":"claude",`
	anthTail := `"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
	anthJSON := map[string]string{
		"content twice": anthEnv + `"content":[{"type":"text","text":"Hi"}],"content":[{"type":"tool_use","id":"toolu_1","name":"delete_post","input":{}}],` + anthTail,
		"name twice":    anthEnv + `"content":[{"type":"tool_use","id":"toolu_1","name":"read_post","name":"delete_post","input":{}}],` + anthTail,
		"type twice":    anthEnv + `"content":[{"type":"text","text":"Hi","type":"tool_use","id":"toolu_1","name":"delete_post","input":{}}],` + anthTail,
		"another case":  anthEnv + `"content":[{"type":"tool_use","id":"toolu_1","name":"read_post","Name":"delete_post","input":{}}],` + anthTail,
	}
	for name, body := range anthJSON {
		lastReaderSees(t, "anthropic json, "+name, body)
		h := providertest.NewHolder("delete_post").Passing("read_post")
		out, err := anthropicadapter.Anthropic{}.RewriteJSON(context.Background(), []byte(body), h)
		if err == nil {
			t.Errorf("anthropic json, %s: not refused; the app reads %s", name, out)
		}
	}

	const respEnv = `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4o",`
	respItem := func(fields string) string {
		return respEnv + `"output":[{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1",` + fields + `}],"usage":null}`
	}
	respJSON := map[string]string{
		"output twice": respEnv + `"output":[],"output":[{"id":"fc_1","type":"function_call","status":"completed","arguments":"{}","call_id":"call_1","name":"delete_post"}],"usage":null}`,
		"name twice":   respItem(`"arguments":"{}","name":"read_post","name":"delete_post"`),
		"type twice":   respItem(`"arguments":"{}","name":"delete_post","type":"message"`),
		"another case": respItem(`"arguments":"{}","name":"read_post","NAME":"delete_post"`),
	}
	for name, body := range respJSON {
		lastReaderSees(t, "responses json, "+name, body)
		h := providertest.NewHolder("delete_post").Passing("read_post")
		out, err := responsesadapter.Responses{}.RewriteJSON(context.Background(), []byte(body), h)
		if err == nil {
			t.Errorf("responses json, %s: not refused; the app reads %s", name, out)
		}
	}

	// Streams: the same in one event.
	chatStreams := map[string]string{
		"choices twice": "data: {" + chattest.Envelope + `,"choices":[],"choices":[` + chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_1", "delete_post"))) + "]}\n\n",
		"name twice":    chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(`{"index":0,"id":"call_1","type":"function","function":{"name":"read_post","name":"delete_post","arguments":""}}`))),
		"delta twice":   chattest.Chunk(`{"index":0,"delta":{"content":"x"},"delta":` + chattest.ToolDelta(chattest.ToolHeader(0, "call_1", "delete_post")) + `,"finish_reason":null}`),
	}
	for name, ev := range chatStreams {
		in := ev + chattest.Chunk(chattest.FinishChoice(0, "tool_calls")) + "data: [DONE]\n\n"
		out, _, err := rewriteStream([]byte(in), providertest.NewHolder("delete_post").Passing("read_post"))
		if err == nil || providertest.NodeSees(out, "delete_post") {
			t.Errorf("chat stream, %s: not refused (%v); the app reads %s", name, err, out)
		}
	}
	anthStreams := map[string]string{
		"name twice":          anthropictest.Ev(`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_post","name":"delete_post","input":{}}}`),
		"content_block twice": anthropictest.Ev(`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""},"content_block":{"type":"tool_use","id":"toolu_1","name":"delete_post","input":{}}}`),
	}
	for name, ev := range anthStreams {
		in := anthropictest.Start("msg_1") + anthropictest.TextBlockEvs(0, "Hi") + ev + anthropictest.Ev(`{"type":"content_block_stop","index":1}`) + anthropictest.End("tool_use", 3)
		out, _, err := anthRewrite([]byte(in), providertest.NewHolder("delete_post").Passing("read_post"))
		if err == nil || providertest.NodeSees(out, "delete_post") {
			t.Errorf("anthropic stream, %s: not refused (%v); the app reads %s", name, err, out)
		}
	}
	respStreams := map[string]string{
		"item twice": `{"type":"response.output_item.added","sequence_number":SEQ,"output_index":1,"item":{"id":"msg_2","type":"message","status":"in_progress","content":[],"role":"assistant"},"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"delete_post"}}`,
		"name twice": `{"type":"response.output_item.added","sequence_number":SEQ,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"read_post","name":"delete_post"}}`,
	}
	for name, ev := range respStreams {
		syn := responsestest.NewSyn().Text("msg_1", "Hi")
		syn.Ev("%s", ev)
		in := syn.B.String()
		out, err := respRewrite([]byte(in), providertest.NewHolder("delete_post").Passing("read_post"))
		if err == nil || providertest.NodeSees(out, "delete_post") {
			t.Errorf("responses stream, %s: not refused (%v); the app reads %s", name, err, out)
		}
	}
}
