package interceptor

// Test helpers copied from provider/chat's tests (chat_test.go,
// chatrequest_test.go) for the interceptor's tests that drive the Chat
// adapter through the ResponseWriter; the fakes are
// provider/providertest's.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/chat"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/wire/sse"
)

const (
	testLink = providertest.Link
	testStep = providertest.Step
	waitText = providertest.WaitText
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", "openai-chat", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rewriteStream(in []byte, h provider.Holder, sizes ...int) (out []byte, flushes int, err error) {
	var buf bytes.Buffer
	s := chat.Chat{}.NewStream(context.Background(), &buf, func() error { flushes++; return nil }, h)
	for i := 0; len(in) > 0; i++ {
		n := len(in)
		if len(sizes) > 0 {
			n = min(sizes[i%len(sizes)], len(in))
		}
		if _, err = s.Write(in[:n]); err != nil {
			break
		}
		in = in[n:]
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return buf.Bytes(), flushes, err
}

func accumulate(t *testing.T, stream []byte) openai.ChatCompletionAccumulator {
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
			t.Errorf("openai-go rejected chunk %d: %s", n, s.Current().RawJSON())
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

func outputCalls(t *testing.T, stream []byte) map[int64][]string {
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

func checkMessage(t *testing.T, msg []byte, content *string, calls [][3]string) {
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

const testEnvelope = `"id":"chatcmpl-T","object":"chat.completion.chunk","created":1727346176,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_7568d46099"`

func chunk(choices ...string) string {
	return "data: {" + testEnvelope + `,"choices":[` + strings.Join(choices, ",") + "]}\n\n"
}

func deltaChoice(i int, delta string) string {
	return fmt.Sprintf(`{"index":%d,"delta":%s,"logprobs":null,"finish_reason":null}`, i, delta)
}

func finishChoice(i int, reason string) string {
	return fmt.Sprintf(`{"index":%d,"delta":{},"logprobs":null,"finish_reason":%q}`, i, reason)
}

func toolHeader(index int, id, name string) string {
	return fmt.Sprintf(`{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}`, index, id, name)
}

func toolArgs(index int, frag string) string {
	return fmt.Sprintf(`{"index":%d,"function":{"arguments":%s}}`, index, gjson.AppendJSONString(nil, frag))
}

func toolDelta(entries ...string) string {
	return `{"tool_calls":[` + strings.Join(entries, ",") + `]}`
}

const usageChunk = "data: {" + testEnvelope + `,"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}` + "\n\n"

func decodeCompletion(t *testing.T, body []byte) openai.ChatCompletion {
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

func callNames(tc gjson.Result) []string {
	var names []string
	tc.ForEach(func(_, b gjson.Result) bool {
		if n := b.Get("name"); b.IsObject() && n.Type == gjson.String {
			names = append(names, n.Str)
		}
		return true
	})
	return names
}

func fuzzHolder() *providertest.Holder {
	return providertest.NewHolder("GetWeatherArgs", "delete_post").Passing("get_weather").Refusing("get_stock_price", "refused: ticker (a string)")
}

func blockedInStream(h *providertest.Holder, out []byte) bool {
	found := false
	for _, ev := range sse.Parse(out) {
		if !gjson.Valid(ev.Data) {
			continue
		}
		gjson.Get(ev.Data, "choices").ForEach(func(_, ch gjson.Result) bool {
			ch.Get("delta.tool_calls").ForEach(func(_, tc gjson.Result) bool {
				found = found || slices.ContainsFunc(callNames(tc), h.Blocks)
				return true
			})
			found = found || h.Blocks(ch.Get("delta.function_call.name").Str)
			return true
		})
	}
	return found
}

func textStream(n int) []byte {
	var b strings.Builder
	b.WriteString(chunk(deltaChoice(0, `{"role":"assistant","content":"","refusal":null}`)))
	for i := range n {
		fmt.Fprintf(&b, "%s", chunk(deltaChoice(0, fmt.Sprintf(`{"content":" word%d"}`, i))))
	}
	b.WriteString(chunk(finishChoice(0, "stop")))
	b.WriteString(usageChunk)
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

func roles(t *testing.T, body []byte) []string {
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
