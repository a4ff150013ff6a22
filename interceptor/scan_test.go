package interceptor

import (
	"bytes"
	"testing"
)

func TestHasKeyMatchesBytesContains(t *testing.T) {
	cases := []string{
		``, `"`, `"tool_calls"`, `x"tool_calls"`, `"tool_calls`, `tool_calls"`, `"tool__calls"`,
		`{"a_b":1,"tool_calls":[]}`, `{"finish_reason":null}`, `_"tool_calls"_`, `"content"`, `"contentx"`, `"conten"`,
		`{"delta":{"content":"x"}}`, `"content" "tool_calls"`,
	}
	for _, c := range cases {
		b := []byte(c)
		if got, want := hasToolCalls(b), bytes.Contains(b, toolCallsKey); got != want {
			t.Errorf("hasToolCalls(%q) = %v, want %v", c, got, want)
		}
	}
}

func FuzzHasKey(f *testing.F) {
	f.Add([]byte(`{"choices":[{"delta":{"tool_calls":[]}}]}`))
	f.Add([]byte(`{"delta":{"content":"x"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if hasToolCalls(b) != bytes.Contains(b, toolCallsKey) {
			t.Fatalf("hasKey differs from bytes.Contains on %q", b)
		}
	})
}

func BenchmarkHasToolCalls(b *testing.B) {
	ev := []byte(`data: {"id":"chatcmpl-ABfwAwrNePHUgBBezonVC6MX3zd63","object":"chat.completion.chunk","created":1727346178,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5050236cbd","choices":[{"index":0,"delta":{"content":" weather"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	b.Run("hasKey", func(b *testing.B) {
		for b.Loop() {
			hasToolCalls(ev)
		}
	})
	b.Run("bytes.Contains", func(b *testing.B) {
		for b.Loop() {
			bytes.Contains(ev, toolCallsKey)
		}
	})
}
