package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// Notices: for an action whose policy has notify, the gate POSTs a JSON
// notice to the policy's URL when one of its calls is held (with the
// link, so a platform can send it on to Slack, e-mail or a push service)
// and when that hold is settled. A notice is signed like a release
// (actions.Sign over "POST", the URL's path and query, the timestamp and
// the body; X-Toolgate-Timestamp and X-Toolgate-Signature), carries an
// Idempotency-Key (hold id and event) so a receiver can drop a repeat,
// and is sent in the background: the model's response never waits for
// it. A failed delivery (no answer, or a status other than 2xx) is tried
// again after a backoff that doubles, NotifyAttempts times in all; then
// it is logged and counted, and dropped. A notice holds no form value,
// no argument and no outcome text: only what the card showed and a fixed
// word for the result. Stop waits for notices on their way as it waits
// for releases.

// Notice is the JSON body of a notice.
type Notice struct {
	// Event is "held" or "settled".
	Event  string `json:"event"`
	Hold   string `json:"hold"`
	Step   string `json:"step"`
	Link   string `json:"link"`
	Action string `json:"action"`
	App    string `json:"app,omitempty"`
	// Sentence is the card's sentence, or the form's message.
	Sentence string `json:"sentence"`
	// Owner and Tenant are whose conversation the call came from.
	Owner  string `json:"owner"`
	Tenant string `json:"tenant,omitempty"`
	// Expires is when the hold stops waiting ("held").
	Expires time.Time `json:"expires"`
	// Answer is the answer given ("settled": confirm, decline, submit,
	// later; "" when nobody answered).
	Answer string `json:"answer,omitempty"`
	// AnsweredBy is who answered ("settled"), the owner or an approver.
	AnsweredBy string `json:"answered_by,omitempty"`
	// Result is what became of the hold ("settled"), one of the page's
	// result kinds: done, declined, expired, moved_on, unknown, ...
	Result string `json:"result,omitempty"`
	// At is when the gate made the notice.
	At time.Time `json:"at"`
}

// The notice events.
const (
	NoticeHeld    = "held"
	NoticeSettled = "settled"
)

// NotifyObserver is an Observer that also counts notices: result is
// "delivered", "failed" (every attempt failed) or "dropped" (too many
// notices in flight). The gate calls it when its Observer has it.
type NotifyObserver interface {
	Notified(action, event, result string)
}

// Notice delivery bounds.
const (
	// NotifyAttempts is how many times one notice is tried.
	NotifyAttempts = 5
	// maxNoticesInFlight bounds the notices being delivered (and waiting
	// to be tried again) at once; a notice beyond it is dropped, logged
	// and counted, so a receiver that is down costs bounded memory.
	maxNoticesInFlight = 256
	// defaultNotifyBackoff is the wait before the second attempt.
	defaultNotifyBackoff = time.Second
)

// notifier delivers notices. The zero value is ready.
type notifier struct {
	once   sync.Once
	client *http.Client
	slots  chan struct{}
	// held holds, per hold id, a channel closed once its "held" notice is
	// delivered or given up, so its "settled" notice is sent after it.
	held sync.Map
}

func (n *notifier) init(timeout time.Duration) {
	n.once.Do(func() {
		n.client = &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		n.slots = make(chan struct{}, maxNoticesInFlight)
	})
}

// notifyHeld sends a "held" notice for each waiting hold of an action
// with notify.
func (g *Gate) notifyHeld(holds []store.Hold) {
	for _, h := range holds {
		a := g.action(h)
		if h.State != store.Waiting || a == nil || a.Notify == nil || primaryOf(h) != "" {
			continue
		}
		w := g.waitingHold(h, rights{}, nil)
		n := Notice{Event: NoticeHeld, Hold: h.ID, Step: h.StepID, Link: w.Link, Action: h.Action, App: w.App, Sentence: w.Sentence,
			Owner: h.Owner, Tenant: h.Tenant, Expires: h.Expires, At: g.cfg.Now()}
		done := make(chan struct{})
		g.notices.held.Store(h.ID, done)
		g.sendNotice(a.Notify, n, nil, func() { close(done); g.notices.held.Delete(h.ID) })
	}
}

