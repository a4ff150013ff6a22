package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit"
)

// BenchmarkResumeWaitingStreams measures what a stream waiting for the
// person costs (resume_wait): it opens waitingStreams streams whose call is
// held, each for another person, waits until every one has had a
// keep-alive (so each is in its wait), and reports the live memory (heap
// and stacks, after a GC) and goroutines that the waiting streams add, per
// stream. The apps are raw connections that keep no buffer, so what is
// counted is the gate's and Caddy's side (and the pooled upstream
// connections, shared by all).
//
//	go test ./e2e -run '^$' -bench ResumeWaitingStreams -benchtime 3x
func BenchmarkResumeWaitingStreams(b *testing.B) {
	const waitingStreams = 200
	addr := startResumeBench(b)
	// Each stream is another person's: a call still waiting would attach
	// a repeat to its hold (one card per intent), and a repeat does not wait.
	person := 0
	open := func() net.Conn {
		person++
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		body := `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Send the Q3 report."}]}`
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nX-User-Id: person-%d\r\nContent-Length: %d\r\n\r\n%s", addr, person, len(body), body)
		return c
	}
	// waitKeepAlive reads the stream, with one small buffer it does not
	// keep, until a keep-alive comes: the stream is waiting.
	waitKeepAlive := func(c net.Conn) {
		c.SetReadDeadline(time.Now().Add(bound))
		var buf [512]byte
		var seen []byte
		for !bytes.Contains(seen, []byte("\n: toolgate: waiting")) {
			n, err := c.Read(buf[:])
			if err != nil {
				b.Fatalf("reading a waiting stream: %v (%q)", err, seen)
			}
			seen = append(seen[max(0, len(seen)-64):], buf[:n]...)
		}
	}
	// live reads the heap and stacks in use after the collector ran a few
	// times: a stream waits for minutes, in which the runtime collects
	// (every two minutes at least) and shrinks each goroutine's stack to
	// what its wait uses, which is what a waiting stream costs.
	live := func() (heap, stack int64) {
		for range 5 {
			runtime.GC()
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc), int64(m.StackInuse)
	}
	round := func() []net.Conn {
		conns := make([]net.Conn, waitingStreams)
		for i := range conns {
			conns[i] = open()
		}
		for _, c := range conns {
			waitKeepAlive(c)
		}
		return conns
	}
	// A first round warms the route: its pools, the upstream connections
	// kept idle (at most 32, shared by every stream).
	g := runtime.NumGoroutine()
	for _, c := range round() {
		c.Close()
	}
	settle(b, g+100)
	var heap, stack, goroutines float64
	for b.Loop() {
		g0 := runtime.NumGoroutine()
		h0, s0 := live()
		conns := round()
		h1, s1 := live()
		heap += float64(h1-h0) / waitingStreams
		stack += float64(s1-s0) / waitingStreams
		goroutines += float64(runtime.NumGoroutine()-g0) / waitingStreams
		for _, c := range conns {
			c.Close()
		}
		settle(b, g0)
	}
	n := float64(b.N)
	b.ReportMetric((heap+stack)/n, "bytes/stream")
	b.ReportMetric(heap/n, "heap-bytes/stream")
	b.ReportMetric(stack/n, "stack-bytes/stream")
	b.ReportMetric(goroutines/n, "goroutines/stream")
}

// settle waits (bounded) until the goroutines are back to at most g (when
// g > 0): the closed streams' waits have ended.
func settle(b *testing.B, g int) {
	deadline := time.Now().Add(bound)
	for g > 0 && runtime.NumGoroutine() > g+2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// startResumeBench runs a gate whose route waits for the person, in
// front of an upstream that answers every request with a held
// send_email call, and returns the route's address.
func startResumeBench(b *testing.B) string {
	b.Helper()
	held := streamEvents([]string{"Sending it."}, call{"call_mail", "send_email", `{"to":"team@example.com","subject":"Q3"}`, false})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range held {
			w.Write(ev)
		}
	}))
	b.Cleanup(up.Close)
	dir := b.TempDir()
	pf := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pf, []byte(strings.ReplaceAll(policyYAML, "APP", "http://127.0.0.1:1")), 0o600); err != nil {
		b.Fatal(err)
	}
	gp, pages := testkit.FreePort(b), testkit.FreePort(b)
	testkit.Run(b, fmt.Sprintf(`{
	admin off
	auto_https off
	default_bind 127.0.0.1
	log {
		level ERROR
	}
	grace_period 1ns
	toolgate {
		store %s
		secret %s
		pages http://127.0.0.1:%d/toolgate
	}
}
http://127.0.0.1:%d {
	toolgate {
		policy %s
		owner {http.request.header.X-User-Id}
		resume_wait 10m
		resume_keepalive 200ms
		resume_poll 10s
	}
	reverse_proxy %s
}
`, filepath.Join(dir, "store"), secret, pages, gp, pf, up.URL))
	return fmt.Sprintf("127.0.0.1:%d", gp)
}
