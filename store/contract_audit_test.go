package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// Contract cases: the audit log.

// chained syncs the log and returns every entry, decoded, in seq order.
func chained(t *testing.T, s store.Store) ([]store.AuditEntry, []store.AuditRecord) {
	t.Helper()
	ctx := context.Background()
	if err := s.SyncAudit(ctx); err != nil {
		t.Fatalf("SyncAudit: %v", err)
	}
	var (
		entries []store.AuditEntry
		records []store.AuditRecord
		after   uint64
	)
	for {
		page, err := s.AuditEntries(ctx, store.AuditQuery{After: after, Limit: 100})
		if err != nil {
			t.Fatalf("AuditEntries: %v", err)
		}
		for _, e := range page {
			r, err := e.Record()
			if err != nil {
				t.Fatalf("entry %d: %v", e.Seq, err)
			}
			entries, records = append(entries, e), append(records, r)
			after = e.Seq
		}
		if len(page) < 100 {
			return entries, records
		}
	}
}

// mustVerify fails unless the chain verifies from from to to.
func mustVerify(t *testing.T, s store.Store, from, to uint64) store.AuditReport {
	t.Helper()
	rep, err := store.VerifyAudit(context.Background(), s)
	if err != nil {
		t.Fatalf("VerifyAudit: %v", err)
	}
	if rep.Broken != nil {
		t.Fatalf("VerifyAudit: %v", rep.Err())
	}
	if rep.From != from || rep.To != to || rep.Entries != int(to-from+1) {
		t.Errorf("VerifyAudit checked %d..%d (%d entries), want %d..%d", rep.From, rep.To, rep.Entries, from, to)
	}
	return rep
}

