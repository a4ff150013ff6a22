package gate

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/store"
)

// A streamed answer whose calls are held may wait for the person's
// answers and go on in the same response (the model handler's
// resume_wait). Await is that wait. It ends when every hold of the step is
// settled: the person answered each, and the release path ran what was
// confirmed, exactly once, and recorded the outcomes.
//
// Two things wake a waiting stream. In this process, the release path
// notifies it directly when it settles a hold of the step. Across
// replicas (a shared store), the answer may be taken, and the step
// released, by another process: the stream then learns it from a short
// poll of the store, one Step read per interval. The store is the one
// thing replicas share, and every backend has Step; a notification channel
// of the backend's own (PostgreSQL's LISTEN/NOTIFY) would tie the gate to
// one backend and still need the poll for the others. A poll costs one
// read by id per waiting stream per interval.

// DefaultPoll is how often a waiting stream reads its step from the store
// unless told otherwise.
const DefaultPoll = 2 * time.Second

// AwaitOptions bound one wait.
type AwaitOptions struct {
	// Wait is the longest the stream waits. The wait also ends when the
	// step's first waiting hold expires: it never outlives the TTL.
	Wait time.Duration
	// Poll is how often the store is read for answers another process
	// took (DefaultPoll when zero or less).
	Poll time.Duration
	// Every, with Tick, is how often Tick is called while waiting (the
	// stream's keep-alive); an error from Tick ends the wait.
	Every time.Duration
	Tick  func() error
}

// ErrNotWaiting is Await's answer for a step that cannot be waited for:
// unknown, or not this person's.
var ErrNotWaiting = errors.New("no such step to wait for")

// Await waits until every hold of the step is settled (answered is true),
// or the wait ends without it: the wait's time or the step's TTL is up
// (answered false, err nil), ctx ends (its error: the app or the client
// closed the connection), Tick failed (its error), or the store failed.
// It touches no hold: a wait that ends unanswered leaves the step as it
// was, for the app's next request. While it waits, the person's page says
// that the assistant is waiting (StepView.AssistantWaiting).
func (f *Front) Await(ctx context.Context, stepID string, o AwaitOptions) (answered bool, err error) {
	w, answered, err := f.startWait(ctx, stepID, o)
	if w == nil {
		return answered, err
	}
	defer w.end(ctx)
	return w.wait(ctx)
}

// stepWait is one stream's wait for a step. It lives on the heap, and its
// loop (wait) has a small frame: it stays on the stack of every waiting
// stream, and a goroutine's stack shrinks only to four times what it uses.
type stepWait struct {
	g      *Gate
	stepID string
	o      AwaitOptions
	wake   chan struct{}
	until  time.Time
	timer  *time.Timer
	poll   *time.Ticker
	tick   *time.Ticker // nil without Tick
}

// startWait reads the step and, when it is this person's and still open,
// starts the wait: w is nil when the wait is over before it began
// (answered and err say how).
func (f *Front) startWait(ctx context.Context, stepID string, o AwaitOptions) (w *stepWait, answered bool, err error) {
	g := f.g
	f.Person()
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	w = &stepWait{g: g, stepID: stepID, o: o, wake: g.wake.add(stepID)}
	stop := func(answered bool, err error) (*stepWait, bool, error) {
		g.wake.remove(stepID, w.wake)
		return nil, answered, err
	}
	holds, err := g.cfg.Store.Step(ctx, stepID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = ErrNotWaiting
		}
		return stop(false, err)
	}
	if !f.person.owns(holds[0]) {
		return stop(false, ErrNotWaiting)
	}
	now := g.cfg.Now()
	settled, expires := stepEnd(holds, now)
	wait := min(o.Wait, expires.Sub(now))
	if settled || wait <= 0 {
		return stop(settled, nil)
	}
	w.until = now.Add(wait)
	g.markWaiting(ctx, stepID, w.until, expires)
	w.timer = time.NewTimer(wait)
	w.poll = time.NewTicker(o.Poll)
	if o.Tick != nil && o.Every > 0 {
		w.tick = time.NewTicker(o.Every)
	}
	return w, false, nil
}

