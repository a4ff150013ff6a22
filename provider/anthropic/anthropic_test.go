package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/anthropic/anthropictest"
	"github.com/toolgate/toolgate/provider/providertest"
)

func anthFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fixtures", "anthropic", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var anthSSEFixtures = []string{"stream-1.sse", "stream-2.sse", "stream-json-tool-no-text.sse", "stream-json-tool-text-first.sse", "stream-tool-no-args.sse"}

// The call each tool fixture makes.
var anthFixtureCalls = map[string]struct{ id, name, input string }{
	"stream-1.sse":                    {"toolu_01RaX2WYWRWCbaeFHssmGJXG", "get_weather", `{"city": "San Francisco", "units": "fahrenheit"}`},
	"stream-json-tool-no-text.sse":    {"toolu_01KFbKqPYSuAKujiL6mTfzYA", "json", `{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]}`},
	"stream-json-tool-text-first.sse": {"toolu_01KFbKqPYSuAKujiL6mTfzYA", "json", `{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]}`},
	"stream-tool-no-args.sse":         {"toolu_01QE1WLsSVp5hy5Q3GmGTmjP", "updateIssueList", `{}`},
}

// anthRewrite runs in through an Anthropic stream, written in pieces of
// the given sizes (cycled; all at once if none), and returns what came out.
func anthRewrite(in []byte, h provider.Holder, sizes ...int) (out []byte, flushes int, err error) {
	return providertest.Rewrite(func(dst io.Writer, flush func() error) provider.Stream {
		return Anthropic{}.NewStream(context.Background(), dst, flush, h)
	}, in, sizes...)
}

func TestAnthropicStreamPassesStreamsWithoutGatedCalls(t *testing.T) {
	for _, name := range anthSSEFixtures {
		in := anthFixture(t, name)
		crlf := bytes.ReplaceAll(in, []byte("\n"), []byte("\r\n"))
		for _, tc := range []struct {
			variant string
			in      []byte
		}{{"lf", in}, {"crlf", crlf}} {
			t.Run(name+"/"+tc.variant, func(t *testing.T) {
				h := providertest.NewHolder("delete_post")
				out, flushes, err := anthRewrite(tc.in, h)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out, tc.in) {
					t.Errorf("output differs from input:\n%s", out)
				}
				if len(h.Holds()) != 0 || flushes != 1 {
					t.Errorf("Hold called %d times, %d flushes", len(h.Holds()), flushes)
				}
				// Event by event, as a proxy relays them.
				var buf bytes.Buffer
				s := Anthropic{}.NewStream(context.Background(), &buf, nil, h)
				for _, ev := range providertest.Events(tc.in) {
					if _, err := s.Write(ev); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Close(); err != nil || !bytes.Equal(buf.Bytes(), tc.in) {
					t.Errorf("event by event: %v, output differs", err)
				}
			})
		}
	}
}

