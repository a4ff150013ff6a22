package interceptor

import (
	"context"
	"net/http"
	"testing"

	"github.com/toolgate/toolgate/provider"
)

// followUpRun drives a ResponseWriter with adapter a the way the Caddy
// handler does when a refused call goes back: first (an event stream that
// refuses a call) answers request, then the follow-up's event stream
// follow is written in pieces of the given sizes (cycled; all at once if
// none). It returns what the app read and Close's error (a follow-up
// Write's error stops the writing, as the handler's copy does).
func followUpRun(t *testing.T, a provider.Adapter, h provider.Holder, request, first, follow []byte, sizes []int) ([]byte, error) {
	t.Helper()
	rec := newRecorder()
	rw := Wrap(rec, a, context.Background(), h, 0)
	rw.SetRequest(request)
	rw.Header().Set("Content-Type", "text/event-stream")
	if _, err := rw.Write(first); err != nil {
		t.Fatal(err)
	}
	if _, ok := rw.Continuation(); !ok {
		t.Fatal("no continuation")
	}
	rw.Continue()
	rw.Header().Set("Content-Type", "text/event-stream")
	rw.WriteHeader(http.StatusOK)
	for i := 0; len(follow) > 0; i++ {
		n := len(follow)
		if len(sizes) > 0 {
			n = min(sizes[i%len(sizes)], n)
		}
		if _, err := rw.Write(follow[:n]); err != nil {
			break
		}
		follow = follow[n:]
	}
	err := rw.Close()
	return rec.Body.Bytes(), err
}
