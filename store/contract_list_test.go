package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// Contract cases: listing holds for operators.

// listIDs lists one page and returns the ids in order and the cursor.
func listIDs(t *testing.T, s store.Store, f store.HoldFilter, cursor string, limit int) ([]string, string) {
	t.Helper()
	page, err := s.List(context.Background(), f, cursor, limit)
	if err != nil {
		t.Fatalf("List(%+v): %v", f, err)
	}
	ids := make([]string, len(page.Holds))
	for i, h := range page.Holds {
		ids[i] = h.ID
		if h.Message != nil {
			t.Errorf("List returned hold %s with its step's message", h.ID)
		}
	}
	return ids, page.Next
}

// listAll pages through a filter with the given page size.
func listAll(t *testing.T, s store.Store, f store.HoldFilter, limit int) []string {
	t.Helper()
	var all []string
	cursor := ""
	for range 100 {
		ids, next := listIDs(t, s, f, cursor, limit)
		all = append(all, ids...)
		if next == "" {
			return all
		}
		cursor = next
	}
	t.Fatal("List never ended")
	return nil
}

// Five holds in every state, of three people, two tenants, two actions
// and three kinds: each filter selects exactly its holds, newest first,
// and the holds read back as stored (without the step's message).
func testList(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	t0 := clock.Now()
	mk := func(i int, owner, tenant, action string, kind store.Kind, ttl time.Duration) store.Hold {
		h := newHold(newID(t), newID(t), 0, t0.Add(time.Duration(i)*time.Minute))
		h.Owner, h.Tenant, h.Action, h.Kind, h.Expires = owner, tenant, action, kind, t0.Add(ttl)
		if err := s.Put(ctx, []store.Hold{h}); err != nil {
			t.Fatalf("Put: %v", err)
		}
		return h
	}
	waiting := mk(0, "ana", "acme", "delete_post", store.KindCard, time.Hour)
	answered := mk(1, "bo", "acme", "send_email", store.KindCard, time.Hour)
	settled := mk(2, "ana", "", "delete_post", store.KindForm, time.Hour)
	expired := mk(3, "ana", "acme", "delete_post", store.KindCard, 30*time.Minute)
	running := mk(4, "ana", "acme", "delete_post", store.KindTicket, time.Hour)
	for _, h := range []store.Hold{answered, settled, running} {
		if _, err := s.Claim(ctx, h.ID, store.Answer{Choice: store.AnswerConfirm, By: h.Owner}); err != nil {
			t.Fatalf("Claim: %v", err)
		}
	}
	if err := s.Settle(ctx, settled.ID, "done"); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if _, err := s.Begin(ctx, running.ID); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	clock.Advance(45 * time.Minute) // expired's TTL is over, the others' not
	name := map[string]string{waiting.ID: "waiting", answered.ID: "answered", settled.ID: "settled", expired.ID: "expired", running.ID: "running"}
	names := func(ids []string) string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = name[id]
		}
		return fmt.Sprint(out)
	}
	acme, none := "acme", ""
	for _, c := range []struct {
		f    store.HoldFilter
		want string
	}{
		{store.HoldFilter{}, "[running expired settled answered waiting]"},
		{store.HoldFilter{State: store.Waiting}, "[waiting]"},
		{store.HoldFilter{State: store.Expired}, "[expired]"},
		{store.HoldFilter{State: store.Answered}, "[answered]"},
		{store.HoldFilter{State: store.Running}, "[running]"},
		{store.HoldFilter{State: store.Settled}, "[settled]"},
		{store.HoldFilter{Kind: store.KindForm}, "[settled]"},
		{store.HoldFilter{Kind: store.KindTicket}, "[running]"},
		{store.HoldFilter{Action: "send_email"}, "[answered]"},
		{store.HoldFilter{Action: "delete_post"}, "[running expired settled waiting]"},
		{store.HoldFilter{Owner: "ana", Tenant: &acme}, "[running expired waiting]"},
		{store.HoldFilter{Owner: "ana"}, "[settled]"}, // (the empty tenant, ana)
		{store.HoldFilter{Owner: "bo", Tenant: &none}, "[]"},
		{store.HoldFilter{Tenant: &acme}, "[running expired answered waiting]"},
		{store.HoldFilter{Tenant: &none}, "[settled]"},
		{store.HoldFilter{CreatedBefore: t0.Add(time.Minute)}, "[answered waiting]"},
		{store.HoldFilter{CreatedAfter: t0.Add(3 * time.Minute)}, "[running expired]"},
		{store.HoldFilter{CreatedAfter: t0.Add(time.Minute), CreatedBefore: t0.Add(3 * time.Minute)}, "[expired settled answered]"},
		{store.HoldFilter{State: store.Waiting, Owner: "ana", Tenant: &acme, Action: "delete_post", Kind: store.KindCard}, "[waiting]"},
		{store.HoldFilter{State: store.Settled, Tenant: &acme}, "[]"},
	} {
		ids, next := listIDs(t, s, c.f, "", 10)
		if got := names(ids); got != c.want || next != "" {
			t.Errorf("List(%+v) = %s (next %q), want %s", c.f, got, next, c.want)
		}
	}
	page, err := s.List(ctx, store.HoldFilter{State: store.Answered}, "", 10)
	if err != nil || len(page.Holds) != 1 {
		t.Fatalf("List answered: %v, %v", page, err)
	}
	got, err := s.Get(ctx, answered.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	got.Message = nil
	assertHold(t, page.Holds[0], got)
}

