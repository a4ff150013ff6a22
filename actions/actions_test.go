package actions

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

type seen struct {
	method, uri string
	header      http.Header
	body        []byte
	verifyErr   error
}

func app(t *testing.T, secret []byte, status int, reply string) (*httptest.Server, func() []seen) {
	t.Helper()
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.RequestURI(), r.Header.Clone(), b, Verify(secret, r, b, time.Now(), time.Minute)})
		mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, reply)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen { mu.Lock(); defer mu.Unlock(); return append([]seen(nil), got...) }
}

func TestRunSignsAndSends(t *testing.T) {
	secret := []byte("s3cret")
	srv, got := app(t, secret, 200, `{"ok":true}`)
	c := &Client{Secret: secret}
	resp, err := c.Run(context.Background(), "DELETE", srv.URL+"/posts/7?hard=1", map[string]string{"X-Blog": "yes"}, []byte(`{"post":7}`), Caller{"ana", "acme"}, "hold123")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || string(resp.Body) != `{"ok":true}` {
		t.Errorf("response = %d %q", resp.Status, resp.Body)
	}
	g := got()
	if len(g) != 1 {
		t.Fatalf("app saw %d requests", len(g))
	}
	r := g[0]
	if r.method != "DELETE" || r.uri != "/posts/7?hard=1" || string(r.body) != `{"post":7}` {
		t.Errorf("request = %s %s %s", r.method, r.uri, r.body)
	}
	if r.verifyErr != nil {
		t.Errorf("signature did not verify: %v", r.verifyErr)
	}
	for k, want := range map[string]string{HeaderPerson: "ana", HeaderTenant: "acme", HeaderIdempotency: "hold123", "X-Blog": "yes", "Content-Type": "application/json"} {
		if v := r.header.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
}

func TestFetchIsSignedGetWithoutBody(t *testing.T) {
	secret := []byte("k")
	srv, got := app(t, secret, 404, `not found`)
	c := &Client{Secret: secret}
	resp, err := c.Fetch(context.Background(), srv.URL+"/posts/9", Caller{Person: "bo"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 404 {
		t.Errorf("status = %d", resp.Status)
	}
	g := got()
	if len(g) != 1 || g[0].method != "GET" || len(g[0].body) != 0 || g[0].verifyErr != nil {
		t.Fatalf("app saw %+v", g)
	}
	if g[0].header.Get(HeaderIdempotency) != "" || g[0].header.Get(HeaderTenant) != "" {
		t.Errorf("unexpected headers %v", g[0].header)
	}
}

func TestVerifyRejects(t *testing.T) {
	secret := []byte("k")
	body := []byte(`{"a":1}`)
	now := time.Unix(1_800_000_000, 0)
	mk := func(ts time.Time, sig string) *http.Request {
		r := httptest.NewRequest("POST", "/x?y=1", strings.NewReader(string(body)))
		r.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
		r.Header.Set(HeaderSignature, sig)
		return r
	}
	good := Sign(secret, "POST", "/x?y=1", now.Unix(), body)
	if err := Verify(secret, mk(now, good), body, now, time.Minute); err != nil {
		t.Fatalf("good request refused: %v", err)
	}
	if Verify(secret, mk(now, good), []byte(`{"a":2}`), now, time.Minute) == nil {
		t.Error("changed body accepted")
	}
	if Verify([]byte("other"), mk(now, good), body, now, time.Minute) == nil {
		t.Error("other secret accepted")
	}
	if Verify(secret, mk(now, good), body, now.Add(10*time.Minute), time.Minute) == nil {
		t.Error("old timestamp accepted")
	}
}

func TestTimeoutIsAnError(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	c := &Client{Secret: []byte("k"), Timeout: 50 * time.Millisecond}
	_, err := c.Run(context.Background(), "POST", srv.URL, nil, []byte(`{}`), Caller{Person: "a"}, "h")
	if !errors.Is(err, ErrNoAnswer) {
		t.Fatalf("a hanging endpoint gave %v, want ErrNoAnswer", err)
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	secret := []byte("k")
	other, got := app(t, secret, 200, "")
	srv := httptest.NewServer(http.RedirectHandler(other.URL, http.StatusFound))
	defer srv.Close()
	c := &Client{Secret: secret}
	resp, err := c.Run(context.Background(), "POST", srv.URL, nil, []byte(`{}`), Caller{Person: "a"}, "h")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusFound || len(got()) != 0 {
		t.Errorf("redirect followed: status %d, other saw %d", resp.Status, len(got()))
	}
}

// dropper is an app whose /drop endpoint reads the request, then closes
// the connection without answering; every other path answers 200 and
// keeps the connection alive. It counts the requests to each path.
func dropper(t *testing.T, tlsH2 bool) (*httptest.Server, func(path string) int, func() []int) {
	t.Helper()
	var mu sync.Mutex
	count := map[string]int{}
	var protos []int
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		count[r.URL.Path]++
		protos = append(protos, r.ProtoMajor)
		mu.Unlock()
		if r.URL.Path != "/drop" {
			io.WriteString(w, `{"ok":true}`)
			return
		}
		if hj, ok := w.(http.Hijacker); ok {
			conn, _, err := hj.Hijack()
			if err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // HTTP/2: reset the stream
	})
	srv := httptest.NewUnstartedServer(h)
	if tlsH2 {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, func(path string) int {
			mu.Lock()
			defer mu.Unlock()
			return count[path]
		}, func() []int {
			mu.Lock()
			defer mu.Unlock()
			return append([]int(nil), protos...)
		}
}

// TestRunDroppedConnectionSentOnce: an app that drops the connection after
// reading a release gets it once, though the release went over a
// connection kept alive by an earlier one, and the error says the outcome
// is unknown. Before releases had a transport of their own, Go's
// transport replayed the request (it carries an Idempotency-Key) on a new
// connection: the app got it twice. TestReleaseOnReusedConnectionNeverRepeated
// covers every method and way of dropping on a raw connection.
func TestRunDroppedConnectionSentOnce(t *testing.T) {
	srv, count, _ := dropper(t, false)
	c := &Client{Secret: []byte("k")}
	ctx := context.Background()
	// Connections kept alive by a read and by an answered release.
	if _, err := c.Fetch(ctx, srv.URL+"/posts/7", Caller{Person: "ana"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(ctx, "POST", srv.URL+"/ok", nil, []byte(`{}`), Caller{Person: "ana"}, "h0"); err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"DELETE", "POST", "GET"} {
		before := count("/drop")
		_, err := c.Run(ctx, method, srv.URL+"/drop", nil, []byte(`{"post":7}`), Caller{Person: "ana"}, "h1")
		if n := count("/drop") - before; n != 1 {
			t.Errorf("%s: the app got the release %d times, want 1", method, n)
		}
		if !errors.Is(err, ErrNoAnswer) || errors.Is(err, ErrNotSent) {
			t.Errorf("%s: err = %v, want ErrNoAnswer", method, err)
		}
	}
}

// TestRunNeverUsesHTTP2: even when the base transport speaks HTTP/2 to an
// app that offers it, a release goes over HTTP/1.1 (whose transport, on a
// fresh connection, never retries) and reaches a dropping app once.
func TestRunNeverUsesHTTP2(t *testing.T) {
	srv, count, protos := dropper(t, true)
	base := srv.Client().Transport.(*http.Transport)
	c := &Client{Secret: []byte("k"), Transport: base}
	ctx := context.Background()
	if _, err := c.Fetch(ctx, srv.URL+"/posts/7", Caller{Person: "ana"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(ctx, "POST", srv.URL+"/ok", nil, []byte(`{}`), Caller{Person: "ana"}, "h0"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Run(ctx, "DELETE", srv.URL+"/drop", nil, []byte(`{}`), Caller{Person: "ana"}, "h1")
	if !errors.Is(err, ErrNoAnswer) {
		t.Errorf("err = %v, want ErrNoAnswer", err)
	}
	if n := count("/drop"); n != 1 {
		t.Errorf("the app got the release %d times", n)
	}
	p := protos()
	if len(p) != 3 || p[0] != 2 || p[1] != 1 || p[2] != 1 {
		t.Errorf("protocols (read, release, release) = %v, want [2 1 1]", p)
	}
}

// TestRunNotSent: an app nobody listens for was never reached: the error
// says nothing was sent.
func TestRunNotSent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := &Client{Secret: []byte("k")}
	_, err = c.Run(context.Background(), "POST", "http://"+addr+"/x", nil, []byte(`{}`), Caller{Person: "a"}, "h")
	if !errors.Is(err, ErrNotSent) || errors.Is(err, ErrNoAnswer) {
		t.Errorf("err = %v, want ErrNotSent", err)
	}
}