// notifySettled sends a "settled" notice for a hold just settled with
// outcome, after its "held" notice when that is still on its way.
func (g *Gate) notifySettled(h store.Hold, outcome string) {
	a := g.action(h)
	if a == nil || a.Notify == nil || h.Kind == store.KindTicket {
		return
	}
	h.State, h.Outcome = store.Settled, outcome
	w := g.waitingHold(h, rights{}, nil)
	n := Notice{Event: NoticeSettled, Hold: h.ID, Step: h.StepID, Link: w.Link, Action: h.Action, App: w.App, Sentence: w.Sentence,
		Owner: h.Owner, Tenant: h.Tenant, Expires: h.Expires, Answer: h.Answer, AnsweredBy: h.AnsweredBy,
		Result: resultOf(h, store.Settled, true).Kind, At: g.cfg.Now()}
	var after <-chan struct{}
	if c, ok := g.notices.held.Load(h.ID); ok {
		after = c.(chan struct{})
	}
	g.sendNotice(a.Notify, n, after, func() {})
}

// sendNotice delivers one notice in the background, after after is closed (when
// not nil), then calls done.
func (g *Gate) sendNotice(to *policies.Notify, n Notice, after <-chan struct{}, done func()) {
	g.notices.init(g.cfg.ActionTimeout)
	select {
	case g.notices.slots <- struct{}{}:
	default:
		done()
		g.log.Error("notice dropped: too many in flight", zap.String("hold_id", n.Hold), zap.String("action", n.Action), zap.String("event", n.Event))
		g.countNotice(n, "dropped")
		return
	}
	body, err := json.Marshal(n)
	if err != nil || !g.track.add() { // a Notice always marshals; the gate may be stopping
		<-g.notices.slots
		done()
		g.log.Error("notice dropped: the gate is stopping", zap.String("hold_id", n.Hold), zap.String("action", n.Action), zap.String("event", n.Event))
		g.countNotice(n, "dropped")
		return
	}
	go func() {
		defer func() { <-g.notices.slots; done(); g.track.done() }()
		if after != nil {
			select {
			case <-after:
			case <-g.life.Done():
				return
			}
		}
		backoff := g.cfg.NotifyBackoff
		if backoff <= 0 {
			backoff = defaultNotifyBackoff
		}
		var err error
		for attempt := 1; ; attempt++ {
			if err = g.deliver(to, n, body); err == nil {
				g.log.Info("notice delivered", zap.String("hold_id", n.Hold), zap.String("action", n.Action), zap.String("event", n.Event), zap.Int("attempt", attempt))
				g.countNotice(n, "delivered")
				return
			}
			if attempt == NotifyAttempts {
				break
			}
			g.log.Warn("notice not delivered; trying again", zap.String("hold_id", n.Hold), zap.String("event", n.Event), zap.Int("attempt", attempt),
				zap.Duration("backoff", backoff), zap.Error(err))
			select {
			case <-time.After(backoff):
				backoff *= 2
			case <-g.life.Done():
				g.log.Error("notice not delivered: the gate stopped", zap.String("hold_id", n.Hold), zap.String("action", n.Action), zap.String("event", n.Event))
				g.countNotice(n, "failed")
				return
			}
		}
		g.log.Error("notice not delivered", zap.String("hold_id", n.Hold), zap.String("action", n.Action), zap.String("event", n.Event),
			zap.Int("attempts", NotifyAttempts), zap.Error(err))
		g.countNotice(n, "failed")
	}()
}

// deliver makes one attempt: a signed POST of body; any status but 2xx
// is a failure.
func (g *Gate) deliver(to *policies.Notify, n Notice, body []byte) error {
	u, err := url.Parse(to.URL)
	if err != nil {
		return fmt.Errorf("parsing notify url: %w", err)
	}
	req, err := http.NewRequestWithContext(g.life, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("making notice request: %w", err)
	}
	for k, v := range to.Headers {
		req.Header.Set(k, v)
	}
	ts := g.cfg.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(actions.HeaderIdempotency, n.Hold+":"+n.Event)
	req.Header.Set(actions.HeaderHold, n.Hold)
	req.Header.Set(actions.HeaderTimestamp, strconv.FormatInt(ts, 10))
	sig := actions.Sign(nil, http.MethodPost, u.RequestURI(), ts, body)
	if g.cfg.Actions != nil {
		sig = g.cfg.Actions.Signature(http.MethodPost, u.RequestURI(), ts, body)
	}
	req.Header.Set(actions.HeaderSignature, sig)
	resp, err := g.notices.client.Do(req)
	if err != nil {
		return fmt.Errorf("posting notice to %s: %w", u.Redacted(), err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // the connection may be used again
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("posting notice to %s: HTTP %d", u.Redacted(), resp.StatusCode)
	}
	return nil
}

func (g *Gate) countNotice(n Notice, result string) {
	if o, ok := g.cfg.Observer.(NotifyObserver); ok {
		o.Notified(n.Action, n.Event, result)
	}
}