// A hold's life, each event appended with the change it reports, comes
// back as one chain: seqs 1, 2, … each with the hash of the one before,
// stamped with the store clock, and the hold's fields filled in for an
// event that gave only its id. A lost claim and a settlement's retry
// append nothing.
func testAuditLifecycle(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	t0 := clock.Now()

	stepID := newID(t)
	card, form := newHold(newID(t), stepID, 0, t0), newHold(newID(t), stepID, 1, t0)
	form.Kind = store.KindForm
	shown := json.RawMessage(`{"sentence":"Delete this post?","rows":[{"label":"Post","value":"<b>Hello</b> & bye"}]}`)
	err := s.Put(ctx, []store.Hold{card, form},
		store.Event{Kind: store.EventHeld, HoldID: card.ID, Shown: shown},
		store.Event{Kind: store.EventHeld, HoldID: form.ID, Shown: json.RawMessage(`{"fields":["title"]}`)})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	clock.Advance(time.Second)
	t1 := clock.Now()
	if err := s.Audit(ctx, store.Event{Kind: store.EventShown, HoldID: card.ID, By: "person-1"}); err != nil {
		t.Fatalf("Audit: %v", err)
	}
	answered := store.Event{Kind: store.EventAnswered, HoldID: card.ID, By: "person-1", Answer: store.AnswerConfirm}
	if _, err := s.Claim(ctx, card.ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"}, answered); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	lost := store.Event{Kind: store.EventAnswered, HoldID: card.ID, By: "intruder", Answer: store.AnswerDecline}
	if _, err := s.Claim(ctx, card.ID, store.Answer{Choice: store.AnswerDecline, By: "intruder"}, lost); !errors.Is(err, store.ErrAnswered) {
		t.Fatalf("second Claim = %v, want ErrAnswered", err)
	}
	if _, err := s.Begin(ctx, card.ID); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	released := store.Event{Kind: store.EventReleased, HoldID: card.ID, Endpoint: "DELETE http://blog.internal/posts/{post}", Status: 204, DurationMS: 12.5}
	settled := store.Event{Kind: store.EventSettled, HoldID: card.ID, Outcome: "The person confirmed. Removed."}
	for range 2 { // the second is a retry: it finds the hold settled and appends nothing
		if err := s.Settle(ctx, card.ID, settled.Outcome, released, settled); err != nil {
			t.Fatalf("Settle: %v", err)
		}
	}
	refused := store.Event{Kind: store.EventRefused, Tenant: "tenant-a", Owner: "person-1", Action: "send_email", Reason: "policy", Detail: "Toolgate refused send_email: the policy does not declare it; nothing ran."}
	if err := s.Audit(ctx, refused); err != nil {
		t.Fatalf("Audit: %v", err)
	}

	entries, records := chained(t, s)
	want := []struct {
		kind store.EventKind
		hold store.Hold
		at   time.Time
		ev   store.Event
	}{
		{store.EventHeld, card, t0, store.Event{Shown: shown}},
		{store.EventHeld, form, t0, store.Event{Shown: json.RawMessage(`{"fields":["title"]}`)}},
		{store.EventShown, card, t1, store.Event{By: "person-1"}},
		{store.EventAnswered, card, t1, store.Event{By: "person-1", Answer: store.AnswerConfirm}},
		{store.EventReleased, card, t1, released},
		{store.EventSettled, card, t1, settled},
		{store.EventRefused, store.Hold{}, t1, refused},
	}
	if len(records) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(records), len(want), records)
	}
	prev := ""
	for i, r := range records {
		w := want[i]
		if r.Seq != uint64(i+1) || entries[i].Seq != r.Seq {
			t.Errorf("entry %d: seq %d (stored as %d), want %d", i, r.Seq, entries[i].Seq, i+1)
		}
		if r.Prev != prev {
			t.Errorf("entry %d: prev %q, want the hash before it, %q", i, r.Prev, prev)
		}
		sum := sha256.Sum256(entries[i].Body)
		if !bytes.Equal(sum[:], entries[i].Hash) {
			t.Errorf("entry %d: hash is not the SHA-256 of its body", i)
		}
		prev = hex.EncodeToString(entries[i].Hash)
		if r.Kind != w.kind || !r.Time.Equal(w.at) || !entries[i].Time.Equal(w.at) {
			t.Errorf("entry %d: %s at %v (stored %v), want %s at %v", i, r.Kind, r.Time, entries[i].Time, w.kind, w.at)
		}
		h := w.hold
		if w.kind == store.EventRefused {
			h = store.Hold{Tenant: "tenant-a", Owner: "person-1", Action: "send_email"}
		}
		got := []string{r.HoldID, r.StepID, r.Tenant, r.Owner, r.Action, string(r.HoldKind), r.Protocol, r.Policy}
		exp := []string{h.ID, h.StepID, h.Tenant, h.Owner, h.Action, string(h.Kind), h.Protocol, h.Policy}
		if fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Errorf("entry %d (%s): hold fields %q, want %q", i, r.Kind, got, exp)
		}
		if !bytes.Equal(r.Shown, w.ev.Shown) || r.By != w.ev.By || r.Answer != w.ev.Answer || r.Endpoint != w.ev.Endpoint ||
			r.Status != w.ev.Status || r.DurationMS != w.ev.DurationMS || r.Outcome != w.ev.Outcome || r.Reason != w.ev.Reason || r.Detail != w.ev.Detail {
			t.Errorf("entry %d (%s): %+v, want %+v", i, r.Kind, r.Event, w.ev)
		}
		// A line of the export is the body with its hash added last.
		line := entries[i].Line()
		suffix := []byte(`,"hash":"` + hex.EncodeToString(entries[i].Hash) + `"}` + "\n")
		if !bytes.HasSuffix(line, suffix) || !bytes.Equal(append(bytes.TrimSuffix(line, suffix), '}'), entries[i].Body) {
			t.Errorf("entry %d: line %s is not its body with the hash last", i, line)
		}
	}
	head, err := s.AuditHead(ctx)
	if err != nil {
		t.Fatalf("AuditHead: %v", err)
	}
	if head.Seq != uint64(len(want)) || !bytes.Equal(head.Hash, entries[len(entries)-1].Hash) || head.Pruned.Seq != 0 {
		t.Errorf("head: %+v, want seq %d with the last entry's hash, nothing pruned", head, len(want))
	}
	mustVerify(t, s, 1, uint64(len(want)))
}

