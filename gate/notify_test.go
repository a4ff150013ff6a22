package gate

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// receiver is a notice endpoint: it records every request and answers
// with what status says for that attempt.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	status func(n int) int // the status of the n-th request (from 1)
	seen   chan received   // each request, as it arrives
	now    func() time.Time
}

type received struct {
	header http.Header
	notice Notice
	sigErr error
}

func newReceiver(t *testing.T, status func(n int) int) *receiver {
	t.Helper()
	rc := &receiver{status: status, seen: make(chan received, 64), now: time.Now}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		now := rc.now()
		rc.mu.Unlock()
		x := received{header: r.Header.Clone(), sigErr: actions.Verify([]byte(testSecret), r, body, now, time.Minute)}
		if err := json.Unmarshal(body, &x.notice); err != nil {
			t.Errorf("notice body: %v: %s", err, body)
		}
		rc.mu.Lock()
		rc.got = append(rc.got, x)
		n := len(rc.got)
		rc.mu.Unlock()
		rc.seen <- x
		w.WriteHeader(rc.status(n))
	}))
	t.Cleanup(rc.Close)
	return rc
}

// next waits (bounded) for the next request to arrive.
func (rc *receiver) next(t *testing.T) received {
	t.Helper()
	select {
	case x := <-rc.seen:
		return x
	case <-time.After(10 * time.Second):
		t.Fatal("no notice arrived")
	}
	return received{}
}

// newNotifyRig is a rig whose delete_post notifies url, with a short
// backoff, and counts notices.
func newNotifyRig(t *testing.T, rc *receiver) (*rig, *noticeCounts) {
	t.Helper()
	url := rc.URL
	r := newRig(t, rigOptions{})
	rc.mu.Lock()
	rc.now = r.clock.Now // the gate signs with the rig's clock
	rc.mu.Unlock()
	pol := strings.Replace(testPolicy, "    reply: Removed.\n", "    reply: Removed.\n    notify: {url: '"+url+"/hooks/toolgate?team=blog', headers: {X-Team: blog}}\n", 1)
	p, err := policies.Parse("policy.yaml", []byte(strings.ReplaceAll(pol, "APP", r.app.URL)))
	if err != nil {
		t.Fatal(err)
	}
	r.policy = p
	r.app.SetRecord("/posts/7", `{"title":"Spring meetup"}`)
	counts := &noticeCounts{events: r.events, n: map[string]int{}}
	r.gate.Stop(0)
	r.gate = New(Config{Store: r.db, Actions: r.actions, Pages: "http://gate.test/toolgate", Policy: func(string) *policies.Policy { return r.policy },
		Observer: counts, Secret: []byte(testSecret), Now: r.clock.Now, ActionTimeout: r.timeout, NotifyBackoff: 5 * time.Millisecond})
	return r, counts
}

type noticeCounts struct {
	*events
	mu sync.Mutex
	n  map[string]int // "event/result" → count
}

func (c *noticeCounts) Notified(_, event, result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[event+"/"+result]++
}

func (c *noticeCounts) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// A held call's notice is signed like a release, carries the link, the
// action, the card's sentence and the owner, is tried again after a 500
// (same Idempotency-Key), and is followed by a notice on settlement.
func TestNoticeHeldRetriedAndSettled(t *testing.T) {
	rc := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	r, counts := newNotifyRig(t, rc)
	step, _ := r.hold(ana, call(0, 7))
	if step == "" {
		t.Fatal("not held")
	}
	first, second := rc.next(t), rc.next(t)
	for i, x := range []received{first, second} {
		n := x.notice
		if x.sigErr != nil {
			t.Errorf("attempt %d: signature: %v", i+1, x.sigErr)
		}
		if n.Event != NoticeHeld || n.Link != "http://gate.test/toolgate/h/"+step || n.Action != "delete_post" || n.Sentence != "Delete this post?" ||
			n.Owner != "ana" || n.Tenant != "acme" || n.App != "Test blog" || n.Step != step {
			t.Errorf("attempt %d: notice %+v", i+1, n)
		}
		if x.header.Get("X-Team") != "blog" || x.header.Get("Idempotency-Key") != n.Hold+":held" || x.header.Get("Content-Type") != "application/json" {
			t.Errorf("attempt %d: headers %v", i+1, x.header)
		}
	}
	if first.header.Get("X-Toolgate-Signature") == "" || first.notice != second.notice {
		t.Errorf("the retry differs: %+v vs %+v", first.notice, second.notice)
	}
	hold := r.step(step)[0].ID
	if _, err := r.gate.Answer(context.Background(), step, hold, ana, store.AnswerConfirm); err != nil {
		t.Fatal(err)
	}
	s := rc.next(t)
	if n := s.notice; n.Event != NoticeSettled || n.Hold != hold || n.Answer != "confirm" || n.AnsweredBy != "ana" || n.Result != ResultDone || n.Sentence != "Delete this post?" {
		t.Errorf("settled notice %+v", n)
	}
	if s.header.Get("Idempotency-Key") != hold+":settled" {
		t.Errorf("settled headers %v", s.header)
	}
	if !r.gate.Stop(5 * time.Second) {
		t.Fatal("stop")
	}
	if counts.count("held/delivered") != 1 || counts.count("settled/delivered") != 1 || counts.count("held/failed") != 0 {
		t.Errorf("counts %v", counts.n)
	}
}

// A receiver that always fails gets NotifyAttempts tries, then the
// failure is counted; an action without notify sends nothing.
func TestNoticeGivesUp(t *testing.T) {
	rc := newReceiver(t, func(int) int { return http.StatusBadGateway })
	r, counts := newNotifyRig(t, rc)
	if step, _ := r.hold(ana, call(0, 0)); step == "" {
		t.Fatal("the form was not held")
	}
	if step, _ := r.hold(ana, call(0, 7)); step == "" {
		t.Fatal("the card was not held")
	}
	for i := 0; i < NotifyAttempts; i++ {
		if x := rc.next(t); x.notice.Action != "delete_post" {
			t.Fatalf("a notice for %s, whose policy has no notify", x.notice.Action)
		}
	}
	if !r.gate.Stop(10 * time.Second) {
		t.Fatal("stop")
	}
	rc.mu.Lock()
	n := len(rc.got)
	rc.mu.Unlock()
	if n != NotifyAttempts || counts.count("held/failed") != 1 || counts.count("held/delivered") != 0 {
		t.Errorf("%d attempts, counts %v", n, counts.n)
	}
}

// A receiver that does not answer does not hold up the model's response:
// Hold returns with the link while the receiver still has the notice
// unanswered.
func TestNoticeSlowReceiverDoesNotBlock(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	rc := newReceiver(t, func(int) int {
		select {
		case <-release:
		case <-time.After(20 * time.Second):
		}
		return http.StatusOK
	})
	r, counts := newNotifyRig(t, rc)
	step, _ := r.hold(ana, call(0, 7)) // returns before the receiver answers
	if step == "" {
		t.Fatal("not held")
	}
	if x := rc.next(t); x.notice.Step != step {
		t.Fatalf("notice %+v", x.notice)
	}
	if counts.count("held/delivered") != 0 {
		t.Fatal("delivered before the receiver answered")
	}
	free()
	if !r.gate.Stop(10 * time.Second) {
		t.Fatal("stop")
	}
	if counts.count("held/delivered") != 1 {
		t.Errorf("counts %v", counts.n)
	}
}
