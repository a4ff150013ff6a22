package gate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/store"
)

const (
	removed    = "The person confirmed. Removed."
	unknownCut = "The person confirmed, but the gate stopped before the app answered; it may or may not have run; nothing was retried."
)

// confirm answers hold id of a step as ana.
func (r *rig) confirm(stepID, id string) {
	r.t.Helper()
	if _, err := r.gate.Answer(context.Background(), stepID, id, ana, store.AnswerConfirm); err != nil {
		r.t.Fatalf("confirm: %v", err)
	}
}

func (r *rig) runs(id string) int { return r.app.RunCount(id) }

func wantResults(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("results %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d = %q, want %q", i, got[i], want[i])
		}
	}
}

// TestConfirmedHoldRunsWhenThePersonMovesOn: in a step of two holds, the
// person confirms one and writes on instead of answering the other. The
// other is settled as moved on, and that completes the step: the
// confirmed one runs, once, and the model reads what it did. Before, the
// claim that completed the step released nothing: the confirmed hold
// never ran, stayed answered and the model read "still running" for good.
func TestConfirmedHoldRunsWhenThePersonMovesOn(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	step, _ := r.hold(ana, call(0, 1), call(1, 2))
	holds := r.step(step)
	r.confirm(step, holds[0].ID)
	if n := r.runs(holds[0].ID); n != 0 {
		t.Fatalf("ran before the step was complete: %d", n)
	}
	wantResults(t, r.restore(ana, step, false), OutcomeAnswered, OutcomeWaiting)
	wantResults(t, r.restore(ana, step, true), removed, OutcomeMovedOn)
	if n := r.runs(holds[0].ID); n != 1 {
		t.Errorf("the confirmed hold ran %d times", n)
	}
	if n := r.runs(holds[1].ID); n != 0 {
		t.Errorf("the moved-on hold ran %d times", n)
	}
	wantResults(t, r.restore(ana, step, true), removed, OutcomeMovedOn)
	if n := len(r.app.Calls()); n != 1 {
		t.Errorf("%d releases, want 1", n)
	}
}

// TestConfirmedHoldRunsWhenTheOtherExpires: the same when the other hold's
// TTL passes: the model's next request completes the step.
func TestConfirmedHoldRunsWhenTheOtherExpires(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	step, _ := r.hold(ana, call(0, 1), call(1, 2))
	holds := r.step(step)
	r.confirm(step, holds[0].ID)
	r.clock.Advance(DefaultTTL)
	wantResults(t, r.restore(ana, step, false), removed, OutcomeExpired)
	if n := r.runs(holds[0].ID); n != 1 {
		t.Errorf("the confirmed hold ran %d times", n)
	}
}

// TestSweeperCompletesAnExpiredStep: with no request from the model at
// all, the sweeper claims the expired hold beside an answered one, which
// completes the step and releases it; a second sweep runs nothing more.
func TestSweeperCompletesAnExpiredStep(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	step, _ := r.hold(ana, call(0, 1), call(1, 2))
	holds := r.step(step)
	r.confirm(step, holds[0].ID)
	if err := r.gate.Sweep(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if n := len(r.app.Calls()); n != 0 {
		t.Fatalf("the sweeper ran an incomplete step: %d", n)
	}
	r.clock.Advance(DefaultTTL)
	for range 2 {
		if err := r.gate.Sweep(context.Background(), false); err != nil {
			t.Fatal(err)
		}
	}
	now := r.step(step)
	if now[0].State != store.Settled || r.gate.outcomeText(now[0]) != removed || now[1].State != store.Settled || r.gate.outcomeText(now[1]) != OutcomeExpired {
		t.Errorf("after the sweep: %s %q / %s %q", now[0].State, r.gate.outcomeText(now[0]), now[1].State, r.gate.outcomeText(now[1]))
	}
	if n := r.runs(holds[0].ID); n != 1 {
		t.Errorf("the confirmed hold ran %d times", n)
	}
}

// TestReleaseOutlivesTheRequest: the person's request ends (a closed tab)
// while the app is still answering the release. The release goes on: the
// app gets it once and the hold ends settled with the app's real answer.
// Before, the release ran on the request's context: it was cut, the hold
// stayed answered and the model read "still running" for good.
func TestReleaseOutlivesTheRequest(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.Answer(200, `{}`, 300*time.Millisecond)
	step, _ := r.hold(ana, call(0, 1))
	id := r.step(step)[0].ID
	r.answerThenLeave(step, id)
	h := r.settled(id)
	if r.gate.outcomeText(h) != removed {
		t.Errorf("outcome = %q, want %q", r.gate.outcomeText(h), removed)
	}
	if n := r.runs(id); n != 1 {
		t.Errorf("ran %d times", n)
	}
}

// answerThenLeave confirms a hold as ana on a request that ends (a closed
// tab) as soon as the release has reached the app; it returns then.
func (r *rig) answerThenLeave(stepID, id string) {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.gate.Answer(ctx, stepID, id, ana, store.AnswerConfirm)
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); r.runs(id) == 0; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatal("the release did not reach the app within 10s")
		}
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			r.t.Fatal("the answer returned after the app answered, not when its request ended")
		}
	case <-time.After(10 * time.Second):
		r.t.Fatal("the answer did not return within 10s of its request ending")
	}
}

