package provider_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthssestream "github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	anthropicadapter "github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/anthropic/anthropictest"
	"github.com/toolgate/toolgate/provider/chat"
	"github.com/toolgate/toolgate/provider/chat/chattest"
	"github.com/toolgate/toolgate/provider/providertest"
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
	"github.com/toolgate/toolgate/provider/responses/responsestest"
)

// A call the gate cannot place — of an unknown type, or naming a gated
// tool in a body its type does not point at, or the legacy Chat
// function_call — that still names a gated tool is refused: the SDKs
// decode every field whatever the type (openai-go's tool call and output
// item unions, its stream accumulator, anthropic-sdk-go's
// Message.Accumulate), so an app reading the name would run it.
func TestUnplaceableCallsAreRefused(t *testing.T) {
	ctx := context.Background()
	const chatEnv = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":`
	chatJSON := map[string]string{
		"unknown type":           `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function_v2","function":{"name":"delete_post","arguments":"{}"}}]}`,
		"unknown type, own body": `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"op","op":{"name":"delete_post","arguments":"{}"}}]}`,
		"name in another body":   `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_post","arguments":"{}"},"custom":{"name":"delete_post","input":"7"}}]}`,
		"legacy function_call":   `{"role":"assistant","content":null,"function_call":{"name":"delete_post","arguments":"{\"post\":7}"}}`,
	}
	for name, msg := range chatJSON {
		body := chatEnv + msg + `,"logprobs":null,"finish_reason":"stop"}]}`
		out, err := chat.Chat{}.RewriteJSON(ctx, []byte(body), providertest.NewHolder("delete_post").Passing("read_post"))
		if err == nil {
			t.Errorf("chat json, %s: not refused; the app reads %s", name, out)
		}
	}
	chatStreams := map[string]string{
		"unknown type":         chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(`{"index":0,"id":"call_1","type":"op","op":{"name":"read_post"},"function":{"name":"delete_post","arguments":"{}"}}`))),
		"name in another body": chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(`{"index":0,"id":"call_1","type":"function","function":{"name":"read_post","arguments":"{}"},"custom":{"name":"delete_post"}}`))),
		"legacy function_call": chattest.Chunk(chattest.DeltaChoice(0, `{"role":"assistant","function_call":{"name":"delete_post","arguments":""}}`)) + chattest.Chunk(chattest.DeltaChoice(0, `{"function_call":{"arguments":"{\"post\":7}"}}`)),
		"legacy name in parts": chattest.Chunk(chattest.DeltaChoice(0, `{"role":"assistant","function_call":{"name":"delete","arguments":""}}`)) + chattest.Chunk(chattest.DeltaChoice(0, `{"function_call":{"name":"_post"}}`)),
	}
	for name, evs := range chatStreams {
		in := evs + chattest.Chunk(chattest.FinishChoice(0, "tool_calls")) + "data: [DONE]\n\n"
		out, _, err := rewriteStream([]byte(in), providertest.NewHolder("delete_post").Passing("read_post"))
		if err == nil || providertest.NodeSees(out, "delete_post") {
			t.Errorf("chat stream, %s: not refused (%v); the app reads %s", name, err, out)
		}
	}

	const anthEnv = `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"Deleting."},`
	anthJSON := map[string]string{
		"unknown type": `{"type":"tool_call","id":"toolu_1","name":"delete_post","input":{"post":7}}`,
		"text block":   `{"type":"text","text":"","id":"toolu_1","name":"delete_post","input":{"post":7}}`,
	}
	for name, block := range anthJSON {
		body := anthEnv + block + `],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
		out, err := anthropicadapter.Anthropic{}.RewriteJSON(ctx, []byte(body), providertest.NewHolder("delete_post"))
		if err == nil {
			t.Errorf("anthropic json, %s: not refused; the app reads %s", name, out)
		}
		in := anthropictest.Start("msg_1") + anthropictest.TextBlockEvs(0, "Deleting.") +
			anthropictest.Ev(`{"type":"content_block_start","index":1,"content_block":`+block+`}`) + anthropictest.Ev(`{"type":"content_block_stop","index":1}`) + anthropictest.End("end_turn", 3)
		sout, _, err := anthRewrite([]byte(in), providertest.NewHolder("delete_post"))
		if err == nil || providertest.NodeSees(sout, "delete_post") {
			t.Errorf("anthropic stream, %s: not refused (%v); the app reads %s", name, err, sout)
		}
	}

	respJSON := `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4o","output":[{"id":"fc_1","type":"function_call_v2","status":"completed","arguments":"{\"post\":7}","call_id":"call_1","name":"delete_post"}],"usage":null}`
	if out, err := (responsesadapter.Responses{}).RewriteJSON(ctx, []byte(respJSON), providertest.NewHolder("delete_post")); err == nil {
		t.Errorf("responses json, unknown type: not refused; the app reads %s", out)
	}
	syn := responsestest.NewSyn().Text("msg_1", "Deleting.")
	syn.Ev(`{"type":"response.output_item.added","sequence_number":SEQ,"output_index":1,"item":{"id":"fc_1","type":"tool_call","status":"in_progress","arguments":"{}","call_id":"call_1","name":"delete_post"}}`)
	syn.Items = append(syn.Items, `{"id":"fc_1","type":"tool_call","status":"completed","arguments":"{}","call_id":"call_1","name":"delete_post"}`)
	in := syn.Completed()
	if out, err := respRewrite([]byte(in), providertest.NewHolder("delete_post")); err == nil || providertest.NodeSees(out, "delete_post") {
		t.Errorf("responses stream, unknown type: not refused (%v); the app reads %s", err, out)
	}
}

// A call the provider runs on its own side (Anthropic's server_tool_use
// and mcp_tool_use blocks, Responses' mcp_call and mcp_approval_request
// items) is refused when it names a gated tool: the SDKs hand it to the app
// as a call object with that name (anthropic-sdk-go's ContentBlockUnion,
// openai-go's ResponseOutputItemUnion), and an app must never be handed an
// object naming a gated action. The provider's real tools (web_search,
// code_execution, an MCP server's own) keep passing byte for byte.
func TestProviderSideCalls(t *testing.T) {
	ctx := context.Background()
	anthBlocks := func(name string) map[string]string {
		return map[string]string{
			"server_tool_use": `{"type":"server_tool_use","id":"srvtoolu_1","name":"` + name + `","input":{"query":"weather"}}`,
			"mcp_tool_use":    `{"type":"mcp_tool_use","id":"mcptoolu_1","name":"` + name + `","server_name":"blog","input":{"post":7}}`,
		}
	}
	respItems := func(name string) map[string]string {
		return map[string]string{
			"mcp_call":             `{"id":"mcp_1","type":"mcp_call","status":"completed","arguments":"{\"post\":7}","name":"` + name + `","server_label":"blog","output":"ok"}`,
			"mcp_approval_request": `{"id":"mcpr_1","type":"mcp_approval_request","arguments":"{\"post\":7}","name":"` + name + `","server_label":"blog"}`,
		}
	}
	const anthEnv = `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[`
	const anthTail = `],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
	const respEnv = `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4o","output":[`
	const respTail = `],"usage":null}`
	anthStream := func(block string) string {
		return anthropictest.Start("msg_1") + anthropictest.Ev(`{"type":"content_block_start","index":0,"content_block":`+block+`}`) +
			anthropictest.Ev(`{"type":"content_block_stop","index":0}`) + anthropictest.End("end_turn", 3)
	}
	respStream := func(item string) string {
		syn := responsestest.NewSyn()
		syn.Ev(`{"type":"response.output_item.added","sequence_number":SEQ,"output_index":0,"item":%s}`, item)
		syn.Ev(`{"type":"response.output_item.done","sequence_number":SEQ,"output_index":0,"item":%s}`, item)
		syn.Items = append(syn.Items, item)
		return syn.Completed()
	}

	for typ, block := range anthBlocks("delete_post") {
		if out, err := (anthropicadapter.Anthropic{}).RewriteJSON(ctx, []byte(anthEnv+block+anthTail), providertest.NewHolder("delete_post")); err == nil {
			t.Errorf("anthropic json, %s naming a gated tool: not refused; the app reads %s", typ, out)
		}
		if out, _, err := anthRewrite([]byte(anthStream(block)), providertest.NewHolder("delete_post")); err == nil || providertest.NodeSees(out, "delete_post") {
			t.Errorf("anthropic stream, %s naming a gated tool: not refused (%v); the app reads %s", typ, err, out)
		}
	}
	for typ, item := range respItems("delete_post") {
		if out, err := (responsesadapter.Responses{}).RewriteJSON(ctx, []byte(respEnv+item+respTail), providertest.NewHolder("delete_post")); err == nil {
			t.Errorf("responses json, %s naming a gated tool: not refused; the app reads %s", typ, out)
		}
		if out, err := respRewrite([]byte(respStream(item)), providertest.NewHolder("delete_post")); err == nil || providertest.NodeSees(out, "delete_post") {
			t.Errorf("responses stream, %s naming a gated tool: not refused (%v); the app reads %s", typ, err, out)
		}
	}

	for typ, block := range anthBlocks("web_search") {
		body := anthEnv + block + anthTail
		if out, err := (anthropicadapter.Anthropic{}).RewriteJSON(ctx, []byte(body), providertest.NewHolder("delete_post")); err != nil || string(out) != body {
			t.Errorf("anthropic json, %s of the provider's own tool: %v, %s", typ, err, out)
		}
		in := anthStream(block)
		if out, _, err := anthRewrite([]byte(in), providertest.NewHolder("delete_post")); err != nil || string(out) != in {
			t.Errorf("anthropic stream, %s of the provider's own tool: %v, %s", typ, err, out)
		}
	}
	for typ, item := range respItems("code_execution") {
		body := respEnv + item + respTail
		if out, err := (responsesadapter.Responses{}).RewriteJSON(ctx, []byte(body), providertest.NewHolder("delete_post")); err != nil || string(out) != body {
			t.Errorf("responses json, %s of the provider's own tool: %v, %s", typ, err, out)
		}
		in := respStream(item)
		if out, err := respRewrite([]byte(in), providertest.NewHolder("delete_post")); err != nil || string(out) != in {
			t.Errorf("responses stream, %s of the provider's own tool: %v, %s", typ, err, out)
		}
	}
}

