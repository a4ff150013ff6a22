package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// raceTimeout bounds every wait of a race: the connections' I/O and the
// wait for every answer.
const raceTimeout = 60 * time.Second

// racePosts sends n copies of one form POST to target as p, so that they
// reach the gate's store together. Each goes on a connection of its own
// with "Expect: 100-continue" and its headers only: the server answers
// "100 Continue" once the request has passed the sign-in and the page's
// handler reads the body. Only when every handler waits for its body are
// the bodies sent, all at once, so the answers are not spaced out by the
// connections' set-up and the sign-in. It returns the final statuses.
func racePosts(t *testing.T, p person, target string, n int, form url.Values, header map[string]string) []int {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	body := form.Encode()
	deadline := time.Now().Add(raceTimeout)
	type conn struct {
		net.Conn
		r *bufio.Reader
	}
	conns := make([]conn, n)
	for i := range conns {
		c, err := net.DialTimeout("tcp", u.Host, raceTimeout)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.SetDeadline(deadline); err != nil {
			t.Fatal(err)
		}
		var head strings.Builder
		fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\n", u.RequestURI(), u.Host)
		req := &http.Request{Header: http.Header{}}
		req.SetBasicAuth(p.name, p.password)
		fmt.Fprintf(&head, "Authorization: %s\r\n", req.Header.Get("Authorization"))
		fmt.Fprintf(&head, "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\nExpect: 100-continue\r\n", len(body))
		for k, v := range header {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
		head.WriteString("\r\n")
		if _, err := c.Write([]byte(head.String())); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns[i] = conn{c, bufio.NewReader(c)}
	}
	// Every handler is reading its body now, the sign-in behind it.
	for i, c := range conns {
		resp, err := http.ReadResponse(c.r, nil)
		if err != nil {
			t.Fatalf("connection %d: waiting for 100 Continue: %v", i, err)
		}
		if resp.StatusCode != http.StatusContinue {
			t.Fatalf("connection %d: %s before the body was sent, want 100 Continue", i, resp.Status)
		}
	}
	statuses := make([]int, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-start:
			case <-time.After(raceTimeout):
				return
			}
			if _, err := c.Write([]byte(body)); err != nil {
				t.Errorf("answer %d: %v", i, err)
				return
			}
			resp, err := http.ReadResponse(c.r, nil)
			if err != nil {
				t.Errorf("answer %d: %v", i, err)
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	close(start)
	if !waitGroup(&wg, raceTimeout) {
		t.Fatalf("the answers still run after %v", raceTimeout)
	}
	return statuses
}
