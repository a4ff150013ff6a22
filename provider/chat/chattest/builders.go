package chattest

// Builders of Chat Completions streams and readers of what a client parses
// from them (openai-go), shared by the tests of provider/chat, provider and
// interceptor. They import no adapter.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/wire/sse"
)

// Accumulate reads a stream with openai-go's SSE decoder and
// ChatCompletionAccumulator, failing on a chunk it rejects.
func Accumulate(t testing.TB, stream []byte) openai.ChatCompletionAccumulator {
	t.Helper()
	res := &http.Response{
		Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body:   io.NopCloser(bytes.NewReader(stream)),
	}
	s := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(res), nil)
	var acc openai.ChatCompletionAccumulator
	n := 0
	for s.Next() {
		n++
		if !acc.AddChunk(s.Current()) {
			t.Errorf("openai-go rejected Chunk %d: %s", n, s.Current().RawJSON())
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("openai-go stream: %v", err)
	}
	if len(acc.Choices) == 0 {
		t.Fatal("openai-go accumulated no choice")
	}
	return acc
}

// OutputCalls lists, by index, the tool_calls deltas of a stream's chunks,
// failing when the indices are not dense.
func OutputCalls(t testing.TB, stream []byte) map[int64][]string {
	t.Helper()
	calls := make(map[int64][]string)
	for line := range strings.SplitSeq(string(stream), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || !gjson.Valid(data) {
			continue
		}
		gjson.Get(data, "choices.0.delta.tool_calls").ForEach(func(_, tc gjson.Result) bool {
			i := tc.Get("index").Int()
			calls[i] = append(calls[i], tc.Raw)
			return true
		})
	}
	for i := range int64(len(calls)) {
		if _, ok := calls[i]; !ok {
			t.Errorf("tool call indices are not dense: %v", calls)
		}
	}
	return calls
}

// CheckMessage checks a reassembled assistant message: its content (nil:
// null) and its calls as {id, name, arguments}, and that openai-go reads it.
func CheckMessage(t testing.TB, msg []byte, content *string, calls [][3]string) {
	t.Helper()
	if !gjson.ValidBytes(msg) {
		t.Fatalf("message is not valid JSON: %s", msg)
	}
	m := gjson.ParseBytes(msg)
	if m.Get("role").Str != "assistant" {
		t.Errorf("message role = %q", m.Get("role").Str)
	}
	if c := m.Get("content"); content == nil && c.Type != gjson.Null || content != nil && c.Str != *content {
		t.Errorf("message content = %s, want %v", c.Raw, content)
	}
	got := m.Get("tool_calls").Array()
	if len(got) != len(calls) {
		t.Fatalf("message has %d calls, want %d: %s", len(got), len(calls), msg)
	}
	for i, c := range calls {
		typ := got[i].Get("type").Str
		args := "arguments"
		if typ == "custom" {
			args = "input"
		}
		if got[i].Get("id").Str != c[0] || got[i].Get(typ+".name").Str != c[1] || got[i].Get(typ+"."+args).Str != c[2] {
			t.Errorf("message call %d = %s, want %q", i, got[i].Raw, c)
		}
	}
	var decoded openai.ChatCompletionAssistantMessageParam
	if err := json.Unmarshal(msg, &decoded); err != nil {
		t.Errorf("openai-go cannot read the message as an assistant message param: %v", err)
	}
}

// Envelope is the members every chunk Chunk writes carries.
const Envelope = `"id":"chatcmpl-T","object":"chat.completion.chunk","created":1727346176,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_7568d46099"`

// Chunk is one stream event holding these choices.
func Chunk(choices ...string) string {
	return "data: {" + Envelope + `,"choices":[` + strings.Join(choices, ",") + "]}\n\n"
}

// DeltaChoice is choice i carrying delta.
func DeltaChoice(i int, delta string) string {
	return fmt.Sprintf(`{"index":%d,"delta":%s,"logprobs":null,"finish_reason":null}`, i, delta)
}

// FinishChoice is choice i finishing with reason.
func FinishChoice(i int, reason string) string {
	return fmt.Sprintf(`{"index":%d,"delta":{},"logprobs":null,"finish_reason":%q}`, i, reason)
}

// ToolHeader is the first tool_calls entry of a call.
func ToolHeader(index int, id, name string) string {
	return fmt.Sprintf(`{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}`, index, id, name)
}

// ToolArgs is a tool_calls entry carrying an arguments fragment.
func ToolArgs(index int, frag string) string {
	return fmt.Sprintf(`{"index":%d,"function":{"arguments":%s}}`, index, gjson.AppendJSONString(nil, frag))
}

// ToolDelta is a delta holding these tool_calls entries.
func ToolDelta(entries ...string) string {
	return `{"tool_calls":[` + strings.Join(entries, ",") + `]}`
}

// UsageChunk is the usage-only chunk sent before [DONE].
const UsageChunk = "data: {" + Envelope + `,"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}` + "\n\n"

// DecodeCompletion reads a non-streamed body with openai-go.
func DecodeCompletion(t testing.TB, body []byte) openai.ChatCompletion {
	t.Helper()
	var c openai.ChatCompletion
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("openai-go: %v\n%s", err, body)
	}
	if len(c.Choices) == 0 {
		t.Fatalf("no choices: %s", body)
	}
	return c
}

// TextStream is a whole stream of n words of text, usage and [DONE].
func TextStream(n int) []byte {
	var b strings.Builder
	b.WriteString(Chunk(DeltaChoice(0, `{"role":"assistant","content":"","refusal":null}`)))
	for i := range n {
		fmt.Fprintf(&b, "%s", Chunk(DeltaChoice(0, fmt.Sprintf(`{"content":" word%d"}`, i))))
	}
	b.WriteString(Chunk(FinishChoice(0, "stop")))
	b.WriteString(UsageChunk)
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// CallNames lists the names of the tool_calls entries in tc.
func CallNames(tc gjson.Result) []string {
	var names []string
	tc.ForEach(func(_, b gjson.Result) bool {
		if n := b.Get("name"); b.IsObject() && n.Type == gjson.String {
			names = append(names, n.Str)
		}
		return true
	})
	return names
}

// BlockedInStream reports whether a call of a name h blocks (held or
// refused) starts anywhere in a rewritten stream.
func BlockedInStream(h *providertest.Holder, out []byte) bool {
	found := false
	for _, ev := range sse.Parse(out) {
		if !gjson.Valid(ev.Data) {
			continue
		}
		gjson.Get(ev.Data, "choices").ForEach(func(_, ch gjson.Result) bool {
			ch.Get("delta.tool_calls").ForEach(func(_, tc gjson.Result) bool {
				found = found || slices.ContainsFunc(CallNames(tc), h.Blocks)
				return true
			})
			found = found || h.Blocks(ch.Get("delta.function_call.name").Str)
			return true
		})
	}
	return found
}

// Roles lists a request body's messages as role, or role:tool_call_id.
func Roles(t testing.TB, body []byte) []string {
	t.Helper()
	if !gjson.ValidBytes(body) {
		t.Fatalf("invalid JSON: %s", body)
	}
	var out []string
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		r := m.Get("role").Str
		if id := m.Get("tool_call_id"); id.Exists() {
			r += ":" + id.Str
		}
		out = append(out, r)
		return true
	})
	return out
}
