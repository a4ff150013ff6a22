package interceptor

// Test helpers copied from provider/anthropic's tests (anthropic_test.go,
// anthropicrequest_test.go) for the interceptor's tests that drive the
// Anthropic adapter through the ResponseWriter (its turn, resumed answers,
// the guard); the fakes are provider/providertest's.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/wire/sse"
	wirestream "github.com/toolgate/toolgate/wire/stream"
)

func anthFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", "anthropic", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func anthEv(data string) string {
	return "event: " + gjson.Get(data, "type").Str + "\ndata: " + data + "\n\n"
}

func anthStart(id string) string {
	return anthEv(`{"type":"message_start","message":{"id":"` + id + `","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":1}}}`)
}

// anthAccumulate decodes a stream the way anthropic-sdk-go does and
// accumulates it into a Message; every event must be accepted. It also
// checks that every event carries an event: line naming its type (the SDK
// skips events without one, wire-formats.md §3.2).
func anthAccumulate(t *testing.T, stream []byte) anthropic.Message {
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
	anthCheckEventLines(t, stream)
	return msg
}

func anthTextBlockEvs(i int, words ...string) string {
	s := anthEv(fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i))
	for _, w := range words {
		s += anthEv(fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, gjson.AppendJSONString(nil, w)))
	}
	return s + anthEv(fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
}

// anthHistoryError rejects a request history the way the Messages API does
// (wire-formats.md §3.4): every tool_use of an assistant message must be
// answered by a tool_result in the next message, a user message, where the
// tool_result blocks come first; a tool_result must answer a tool_use of
// the message right before it. Text blocks must not be empty.
func anthHistoryError(body []byte) error {
	if !gjson.ValidBytes(body) {
		return fmt.Errorf("invalid JSON")
	}
	msgs := gjson.GetBytes(body, "messages").Array()
	for i, m := range msgs {
		var results []string
		leading := true
		var uses map[string]bool
		if i > 0 && msgs[i-1].Get("role").Str == "assistant" {
			uses = anthUseIDs(msgs[i-1])
		}
		var bad error
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "tool_result":
				id := b.Get("tool_use_id").Str
				if m.Get("role").Str != "user" || !leading {
					bad = fmt.Errorf("messages.%d: tool_result %s is not at the start of a user message", i, id)
				} else if !uses[id] {
					bad = fmt.Errorf("messages.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, id)
				}
				results = append(results, id)
			case "text":
				leading = false
				if strings.TrimSpace(b.Get("text").Str) == "" {
					bad = fmt.Errorf("messages.%d: text content blocks must contain non-whitespace text", i)
				}
			default:
				leading = false
			}
			return bad == nil
		})
		if bad != nil {
			return bad
		}
		if m.Get("role").Str != "assistant" {
			continue
		}
		var missing []string
		answered := make(map[string]bool)
		if i+1 < len(msgs) && msgs[i+1].Get("role").Str == "user" {
			msgs[i+1].Get("content").ForEach(func(_, b gjson.Result) bool {
				if b.Get("type").Str != "tool_result" {
					return false
				}
				answered[b.Get("tool_use_id").Str] = true
				return true
			})
		}
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str == "tool_use" && !answered[b.Get("id").Str] {
				missing = append(missing, b.Get("id").Str)
			}
			return true
		})
		if len(missing) > 0 {
			return fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", "))
		}
	}
	return nil
}

func anthEnd(reason string, output int) string {
	return anthEv(fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, reason, output)) +
		anthEv(`{"type":"message_stop"}`)
}

func anthToolEvs(i int, id, name string, frags ...string) string {
	s := anthEv(fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, i, id, name))
	for _, f := range frags {
		s += anthEv(fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, gjson.AppendJSONString(nil, f)))
	}
	return s + anthEv(fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
}

// anthNoLeak checks that no fragment of a held call is in out.
func anthNoLeak(t *testing.T, out []byte, fragments ...string) {
	t.Helper()
	for _, f := range fragments {
		if f != "" && bytes.Contains(out, []byte(f)) {
			t.Errorf("output holds %q", f)
		}
	}
}

// anthTexts lists the text of a message's text blocks.
func anthTexts(m anthropic.Message) []string {
	var out []string
	for _, b := range m.Content {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return out
}

func jsonEqual(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Errorf("invalid JSON %q: %v", got, err)
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("invalid JSON %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return bytes.Equal(gb, wb)
}

// anthToolUses lists the tool_use blocks of a message as id, name, input.
func anthToolUses(m anthropic.Message) [][3]string {
	var out [][3]string
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			out = append(out, [3]string{b.ID, b.Name, string(b.Input)})
		}
	}
	return out
}

func anthFuzzHolder() *providertest.Holder {
	return providertest.NewHolder("get_weather", "delete_post").Passing("json").Refusing("updateIssueList", "refused: nothing (none)")
}

// anthBlocked reports whether a tool_use block of a name h blocks (held
// or refused) is started anywhere in a rewritten stream, where a client
// reads blocks: a content_block_start's block, a message_start's content.
func anthBlocked(h *providertest.Holder, out []byte) bool {
	found := false
	var s wirestream.Frame
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

// anthAppRequest is the request the app sends next, built with the SDK
// from the message it read: the first user message, that message
// (Message.ToParam), then the given messages.
func anthAppRequest(t *testing.T, first string, m anthropic.Message, more ...anthropic.MessageParam) []byte {
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

// A thinking block, a redacted_thinking block, then a held call: Hold gets
// them verbatim, with their signatures, as a request must echo them.
const (
	anthThinking  = "The person wants post 7 gone. Deleting is destructive."
	anthSignature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
	anthRedacted  = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
)

// anthCheckEventLines checks that every event of a stream has an event:
// line equal to its data's type.
func anthCheckEventLines(t *testing.T, stream []byte) {
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

func anthUseIDs(m gjson.Result) map[string]bool {
	ids := make(map[string]bool)
	m.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == "tool_use" {
			ids[b.Get("id").Str] = true
		}
		return true
	})
	return ids
}