// Events of a change that did not happen are not kept: a refused Put, a
// lost or late Claim, a Settle of a hold not answered.
func testAuditOnlyWhatCommitted(t *testing.T, open openStoreFunc) {
	clock := newTestClock()
	s := open(t, contractConfig{Now: clock.Now, MaxWaiting: 1})
	ctx := context.Background()
	now := clock.Now()
	ev := func(what string) store.Event { return store.Event{Kind: "test", Reason: what} }

	kept := putStep(t, s, 1, now)[0]
	dup := newHold(kept.ID, newID(t), 0, now) // an id already stored
	if err := s.Put(ctx, []store.Hold{dup}, ev("duplicate put")); err == nil {
		t.Fatal("Put of an id already stored succeeded")
	}
	over := newHold(newID(t), newID(t), 0, now) // the same person: over the cap
	if err := s.Put(ctx, []store.Hold{over}, ev("capped put")); !errors.Is(err, store.ErrLimit) {
		t.Fatalf("Put over the cap = %v, want ErrLimit", err)
	}
	if err := s.Settle(ctx, kept.ID, "too early", ev("settle of a waiting hold")); err == nil {
		t.Fatal("Settle of a waiting hold succeeded")
	}
	if _, err := s.Claim(ctx, newID(t), store.Answer{Choice: store.AnswerConfirm}, ev("claim of nothing")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Claim of an unknown id = %v, want ErrNotFound", err)
	}
	clock.Advance(time.Hour)
	if _, err := s.Claim(ctx, kept.ID, store.Answer{Choice: store.AnswerConfirm}, ev("late claim")); !errors.Is(err, store.ErrExpired) {
		t.Fatalf("late Claim = %v, want ErrExpired", err)
	}
	if _, err := s.Claim(ctx, kept.ID, store.Answer{Choice: store.AnswerTimedOut, AllowExpired: true}, ev("timed out")); err != nil {
		t.Fatalf("Claim for the gate: %v", err)
	}
	if err := s.Put(ctx, nil, ev("empty put")); err == nil {
		t.Fatal("Put of no holds succeeded")
	}
	if err := s.Audit(ctx, store.Event{}); err == nil {
		t.Error("Audit of an event without a kind succeeded")
	}

	_, records := chained(t, s)
	if len(records) != 1 || records[0].Reason != "timed out" {
		t.Fatalf("entries %+v, want only the claim that won", records)
	}
	if records[0].HoldID != "" || records[0].Owner != "" {
		t.Errorf("an event without a hold id got a hold's fields: %+v", records[0])
	}
}