// wait waits for the step's end (see Await).
func (w *stepWait) wait(ctx context.Context) (answered bool, err error) {
	var tick <-chan time.Time
	if w.tick != nil {
		tick = w.tick.C
	}
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-w.timer.C:
			// An answer settled just now still counts.
			return w.check(ctx)
		case <-w.wake:
		case <-w.poll.C:
		case <-tick:
			if err := w.o.Tick(); err != nil {
				return false, err
			}
			continue
		}
		if done, err := w.check(ctx); done || err != nil {
			return done, err
		}
	}
}

// check reads the step: whether every hold of it is settled.
func (w *stepWait) check(ctx context.Context) (bool, error) {
	holds, err := w.g.cfg.Store.Step(ctx, w.stepID)
	if err != nil {
		return false, err
	}
	done, _ := stepEnd(holds, w.g.cfg.Now())
	return done, nil
}

// end stops the wait's timers and takes the page's mark off.
func (w *stepWait) end(ctx context.Context) {
	w.g.wake.remove(w.stepID, w.wake)
	w.timer.Stop()
	w.poll.Stop()
	if w.tick != nil {
		w.tick.Stop()
	}
	w.g.unmarkWaiting(ctx, w.stepID, w.until)
}

// stepEnd reports whether every hold of a step is settled, and when its
// first waiting hold expires (the far future when none waits).
func stepEnd(holds []store.Hold, now time.Time) (settled bool, expires time.Time) {
	settled = true
	for _, h := range holds {
		st := h.StateAt(now)
		if st != store.Settled {
			settled = false
		}
		if st == store.Waiting && (expires.IsZero() || h.Expires.Before(expires)) {
			expires = h.Expires
		}
	}
	if expires.IsZero() {
		expires = now.Add(100 * 365 * 24 * time.Hour)
	}
	return settled, expires
}

// waiters are the streams of this process waiting for steps, by step id.
type waiters struct {
	mu sync.Mutex
	m  map[string]map[chan struct{}]struct{}
}

// add registers a waiter for a step; its channel receives when the step
// may have changed.
func (w *waiters) add(stepID string) chan struct{} {
	c := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = make(map[string]map[chan struct{}]struct{})
	}
	if w.m[stepID] == nil {
		w.m[stepID] = make(map[chan struct{}]struct{})
	}
	w.m[stepID][c] = struct{}{}
	return c
}

func (w *waiters) remove(stepID string, c chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m[stepID], c)
	if len(w.m[stepID]) == 0 {
		delete(w.m, stepID)
	}
}

// notify wakes the waiters of a step, without blocking: a waiter not yet
// back reads the store once for every wake-up it missed.
func (w *waiters) notify(stepID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.m[stepID] {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// waitingKey is the index key under which a step is marked while a stream
// waits for it. The marks are the waits' deadlines (decimal nanoseconds of
// the gate's clock), filed as the index's entries, so that a page served
// by any process sharing the store can tell, and a mark a crash left
// behind reads as over once its deadline passed.
func waitingKey(stepID string) string { return "wait\x00" + stepID }

// markWaiting marks a step while a stream waits for it; a failure only
// costs the page's line.
func (g *Gate) markWaiting(ctx context.Context, stepID string, until, expires time.Time) {
	if err := g.cfg.Store.Index(ctx, waitingKey(stepID), strconv.FormatInt(until.UnixNano(), 10), expires); err != nil {
		g.log.Warn("marking a step waited for", zap.String("step_id", stepID), zap.Error(err))
	}
}

// unmarkWaiting takes the mark off when the wait ends, also when the
// request that waited was cancelled.
func (g *Gate) unmarkWaiting(ctx context.Context, stepID string, until time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	if err := g.cfg.Store.Unindex(ctx, waitingKey(stepID), strconv.FormatInt(until.UnixNano(), 10)); err != nil {
		g.log.Warn("unmarking a step waited for", zap.String("step_id", stepID), zap.Error(err))
	}
}

// awaited reports whether a stream waits for the step now.
func (g *Gate) awaited(ctx context.Context, stepID string) bool {
	marks, err := g.cfg.Store.Indexed(ctx, waitingKey(stepID))
	if err != nil {
		return false
	}
	now := g.cfg.Now().UnixNano()
	for _, m := range marks {
		if until, err := strconv.ParseInt(m, 10, 64); err == nil && until > now {
			return true
		}
	}
	return false
}
