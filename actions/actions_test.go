package actions

import (
	"context"
	"io"
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
	if _, err := c.Run(context.Background(), "POST", srv.URL, nil, []byte(`{}`), Caller{Person: "a"}, "h"); err == nil {
		t.Fatal("a hanging endpoint gave no error")
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