// Many writers at once, each hold's events appended by its own changes
// and one hold answered by 20 racing claims: one chain, every seq once,
// each hold's events in the order they happened, one answer kept.
// (Run on three PostgreSQL replicas, the writers and the chainers race
// across processes' pools.)
func testAuditRace(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	const n = 24
	contested := putStep(t, s, 1, clock.Now())[0]
	holds := make([]store.Hold, n)
	errs := make([]error, n)
	race(t, n, func(i int) {
		errs[i] = func() error {
			h := newHold(newID(t), newID(t), 0, clock.Now())
			h.Owner = "person-" + strconv.Itoa(i)
			holds[i] = h
			if err := s.Put(ctx, []store.Hold{h}, store.Event{Kind: store.EventHeld, HoldID: h.ID}); err != nil {
				return err
			}
			if err := s.Audit(ctx, store.Event{Kind: store.EventShown, HoldID: h.ID}); err != nil {
				return err
			}
			// Everyone also tries the contested hold: one wins.
			_, _ = s.Claim(ctx, contested.ID, store.Answer{Choice: store.AnswerConfirm, By: h.Owner},
				store.Event{Kind: store.EventAnswered, HoldID: contested.ID, By: h.Owner})
			if i%3 == 0 {
				if err := s.SyncAudit(ctx); err != nil {
					return err
				}
			}
			if _, err := s.Claim(ctx, h.ID, store.Answer{Choice: store.AnswerDecline, By: h.Owner},
				store.Event{Kind: store.EventAnswered, HoldID: h.ID}); err != nil {
				return err
			}
			return s.Settle(ctx, h.ID, "declined", store.Event{Kind: store.EventSettled, HoldID: h.ID})
		}()
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	_, records := chained(t, s)
	if len(records) != 4*n+1 {
		t.Fatalf("%d entries, want %d", len(records), 4*n+1)
	}
	order := map[string][]store.EventKind{}
	winners := 0
	for _, r := range records {
		if r.HoldID == contested.ID {
			winners++
			continue
		}
		order[r.HoldID] = append(order[r.HoldID], r.Kind)
		if r.Owner == "" || r.StepID == "" {
			t.Errorf("entry %d: hold fields not filled: %+v", r.Seq, r.Event)
		}
	}
	if winners != 1 {
		t.Errorf("%d answers of the contested hold kept, want 1", winners)
	}
	life := fmt.Sprint([]store.EventKind{store.EventHeld, store.EventShown, store.EventAnswered, store.EventSettled})
	for _, h := range holds {
		if got := fmt.Sprint(order[h.ID]); got != life {
			t.Errorf("hold of %s: events %s, want %s", h.Owner, got, life)
		}
	}
	mustVerify(t, s, 1, uint64(4*n+1))
}

// AuditEntries selects by seq (After, Limit) and by time (Since
// inclusive, Until exclusive), in seq order.
func testAuditQuery(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	var times []time.Time
	for i := range 6 {
		times = append(times, clock.Now())
		if err := s.Audit(ctx, store.Event{Kind: "test", Reason: strconv.Itoa(i)}); err != nil {
			t.Fatalf("Audit: %v", err)
		}
		if err := s.SyncAudit(ctx); err != nil {
			t.Fatalf("SyncAudit: %v", err)
		}
		clock.Advance(time.Minute)
	}
	seqs := func(q store.AuditQuery) string {
		t.Helper()
		es, err := s.AuditEntries(ctx, q)
		if err != nil {
			t.Fatalf("AuditEntries(%+v): %v", q, err)
		}
		var out []uint64
		for _, e := range es {
			out = append(out, e.Seq)
		}
		return fmt.Sprint(out)
	}
	for _, c := range []struct {
		q    store.AuditQuery
		want string
	}{
		{store.AuditQuery{Limit: 10}, "[1 2 3 4 5 6]"},
		{store.AuditQuery{After: 2, Limit: 2}, "[3 4]"},
		{store.AuditQuery{Since: times[2], Limit: 10}, "[3 4 5 6]"},
		{store.AuditQuery{Until: times[2], Limit: 10}, "[1 2]"},
		{store.AuditQuery{Since: times[1], Until: times[4].Add(time.Nanosecond), Limit: 10}, "[2 3 4 5]"},
		{store.AuditQuery{Since: times[1], After: 3, Limit: 1}, "[4]"},
		{store.AuditQuery{Since: times[5].Add(time.Second), Limit: 10}, "[]"},
	} {
		if got := seqs(c.q); got != c.want {
			t.Errorf("AuditEntries(%+v) = %s, want %s", c.q, got, c.want)
		}
	}
	if _, err := s.AuditEntries(ctx, store.AuditQuery{}); err == nil {
		t.Error("AuditEntries without a limit succeeded")
	}
}

// Entries past the audit retention go by themselves, from the chain's
// start; the head records the last one pruned, and the chain still
// verifies, from there, with entries added after.
func testAuditRetention(t *testing.T, open openStoreFunc) {
	clock := newTestClock()
	s := open(t, contractConfig{Now: clock.Now, AuditRetention: time.Hour})
	ctx := context.Background()
	t0 := clock.Now()
	for i := range 3 {
		if err := s.Audit(ctx, store.Event{Kind: "test", Reason: "old " + strconv.Itoa(i)}); err != nil {
			t.Fatalf("Audit: %v", err)
		}
	}
	old, _ := chained(t, s)
	clock.Advance(90 * time.Minute)
	for i := range 2 {
		if err := s.Audit(ctx, store.Event{Kind: "test", Reason: "new " + strconv.Itoa(i)}); err != nil {
			t.Fatalf("Audit: %v", err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		head, err := s.AuditHead(ctx)
		if err != nil {
			t.Fatalf("AuditHead: %v", err)
		}
		if head.Pruned.Seq == 3 {
			if !bytes.Equal(head.Pruned.Hash, old[2].Hash) || !head.Pruned.Time.Equal(t0) {
				t.Errorf("checkpoint %+v, want seq 3 with its hash, at %v", head.Pruned, t0)
			}
			break
		}
		if head.Pruned.Seq > 3 {
			t.Fatalf("pruned up to seq %d: entries within the retention went", head.Pruned.Seq)
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s past the retention: checkpoint %+v, want seq 3", head.Pruned)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, records := chained(t, s)
	if len(records) != 2 || records[0].Seq != 4 || records[0].Reason != "new 0" {
		t.Fatalf("after pruning: %+v, want seqs 4 and 5", records)
	}
	mustVerify(t, s, 4, 5)
	if err := s.Audit(ctx, store.Event{Kind: "test", Reason: "after"}); err != nil {
		t.Fatalf("Audit: %v", err)
	}
	mustVerify(t, s, 4, 6)
}

// An event that gives At keeps it as its time (an expiry noticed later
// happened at the TTL), on its own and with a claim; the entry is found
// by that time, and the chain verifies.
func testAuditAt(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	h := putStep(t, s, 1, clock.Now())[0]
	at := clock.Now().Add(-time.Hour).Truncate(time.Microsecond).Add(123)
	clock.Advance(time.Minute)
	if err := s.Audit(ctx, store.Event{Kind: "test", At: at}); err != nil {
		t.Fatalf("Audit: %v", err)
	}
	if _, err := s.Claim(ctx, h.ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"},
		store.Event{Kind: store.EventAnswered, HoldID: h.ID, At: at.Add(time.Second)}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	_, recs := chained(t, s)
	if n := len(recs); n < 2 || !recs[n-2].Time.Equal(at) || !recs[n-1].Time.Equal(at.Add(time.Second)) {
		t.Fatalf("entries %+v, want the last two at %s and a second later", recs, at)
	}
	es, err := s.AuditEntries(ctx, store.AuditQuery{Since: at, Until: at.Add(2 * time.Second), Limit: 10})
	if err != nil || len(es) != 2 {
		t.Errorf("AuditEntries at that time: %d entries, %v; want 2", len(es), err)
	}
	mustVerify(t, s, 1, uint64(len(recs)))
}
