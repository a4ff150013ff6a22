package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// Contract cases: releasing an answered hold exactly once (Begin), settling
// it once (Settle), and finding what is left open (Unsettled).

func testBeginRace(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	hold := claimed(t, s, clock.Now())
	clock.Advance(time.Second)

	const n = 100
	results := make([]store.Hold, n)
	errs := make([]error, n)
	race(t, n, func(i int) { results[i], errs[i] = s.Begin(ctx, hold.ID) })

	winner := onlyWinner(t, errs, store.ErrAnswered)
	got, err := s.Get(ctx, hold.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.State != store.Running || !got.StartedAt.Equal(clock.Now()) {
		t.Errorf("stored hold: %q, started %v; want running, started at the store clock %v", got.State, got.StartedAt, clock.Now())
	}
	if got.Answer != store.AnswerConfirm || got.AnsweredBy != "person-1" || !got.AnsweredAt.Equal(hold.AnsweredAt) {
		t.Errorf("Begin changed the answer: %q by %q at %v", got.Answer, got.AnsweredBy, got.AnsweredAt)
	}
	assertHold(t, got, results[winner])
}

// Begin is won only from Answered: never twice, never before an answer,
// never after the outcome.
func testBeginRefuses(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()

	waiting := putStep(t, s, 1, clock.Now())[0]
	expired := putStep(t, s, 1, clock.Now().Add(-time.Hour))[0]
	running := claimed(t, s, clock.Now())
	if _, err := s.Begin(ctx, running.ID); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	settled := claimed(t, s, clock.Now())
	if err := s.Settle(ctx, settled.ID, "The person confirmed. Removed."); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	for name, id := range map[string]string{
		"waiting": waiting.ID, "expired": expired.ID, "running": running.ID, "settled": settled.ID,
	} {
		if _, err := s.Begin(ctx, id); !errors.Is(err, store.ErrAnswered) {
			t.Errorf("Begin of a %s hold = %v, want ErrAnswered", name, err)
		}
	}
	got, err := s.Get(ctx, waiting.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.State != store.Waiting || !got.StartedAt.IsZero() {
		t.Errorf("a refused Begin left the hold %q, started %v", got.State, got.StartedAt)
	}
}

func testSettle(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	hold := putStep(t, s, 1, clock.Now())[0]
	const outcome = "The person filled in: title. Done."

	err := s.Settle(ctx, hold.ID, outcome)
	if err == nil || errors.Is(err, store.ErrAnswered) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Settle of a waiting hold = %v, want a refusal of its own", err)
	}

	if _, err := s.Claim(ctx, hold.ID, store.Answer{
		Choice: store.AnswerSubmit,
		By:     "person-1",
		Values: json.RawMessage(`{"title": "secret-ish"}`),
	}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if err := s.Settle(ctx, hold.ID, ""); err == nil {
		t.Error("Settle with an empty outcome succeeded")
	}
	if err := s.Settle(ctx, hold.ID, outcome); err != nil {
		t.Fatalf("Settle: %v", err)
	}

	got, err := s.Get(ctx, hold.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.State != store.Settled || got.Outcome != outcome || got.Answer != store.AnswerSubmit {
		t.Errorf("settled hold: %q, outcome %q, answer %q", got.State, got.Outcome, got.Answer)
	}
	if got.Values != nil {
		t.Errorf("settled hold kept Values %s", got.Values)
	}
	if !bytes.Equal(got.Call, hold.Call) || !bytes.Equal(got.Message, hold.Message) {
		t.Error("Settle changed the stored call or message")
	}

	if err := s.Settle(ctx, hold.ID, outcome); err != nil {
		t.Errorf("repeated Settle with the same outcome = %v, want nil", err)
	}
	if err := s.Settle(ctx, hold.ID, "The person declined; nothing ran."); !errors.Is(err, store.ErrAnswered) {
		t.Errorf("Settle with another outcome = %v, want ErrAnswered", err)
	}
	if got, _ := s.Get(ctx, hold.ID); got.Outcome != outcome {
		t.Errorf("after a second outcome the stored one is %q, want the first, %q", got.Outcome, outcome)
	}
	if _, err := s.Claim(ctx, hold.ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"}); !errors.Is(err, store.ErrAnswered) {
		t.Errorf("Claim of a settled hold = %v, want ErrAnswered", err)
	}
}

// A hold whose release began settles like an answered one, keeping when
// it started.
func testSettleRunning(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	hold := claimed(t, s, clock.Now())
	started, err := s.Begin(ctx, hold.ID)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	const outcome = "The app did not answer; it may or may not have run; nothing was retried."
	if err := s.Settle(ctx, hold.ID, outcome); err != nil {
		t.Fatalf("Settle of a running hold: %v", err)
	}
	got, err := s.Get(ctx, hold.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.State != store.Settled || got.Outcome != outcome || !got.StartedAt.Equal(started.StartedAt) {
		t.Errorf("settled hold: %q, outcome %q, started %v; want settled, %q, %v", got.State, got.Outcome, got.StartedAt, outcome, started.StartedAt)
	}
}

// Racing settlements with different outcomes: the first stands, every other
// one is told so.
func testSettleFirstWins(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	hold := claimed(t, s, clock.Now())
	if _, err := s.Begin(ctx, hold.ID); err != nil {
		t.Fatalf("Begin: %v", err)
	}

	const n = 100
	errs := make([]error, n)
	race(t, n, func(i int) { errs[i] = s.Settle(ctx, hold.ID, "outcome "+strconv.Itoa(i)) })

	winner := onlyWinner(t, errs, store.ErrAnswered)
	got, err := s.Get(ctx, hold.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if want := "outcome " + strconv.Itoa(winner); got.State != store.Settled || got.Outcome != want {
		t.Errorf("stored: %q, outcome %q; want settled, %q (the winner's)", got.State, got.Outcome, want)
	}
}

// Unsettled lists every hold that is not settled, whatever else it is, and
// no settled one.
func testUnsettled(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	now := clock.Now()

	var want []string
	waiting := putStep(t, s, 2, now)
	want = append(want, waiting[0].ID, waiting[1].ID)
	expired := putStep(t, s, 1, now.Add(-time.Hour))[0]
	want = append(want, expired.ID)
	answered := claimed(t, s, now)
	want = append(want, answered.ID)
	running := claimed(t, s, now)
	if _, err := s.Begin(ctx, running.ID); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	want = append(want, running.ID)
	ticket := newHold(newID(t), "", 0, now)
	ticket.StepID, ticket.Kind, ticket.Message = ticket.ID, store.KindTicket, nil
	if err := s.Put(ctx, []store.Hold{ticket}); err != nil {
		t.Fatalf("Put ticket: %v", err)
	}
	want = append(want, ticket.ID)

	settled := claimed(t, s, now)
	if err := s.Settle(ctx, settled.ID, "The person confirmed. Removed."); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	stepID := newID(t)
	open1 := newHold(newID(t), stepID, 0, now)
	refused := newHold(newID(t), stepID, 1, now)
	refused.State, refused.Answer, refused.Outcome = store.Settled, "refused", "refused: no record"
	if err := s.Put(ctx, []store.Hold{open1, refused}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	want = append(want, open1.ID)
	slices.Sort(want)

	got, err := s.Unsettled(ctx, "", 100)
	if err != nil {
		t.Fatalf("Unsettled: %v", err)
	}
	var ids []string
	states := map[string]store.State{}
	for _, h := range got {
		ids = append(ids, h.ID)
		states[h.ID] = h.State
		if h.Message != nil {
			t.Errorf("Unsettled hold %s carries its message", h.ID)
		}
		if h.StepID == "" || h.Expires.IsZero() || h.Owner == "" {
			t.Errorf("Unsettled hold %s lacks step, expiry or owner: %+v", h.ID, h)
		}
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("Unsettled = %v, want %v (in id order)", ids, want)
	}
	for id, st := range map[string]store.State{
		expired.ID: store.Waiting, answered.ID: store.Answered, running.ID: store.Running, ticket.ID: store.Waiting,
	} {
		if states[id] != st {
			t.Errorf("Unsettled hold %s is %q, want %q", id, states[id], st)
		}
	}

	// Settling takes a hold off the list.
	if err := s.Settle(ctx, answered.ID, "The person confirmed. Removed."); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	got, err = s.Unsettled(ctx, "", 100)
	if err != nil {
		t.Fatalf("Unsettled: %v", err)
	}
	if slices.ContainsFunc(got, func(h store.Hold) bool { return h.ID == answered.ID }) || len(got) != len(want)-1 {
		t.Errorf("after settling %s Unsettled lists %d holds, want %d without it", answered.ID, len(got), len(want)-1)
	}

	if _, err := s.Unsettled(ctx, "", 0); err == nil || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Unsettled with limit 0 = %v, want a refusal", err)
	}
}

// Paging by the last id seen visits every open hold once, in order, with no
// page longer than the limit.
func testUnsettledPages(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	var want []string
	for range 12 {
		for _, h := range putStep(t, s, 1, clock.Now()) {
			want = append(want, h.ID)
		}
	}
	// Settled holds between them are skipped, not counted against a page.
	for range 5 {
		h := claimed(t, s, clock.Now())
		if err := s.Settle(ctx, h.ID, "done"); err != nil {
			t.Fatalf("Settle: %v", err)
		}
	}
	slices.Sort(want)

	var got []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > len(want) {
			t.Fatalf("no end after %d pages", pages)
		}
		page, err := s.Unsettled(ctx, after, 5)
		if err != nil {
			t.Fatalf("Unsettled: %v", err)
		}
		if len(page) > 5 {
			t.Fatalf("page of %d holds, limit 5", len(page))
		}
		if len(page) == 0 {
			break
		}
		for _, h := range page {
			got = append(got, h.ID)
		}
		after = page[len(page)-1].ID
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages gave %v, want %v", got, want)
	}
	if page, err := s.Unsettled(ctx, want[len(want)-1], 5); err != nil || len(page) != 0 {
		t.Errorf("Unsettled after the last id = %d holds, %v; want none", len(page), err)
	}
	if page, err := s.Unsettled(ctx, want[3], 2); err != nil || len(page) != 2 || page[0].ID != want[4] {
		t.Errorf("Unsettled after want[3] = %v, %v; want want[4], want[5]", page, err)
	}
}

// testSettleReply: SettleWithReply keeps the reply with the outcome, in the
// same write, and drops the values; a retry compares the outcome only;
// DropReply drops the reply (the model has read it) and leaves the rest,
// and is harmless when repeated.
func testSettleReply(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	holds := putStep(t, s, 2, clock.Now())
	hold, other := holds[0], holds[1]
	const outcome = `{"kind":"done"}`
	reply := []byte{1, 0, 0xff, 'x'} // sealed bytes: any bytes

	if _, err := s.Claim(ctx, hold.ID, store.Answer{Choice: store.AnswerSubmit, By: "person-1", Values: json.RawMessage(`"sealed"`)}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if err := s.SettleWithReply(ctx, hold.ID, outcome, reply); err != nil {
		t.Fatalf("SettleWithReply: %v", err)
	}
	got, err := s.Get(ctx, hold.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.Settled || got.Outcome != outcome || !bytes.Equal(got.Reply, reply) || got.Values != nil {
		t.Errorf("settled: %s %q reply %v values %s", got.State, got.Outcome, got.Reply, got.Values)
	}
	if err := s.SettleWithReply(ctx, hold.ID, outcome, []byte("other")); err != nil {
		t.Errorf("a retry with the same outcome = %v", err)
	}
	if step, err := s.Step(ctx, hold.StepID); err != nil || !bytes.Equal(step[0].Reply, reply) || step[1].Reply != nil {
		t.Errorf("Step reads the reply %v / %v (%v)", step[0].Reply, step[1].Reply, err)
	}

	if err := s.DropReply(ctx, hold.ID); err != nil {
		t.Fatalf("DropReply: %v", err)
	}
	got, err = s.Get(ctx, hold.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Reply != nil || got.State != store.Settled || got.Outcome != outcome {
		t.Errorf("after DropReply: %s %q reply %v", got.State, got.Outcome, got.Reply)
	}
	if err := s.DropReply(ctx, hold.ID); err != nil {
		t.Errorf("DropReply again = %v", err)
	}
	if err := s.DropReply(ctx, other.ID); err != nil {
		t.Errorf("DropReply of a waiting hold without a reply = %v", err)
	}
	if err := s.DropReply(ctx, "no-such-hold"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DropReply of an unknown hold = %v, want ErrNotFound", err)
	}
	if got, _ := s.Get(ctx, other.ID); got.State != store.Waiting {
		t.Errorf("DropReply changed a waiting hold: %s", got.State)
	}
}
