package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// Contract case: how long records are kept.

// A record is kept until its hold's Expires plus the retention, whatever
// its state, so a late request still reads the outcome; after that it goes
// by itself (no call asks for it; the backend's own expiry or retention
// loop does it within a bounded wait), and its step and index entries with
// it. Records with a later Expires stay.
func testRetention(t *testing.T, open openStoreFunc) {
	clock := newTestClock()
	s := open(t, contractConfig{Now: clock.Now, Retention: time.Second})
	ctx := context.Background()
	now := clock.Now()

	stepID := newID(t)
	holds := []store.Hold{newHold(newID(t), stepID, 0, now), newHold(newID(t), stepID, 1, now)}
	for i := range holds {
		holds[i].Expires = now.Add(time.Second)
	}
	if err := s.Put(ctx, holds); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if _, err := s.Claim(ctx, holds[1].ID, store.Answer{Choice: store.AnswerDecline, By: "person-1"}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	const outcome = "The person declined; nothing ran."
	if err := s.Settle(ctx, holds[1].ID, outcome); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	const key = "resp:ana:resp_retention"
	if err := s.Index(ctx, key, stepID, holds[0].Expires); err != nil {
		t.Fatalf("Index: %v", err)
	}
	live := putStep(t, s, 1, now)[0] // expires in 30 minutes

	// Past Expires, within the retention: all still there.
	clock.Advance(1500 * time.Millisecond)
	if got, err := s.Get(ctx, holds[1].ID); err != nil || got.Outcome != outcome {
		t.Fatalf("Get of the settled hold within the retention: %q, %v; want its outcome", got.Outcome, err)
	}
	if got, err := s.Get(ctx, holds[0].ID); err != nil || got.StateAt(clock.Now()) != store.Expired {
		t.Fatalf("Get of the expired hold within the retention: %q, %v; want it, expired", got.StateAt(clock.Now()), err)
	}
	if ids, err := s.Indexed(ctx, key); err != nil || !slices.Equal(ids, []string{stepID}) {
		t.Fatalf("Indexed within the retention: %v, %v; want the step", ids, err)
	}

	// Past Expires plus the retention: gone, within a bounded wait.
	clock.Advance(time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err0 := s.Get(ctx, holds[0].ID)
		_, err1 := s.Get(ctx, holds[1].ID)
		_, errStep := s.Step(ctx, stepID)
		ids, errIndex := s.Indexed(ctx, key)
		if errIndex != nil {
			t.Fatalf("Indexed: %v", errIndex)
		}
		gone := errors.Is(err0, store.ErrNotFound) && errors.Is(err1, store.ErrNotFound) &&
			errors.Is(errStep, store.ErrNotFound) && len(ids) == 0
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s past the retention: Get %v, %v; Step %v; Indexed %v", err0, err1, errStep, ids)
		}
		time.Sleep(50 * time.Millisecond)
	}
	page, err := s.Unsettled(ctx, "", 10)
	if err != nil {
		t.Fatalf("Unsettled: %v", err)
	}
	if len(page) != 1 || page[0].ID != live.ID {
		t.Errorf("Unsettled after the retention lists %d holds, want only the live one", len(page))
	}
	got, err := s.Get(ctx, live.ID)
	if err != nil {
		t.Fatalf("Get of a hold within its time: %v", err)
	}
	assertHold(t, got, live)
}