func TestAnthropicStreamHoldsOnlyCall(t *testing.T) {
	for name, call := range anthFixtureCalls {
		t.Run(name, func(t *testing.T) {
			in := anthFixture(t, name)
			h := providertest.NewHolder(call.name)
			out, _, err := anthRewrite(in, h)
			if err != nil {
				t.Fatal(err)
			}
			m := anthropictest.Accumulate(t, out)
			if uses := anthropictest.ToolUses(m); len(uses) != 0 {
				t.Errorf("tool_use blocks reached the app: %v", uses)
			}
			if m.StopReason != "end_turn" {
				t.Errorf("stop_reason = %q, want end_turn", m.StopReason)
			}
			texts := anthropictest.Texts(m)
			last := texts[len(texts)-1]
			wantText := waitText
			if len(texts) > 1 {
				wantText = "\n\n" + waitText // after the model's own text
			}
			if last != wantText || len(m.Content) != len(texts) {
				t.Errorf("content = %+v, want the waiting text last", texts)
			}
			// The text block stands at the held block's index.
			upstreamIndex := anthToolIndex(t, in)
			if int64(len(m.Content)-1) != upstreamIndex {
				t.Errorf("text block at %d, the call was at %d", len(m.Content)-1, upstreamIndex)
			}
			anthropictest.NoLeak(t, out, call.id, "input_json_delta", `"tool_use"`)
			if call.name != "json" {
				anthropictest.NoLeak(t, out, call.name)
			}
			if call.input != "{}" {
				anthropictest.NoLeak(t, out, "fahrenheit", `\"city`, "elements", "sunny")
			}
			// Everything else passed: ping, usage, padding.
			if bytes.Count(out, []byte("event: ping")) != bytes.Count(in, []byte("event: ping")) {
				t.Errorf("pings lost")
			}
			if !bytes.Contains(out, bytes.Split(in, []byte("\n"))[1]) {
				t.Errorf("message_start changed")
			}
			if usage := gjson.Get(string(out[bytes.Index(out, []byte(`{"type":"message_delta"`)):]), "usage").Raw; !strings.Contains(string(in), usage) {
				t.Errorf("usage changed: %s", usage)
			}

			// What Hold got.
			if len(h.Holds()) != 1 || len(h.Holds()[0].Calls) != 1 {
				t.Fatalf("holds = %+v", h.Holds())
			}
			c := h.Holds()[0].Calls[0]
			if c.ID != call.id || c.Name != call.name || string(c.Arguments) != call.input || c.Type != "function" || c.Position != 0 {
				t.Errorf("call = %+v (%s)", c, c.Arguments)
			}
			wantRaw := `{"type":"tool_use","id":"` + call.id + `","name":"` + call.name + `","input":` + call.input + `}`
			if string(c.Raw) != wantRaw {
				t.Errorf("Raw = %s\nwant  %s", c.Raw, wantRaw)
			}
			msg := h.Holds()[0].Message
			if gjson.GetBytes(msg, "role").Str != "assistant" || !gjson.ValidBytes(msg) {
				t.Fatalf("message = %s", msg)
			}
			blocks := gjson.GetBytes(msg, "content").Array()
			if len(blocks) != len(texts) || blocks[len(blocks)-1].Raw != wantRaw {
				t.Errorf("message content = %s", gjson.GetBytes(msg, "content").Raw)
			}
			if len(blocks) > 1 && blocks[0].Get("text").Str != texts[0] {
				t.Errorf("message text = %q, the app read %q", blocks[0].Get("text").Str, texts[0])
			}
		})
	}
}

// anthToolIndex is the index of the first tool_use block of a stream.
func anthToolIndex(t *testing.T, in []byte) int64 {
	t.Helper()
	var s anthStream
	for _, ev := range providertest.Events(in) {
		data, _ := s.Data(ev)
		if gjson.GetBytes(data, "content_block.type").Str == "tool_use" {
			return gjson.GetBytes(data, "index").Int()
		}
	}
	t.Fatal("no tool_use block")
	return -1
}

// Synthetic streams.

const anthPing = "event: ping\ndata: {\"type\": \"ping\"}\n\n"

