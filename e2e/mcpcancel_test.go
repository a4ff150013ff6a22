package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit"
)

// On 2026-07-28 a client that gives up on a call closes its request, and
// that is the cancellation (go-sdk v1.8.0 itself does not act on it, so the
// upstream here is plain HTTP): the server must see the request end
// through the gate, for a call the gate passes unread (wait) and for one
// it decided on (wait_read, a complete read call of a declared tool).
func TestMCPClientDisconnectCancels(t *testing.T) {
	type seen struct{ tool, what string }
	events := make(chan seen, 8)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		body.ReadFrom(r.Body)
		tool := "wait"
		if strings.Contains(body.String(), `"wait_read"`) {
			tool = "wait_read"
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		events <- seen{tool, "started"}
		select {
		case <-r.Context().Done():
			events <- seen{tool, "cancelled"}
		case <-time.After(30 * time.Second):
			events <- seen{tool, "not cancelled"}
		}
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(strings.ReplaceAll(mcpPolicy, "APP", "http://127.0.0.1:1")), 0o600); err != nil {
		t.Fatal(err)
	}
	port := testkit.FreePort(t)
	testkit.Run(t, fmt.Sprintf(`{
	admin off
	auto_https off
	default_bind 127.0.0.1
	log {
		level ERROR
	}
	toolgate {
		store %s
		secret %s
		pages http://127.0.0.1:1/toolgate
	}
}
http://127.0.0.1:%d {
	toolgate_mcp {
		policy %s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %s
}
`, filepath.Join(dir, "store"), secret, port, pol, up.URL))

	for _, tool := range []string{"wait", "wait_read"} {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"` + tool + `","arguments":{"text":"x"}}}`
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("http://127.0.0.1:%d/mcp", port), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("X-User-Id", "ana")
		done := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, err = bytes.NewBuffer(nil).ReadFrom(resp.Body)
				resp.Body.Close()
			}
			done <- err
		}()
		if ev := <-events; ev != (seen{tool, "started"}) {
			t.Fatalf("first event %v", ev)
		}
		cancel()
		<-done
		select {
		case ev := <-events:
			if ev != (seen{tool, "cancelled"}) {
				t.Errorf("%s: the server saw %q", tool, ev.what)
			}
		case <-time.After(40 * time.Second): // a hang guard, not a speed check
			t.Fatalf("%s: the server's request never ended", tool)
		}
	}
}
