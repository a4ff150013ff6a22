package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/gate"
)

// Notices through a real Caddy: the platform's receiver is a fake (it
// lies outside the product); the app is openai-go.

// noticeReceiver answers nothing until opened, then 500 to the first
// notice and 200 to every other.
type noticeReceiver struct {
	srv      *httptest.Server
	open     chan struct{}
	arrived  chan gate.Notice
	mu       sync.Mutex
	n        int
	answered int
	sigErrs  []error
}

func newNoticeReceiver(t *testing.T) *noticeReceiver {
	rc := &noticeReceiver{open: make(chan struct{}), arrived: make(chan gate.Notice, 16)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var n gate.Notice
		if err := json.Unmarshal(body, &n); err != nil {
			t.Errorf("notice: %v: %s", err, body)
		}
		rc.mu.Lock()
		rc.n++
		first := rc.n == 1
		rc.sigErrs = append(rc.sigErrs, actions.Verify([]byte(secret), r, body, time.Now(), time.Minute))
		rc.mu.Unlock()
		rc.arrived <- n
		select {
		case <-rc.open:
		case <-time.After(30 * time.Second):
		}
		rc.mu.Lock()
		rc.answered++
		rc.mu.Unlock()
		if first {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *noticeReceiver) next(t *testing.T) gate.Notice {
	t.Helper()
	select {
	case n := <-rc.arrived:
		return n
	case <-time.After(20 * time.Second):
		t.Fatal("no notice arrived")
	}
	return gate.Notice{}
}

func TestNoticesThroughCaddy(t *testing.T) {
	rc := newNoticeReceiver(t)
	e := newEnv(t, envOptions{policy: "notify: {url: '" + rc.srv.URL + "/toolgate-notices'}\n" + policyYAML})
	setupPost(e)
	l, msg := e.hold(t, "ana") // the receiver answers nothing yet
	if l == "" {
		t.Fatal("not held")
	}
	n := rc.next(t)
	rc.mu.Lock()
	answered := rc.answered
	rc.mu.Unlock()
	if answered != 0 {
		t.Fatal("the receiver answered before the app had its response")
	}
	if n.Event != "held" || n.Link != l || n.Action != "delete_post" || n.Sentence != "Delete this post? This cannot be undone." || n.Owner != "ana" {
		t.Errorf("notice %+v", n)
	}
	close(rc.open) // 500 to the first attempt; the retry gets 200
	if again := rc.next(t); again != n {
		t.Errorf("the retry differs: %+v vs %+v", again, n)
	}
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusOK && st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	s := rc.next(t)
	if s.Event != "settled" || s.Hold != n.Hold || s.Answer != "confirm" || s.Result != "done" || s.AnsweredBy != "ana" {
		t.Errorf("settled notice %+v", s)
	}
	if got := toolResult(e.next(t, "ana", msg, "Thanks"), "call_del7"); got != "The person confirmed. Removed." {
		t.Errorf("restored tool result = %q", got)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for i, err := range rc.sigErrs {
		if err != nil {
			t.Errorf("notice %d: signature: %v", i+1, err)
		}
	}
	if strings.Contains(s.Sentence, "Removed") {
		t.Errorf("the settled notice carries the outcome text: %+v", s)
	}
}
