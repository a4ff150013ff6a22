package chat

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider/chat/chattest"
	"github.com/toolgate/toolgate/provider/providertest"
)

// refusal is the tool result a refused call's Holder answers with.
const refusal = "Toolgate refused send_email: the field to (required, an email address) is missing. Nothing ran."

func TestVerdictPassJSON(t *testing.T) {
	body := fixture(t, "json-parallel-tools.json")
	// Both calls inspected: the weather call passes, the stock call is held.
	h := providertest.NewHolder("get_stock_price").Passing("GetWeatherArgs")
	out, err := Chat{}.RewriteJSON(context.Background(), body, h)
	if err != nil {
		t.Fatal(err)
	}
	checkEnvelope(t, body, out)
	weather := gjson.GetBytes(body, "choices.0.message.tool_calls.0").Raw
	if gjson.GetBytes(out, "choices.0.message.tool_calls").Raw != "["+weather+"]" {
		t.Errorf("tool_calls = %s, want the passed call byte for byte", gjson.GetBytes(out, "choices.0.message.tool_calls").Raw)
	}
	if ch := chattest.DecodeCompletion(t, out).Choices[0]; ch.Message.Content != waitText || ch.FinishReason != "tool_calls" {
		t.Errorf("choice = %+v", ch)
	}
	if len(h.Holds()) != 1 || len(h.Holds()[0].Calls) != 2 {
		t.Errorf("holds = %+v", h.Holds())
	}

	// Every call passes, no text: the same slice.
	out, err = Chat{}.RewriteJSON(context.Background(), body, providertest.NewHolder().Passing("GetWeatherArgs", "get_stock_price"))
	if err != nil || &out[0] != &body[0] || len(out) != len(body) {
		t.Errorf("all passed: err %v, not the same slice", err)
	}
}

func TestVerdictPassStream(t *testing.T) {
	// A call that passes unread (get_post), a held one (delete_post) and
	// an inspected one that passes (update_post), interleaved.
	in := strings.Join([]string{
		chattest.Chunk(chattest.DeltaChoice(0, `{"role":"assistant","content":null}`)),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_upd", "update_post")))),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(1, "call_del", "delete_post"), chattest.ToolArgs(0, `{"post":`)))),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(2, "call_get", "get_post")))),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(2, `{"post": 8}`), chattest.ToolArgs(1, `{"post": 7}`), chattest.ToolArgs(0, ` 9, "title": "T"}`)))),
		chattest.Chunk(chattest.FinishChoice(0, "tool_calls")),
		chattest.UsageChunk,
		"data: [DONE]\n\n",
	}, "")
	h := providertest.NewHolder("delete_post").Passing("update_post")
	out, _, err := rewriteStream([]byte(in), h, 7)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("call_del")) {
		t.Error("the held call reached the app")
	}
	calls := chattest.OutputCalls(t, out)
	if len(calls) != 2 || len(calls[1]) != 1 {
		t.Fatalf("output calls = %v: want get_post at 0, update_post whole at 1", calls)
	}
	whole := gjson.Parse(calls[1][0])
	if whole.Get("id").Str != "call_upd" || whole.Get("type").Str != "function" || whole.Get("function.name").Str != "update_post" ||
		whole.Get("function.arguments").Str != `{"post": 9, "title": "T"}` {
		t.Errorf("passed call delta = %s", calls[1][0])
	}
	acc := chattest.Accumulate(t, out)
	c := acc.Choices[0]
	if len(c.Message.ToolCalls) != 2 || c.Message.ToolCalls[0].ID != "call_get" || c.Message.ToolCalls[1].ID != "call_upd" ||
		c.Message.ToolCalls[1].Function.Arguments != `{"post": 9, "title": "T"}` || c.Message.ToolCalls[1].Type != "function" {
		t.Errorf("tool calls = %+v", c.Message.ToolCalls)
	}
	if c.Message.Content != waitText || c.FinishReason != "tool_calls" {
		t.Errorf("choice = %+v", c)
	}
	// The whole call comes after the text, before the finish chunk.
	text, call, finish := bytes.Index(out, []byte(`"content":"Waiting`)), bytes.Index(out, []byte(`"id":"call_upd"`)), bytes.Index(out, []byte(`"finish_reason":"tool_calls"`))
	if text < 0 || call < text || finish < call {
		t.Errorf("order: text %d, call %d, finish %d", text, call, finish)
	}
}

func TestVerdictPassStreamFixture(t *testing.T) {
	h := providertest.NewHolder().Passing("GetWeatherArgs")
	out, _, err := rewriteStream(fixture(t, "stream-one-tool-1.sse"), h)
	if err != nil {
		t.Fatal(err)
	}
	acc := chattest.Accumulate(t, out)
	c := acc.Choices[0]
	if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != "call_c91SqDXlYFuETYv8mUHzz6pp" ||
		c.Message.ToolCalls[0].Function.Arguments != `{"city":"Edinburgh","country":"UK","units":"c"}` ||
		c.Message.ToolCalls[0].Function.Name != "GetWeatherArgs" || c.FinishReason != "tool_calls" || c.Message.Content != "" {
		t.Errorf("choice = %+v", c)
	}
	if acc.Usage.TotalTokens != 100 {
		t.Errorf("usage = %+v", acc.Usage)
	}

	// Parallel calls, both inspected: one passes, one is held.
	h = providertest.NewHolder("get_stock_price").Passing("GetWeatherArgs")
	out, _, err = rewriteStream(fixture(t, "stream-parallel-tools.sse"), h, 5)
	if err != nil {
		t.Fatal(err)
	}
	c = chattest.Accumulate(t, out).Choices[0]
	if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != weatherID || c.Message.ToolCalls[0].Function.Arguments != weatherArgs ||
		c.Message.Content != waitText || c.FinishReason != "tool_calls" {
		t.Errorf("choice = %+v", c)
	}
	if bytes.Contains(out, []byte(stockID)) {
		t.Error("the held call reached the app")
	}
}

func TestRefusalInPlaceWithoutTurn(t *testing.T) {
	h := providertest.NewHolder().Refusing("GetWeatherArgs", refusal)
	out, _, err := rewriteStream(fixture(t, "stream-one-tool-1.sse"), h)
	if err != nil {
		t.Fatal(err)
	}
	if c := chattest.Accumulate(t, out).Choices[0]; c.Message.Content != refusal || c.FinishReason != "stop" || len(c.Message.ToolCalls) != 0 {
		t.Errorf("choice = %+v", c)
	}
	js, err := Chat{}.RewriteJSON(context.Background(), fixture(t, "json-one-tool.json"), h)
	if err != nil {
		t.Fatal(err)
	}
	if c := chattest.DecodeCompletion(t, js).Choices[0]; c.Message.Content != refusal || c.FinishReason != "stop" {
		t.Errorf("choice = %+v", c)
	}
}
