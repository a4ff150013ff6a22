package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testkit"
)

// newMCPBenchEnv runs one Caddy with two routes to the same fake MCP
// server: one through toolgate_mcp, one plain reverse_proxy.
func newMCPBenchEnv(b *testing.B, body []byte) *benchEnv {
	b.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	b.Cleanup(up.Close)
	dir := b.TempDir()
	pf := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pf, []byte(strings.ReplaceAll(mcpPolicy, "APP", "http://127.0.0.1:1")), 0o600); err != nil {
		b.Fatal(err)
	}
	gp, pp, pages := testkit.FreePort(b), testkit.FreePort(b), testkit.FreePort(b)
	testkit.Run(b, fmt.Sprintf(`{
	admin off
	auto_https off
	default_bind 127.0.0.1
	log {
		level ERROR
	}
	toolgate {
		store %s
		secret %s
		pages http://127.0.0.1:%d/toolgate
	}
}
http://127.0.0.1:%d {
	toolgate_mcp {
		policy %s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %s
}
http://127.0.0.1:%d {
	reverse_proxy %s
}
`, filepath.Join(dir, "store"), secret, pages, gp, pf, up.URL, pp, up.URL))
	return &benchEnv{
		gated:  fmt.Sprintf("http://127.0.0.1:%d", gp),
		plain:  fmt.Sprintf("http://127.0.0.1:%d", pp),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
	}
}

// BenchmarkPassThroughMCP: a 2 KB tools/call of a tool the policy does not
// gate, answered with a 2 KB result. The gate reads only the method and
// the tool's name.
func BenchmarkPassThroughMCP(b *testing.B) {
	text := strings.Repeat("The meetup moved to Friday. ", 60)
	body := []byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":` + jsonString(text) + `}],"resultType":"complete"}}`)
	req := []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}},"name":"echo","arguments":{"text":` + jsonString(strings.Repeat("Tell me about the spring meetup. ", 55)) + `}}}`)
	e := newMCPBenchEnv(b, body)
	e.compare(b, "/mcp", req, len(body))
}
