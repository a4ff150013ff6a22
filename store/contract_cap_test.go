package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// Contract cases: the cap on holds waiting for one (tenant, owner).

// putFor puts a step of n waiting holds for tenant and owner, expiring in
// ttl on the store clock.
func putFor(t *testing.T, s store.Store, now time.Time, tenant, owner string, n int, ttl time.Duration) ([]store.Hold, error) {
	t.Helper()
	stepID := newID(t)
	holds := make([]store.Hold, n)
	for i := range holds {
		holds[i] = newHold(newID(t), stepID, i, now)
		holds[i].Tenant, holds[i].Owner, holds[i].Expires = tenant, owner, now.Add(ttl)
	}
	return holds, s.Put(context.Background(), holds)
}

// mustLimit fails unless err is a cap refusal (and not an outage).
func mustLimit(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrLimit) || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("%s = %v, want ErrLimit", what, err)
	}
}

// 50 Puts for one person racing for 5 places: exactly 5 win, and none of
// the others fails for another reason.
func testCapRace(t *testing.T, open openStoreFunc) {
	clock := newTestClock()
	s := open(t, contractConfig{Now: clock.Now, MaxWaiting: 5})
	const n = 50
	errs := make([]error, n)
	race(t, n, func(i int) {
		_, errs[i] = putFor(t, s, clock.Now(), "tenant-a", "person-1", 1, time.Hour)
	})
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrLimit):
			t.Errorf("put %d = %v, want nil or ErrLimit", i, err)
		}
	}
	if won != 5 {
		t.Errorf("%d of %d racing Puts passed a cap of 5", won, n)
	}
	_, err := putFor(t, s, clock.Now(), "tenant-a", "person-1", 1, time.Hour)
	mustLimit(t, "a Put after the race", err)
}

// What counts: waiting, unexpired holds of the (tenant, owner); a step is
// refused whole when its waiting holds do not all fit, and leaves nothing.
func testCapCounts(t *testing.T, open openStoreFunc) {
	clock := newTestClock()
	s := open(t, contractConfig{Now: clock.Now, MaxWaiting: 4})
	ctx := context.Background()
	now := clock.Now()

	first, err := putFor(t, s, now, "tenant-a", "person-1", 3, 10*time.Minute)
	if err != nil {
		t.Fatalf("Put of 3 under a cap of 4: %v", err)
	}
	refused, err := putFor(t, s, now, "tenant-a", "person-1", 2, time.Hour)
	mustLimit(t, "Put of 2 more", err)
	if _, err := s.Get(ctx, refused[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a hold of a refused step = %v, want ErrNotFound", err)
	}
	if _, err := s.Step(ctx, refused[0].StepID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Step of a refused step = %v, want ErrNotFound", err)
	}

	// A settled refusal beside a waiting hold does not count.
	stepID := newID(t)
	w := newHold(newID(t), stepID, 0, now)
	r := newHold(newID(t), stepID, 1, now)
	r.State, r.Answer, r.Outcome = store.Settled, "refused", "refused: no record"
	if err := s.Put(ctx, []store.Hold{w, r}); err != nil {
		t.Fatalf("Put of 1 waiting and 1 settled as the 4th: %v", err)
	}
	_, err = putFor(t, s, now, "tenant-a", "person-1", 1, time.Hour)
	mustLimit(t, "Put of a 5th", err)

	// A claimed hold no longer counts, whatever its answer.
	if _, err := s.Claim(ctx, first[0].ID, store.Answer{Choice: store.AnswerDecline, By: "person-1"}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if _, err := putFor(t, s, now, "tenant-a", "person-1", 1, time.Hour); err != nil {
		t.Errorf("Put after a claim freed a place: %v", err)
	}
	_, err = putFor(t, s, now, "tenant-a", "person-1", 1, time.Hour)
	mustLimit(t, "Put after the freed place was taken", err)

	// Expired holds no longer count, with no sweeper and no claim: the two
	// left of the first step expire at 10 minutes.
	clock.Advance(10 * time.Minute)
	if _, err := putFor(t, s, clock.Now(), "tenant-a", "person-1", 2, time.Hour); err != nil {
		t.Errorf("Put of 2 after 2 expired: %v", err)
	}
	_, err = putFor(t, s, clock.Now(), "tenant-a", "person-1", 1, time.Hour)
	mustLimit(t, "Put after the expired places were taken", err)

	// A step larger than the cap never fits.
	_, err = putFor(t, s, clock.Now(), "tenant-a", "person-2", 5, time.Hour)
	mustLimit(t, "Put of a 5-hold step", err)
}

// (tenant, owner) is the identity: the same owner id in two tenants, and
// two owners in one tenant, have caps of their own, also under a race.
func testCapTenants(t *testing.T, open openStoreFunc) {
	clock := newTestClock()
	s := open(t, contractConfig{Now: clock.Now, MaxWaiting: 3})
	who := []struct{ tenant, owner string }{
		{"tenant-a", "person-1"},
		{"tenant-b", "person-1"},
		{"tenant-a", "person-2"},
		{"", "person-1"},
		// Pairs whose plain concatenation is the same.
		{"ab", "c"},
		{"a", "bc"},
	}
	const tries = 10
	errs := make([]error, len(who)*tries)
	race(t, len(errs), func(i int) {
		w := who[i%len(who)]
		_, errs[i] = putFor(t, s, clock.Now(), w.tenant, w.owner, 1, time.Hour)
	})
	won := make([]int, len(who))
	for i, err := range errs {
		switch {
		case err == nil:
			won[i%len(who)]++
		case !errors.Is(err, store.ErrLimit):
			t.Errorf("put %d = %v, want nil or ErrLimit", i, err)
		}
	}
	for i, w := range who {
		if won[i] != 3 {
			t.Errorf("tenant %q owner %q: %d Puts passed a cap of 3", w.tenant, w.owner, won[i])
		}
	}
}