// Pages follow each other from the cursor, with no hold twice and none
// left out, also among holds made at the same instant (ordered by id) and
// under a filter; the last page says there is no next.
func testListPages(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	t0 := clock.Now()
	var want []string // newest first
	for i := range 11 {
		created := t0.Add(time.Duration(i/3) * time.Second) // threes made at the same instant
		h := newHold(newID(t), newID(t), 0, created)
		if i%2 == 1 {
			h.Action = "send_email"
		}
		if err := s.Put(ctx, []store.Hold{h}); err != nil {
			t.Fatalf("Put: %v", err)
		}
		want = append(want, h.ID)
	}
	createdOf := map[string]int{}
	for i, id := range want {
		createdOf[id] = i / 3
	}
	slices.SortFunc(want, func(a, b string) int {
		if createdOf[a] != createdOf[b] {
			return createdOf[b] - createdOf[a]
		}
		if a > b {
			return -1
		}
		return 1
	})
	for _, limit := range []int{1, 3, 4, 11, 50} {
		if got := listAll(t, s, store.HoldFilter{}, limit); !slices.Equal(got, want) {
			t.Errorf("pages of %d: %v, want %v", limit, got, want)
		}
	}
	ids, next := listIDs(t, s, store.HoldFilter{}, "", 11)
	if len(ids) != 11 || next != "" {
		t.Errorf("a page of exactly all: %d holds, next %q; want 11 and no next", len(ids), next)
	}
	var email []string
	for _, id := range want {
		if h, err := s.Get(ctx, id); err == nil && h.Action == "send_email" {
			email = append(email, id)
		}
	}
	if got := listAll(t, s, store.HoldFilter{Action: "send_email"}, 2); !slices.Equal(got, email) {
		t.Errorf("filtered pages: %v, want %v", got, email)
	}
}

// A cursor the store did not give, a limit out of bounds, an unknown
// state or kind: refused, and not as an outage.
func testListCursor(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	putStep(t, s, 1, clock.Now())
	for _, c := range []struct {
		name   string
		f      store.HoldFilter
		cursor string
		limit  int
	}{
		{"not base64", store.HoldFilter{}, "%%%", 10},
		{"no id", store.HoldFilter{}, "MTIz", 10},
		{"limit 0", store.HoldFilter{}, "", 0},
		{"limit too large", store.HoldFilter{}, "", store.MaxListLimit + 1},
		{"unknown state", store.HoldFilter{State: "lost"}, "", 10},
		{"unknown kind", store.HoldFilter{Kind: "letter"}, "", 10},
	} {
		_, err := s.List(ctx, c.f, c.cursor, c.limit)
		if err == nil || errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: List = %v, want a refusal", c.name, err)
		}
	}
	if ids, _ := listIDs(t, s, store.HoldFilter{}, "", store.MaxListLimit); len(ids) != 1 {
		t.Errorf("List at the largest limit: %d holds, want 1", len(ids))
	}
}