func TestAnthropicStreamTwoCallsOneHeld(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // block types/ids in the app's message
		position int      // the held call's among the message's tool_use blocks
	}{
		{"held first", anthropictest.Start("msg_1") + anthropictest.TextBlockEvs(0, "Doing", " both.") +
			anthropictest.ToolEvs(1, "toolu_del", "delete_post", `{"po`, `st": 7}`) + anthPing +
			anthropictest.ToolEvs(2, "toolu_get", "get_post", `{"post"`, `: 8}`) + anthropictest.End("tool_use", 40),
			[]string{"text", "text:wait", "tool_use:toolu_get"}, 0},
		{"held second", anthropictest.Start("msg_1") + anthropictest.TextBlockEvs(0, "Doing both.") +
			anthropictest.ToolEvs(1, "toolu_get", "get_post", `{"post": 8}`) +
			anthropictest.ToolEvs(2, "toolu_del", "delete_post", `{"post": 7}`) + anthropictest.End("tool_use", 40),
			[]string{"text", "tool_use:toolu_get", "text:wait"}, 1},
		{"no text", anthropictest.Start("msg_1") +
			anthropictest.ToolEvs(0, "toolu_del", "delete_post", `{"post": 7}`) +
			anthropictest.ToolEvs(1, "toolu_get", "get_post", `{"post": 8}`) + anthropictest.End("tool_use", 40),
			[]string{"text:wait", "tool_use:toolu_get"}, 0},
		{"text after the call", anthropictest.Start("msg_1") +
			anthropictest.ToolEvs(0, "toolu_del", "delete_post", `{"post": 7}`) +
			anthropictest.TextBlockEvs(1, "Then more.") + anthropictest.End("tool_use", 40),
			[]string{"text:wait", "text"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := providertest.NewHolder("delete_post")
			out, _, err := anthRewrite([]byte(tc.in), h)
			if err != nil {
				t.Fatal(err)
			}
			m := anthropictest.Accumulate(t, out)
			var got []string
			for _, b := range m.Content {
				d := b.Type
				switch {
				case b.Type == "tool_use":
					d += ":" + b.ID
					if b.ID == "toolu_get" && string(b.Input) != `{"post": 8}` {
						t.Errorf("passed call's input = %s", b.Input)
					}
				case strings.HasSuffix(b.Text, waitText):
					d += ":wait"
				}
				got = append(got, d)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("content = %v, want %v", got, tc.want)
			}
			wantReason := anthropic.StopReasonToolUse
			if !strings.Contains(tc.in, "toolu_get") {
				wantReason = anthropic.StopReasonEndTurn
			}
			if m.StopReason != wantReason {
				t.Errorf("stop_reason = %q", m.StopReason)
			}
			anthropictest.NoLeak(t, out, "toolu_del", "delete_post", `{"po`, `\"post\": 7`)
			if len(h.Holds()) != 1 || len(h.Holds()[0].Calls) != 1 || string(h.Holds()[0].Calls[0].Arguments) != `{"post": 7}` {
				t.Fatalf("holds = %+v", h.Holds())
			}
			// The message holds every block, the passed call too, in order.
			msg := h.Holds()[0].Message
			var ids []string
			gjson.GetBytes(msg, "content").ForEach(func(_, b gjson.Result) bool {
				ids = append(ids, b.Get("type").Str+":"+b.Get("id").Str)
				return true
			})
			if n := strings.Count(strings.Join(ids, " "), "tool_use:"); n != strings.Count(tc.in, `"type":"tool_use"`) {
				t.Errorf("message blocks = %v", ids)
			}
			if c := h.Holds()[0].Calls[0]; c.Position != tc.position {
				t.Errorf("position = %d, want %d", c.Position, tc.position)
			}
		})
	}
}

func TestAnthropicStreamPassedAfterInspection(t *testing.T) {
	in := anthropictest.Start("msg_1") + anthropictest.TextBlockEvs(0, "Reading.") +
		anthropictest.ToolEvs(1, "toolu_get", "get_post", `{"po`, `st": 8}`) +
		anthropictest.ToolEvs(2, "toolu_del", "delete_post", `{"post": 7}`) + anthropictest.End("tool_use", 40)
	h := providertest.NewHolder("delete_post").Passing("get_post")
	out, _, err := anthRewrite([]byte(in), h)
	if err != nil {
		t.Fatal(err)
	}
	m := anthropictest.Accumulate(t, out)
	if uses := anthropictest.ToolUses(m); len(uses) != 1 || uses[0] != [3]string{"toolu_get", "get_post", `{"post": 8}`} {
		t.Errorf("tool uses = %v", uses)
	}
	if len(m.Content) != 3 || m.Content[1].Type != "tool_use" || m.Content[2].Text != "\n\n"+waitText || m.StopReason != "tool_use" {
		t.Errorf("content = %+v, stop %q", m.Content, m.StopReason)
	}
	// Written whole: one start, one delta with the whole input, one stop.
	if !strings.Contains(string(out), "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_get\",\"name\":\"get_post\",\"input\":{}}}\n\n"+
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"post\\\": 8}\"}}\n\n"+
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n") {
		t.Errorf("passed call not written whole:\n%s", out)
	}
	if len(h.Holds()[0].Calls) != 2 || h.Holds()[0].Calls[0].Position != 0 || h.Holds()[0].Calls[1].Position != 1 {
		t.Errorf("calls = %+v", h.Holds()[0].Calls)
	}

	// Every call passed and no text: the message as the provider sent it.
	h = providertest.NewHolder().Passing("delete_post", "get_post")
	out, _, err = anthRewrite([]byte(in), h)
	if err != nil {
		t.Fatal(err)
	}
	m = anthropictest.Accumulate(t, out)
	if uses := anthropictest.ToolUses(m); len(uses) != 2 || uses[1] != [3]string{"toolu_del", "delete_post", `{"post": 7}`} || m.StopReason != "tool_use" || len(m.Content) != 3 {
		t.Errorf("tool uses = %v, stop %q", uses, m.StopReason)
	}
}

