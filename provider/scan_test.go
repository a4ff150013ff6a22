package provider_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	anthropicadapter "github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/chat"
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
	"github.com/toolgate/toolgate/wire/jsonedit"
)

func TestMayHoldFoldsKeysNotValues(t *testing.T) {
	for _, tc := range []struct {
		in   string
		may  func([]byte) bool
		want bool
	}{
		{`{"tool_callſ":[]}`, (chat.Chat{}).MayHoldCalls, true},
		{`{"ToOl_CaLlS":[]}`, (chat.Chat{}).MayHoldCalls, true},
		{`{"FUNCTION_CALL":{}}`, (chat.Chat{}).MayHoldCalls, true},
		{`{"content":"ſ, K and _"}`, (chat.Chat{}).MayHoldCalls, false},
		// Type names are values: every reader compares them exactly.
		{`{"type":"function_call"}`, (responsesadapter.Responses{}).MayHoldCalls, true},
		{`{"type":"FUNCTION_CALL"}`, (responsesadapter.Responses{}).MayHoldCalls, false},
		{`{"type":"custom_tool_caLL"}`, (responsesadapter.Responses{}).MayHoldCalls, false},
		{`{"type":"Tool_Use"}`, (anthropicadapter.Anthropic{}).MayHoldCalls, false},
		{`{"arguments":"{}"}`, (responsesadapter.Responses{}).MayHoldCalls, true},
		{`{"Arguments":"{}"}`, (responsesadapter.Responses{}).MayHoldCalls, false}, // no SDK reads an item of an unknown type, and none folds
	} {
		if got := tc.may([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.in, got, tc.want)
		}
	}
}

// keyRead reports whether a reader of the JSON text b meets key, a bare
// key or type name, as an object key or a string: decoded from its
// escapes, and, with folded, with case folded as encoding/json folds it.
func keyRead(b []byte, key string, folded bool) bool {
	d := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := d.Token()
		if err != nil {
			return false // the end, or text no reader takes for JSON from here
		}
		if s, ok := tok.(string); ok && (s == key || folded && jsonedit.Fold(s) == key) {
			return true
		}
	}
}

// FuzzMayHold checks the fast path's byte search against a decoder: any
// key or string of a JSON text that a reader takes for a call's key, in
// any case or spelling, sends the text to the slow path.
func FuzzMayHold(f *testing.F) {
	for _, s := range []string{
		`{"tool_calls":[]}`, `{"Tool_Calls":1}`, `{"\u0074ool_calls":1}`, `{"type":"tool\u005fuse"}`,
		`{"a":"tool_callſ"}`, `{"choices":[{"delta":{"content":"x\u00e9"}}]}`, `{"input":{}}`, `["function_call"]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range []struct {
			name   string
			keys   []string
			folded bool
			may    func([]byte) bool
		}{
			{"chat", []string{"tool_calls", "function_call"}, true, (chat.Chat{}).MayHoldCalls},
			{"anthropic", []string{"tool_use", "input"}, false, (anthropicadapter.Anthropic{}).MayHoldCalls},
			{"responses", []string{"function_call", "custom_tool_call", "arguments", "input"}, false, (responsesadapter.Responses{}).MayHoldCalls},
		} {
			for _, k := range c.keys {
				if keyRead(b, k, c.folded) && !c.may(b) {
					t.Fatalf("%s: a reader meets %q in %q, the fast path does not", c.name, k, b)
				}
			}
		}
	})
}

func BenchmarkHasToolCalls(b *testing.B) {
	ev := []byte(`data: {"id":"chatcmpl-ABfwAwrNePHUgBBezonVC6MX3zd63","object":"chat.completion.chunk","created":1727346178,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5050236cbd","choices":[{"index":0,"delta":{"content":" weather"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	b.Run("mayHold", func(b *testing.B) {
		for b.Loop() {
			(chat.Chat{}).MayHoldCalls(ev)
		}
	})
	b.Run("bytes.Contains", func(b *testing.B) {
		for b.Loop() {
			bytes.Contains(ev, []byte(`"tool_calls"`))
		}
	})
	text := []byte(strings.Repeat(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a useful word"}}`, 1))
	b.Run("anthropic", func(b *testing.B) {
		for b.Loop() {
			(anthropicadapter.Anthropic{}).MayHoldCalls(text)
		}
	})
}
