package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkPassThroughMCP: a 2 KB tools/call of a tool the policy does not
// gate, answered with a 2 KB result, through toolgate_mcp and through plain
// reverse_proxy. The gate reads only the method and the tool's name.
func BenchmarkPassThroughMCP(b *testing.B) {
	text := strings.Repeat("The meetup moved to Friday. ", 60)
	body := []byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":` + jsonString(text) + `}],"resultType":"complete"}}`)
	req := []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}},"name":"echo","arguments":{"text":` + jsonString(strings.Repeat("Tell me about the spring meetup. ", 55)) + `}}}`)
	e := startBench(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}), mcpPolicy, "toolgate_mcp")
	e.compare(b, "/mcp", req, len(body))
}