// A thinking block, a redacted_thinking block, then a held call: Hold gets
// them verbatim, with their signatures, as a request must echo them.
const (
	anthThinking  = "The person wants post 7 gone. Deleting is destructive."
	anthSignature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
	anthRedacted  = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
)

func anthThinkingStream() string {
	return anthropictest.Start("msg_t") +
		anthropictest.Ev(`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`) +
		anthropictest.Ev(`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The person wants post 7 gone."}}`) +
		anthropictest.Ev(`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" Deleting is destructive."}}`) +
		anthropictest.Ev(`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"`+anthSignature+`"}}`) +
		anthropictest.Ev(`{"type":"content_block_stop","index":0}`) +
		anthropictest.Ev(`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"`+anthRedacted+`"}}`) +
		anthropictest.Ev(`{"type":"content_block_stop","index":1}`) +
		anthropictest.TextBlockEvs(2, "I'll delete", " it.") +
		anthropictest.ToolEvs(3, "toolu_del", "delete_post", `{"post":`, `7}`) + anthropictest.End("tool_use", 60)
}

const anthThinkingContent = `[{"type":"thinking","thinking":"` + anthThinking + `","signature":"` + anthSignature + `"},` +
	`{"type":"redacted_thinking","data":"` + anthRedacted + `"},` +
	`{"type":"text","text":"I'll delete it."},` +
	`{"type":"tool_use","id":"toolu_del","name":"delete_post","input":{"post":7}}]`

func TestAnthropicStreamThinkingThenHeldCall(t *testing.T) {
	h := providertest.NewHolder("delete_post")
	out, _, err := anthRewrite([]byte(anthThinkingStream()), h)
	if err != nil {
		t.Fatal(err)
	}
	m := anthropictest.Accumulate(t, out)
	if len(m.Content) != 4 || m.Content[0].Thinking != anthThinking || m.Content[0].Signature != anthSignature ||
		m.Content[1].Data != anthRedacted || m.Content[3].Text != "\n\n"+waitText || m.StopReason != "end_turn" {
		t.Errorf("message = %+v", m.Content)
	}
	want := `{"role":"assistant","content":` + anthThinkingContent + `}`
	if got := string(h.Holds()[0].Message); got != want {
		t.Errorf("message =\n%s\nwant\n%s", got, want)
	}
	anthropictest.NoLeak(t, out, "toolu_del", "delete_post")
}

