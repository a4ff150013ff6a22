package gate

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// A stream waiting for a step's answers (Front.Await) goes on once every
// hold is settled, and not before; it ends unanswered when its time, or
// the step's TTL, is up, or when its request ends, touching no hold.

// waitResult is how one Await ended.
type waitResult struct {
	answered bool
	err      error
}

// await starts Front.Await for a step in the background.
func (r *rig) await(ctx context.Context, stepID string, o AwaitOptions) <-chan waitResult {
	done := make(chan waitResult, 1)
	go func() {
		ok, err := r.front(ana).Await(ctx, stepID, o)
		done <- waitResult{ok, err}
	}()
	return done
}

// ended waits (bounded) for an Await to end.
func ended(t *testing.T, done <-chan waitResult) waitResult {
	t.Helper()
	select {
	case w := <-done:
		return w
	case <-time.After(20 * time.Second):
		t.Fatal("the wait did not end")
		return waitResult{}
	}
}

// stillWaiting checks that an Await has not ended (it ran through a few
// wake-ups: every read of the store it makes finds the step open).
func stillWaiting(t *testing.T, done <-chan waitResult) {
	t.Helper()
	select {
	case w := <-done:
		t.Fatalf("the wait ended early: %+v", w)
	default:
	}
}

// waitingShown polls the person's page until it says whether the
// assistant waits as want, bounded.
func (r *rig) waitingShown(stepID string, want bool) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := r.gate.View(context.Background(), stepID, ana, "")
		if err != nil {
			r.t.Fatal(err)
		}
		if v.AssistantWaiting == want {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the page says the assistant waits: %v, want %v", v.AssistantWaiting, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// noPoll is a poll interval no test reaches: only a direct wake-up ends
// the wait in time.
const noPoll = time.Hour

func TestAwaitWokenWhenTheStepIsSettled(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	step, _ := r.hold(ana, call(0, 1))
	done := r.await(context.Background(), step, AwaitOptions{Wait: time.Hour, Poll: noPoll})
	r.waitingShown(step, true)
	stillWaiting(t, done)
	r.confirm(step, r.step(step)[0].ID)
	if w := ended(t, done); !w.answered || w.err != nil {
		t.Fatalf("wait ended %+v", w)
	}
	// It ended on the outcome: the action ran, once, and the step reads
	// what it did.
	holds := r.step(step)
	if holds[0].State != store.Settled || r.runs(holds[0].ID) != 1 {
		t.Errorf("state %s, runs %d", holds[0].State, r.runs(holds[0].ID))
	}
	wantResults(t, r.restore(ana, step, false), removed)
	r.waitingShown(step, false)
}

func TestAwaitDeclined(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	step, _ := r.hold(ana, call(0, 1))
	done := r.await(context.Background(), step, AwaitOptions{Wait: time.Hour, Poll: noPoll})
	r.waitingShown(step, true)
	if _, err := r.gate.Answer(context.Background(), step, r.step(step)[0].ID, ana, store.AnswerDecline); err != nil {
		t.Fatal(err)
	}
	if w := ended(t, done); !w.answered {
		t.Fatalf("wait ended %+v", w)
	}
	wantResults(t, r.restore(ana, step, false), OutcomeDeclined)
	if n := len(r.app.Calls()); n != 0 {
		t.Errorf("a declined call ran")
	}
}

// stepReads counts the reads of each step, as the gate makes them.
type stepReads struct {
	store.Store
	mu sync.Mutex
	n  map[string]int
}

func (s *stepReads) Step(ctx context.Context, stepID string) ([]store.Hold, error) {
	s.mu.Lock()
	s.n[stepID]++
	s.mu.Unlock()
	return s.Store.Step(ctx, stepID)
}

func (s *stepReads) reads(stepID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[stepID]
}

func TestAwaitWaitsForEveryAnswer(t *testing.T) {
	counter := &stepReads{n: map[string]int{}}
	r := newRig(t, rigOptions{wrap: func(s store.Store) store.Store { counter.Store = s; return counter }})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	step, _ := r.hold(ana, call(0, 1), call(1, 2))
	holds := r.step(step)
	// A short poll: the wait reads the step again and again in between.
	done := r.await(context.Background(), step, AwaitOptions{Wait: time.Hour, Poll: time.Millisecond})
	r.waitingShown(step, true)
	r.confirm(step, holds[0].ID)
	// Settling the first answer waits for the second: the wait goes on
	// through many reads of the step.
	reads := readsOf(t, counter, step, 5)
	stillWaiting(t, done)
	if reads < 5 {
		t.Fatalf("the wait read the step %d times", reads)
	}
	r.confirm(step, holds[1].ID)
	if w := ended(t, done); !w.answered {
		t.Fatalf("wait ended %+v", w)
	}
	wantResults(t, r.restore(ana, step, false), removed, removed)
}

// readsOf waits (bounded) until n more reads of a step have been made,
// and returns how many were.
func readsOf(t *testing.T, c *stepReads, stepID string, n int) int {
	t.Helper()
	start := c.reads(stepID)
	deadline := time.Now().Add(10 * time.Second)
	for c.reads(stepID) < start+n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return c.reads(stepID) - start
}

// TestAwaitWokenByPollAcrossProcesses: the answer reaches another process
// sharing the store (a second gate, as a second replica is): nothing
// notifies this one, and its poll of the store finds the outcome.
func TestAwaitWokenByPollAcrossProcesses(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	other := New(Config{
		Store:   r.db,
		Actions: &actions.Client{Secret: []byte(testSecret), Timeout: r.timeout},
		Pages:   "http://gate.test/toolgate",
		Policy:  func(string) *policies.Policy { return r.policy },
		Secret:  []byte(testSecret),
		Now:     r.clock.Now,
	})
	t.Cleanup(func() { other.Stop(5 * time.Second) })
	step, _ := r.hold(ana, call(0, 1))
	done := r.await(context.Background(), step, AwaitOptions{Wait: time.Hour, Poll: 10 * time.Millisecond})
	r.waitingShown(step, true)
	// The other process's page sees the wait too: the mark is in the store.
	if v, err := other.View(context.Background(), step, ana, ""); err != nil || !v.AssistantWaiting {
		t.Errorf("the other process's page: %+v, %v", v, err)
	}
	if _, err := other.Answer(context.Background(), step, r.step(step)[0].ID, ana, store.AnswerConfirm); err != nil {
		t.Fatal(err)
	}
	if w := ended(t, done); !w.answered {
		t.Fatalf("wait ended %+v", w)
	}
	if n := r.runs(r.step(step)[0].ID); n != 1 {
		t.Errorf("ran %d times", n)
	}
}

func TestAwaitEndsUnanswered(t *testing.T) {
	rig := func(t *testing.T) *rig {
		r := newRig(t, rigOptions{})
		r.app.SetRecord("/posts/1", `{"title":"One"}`)
		return r
	}
	t.Run("its time is up", func(t *testing.T) {
		r := rig(t)
		step, _ := r.hold(ana, call(0, 1))
		w := ended(t, r.await(context.Background(), step, AwaitOptions{Wait: 20 * time.Millisecond, Poll: noPoll}))
		if w.answered || w.err != nil {
			t.Errorf("wait ended %+v", w)
		}
		r.untouched(step)
		r.waitingShown(step, false)
	})
	t.Run("the TTL is up", func(t *testing.T) {
		r := rig(t)
		step, _ := r.hold(ana, call(0, 1))
		// 20ms of the hold's TTL are left: an hour's wait ends with it.
		r.clock.Advance(DefaultTTL - 20*time.Millisecond)
		w := ended(t, r.await(context.Background(), step, AwaitOptions{Wait: time.Hour, Poll: noPoll}))
		if w.answered || w.err != nil {
			t.Errorf("wait ended %+v", w)
		}
		r.untouched(step)
	})
	t.Run("the request ends", func(t *testing.T) {
		r := rig(t)
		step, _ := r.hold(ana, call(0, 1))
		ctx, cancel := context.WithCancel(context.Background())
		done := r.await(ctx, step, AwaitOptions{Wait: time.Hour, Poll: noPoll})
		r.waitingShown(step, true)
		cancel()
		if w := ended(t, done); w.answered || !errors.Is(w.err, context.Canceled) {
			t.Errorf("wait ended %+v", w)
		}
		r.untouched(step)
		r.waitingShown(step, false)
		// The person can still answer, and the model reads it next time.
		r.confirm(step, r.step(step)[0].ID)
		wantResults(t, r.restore(ana, step, false), removed)
	})
	t.Run("the keep-alive fails", func(t *testing.T) {
		r := rig(t)
		step, _ := r.hold(ana, call(0, 1))
		gone := errors.New("client gone")
		w := ended(t, r.await(context.Background(), step, AwaitOptions{Wait: time.Hour, Poll: noPoll, Every: time.Millisecond, Tick: func() error { return gone }}))
		if w.answered || !errors.Is(w.err, gone) {
			t.Errorf("wait ended %+v", w)
		}
		r.untouched(step)
	})
	t.Run("another person's step", func(t *testing.T) {
		r := rig(t)
		step, _ := r.hold(Person{Owner: "bo", Tenant: "acme"}, call(0, 1))
		if w := ended(t, r.await(context.Background(), step, AwaitOptions{Wait: time.Hour})); w.answered || !errors.Is(w.err, ErrNotWaiting) {
			t.Errorf("wait ended %+v", w)
		}
	})
}

// untouched checks that a step's holds still wait, and nothing ran.
func (r *rig) untouched(stepID string) {
	r.t.Helper()
	for _, h := range r.step(stepID) {
		if h.StateAt(r.clock.Now()) != store.Waiting || r.runs(h.ID) != 0 {
			r.t.Errorf("hold %s: %s, runs %d", h.ID, h.StateAt(r.clock.Now()), r.runs(h.ID))
		}
	}
}
