package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testkit"
)

// waitingStream opens a streamed Chat request by owner whose answer holds
// a delete_post call of post, and reports whether the stream stays open
// waiting for the person (it gets a keep-alive) rather than ending at
// once. A waiting stream is cut when the test ends.
func waitingStream(t *testing.T, e *env, owner string, post int) bool {
	t.Helper()
	key := fmt.Sprintf("%s-%d", owner, post)
	e.app.SetRecord(fmt.Sprintf("/posts/%d", post), `{"title":"Post","status":"draft"}`)
	e.provider.Serve(key, testkit.Reply{Events: streamEvents(nil, call{fmt.Sprintf("call_del%d", post), "delete_post", fmt.Sprintf(`{"post":%d}`, post), false})})
	body := fmt.Sprintf(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Delete post %d."}]}`, post)
	req, err := http.NewRequest("POST", e.apiURL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	req = req.WithContext(rctx)
	req.Header.Set("X-User-Id", owner)
	req.Header.Set(testkit.ReplyKeyHeader, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		switch line := lines.Text(); {
		case strings.HasPrefix(line, ": toolgate: waiting"):
			return true
		case line == "data: [DONE]":
			return false
		}
	}
	t.Fatalf("%s's stream of post %d ended without [DONE]: %v", owner, post, lines.Err())
	return false
}

// TestResumeStreamsFairShare (issue 15 §5): resume_max_streams is the
// route's; no one person may take all of it. With a cap of 3, ana's three
// held streams get her share (one waits, the others end at once as
// without resume_wait), and bo's stream still waits.
func TestResumeStreamsFairShare(t *testing.T) {
	e := newResumeEnv(t, "resume_max_streams 3")
	got := []bool{waitingStream(t, e, "ana", 7), waitingStream(t, e, "ana", 8), waitingStream(t, e, "ana", 9)}
	if got[0] != true || got[1] || got[2] {
		t.Errorf("ana's streams waiting: %v, want only the first (her share)", got)
	}
	if !waitingStream(t, e, "bo", 10) {
		t.Error("bo's stream ended at once: ana's streams took the route's whole cap")
	}
}