// Data split over several lines (as SSE allows) is read joined, and
// written back over several lines, never as one broken line.
func TestAnthropicStreamMultiLineData(t *testing.T) {
	in := anthropictest.Start("msg_1") + anthropictest.TextBlockEvs(0, "Hi.") +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\ndata: \"content_block\":{\"type\":\"tool_use\",\ndata: \"id\":\"toolu_get\",\"name\":\"get_post\",\"input\":{}}}\n\n" +
		anthropictest.ToolEvs(2, "toolu_del", "delete_post", `{}`) +
		anthropictest.Ev(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"post\": 8}"}}`) +
		anthropictest.Ev(`{"type":"content_block_stop","index":1}`) +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\ndata: \"stop_sequence\":null},\"usage\":{\"output_tokens\":9}}\n\n" + anthropictest.Ev(`{"type":"message_stop"}`)
	for _, h := range []*providertest.Holder{providertest.NewHolder("delete_post"), providertest.NewHolder("delete_post").Passing("get_post")} {
		out, _, err := anthRewrite([]byte(in), h)
		if err != nil {
			t.Fatal(err)
		}
		m := anthropictest.Accumulate(t, out)
		if uses := anthropictest.ToolUses(m); len(uses) != 1 || uses[0] != [3]string{"toolu_get", "get_post", `{"post": 8}`} || m.StopReason != "tool_use" || len(m.Content) != 3 {
			t.Errorf("tool uses %v, stop %q, content %+v\n%s", uses, m.StopReason, m.Content, out)
		}
	}
}

func TestAnthropicStreamNoArgsPassed(t *testing.T) {
	in := anthFixture(t, "stream-tool-no-args.sse")
	h := providertest.NewHolder().Passing("updateIssueList")
	out, _, err := anthRewrite(in, h)
	if err != nil {
		t.Fatal(err)
	}
	m := anthropictest.Accumulate(t, out)
	if uses := anthropictest.ToolUses(m); len(uses) != 1 || uses[0] != [3]string{"toolu_01QE1WLsSVp5hy5Q3GmGTmjP", "updateIssueList", "{}"} || m.StopReason != "tool_use" {
		t.Errorf("tool uses = %v, stop %q", uses, m.StopReason)
	}
	if string(h.Holds()[0].Calls[0].Arguments) != "{}" {
		t.Errorf("arguments = %q", h.Holds()[0].Calls[0].Arguments)
	}
}

func TestAnthropicStreamIgnoresSplits(t *testing.T) {
	in := anthFixture(t, "stream-1.sse")
	want, _, err := anthRewrite(in, providertest.NewHolder("get_weather"))
	if err != nil {
		t.Fatal(err)
	}
	for cut := 1; cut < len(in); cut++ {
		var buf bytes.Buffer
		s := Anthropic{}.NewStream(context.Background(), &buf, nil, providertest.NewHolder("get_weather"))
		if _, err := s.Write(in[:cut]); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(in[cut:]); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("split at %d changed the output:\n%s", cut, buf.Bytes())
		}
	}
	for _, size := range []int{1, 2, 3, 7, 64} {
		out, _, err := anthRewrite([]byte(anthThinkingStream()), providertest.NewHolder("delete_post"), size)
		whole, _, _ := anthRewrite([]byte(anthThinkingStream()), providertest.NewHolder("delete_post"))
		if err != nil || !bytes.Equal(out, whole) {
			t.Errorf("pieces of %d: %v, output differs", size, err)
		}
	}
}

func TestAnthropicStreamRefusalInPlace(t *testing.T) {
	in := anthFixture(t, "stream-1.sse")
	h := providertest.NewHolder().Refusing("get_weather", "refused: city (a string)")
	out, _, err := anthRewrite(in, h)
	if err != nil {
		t.Fatal(err)
	}
	m := anthropictest.Accumulate(t, out)
	if texts := anthropictest.Texts(m); len(texts) != 2 || texts[1] != "\n\nrefused: city (a string)" || m.StopReason != "end_turn" {
		t.Errorf("texts = %q, stop %q", texts, m.StopReason)
	}
}

func TestAnthropicStreamFailsClosed(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"invalid JSON around tool_use", anthropictest.Start("m") + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\"\n\n"},
		{"invalid JSON while a call waits", anthropictest.Start("m") + anthropictest.ToolEvs(0, "toolu_del", "delete_post") + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"partial_json\":\"{\\\"po\n\n"},
		{"tool_use without a name", anthropictest.Start("m") + anthropictest.Ev(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","input":{}}}`)},
		{"two blocks at one index", anthropictest.Start("m") + anthropictest.ToolEvs(0, "toolu_del", "delete_post") + anthropictest.TextBlockEvs(0, "x")},
		{"unknown block while a call waits", anthropictest.Start("m") + anthropictest.ToolEvs(0, "toolu_del", "delete_post") + anthropictest.Ev(`{"type":"content_block_delta","index":5,"delta":{"type":"input_json_delta","partial_json":"x"}}`)},
		{"inspected call in message_start", anthropictest.Ev(`{"type":"message_start","message":{"content":[{"type":"tool_use","id":"t","name":"delete_post","input":{}}]}}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := providertest.NewHolder("delete_post")
			out, _, err := anthRewrite([]byte(tc.in), h)
			if err == nil {
				t.Errorf("no error; output:\n%s", out)
			}
			anthropictest.NoLeak(t, out, "toolu_del", `"t"`)
			if len(h.Holds()) != 0 {
				t.Errorf("Hold called")
			}
		})
	}
	// Over the limit held back.
	big := anthropictest.Start("m") + anthropictest.ToolEvs(0, "toolu_del", "delete_post", strings.Repeat("x", 1<<20))
	for range 9 {
		big += anthropictest.Ev(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"` + strings.Repeat("y", 1<<20) + `"}}`)
	}
	if _, _, err := anthRewrite([]byte(big), providertest.NewHolder("delete_post")); err == nil {
		t.Error("no error for 10 MiB held back")
	}
	// A stream that ends mid-line.
	if _, _, err := anthRewrite([]byte(anthropictest.Start("m")+"event: ping\ndata: {\"type\":\"ping\"}"), providertest.NewHolder()); err != errAnthMidLine {
		t.Errorf("err = %v", err)
	}
}

