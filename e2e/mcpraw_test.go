package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit"
)

// rawGate runs toolgate_mcp (the test policy, owner from X-User-Id) in
// front of a plain HTTP upstream, for wire details no SDK exposes. It
// returns the gate's MCP URL.
func rawGate(t *testing.T, upstream http.Handler) string {
	t.Helper()
	up := httptest.NewServer(upstream)
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
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// A long-lived 2026-07-28 subscriptions/listen stream passes event by
// event: the first notification reaches the client while the server still
// holds the stream open, and the request's headers arrive as sent.
func TestMCPSubscriptionStreamsThrough(t *testing.T) {
	release := make(chan struct{})
	got := make(chan http.Header, 1)
	url := rawGate(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprint(w, "id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"file:///a\"}}\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"resultType\":\"complete\"}}\n\n")
	}))
	body := `{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"uri":"file:///a"}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("Last-Event-ID", "0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := <-got
	if h.Get("Mcp-Method") != "subscriptions/listen" || h.Get("Mcp-Protocol-Version") != "2026-07-28" || h.Get("Last-Event-ID") != "0" {
		t.Errorf("the server got headers %v", h)
	}
	r := bufio.NewReader(resp.Body)
	first := readEvent(t, r)
	if !strings.Contains(first, "notifications/resources/updated") || !strings.HasPrefix(first, "id: 1\n") {
		t.Errorf("first event %q", first)
	}
	close(release) // only now may the server end the stream
	if second := readEvent(t, r); !strings.Contains(second, `"id":4`) {
		t.Errorf("second event %q", second)
	}
}

// readEvent reads one SSE event (through its blank line); the deadline
// only guards against a hang.
func readEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		var b strings.Builder
		for {
			line, err := r.ReadString('\n')
			b.WriteString(line)
			if err != nil || line == "\n" {
				done <- b.String()
				return
			}
		}
	}()
	select {
	case ev := <-done:
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no event: the stream is held back")
		return ""
	}
}

// GET streams, DELETE and a client's JSON-RPC response pass with their
// session headers, and their answers come back as the server gave them.
func TestMCPSessionTrafficPassesRaw(t *testing.T) {
	type seen struct {
		method, session, lastEvent, body string
	}
	got := make(chan seen, 4)
	url := rawGate(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		bufio.NewReader(r.Body).WriteTo(&b)
		got <- seen{r.Method, r.Header.Get("Mcp-Session-Id"), r.Header.Get("Last-Event-ID"), b.String()}
		switch r.Method {
		case "GET":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "id: 9\nretry: 500\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
		case "DELETE":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	do := func(method, body string) (*http.Response, string) {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Mcp-Session-Id", "sess-1")
		req.Header.Set("Last-Event-ID", "8")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&b)
		return resp, b.String()
	}
	answer := `{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"name":"Ann"}}}`
	for _, tc := range []struct {
		method, body, wantBody string
		status                 int
	}{
		{"GET", "", "id: 9\nretry: 500\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n", 200},
		{"POST", answer, "", 202},
		{"DELETE", "", "", 204},
	} {
		resp, body := do(tc.method, tc.body)
		s := <-got
		if s != (seen{tc.method, "sess-1", "8", tc.body}) {
			t.Errorf("%s: the server got %+v", tc.method, s)
		}
		if resp.StatusCode != tc.status || body != tc.wantBody {
			t.Errorf("%s: the client got %d %q", tc.method, resp.StatusCode, body)
		}
	}
}

// Input the gate cannot decide on is refused with a clear error and never
// reaches the server: a message over the size limit, a gated call whose
// arguments are not an object, one naming its tool twice, a batch holding
// a gated call.
func TestMCPBadInputRefused(t *testing.T) {
	reached := make(chan string, 8)
	url := rawGate(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		bufio.NewReader(r.Body).WriteTo(&b)
		reached <- b.String()
		w.WriteHeader(http.StatusAccepted)
	}))
	call := func(params string) string {
		return `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":` + params + `}`
	}
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"oversized", call(`{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 17<<20) + `"}}`), 413, ""},
		{"arguments not an object", call(`{"name":"draft_post","arguments":["title"]}`), 200, `"code":-32602`},
		{"tool named twice", call(`{"name":"echo","name":"wipe_all"}`), 400, "twice"},
		{"method twice", `{"jsonrpc":"2.0","id":5,"method":"ping","method":"tools/call","params":{"name":"wipe_all"}}`, 400, "twice"},
		{"gated call in a batch", `[` + call(`{"name":"wipe_all","arguments":{}}`) + `]`, 400, "batch"},
	} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-User-Id", "ana")
		// A fresh connection each: the server answers the oversized body
		// before reading it all, and the rest must not meet the next request.
		req.Close = true
		resp, err := http.DefaultClient.Do(req)
		if err != nil && tc.status == http.StatusRequestEntityTooLarge && errors.Is(err, syscall.ECONNRESET) {
			// The gate answered 413 and closed before the client had
			// written the whole body: under load the client's write
			// meets the reset before it reads the answer. Refused all
			// the same; the server must not have been reached (below).
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&b)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(b.String(), tc.want) {
			t.Errorf("%s: %d %.200s, want %d with %q", tc.name, resp.StatusCode, b.String(), tc.status, tc.want)
		}
	}
	select {
	case got := <-reached:
		t.Errorf("the server was reached with %.200s", got)
	default:
	}
}
