package actions

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// rawApp is an app on a raw TCP listener, so a test controls what
// happens on the wire after the request: on a path ending in /ok it
// answers 200 and keeps the connection; /drop reads the request in full
// and closes without a byte of answer; /cuthead writes half a status
// line and closes; /cutbody writes the headers and part of the body and
// closes. It counts accepted connections and the requests it read, by
// path, as they arrived.
type rawApp struct {
	url  string
	mu   sync.Mutex
	open []net.Conn // closed at cleanup: a kept-alive one waits for more
	// conns is the number of connections accepted.
	conns int
	// reqs are the requests read, in order: method, path, body and
	// whether they carried an Idempotency-Key.
	reqs []rawReq
}

type rawReq struct {
	method, path, body string
	idempotent         bool
	chunked            bool
	conn               int // which accepted connection, from 1
}

func newRawApp(t testing.TB) *rawApp {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &rawApp{url: "http://" + l.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		a.mu.Lock()
		for _, c := range a.open {
			c.Close()
		}
		a.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			a.mu.Lock()
			a.conns++
			a.open = append(a.open, c)
			n := a.conns
			a.mu.Unlock()
			wg.Go(func() { a.serve(c, n) })
		}
	})
	return a
}

func (a *rawApp) serve(c net.Conn, n int) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		a.mu.Lock()
		a.reqs = append(a.reqs, rawReq{r.Method, r.URL.Path, string(body), r.Header.Get(HeaderIdempotency) != "",
			len(r.TransferEncoding) > 0, n})
		a.mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/drop"):
			return
		case strings.HasSuffix(r.URL.Path, "/cuthead"):
			io.WriteString(c, "HTTP/1.1 200 O")
			return
		case strings.HasSuffix(r.URL.Path, "/cutbody"):
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"ok\":")
			return
		}
		answer := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
		if r.Method != "HEAD" {
			answer += `{"ok":true}`
		}
		if _, err := io.WriteString(c, answer); err != nil {
			return
		}
	}
}

// seen returns how many requests for path the app read, and the
// number of connections it accepted.
func (a *rawApp) seen(path string) (n, conns int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.reqs {
		if r.path == path {
			n++
		}
	}
	return n, a.conns
}

func (a *rawApp) requests() []rawReq {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]rawReq(nil), a.reqs...)
}

// TestReleasesReuseOneConnection: releases one after another, and record
// reads one after another, each go over one kept-alive connection.
func TestReleasesReuseOneConnection(t *testing.T) {
	ctx := context.Background()
	a := newRawApp(t)
	c := &Client{Secret: []byte("k")}
	for i := range 5 {
		if _, err := c.Run(ctx, "DELETE", a.url+"/posts/ok", nil, []byte(`{"post":7}`), Caller{Person: "ana"}, fmt.Sprint("h", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n, conns := a.seen("/posts/ok"); n != 5 || conns != 1 {
		t.Errorf("5 releases: the app read %d on %d connections, want 5 on 1", n, conns)
	}
	r := newRawApp(t)
	for range 5 {
		if _, err := c.Fetch(ctx, r.url+"/posts/ok", Caller{Person: "ana"}); err != nil {
			t.Fatal(err)
		}
	}
	if n, conns := r.seen("/posts/ok"); n != 5 || conns != 1 {
		t.Errorf("5 reads: the app read %d on %d connections, want 5 on 1", n, conns)
	}
}

// TestReleaseOnReusedConnectionNeverRepeated: a release sent on a kept-
// alive connection that the app closes after reading it (before an
// answer, or in the middle of one) reaches the app exactly once, and the
// error says what is known: no answer (the action may have run), or an
// answer whose body was cut. Every method a policy may use, with a body
// and without, with an Idempotency-Key and without. Go's transport sends
// a request again on a new connection when a reused one fails, if it
// thinks the request may be repeated (TestNaiveKeepAliveRepeats); the
// release's body is one it cannot rewind, so it never does.
func TestReleaseOnReusedConnectionNeverRepeated(t *testing.T) {
	ctx := context.Background()
	for _, method := range []string{"DELETE", "POST", "PUT", "PATCH", "GET", "HEAD"} {
		for _, args := range []string{`{"post":7}`, ""} {
			for _, hold := range []string{"h1", ""} {
				for _, fail := range []string{"drop", "cuthead", "cutbody"} {
					name := fmt.Sprintf("%s/body=%v/key=%v/%s", method, args != "", hold != "", fail)
					if method == "HEAD" && fail == "cutbody" {
						continue // a HEAD answer has no body to cut
					}
					t.Run(name, func(t *testing.T) {
						a := newRawApp(t)
						c := &Client{Secret: []byte("k")}
						if _, err := c.Run(ctx, method, a.url+"/a/ok", nil, []byte(args), Caller{Person: "ana"}, hold); err != nil {
							t.Fatal(err)
						}
						resp, err := c.Run(ctx, method, a.url+"/a/"+fail, nil, []byte(args), Caller{Person: "ana"}, hold)
						n, conns := a.seen("/a/" + fail)
						if n != 1 {
							t.Errorf("the app read the release %d times, want once", n)
						}
						if conns != 1 {
							t.Errorf("%d connections; the release did not go over the kept-alive one", conns)
						}
						switch fail {
						case "cutbody":
							if resp.Status != 200 || err == nil {
								t.Errorf("an answer cut in its body: status %d, err %v; want 200 and an error", resp.Status, err)
							}
						default:
							if resp.Status != 0 || !errors.Is(err, ErrNoAnswer) || errors.Is(err, ErrNotSent) {
								t.Errorf("status %d, err %v; want no status and ErrNoAnswer (may have run)", resp.Status, err)
							}
						}
						for _, r := range a.requests() {
							if r.idempotent != (hold != "") {
								t.Errorf("Idempotency-Key sent = %v, want %v", r.idempotent, hold != "")
							}
							if lacksBody := method == "GET" || method == "HEAD" || method == "DELETE"; r.chunked && (lacksBody || args != "") {
								t.Errorf("%s %s (body %q) went chunked", r.method, r.path, r.body)
							}
							if method == "GET" || method == "HEAD" || args == "" {
								if r.body != "" {
									t.Errorf("%s %s carried a body %q", r.method, r.path, r.body)
								}
							} else if r.body != args {
								t.Errorf("%s %s: body %q, want %q", r.method, r.path, r.body, args)
							}
						}
					})
				}
			}
		}
	}
}

// TestNaiveKeepAliveRepeats shows that the app above detects a repeat:
// an ordinary request on a kept-alive connection (a body the transport
// can rewind, or none) with an Idempotency-Key, or an ordinary GET, is
// sent a second time, on a new connection, when the reused one is closed
// before the answer. This is what the release's construction prevents.
func TestNaiveKeepAliveRepeats(t *testing.T) {
	for _, method := range []string{"DELETE", "POST", "GET"} {
		t.Run(method, func(t *testing.T) {
			a := newRawApp(t)
			hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
			defer hc.CloseIdleConnections()
			send := func(path string) error {
				var body io.Reader
				if method != "GET" {
					body = bytes.NewReader([]byte(`{"post":7}`))
				}
				req, _ := http.NewRequest(method, a.url+path, body)
				req.Header.Set(HeaderIdempotency, "h1")
				resp, err := hc.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				return err
			}
			if err := send("/a/ok"); err != nil {
				t.Fatal(err)
			}
			send("/a/drop")
			if n, conns := a.seen("/a/drop"); n != 2 || conns != 2 {
				t.Errorf("a naive request: the app read it %d times on %d connections; want 2 on 2 (the test would not see a repeat)", n, conns)
			}
		})
	}
}