// A stream the gate stops ends with an error event every SDK reports as
// an error, not with a clean end the app would take for a whole answer.
func TestStoppedStreamsEndWithAnError(t *testing.T) {
	legacy := chattest.Chunk(chattest.DeltaChoice(0, `{"role":"assistant","function_call":{"name":"delete_post","arguments":""}}`)) + chattest.Chunk(chattest.FinishChoice(0, "function_call")) + "data: [DONE]\n\n"
	out, _, err := rewriteStream([]byte(legacy), providertest.NewHolder("delete_post"))
	if err == nil {
		t.Fatal("chat: not stopped")
	}
	cs := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(sseResponse(out)), nil)
	for cs.Next() {
	}
	if cs.Err() == nil || !strings.Contains(cs.Err().Error(), "Toolgate") {
		t.Errorf("chat: openai-go reads no error (%v) from %s", cs.Err(), out)
	}

	anth := anthropictest.Start("msg_1") + anthropictest.Ev(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_call","id":"toolu_1","name":"delete_post","input":{}}}`) + anthropictest.End("end_turn", 1)
	aout, _, err := anthRewrite([]byte(anth), providertest.NewHolder("delete_post"))
	if err == nil {
		t.Fatal("anthropic: not stopped")
	}
	as := anthssestream.NewStream[anthropic.MessageStreamEventUnion](anthssestream.NewDecoder(sseResponse(aout)), nil)
	for as.Next() {
	}
	if as.Err() == nil || !strings.Contains(as.Err().Error(), "Toolgate") {
		t.Errorf("anthropic: anthropic-sdk-go reads no error (%v) from %s", as.Err(), aout)
	}

	syn := responsestest.NewSyn()
	syn.Ev(`{"type":"response.output_item.added","sequence_number":SEQ,"output_index":0,"item":{"id":"fc_1","type":"tool_call","status":"in_progress","arguments":"{}","call_id":"call_1","name":"delete_post"}}`)
	rout, err := respRewrite([]byte(syn.Completed()), providertest.NewHolder("delete_post"))
	if err == nil {
		t.Fatal("responses: not stopped")
	}
	rs := ssestream.NewStream[responses.ResponseStreamEventUnion](ssestream.NewDecoder(sseResponse(rout)), nil)
	for rs.Next() {
	}
	if rs.Err() == nil || !strings.Contains(rs.Err().Error(), "Toolgate") {
		t.Errorf("responses: openai-go reads no error (%v) from %s", rs.Err(), rout)
	}
}

func sseResponse(body []byte) *http.Response {
	return &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))}
}