func TestAnthropicStreamEndsBeforeMessageDelta(t *testing.T) {
	// The call is never judged nor written.
	in := anthropictest.Start("m") + anthropictest.TextBlockEvs(0, "Hi.") + anthropictest.ToolEvs(1, "toolu_del", "delete_post", `{"post":7}`)
	h := providertest.NewHolder("delete_post")
	out, _, err := anthRewrite([]byte(in), h)
	if err != nil || len(h.Holds()) != 0 {
		t.Fatalf("err %v, holds %d", err, len(h.Holds()))
	}
	anthropictest.NoLeak(t, out, "toolu_del")
}

func TestAnthropicStreamFlushesBeforeHold(t *testing.T) {
	in := []byte(anthropictest.Start("m") + anthropictest.TextBlockEvs(0, "Hi.") + anthropictest.ToolEvs(1, "toolu_del", "delete_post", `{}`) + anthropictest.End("tool_use", 3))
	var buf bytes.Buffer
	var atHold int
	h := providertest.NewHolder("delete_post")
	flushed := 0
	s := Anthropic{}.NewStream(context.Background(), &buf, func() error { flushed = buf.Len(); return nil }, holdSpy{h, func() { atHold = flushed }})
	if _, err := s.Write(in); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if want := strings.Index(string(in), "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1"); atHold != want {
		t.Errorf("flushed %d bytes before Hold, want %d", atHold, want)
	}
}

type holdSpy struct {
	*providertest.Holder
	at func()
}

func (h holdSpy) Hold(ctx context.Context, calls []provider.Call, message []byte, kept provider.Kept) provider.Verdict {
	h.at()
	return h.Holder.Hold(ctx, calls, message, kept)
}

// JSON.

