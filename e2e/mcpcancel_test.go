package e2e

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// On 2026-07-28 a client that gives up on a call closes its request, and
// that is the cancellation (go-sdk v1.8.0 itself does not act on it, so the
// upstream here is plain HTTP): the server must see the request end
// through the gate, for a call the gate passes unread (wait) and for one
// it decided on (wait_read, a complete read call of a declared tool).
func TestMCPClientDisconnectCancels(t *testing.T) {
	type seen struct{ tool, what string }
	events := make(chan seen, 8)
	url := rawGate(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	for _, tool := range []string{"wait", "wait_read"} {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"` + tool + `","arguments":{"text":"x"}}}`
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
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