// settled waits (bounded) for a hold to be settled and returns it.
func (r *rig) settled(id string) store.Hold {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, err := r.db.Get(context.Background(), id)
		if err != nil {
			r.t.Fatal(err)
		}
		if h.State == store.Settled {
			return h
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("hold still %s after 10s", h.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStopWaitsForReleasesInFlight: Stop waits for a release in flight to
// finish and settle; one that outlasts the wait is cut (left Running for
// the sweeper) and Stop says so.
func TestStopWaitsForReleasesInFlight(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.Answer(200, `{}`, time.Second)
	step, _ := r.hold(ana, call(0, 1))
	id := r.step(step)[0].ID
	r.answerThenLeave(step, id)
	if h, _ := r.db.Get(context.Background(), id); h.State != store.Running {
		t.Fatalf("the release is not in flight: %s", h.State)
	}
	if !r.gate.Stop(5 * time.Second) {
		t.Fatal("Stop gave up on a release that takes 1s")
	}
	h, err := r.db.Get(context.Background(), id)
	if err != nil || h.State != store.Settled || r.gate.outcomeText(h) != removed {
		t.Fatalf("after Stop: %s %q %v", h.State, r.gate.outcomeText(h), err)
	}
	// A stopped gate starts no release: the answered step waits for the
	// sweeper of the next start.
	step2, _ := r.hold(ana, call(0, 1))
	id2 := r.step(step2)[0].ID
	if _, err := r.gate.Answer(context.Background(), step2, id2, ana, store.AnswerConfirm); err != nil {
		t.Fatal(err)
	}
	if h, _ := r.db.Get(context.Background(), id2); h.State != store.Answered || r.runs(id2) != 0 {
		t.Errorf("a stopped gate released: %s, %d runs", h.State, r.runs(id2))
	}
}

// TestSweeperSettlesACutReleaseAsUnknown: the process died after Begin,
// the request on its way (a store on disk, closed without settling). The
// start-up sweep settles it as unknown and never sends it again.
func TestSweeperSettlesACutReleaseAsUnknown(t *testing.T) {
	r := newRig(t, rigOptions{disk: true})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	step, _ := r.hold(ana, call(0, 1))
	id := r.step(step)[0].ID
	ctx := context.Background()
	if _, err := r.db.Claim(ctx, id, store.Answer{Choice: store.AnswerConfirm, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.db.Begin(ctx, id); err != nil {
		t.Fatal(err)
	}
	// A sweep of a running gate leaves a release that may still be live.
	if err := r.gate.Sweep(ctx, false); err != nil {
		t.Fatal(err)
	}
	if h, _ := r.db.Get(ctx, id); h.State != store.Running {
		t.Fatalf("a live release was settled: %s %q", h.State, r.gate.outcomeText(h))
	}
	r.restart()
	h, err := r.db.Get(ctx, id)
	if err != nil || h.State != store.Settled || r.gate.outcomeText(h) != unknownCut {
		t.Fatalf("after restart: %s %q %v", h.State, r.gate.outcomeText(h), err)
	}
	if n := len(r.app.Calls()); n != 0 {
		t.Errorf("the sweeper sent a cut release: %d", n)
	}
	wantResults(t, r.restore(ana, step, true), unknownCut)
}

// TestSweeperReleasesAnAnsweredStepOnce: the process died between the
// person's answer and the release. The start-up sweep releases it, with
// the card's re-check, once; later sweeps and restarts run nothing more.
// The same hold left Running by a periodic sweep's own timing is only
// settled once its release cannot be live any more.
func TestSweeperReleasesAnAnsweredStepOnce(t *testing.T) {
	r := newRig(t, rigOptions{disk: true})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	step, _ := r.hold(ana, call(0, 1), call(1, 2))
	holds := r.step(step)
	ctx := context.Background()
	for _, h := range holds {
		if _, err := r.db.Claim(ctx, h.ID, store.Answer{Choice: store.AnswerConfirm, By: "ana"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.gate.Sweep(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n := len(r.app.Calls()); n != 0 {
		t.Fatalf("a periodic sweep released a step that may be being released: %d", n)
	}
	r.app.SetRecord("/posts/2", `{"title":"Two, renamed"}`)
	r.restart()
	r.restart()
	r.clock.Advance(time.Hour)
	if err := r.gate.Sweep(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n := r.runs(holds[0].ID); n != 1 {
		t.Errorf("the answered hold ran %d times", n)
	}
	if n := r.runs(holds[1].ID); n != 0 {
		t.Errorf("the changed card ran %d times", n)
	}
	wantResults(t, r.restore(ana, step, true), removed, OutcomeChanged)
}

// TestSweeperReleasesAStaleAnsweredStep: a periodic sweep releases an
// answered step once nobody can still be releasing it (its last answer is
// older than a release takes).
func TestSweeperReleasesAStaleAnsweredStep(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	step, _ := r.hold(ana, call(0, 1))
	id := r.step(step)[0].ID
	ctx := context.Background()
	if _, err := r.db.Claim(ctx, id, store.Answer{Choice: store.AnswerConfirm, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(r.gate.releaseTakes(1) + time.Second)
	if err := r.gate.Sweep(ctx, false); err != nil {
		t.Fatal(err)
	}
	if h := r.settled(id); r.gate.outcomeText(h) != removed || r.runs(id) != 1 {
		t.Errorf("outcome %q, %d runs", r.gate.outcomeText(h), r.runs(id))
	}
}

// TestDroppedReleaseIsUnknownAndNotRetried: at the gate, an app that drops
// the connection gets the release once and the model reads that the
// outcome is unknown.
func TestDroppedReleaseIsUnknownAndNotRetried(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.Behave(testkit.Drop)
	step, _ := r.hold(ana, call(0, 1))
	id := r.step(step)[0].ID
	r.confirm(step, id)
	wantResults(t, r.restore(ana, step, true), "The person confirmed, but the app did not answer; it may or may not have run; nothing was retried.")
	if n := r.runs(id); n != 1 {
		t.Errorf("ran %d times", n)
	}
}

// TestMaxWaitingRefusesTheStep: a person with as many waiting holds as
// the cap gets every call of the next step refused, with a reason the
// model reads, counted as a refusal; nothing is held or run.
func TestMaxWaitingRefusesTheStep(t *testing.T) {
	r := newRig(t, rigOptions{maxWaiting: 2})
	for i := 1; i <= 3; i++ {
		r.app.SetRecord("/posts/"+string(rune('0'+i)), `{"title":"P"}`)
	}
	if step, v := r.hold(ana, call(0, 1), call(1, 2)); step == "" {
		t.Fatalf("the first two were not held: %+v", v)
	}
	step, v := r.hold(ana, call(0, 3), call(1, 0))
	if step != "" {
		t.Fatal("a step over the cap was held")
	}
	if len(v.Refusals) != 2 {
		t.Fatalf("refusals = %+v", v.Refusals)
	}
	for _, ref := range v.Refusals {
		if !strings.Contains(ref.Content, "too many of this person's requests are already waiting for their answer; nothing ran.") {
			t.Errorf("refusal = %q", ref.Content)
		}
	}
	if n := r.events.refusals("too_many_waiting"); n != 2 {
		t.Errorf("too_many_waiting refusals counted: %d", n)
	}
	// Another person, or ana in another tenant, has a cap of their own.
	if step, _ := r.hold(Person{Owner: "ana", Tenant: "globex"}, call(0, 3)); step == "" {
		t.Error("the cap counted another tenant's holds")
	}
}

// TestTenantIsIdentity: the same owner id in another tenant can neither
// see, answer, submit nor restore a hold.
func TestTenantIsIdentity(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	ctx := context.Background()
	step, _ := r.hold(ana, call(0, 1), call(1, 0))
	holds := r.step(step)
	other := Person{Owner: "ana", Tenant: "globex"}
	noTenant := Person{Owner: "ana"}
	for _, who := range []Person{other, noTenant} {
		if _, err := r.gate.View(ctx, step, who, ""); !errors.Is(err, ErrNotOwner) {
			t.Errorf("%+v viewing: %v", who, err)
		}
		if _, err := r.gate.Answer(ctx, step, holds[0].ID, who, store.AnswerConfirm); !errors.Is(err, ErrNotOwner) {
			t.Errorf("%+v confirming: %v", who, err)
		}
		if _, err := r.gate.Submit(ctx, step, holds[1].ID, who, "", map[string][]string{"body": {"x"}}, nil, false); !errors.Is(err, ErrNotOwner) {
			t.Errorf("%+v submitting: %v", who, err)
		}
		if res := r.restore(who, step, true); res != nil {
			t.Errorf("%+v restored %q", who, res)
		}
	}
	if n := len(r.app.Calls()); n != 0 {
		t.Fatalf("another tenant's answer ran: %d", n)
	}
	if h := r.step(step); h[0].State != store.Waiting || h[1].State != store.Waiting {
		t.Errorf("another tenant's request settled the holds: %s %s", h[0].State, h[1].State)
	}
	if _, err := r.gate.View(ctx, step, ana, ""); err != nil {
		t.Errorf("the owner in her tenant: %v", err)
	}
}

// TestIndexKeysAreScopedToTheTenant: the keys a stored response or
// conversation is filed under differ per (tenant, owner), and stay as they
// were for the empty tenant.
func TestIndexKeysAreScopedToTheTenant(t *testing.T) {
	keys := map[string]Person{}
	for _, p := range []Person{{Owner: "ana"}, {Owner: "ana", Tenant: "acme"}, {Owner: "ana", Tenant: "globex"}, {Owner: "bo", Tenant: "acme"}, {Owner: "3:ana", Tenant: "x"}, {Owner: "ana", Tenant: "x3:"}} {
		for _, k := range []string{responseKey(p, "resp_1"), conversationKey(p, "resp_1")} {
			if q, dup := keys[k]; dup {
				t.Errorf("%+v and %+v share key %q", p, q, k)
			}
			keys[k] = p
		}
	}
	if got := responseKey(Person{Owner: "ana"}, "resp_1"); got != "resp\x00ana\x00resp_1" {
		t.Errorf("the key without a tenant changed: %q", got)
	}
	if responseKey(ana, "") != "" || conversationKey(ana, "") != "" {
		t.Error("an empty id gave a key")
	}
}

// TestDeclinedHoldReadsDeclinedWhileOthersWait: a hold the person declined
// reads as declined at once, even while the step waits for other answers
// (it will never run), and keeps that text once settled.
func TestDeclinedHoldReadsDeclinedWhileOthersWait(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	step, _ := r.hold(ana, call(0, 1), call(1, 2))
	holds := r.step(step)
	if _, err := r.gate.Answer(context.Background(), step, holds[0].ID, ana, store.AnswerDecline); err != nil {
		t.Fatal(err)
	}
	wantResults(t, r.restore(ana, step, false), OutcomeDeclined, OutcomeWaiting)
	wantResults(t, r.restore(ana, step, true), OutcomeDeclined, OutcomeMovedOn)
}
