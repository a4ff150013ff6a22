package caddymodule

import "testing"

func TestToolParameters(t *testing.T) {
	tests := []struct{ protocol, body, want string }{
		{"openai-chat", `{"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object","x":1}}},{"type":"function","function":{"name":"b","parameters":{"type":"object"}}}]}`, `{"type":"object"}`},
		{"openai-responses", `{"tools":[{"type":"function","name":"b","parameters":{"type":"object","y":2}}]}`, `{"type":"object","y":2}`},
		{"anthropic", `{"tools":[{"name":"b","input_schema":{"type":"object","z":3}}]}`, `{"type":"object","z":3}`},
		{"openai-chat", `{"tools":[]}`, ``},
	}
	for _, tt := range tests {
		if got := string(toolParameters([]byte(tt.body), "b", tt.protocol)); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.protocol, got, tt.want)
		}
	}
}

func TestBodyField(t *testing.T) {
	for _, tc := range []struct {
		body, path, want string
		ok               bool
	}{
		{`{"user":"ana"}`, "user", "ana", true},
		{`{"metadata":{"user_id":"ana"}}`, "metadata.user_id", "ana", true},
		{`{"user":7}`, "user", "", true},
		{`{"other":"x"}`, "user", "", true},
		{`{"metadata":"x"}`, "metadata.user_id", "", true},
		{`{"user":"ana","user":"bo"}`, "user", "", false},
		{`{"user":"ana","USER":"bo"}`, "user", "", false},
		{`{"User":"bo"}`, "user", "", true},
		{`{"metadata":{"user_id":"ana"},"Metadata":{"user_id":"bo"}}`, "metadata.user_id", "", false},
		{`{"metadata":{"user_id":"ana","user_id":"bo"}}`, "metadata.user_id", "", false},
		{`{"\u0075ser":"ana","user":"bo"}`, "user", "", false},
	} {
		got, ok := bodyField([]byte(tc.body), tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s %s: %q %v, want %q %v", tc.body, tc.path, got, ok, tc.want, tc.ok)
		}
	}
}