func TestAnthropicJSONPassesBodiesWithoutGatedCalls(t *testing.T) {
	body := anthFixture(t, "tool-no-args.json")
	for _, h := range []*providertest.Holder{providertest.NewHolder("delete_post"), providertest.NewHolder().Passing("updateIssueList")} {
		out, err := Anthropic{}.RewriteJSON(context.Background(), body, h)
		if err != nil || &out[0] != &body[0] {
			t.Errorf("err %v, or not the same slice", err)
		}
	}
	text := []byte(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	out, err := Anthropic{}.RewriteJSON(context.Background(), text, providertest.NewHolder("delete_post"))
	if err != nil || &out[0] != &text[0] {
		t.Errorf("err %v, or not the same slice", err)
	}
}

func TestAnthropicJSONHoldsOnlyCall(t *testing.T) {
	body := anthFixture(t, "tool-no-args.json")
	h := providertest.NewHolder("updateIssueList")
	out, err := Anthropic{}.RewriteJSON(context.Background(), body, h)
	if err != nil {
		t.Fatal(err)
	}
	var m anthropic.Message
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 2 || m.Content[1].Type != "text" || m.Content[1].Text != "\n\n"+waitText || m.StopReason != "end_turn" {
		t.Errorf("message = %+v, stop %q", m.Content, m.StopReason)
	}
	anthropictest.NoLeak(t, out, "toolu_01LRmxn9vGM1d2DZSDBowdZ1", `"name": "updateIssueList"`, `"tool_use"`)
	// Every byte outside content and stop_reason kept.
	ci := bytes.Index(body, []byte(`"content": [`))
	if !bytes.HasPrefix(out, body[:ci]) || !bytes.HasSuffix(out, body[bytes.Index(body, []byte(`,
  "stop_sequence"`)):]) {
		t.Errorf("envelope changed:\n%s", out)
	}
	c := h.Holds()[0].Calls[0]
	content := gjson.GetBytes(body, "content")
	if c.ID != "toolu_01LRmxn9vGM1d2DZSDBowdZ1" || string(c.Arguments) != "{}" || string(c.Raw) != content.Array()[1].Raw ||
		string(h.Holds()[0].Message) != `{"role":"assistant","content":`+content.Raw+`}` {
		t.Errorf("call %+v, message %s", c, h.Holds()[0].Message)
	}
}

func TestAnthropicJSONSynthetic(t *testing.T) {
	body := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":` + anthThinkingContent[:len(anthThinkingContent)-1] +
		`,{"type":"tool_use","id":"toolu_get","name":"get_post","input":{"post":8}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":20}}`)
	h := providertest.NewHolder("delete_post").Passing("get_post")
	out, err := Anthropic{}.RewriteJSON(context.Background(), body, h)
	if err != nil {
		t.Fatal(err)
	}
	var m anthropic.Message
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 5 || m.Content[3].Text != "\n\n"+waitText || m.Content[4].ID != "toolu_get" || m.StopReason != "tool_use" {
		t.Errorf("content = %+v", m.Content)
	}
	if gjson.GetBytes(out, "content.4").Raw != `{"type":"tool_use","id":"toolu_get","name":"get_post","input":{"post":8}}` {
		t.Errorf("passed block changed: %s", out)
	}
	if len(h.Holds()[0].Calls) != 2 || h.Holds()[0].Calls[1].Position != 1 {
		t.Errorf("calls = %+v", h.Holds()[0].Calls)
	}
	anthropictest.NoLeak(t, out, "toolu_del")
}

func TestAnthropicJSONInvalid(t *testing.T) {
	body := []byte(`{"content":[{"type":"tool_use","name":"delete_post"`)
	if _, err := (Anthropic{}).RewriteJSON(context.Background(), body, providertest.NewHolder("delete_post")); err == nil {
		t.Error("no error for invalid JSON naming tool_use")
	}
}

// Fuzzing.

// anthBlocked reports whether a tool_use block of a name h blocks (held
// or refused) is started anywhere in a rewritten stream, where a client
// reads blocks: a content_block_start's block, a message_start's content.
func anthBlocked(h *providertest.Holder, out []byte) bool {
	found := false
	var s anthStream
	for _, ev := range providertest.Events(out) {
		data, ok := s.Data(ev)
		if !ok || !gjson.ValidBytes(data) {
			continue
		}
		r := gjson.ParseBytes(data)
		var blocks []gjson.Result
		switch r.Get("type").Str {
		case "content_block_start":
			blocks = []gjson.Result{r.Get("content_block")}
		case "message_start":
			blocks = r.Get("message.content").Array()
		}
		for _, cb := range blocks {
			if cb.Get("type").Str == "tool_use" && h.Blocks(cb.Get("name").Str) {
				found = true
			}
		}
	}
	return found
}

func anthFuzzHolder() *providertest.Holder {
	return providertest.NewHolder("get_weather", "delete_post").Passing("json").Refusing("updateIssueList", "refused: nothing (none)")
}

func FuzzAnthropicStream(f *testing.F) {
	for _, name := range anthSSEFixtures {
		f.Add(anthFixture(f, name), []byte{0})
		f.Add(anthFixture(f, name), []byte{3, 200, 17})
		for _, v := range providertest.CRVariants(anthFixture(f, name)) {
			f.Add(v, []byte{7})
		}
	}
	f.Add([]byte(anthThinkingStream()), []byte{5})
	f.Fuzz(func(t *testing.T, in []byte, splits []byte) {
		sizes := make([]int, len(splits))
		for i, b := range splits {
			sizes[i] = int(b) + 1
		}
		h := anthFuzzHolder()
		whole, _, werr := anthRewrite(in, h)
		split, _, serr := anthRewrite(in, anthFuzzHolder(), sizes...)
		if !bytes.Equal(whole, split) || (werr == nil) != (serr == nil) {
			t.Fatalf("splits changed the output:\n%q (%v)\n%q (%v)", whole, werr, split, serr)
		}
		if !hasToolUse(in) && !providertest.PassedAsRead(in, whole) {
			t.Fatalf("a stream without tool_use changed:\n%q\n%q", in, whole)
		}
		if anthBlocked(h, whole) {
			t.Fatalf("a held or refused call got through:\n%q", whole)
		}
	})
}

