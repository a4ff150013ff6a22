package interceptor

import (
	"testing"

	"github.com/toolgate/toolgate/provider"
)

// TestDropTools: each adapter's DropTools, and MCP's, through the shared
// wire/tooledit.Drop.
func TestDropTools(t *testing.T) {
	drop := func(name string) bool { return name == "send" }
	for _, c := range []struct{ name, proto, in, want string }{
		{"chat", "openai-chat",
			`{"model":"m","tools":[{"type":"function","function":{"name":"read"}}, {"type":"function","function":{"name":"send"}}],"tool_choice":"auto"}`,
			`{"model":"m","tools":[{"type":"function","function":{"name":"read"}}],"tool_choice":"auto"}`},
		{"chat, the only tool", "openai-chat",
			`{"model":"m","tools":[{"type":"function","function":{"name":"send"}}],"tool_choice":"auto","parallel_tool_calls":true}`,
			`{"model":"m"}`},
		{"responses", "openai-responses",
			`{"tools":[{"type":"web_search"},{"type":"function","name":"send"},{"type":"function","name":"x"}]}`,
			`{"tools":[{"type":"web_search"},{"type":"function","name":"x"}]}`},
		{"anthropic", "anthropic",
			`{"tools":[{"name":"send","input_schema":{}},{"type":"bash_20250124","name":"bash"}]}`,
			`{"tools":[{"type":"bash_20250124","name":"bash"}]}`},
		{"mcp keeps an empty list", "mcp", `{"tools":[{"name":"send"}]}`, `{"tools":[]}`},
		{"nothing to drop is the same bytes", "openai-chat", `{"tools":[ {"type":"function","function":{"name":"read"}} ]}`, `{"tools":[ {"type":"function","function":{"name":"read"}} ]}`},
		{"a custom tool is the model's too", "openai-responses", `{"tools":[{"type":"custom","name":"send"},{"type":"mcp","server_label":"send"}]}`, `{"tools":[{"type":"mcp","server_label":"send"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dropTools := DropMCPTools
			if c.proto != "mcp" {
				dropTools = provider.Lookup(c.proto).DropTools
			}
			got, err := dropTools([]byte(c.in), drop)
			if err != nil || string(got) != c.want {
				t.Fatalf("got %s, %v\nwant %s", got, err, c.want)
			}
		})
	}
}
