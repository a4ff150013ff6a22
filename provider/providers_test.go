package provider_test

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