func FuzzAnthropicJSON(f *testing.F) {
	f.Add(anthFixture(f, "tool-no-args.json"))
	f.Add([]byte(`{"content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"x"}},{"type":"tool_use","id":"t2","name":"json","input":{}}],"stop_reason":"tool_use"}`))
	f.Add([]byte(`{"content":[{"type":"tool_use","id":"t1","name":"updateIssueList","input":{}},{"type":"tool_use","id":"t2","name":"delete_post","input":{}}],"stop_reason":"tool_use","usage":{}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		h := anthFuzzHolder()
		out, err := Anthropic{}.RewriteJSON(context.Background(), body, h)
		if err != nil {
			return
		}
		if !hasToolUse(body) && !bytes.Equal(out, body) {
			t.Fatal("a body without tool_use changed")
		}
		if bytes.Equal(out, body) {
			return
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("invalid output %q", out)
		}
		gjson.GetBytes(out, "content").ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str == "tool_use" && h.Blocks(b.Get("name").Str) {
				t.Fatalf("a held or refused call got through: %s", out)
			}
			return true
		})
	})
}

// Benchmarks: the pass-through paths.

func anthTextStream(n int) []byte {
	var b strings.Builder
	b.WriteString(anthropictest.Start("msg_bench"))
	b.WriteString(anthropictest.Ev(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`))
	for i := range n {
		if i%50 == 25 {
			b.WriteString(anthPing)
		}
		b.WriteString(anthropictest.Ev(fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word%d"}}`, i)))
	}
	b.WriteString(anthropictest.Ev(`{"type":"content_block_stop","index":0}`))
	b.WriteString(anthropictest.End("end_turn", n))
	return []byte(b.String())
}

func benchAnthStream(b *testing.B, in []byte, h provider.Holder) {
	evs := providertest.Events(in)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		s := Anthropic{}.NewStream(context.Background(), io.Discard, func() error { return nil }, h)
		for _, ev := range evs {
			if _, err := s.Write(ev); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAnthropicStreamText200(b *testing.B) {
	benchAnthStream(b, anthTextStream(200), providertest.NewHolder("delete_post"))
}

func BenchmarkAnthropicStreamNonGatedCall(b *testing.B) {
	benchAnthStream(b, anthFixture(b, "stream-1.sse"), providertest.NewHolder("delete_post"))
}

func BenchmarkAnthropicStreamHeldCall(b *testing.B) {
	benchAnthStream(b, anthFixture(b, "stream-1.sse"), providertest.NewHolder("get_weather"))
}

// anthJSON2K is a 2 KB Messages body, with or without a (non-gated) call.
func anthJSON2K(withCall bool) []byte {
	text := strings.Repeat("All good here. ", 110)
	content, stop := fmt.Sprintf(`[{"type":"text","text":%q}]`, text), "end_turn"
	if withCall {
		content, stop = fmt.Sprintf(`[{"type":"text","text":%q},{"type":"tool_use","id":"toolu_1","name":"get_post","input":{"post":7}}]`, text), "tool_use"
	}
	return []byte(fmt.Sprintf(`{"id":"msg_01X","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":%s,"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":565,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":48,"service_tier":"standard"}}`, content, stop))
}

func BenchmarkAnthropicJSON(b *testing.B) {
	for _, tc := range []struct {
		name     string
		withCall bool
	}{{"text", false}, {"non-gated-call", true}} {
		b.Run(tc.name, func(b *testing.B) {
			body := anthJSON2K(tc.withCall)
			h := providertest.NewHolder("delete_post")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				out, err := Anthropic{}.RewriteJSON(context.Background(), body, h)
				if err != nil || len(out) != len(body) {
					b.Fatal(err)
				}
			}
		})
	}
}
