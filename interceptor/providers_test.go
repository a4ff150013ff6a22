package interceptor

import (
	"testing"

	"github.com/toolgate/toolgate/provider"
)

func TestToolParameters(t *testing.T) {
	tests := []struct{ protocol, body, want string }{
		{"openai-chat", `{"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object","x":1}}},{"type":"function","function":{"name":"b","parameters":{"type":"object"}}}]}`, `{"type":"object"}`},
		{"openai-responses", `{"tools":[{"type":"function","name":"b","parameters":{"type":"object","y":2}}]}`, `{"type":"object","y":2}`},
		{"anthropic", `{"tools":[{"name":"b","input_schema":{"type":"object","z":3}}]}`, `{"type":"object","z":3}`},
		{"openai-chat", `{"tools":[]}`, ``},
	}
	for _, tt := range tests {
		if got := string(provider.Lookup(tt.protocol).ToolParameters([]byte(tt.body), "b")); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.protocol, got, tt.want)
		}
	}
}

// FuzzAroundParam: the byte filter in front of the parameter check never
// hides a parameter the full scan finds.
func FuzzAroundParam(f *testing.F) {
	f.Add([]byte(`{"functions":[{"name":"x"}]}`))
	f.Add([]byte(`{"Background":true}`))
	f.Add([]byte(`{"\u0066unctions":[1]}`))
	f.Add([]byte(`{"function_call":"none"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if got, full := (Responses{}).AroundParam(body), responsesParams(body); got != full {
			t.Fatalf("openai-responses %q: filtered %v, full scan %v", body, got, full)
		}
	})
}
