package anthropictest

// Builders of Messages streams and readers of what a client parses from
// them (anthropic-sdk-go), shared by the tests of provider/anthropic,
// provider and interceptor. They import no adapter.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/wire/sse"
	wirestream "github.com/toolgate/toolgate/wire/stream"
)

// Ev is one event of data, with its event: line.
func Ev(data string) string {
	return "event: " + gjson.Get(data, "type").Str + "\ndata: " + data + "\n\n"
}

// Start is the message_start event of message id.
func Start(id string) string {
	return Ev(`{"type":"message_start","message":{"id":"` + id + `","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":1}}}`)
}

// TextBlockEvs is text block i streaming these words.
func TextBlockEvs(i int, words ...string) string {
	s := Ev(fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i))
	for _, w := range words {
		s += Ev(fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, gjson.AppendJSONString(nil, w)))
	}
	return s + Ev(fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
}

// ToolEvs is tool_use block i streaming its input in these fragments.
func ToolEvs(i int, id, name string, frags ...string) string {
	s := Ev(fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, i, id, name))
	for _, f := range frags {
		s += Ev(fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, gjson.AppendJSONString(nil, f)))
	}
	return s + Ev(fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
}

// End is the message_delta (stop reason, output tokens) and message_stop.
func End(reason string, output int) string {
	return Ev(fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, reason, output)) +
		Ev(`{"type":"message_stop"}`)
}

// Accumulate decodes a stream the way anthropic-sdk-go does and
// accumulates it into a Message; every event must be accepted. It also
// checks that every event carries an event: line naming its type (the SDK
// skips events without one, wire-formats.md §3.2).
func Accumulate(t testing.TB, stream []byte) anthropic.Message {
	t.Helper()
	res := &http.Response{
		Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body:   io.NopCloser(bytes.NewReader(stream)),
	}
	s := ssestream.NewStream[anthropic.MessageStreamEventUnion](ssestream.NewDecoder(res), nil)
	var msg anthropic.Message
	n := 0
	for s.Next() {
		n++
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatalf("anthropic-sdk-go rejected event %d: %v\n%s", n, err, s.Current().RawJSON())
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("anthropic-sdk-go stream: %v", err)
	}
	if n == 0 {
		t.Fatal("anthropic-sdk-go decoded no event")
	}
	CheckEventLines(t, stream)
	return msg
}

// CheckEventLines checks that every event of a stream has an event:
// line equal to its data's type.
func CheckEventLines(t testing.TB, stream []byte) {
	t.Helper()
	var s wirestream.Frame
	for _, ev := range providertest.Events(stream) {
		data, ok := s.Data(ev)
		if !ok {
			continue
		}
		name := string(sse.Type(ev))
		if typ := gjson.GetBytes(data, "type").Str; name != typ {
			t.Errorf("event line %q for data of type %q: %s", name, typ, ev)
		}
	}
}

// NoLeak checks that no fragment of a held call is in out.
func NoLeak(t testing.TB, out []byte, fragments ...string) {
	t.Helper()
	for _, f := range fragments {
		if f != "" && bytes.Contains(out, []byte(f)) {
			t.Errorf("output holds %q", f)
		}
	}
}

// Texts lists the text of a message's text blocks.
func Texts(m anthropic.Message) []string {
	var out []string
	for _, b := range m.Content {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return out
}

// ToolUses lists the tool_use blocks of a message as id, name, input.
func ToolUses(m anthropic.Message) [][3]string {
	var out [][3]string
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			out = append(out, [3]string{b.ID, b.Name, string(b.Input)})
		}
	}
	return out
}

// AppRequest is the request the app sends next, built with the SDK
// from the message it read: the first user message, that message
// (Message.ToParam), then the given messages.
func AppRequest(t testing.TB, first string, m anthropic.Message, more ...anthropic.MessageParam) []byte {
	t.Helper()
	p := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		Messages:  append([]anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(first)), m.ToParam()}, more...),
		Metadata:  anthropic.MetadataParam{UserID: anthropic.String("user-ana")},
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// UseIDs lists the ids of a message's tool_use blocks.
func UseIDs(m gjson.Result) map[string]bool {
	ids := make(map[string]bool)
	m.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == "tool_use" {
			ids[b.Get("id").Str] = true
		}
		return true
	})
	return ids
}
