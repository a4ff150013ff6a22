package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgate/toolgate/store"
)

// openStore opens a store on disk in dir and closes it when the test ends.
func openStore(tb testing.TB, dir string, opts store.BadgerOptions) *store.Badger {
	tb.Helper()
	s, err := store.OpenBadger(dir, opts)
	if err != nil {
		tb.Fatalf("OpenBadger: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// The store contract on Badger, on disk in a temporary directory.
func TestBadgerContract(t *testing.T) {
	runContract(t, func(t *testing.T, cfg contractConfig) store.Store {
		opts := store.BadgerOptions{
			Now: cfg.Now, Retention: cfg.Retention, MaxWaiting: cfg.MaxWaiting, AuditRetention: cfg.AuditRetention,
		}
		if cfg.AuditRetention != 0 {
			opts.GCInterval = 20 * time.Millisecond // prunes the audit log as often
		}
		return openStore(t, t.TempDir(), opts)
	})
}

func TestBadgerDurability(t *testing.T) {
	clock := newTestClock()
	dir := t.TempDir()
	ctx := context.Background()

	s, err := store.OpenBadger(dir, store.BadgerOptions{Now: clock.Now})
	if err != nil {
		t.Fatalf("OpenBadger: %v", err)
	}
	hold := putStep(t, s, 1, clock.Now())[0]

	_, err = store.OpenBadger(dir, store.BadgerOptions{Now: clock.Now})
	if err == nil {
		t.Fatal("a second OpenBadger on an open directory succeeded")
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("second OpenBadger = %q, want the directory %q named", err, dir)
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = openStore(t, dir, store.BadgerOptions{Now: clock.Now})
	got, err := s.Get(ctx, hold.ID)
	if err != nil {
		t.Fatalf("Get after reopening: %v", err)
	}
	assertHold(t, got, hold)
	c, err := s.Claim(ctx, hold.ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"})
	if err != nil {
		t.Fatalf("Claim after reopening: %v", err)
	}
	if !c.Complete {
		t.Error("Claim after reopening: Complete is false")
	}
}

func TestBadgerRetention(t *testing.T) {
	clock := newTestClock() // years from the wall clock
	s := openStore(t, t.TempDir(), store.BadgerOptions{Now: clock.Now, Retention: 2 * time.Hour})
	ctx := context.Background()

	before := time.Now()
	hold := putStep(t, s, 1, clock.Now())[0]
	after := time.Now()

	// Expires is 30 minutes away on the store clock; the record must be
	// kept that long plus the retention, on Badger's wall clock.
	keep := 30*time.Minute + 2*time.Hour
	low, high := before.Add(keep).Truncate(time.Second), after.Add(keep).Add(time.Second)
	holdAt, stepAt, err := store.RecordExpiresAt(s, hold.ID)
	if err != nil {
		t.Fatalf("RecordExpiresAt: %v", err)
	}
	for name, at := range map[string]time.Time{"hold": holdAt, "step": stepAt} {
		if at.Before(low) || at.After(high) {
			t.Errorf("%s record expires at %v, want between %v and %v", name, at, low, high)
		}
	}

	// A claim and a settle rewrite the record but keep its lifetime.
	if _, err := s.Claim(ctx, hold.ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if err := s.Settle(ctx, hold.ID, "The person confirmed. Removed."); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	again, _, err := store.RecordExpiresAt(s, hold.ID)
	if err != nil {
		t.Fatalf("RecordExpiresAt: %v", err)
	}
	if !again.Equal(holdAt) {
		t.Errorf("after Claim and Settle the record expires at %v, want %v", again, holdAt)
	}
}

func TestBadgerDefaultRetention(t *testing.T) {
	clock := newTestClock()
	s := openStore(t, "", store.BadgerOptions{Now: clock.Now, InMemory: true})
	before := time.Now()
	hold := putStep(t, s, 1, clock.Now())[0]
	holdAt, _, err := store.RecordExpiresAt(s, hold.ID)
	if err != nil {
		t.Fatalf("RecordExpiresAt: %v", err)
	}
	if want := before.Add(30*time.Minute + store.DefaultRetention).Truncate(time.Second); holdAt.Before(want) {
		t.Errorf("record expires at %v, want at least %v", holdAt, want)
	}
}

func TestOpenBadgerRefuses(t *testing.T) {
	if _, err := store.OpenBadger("", store.BadgerOptions{}); err == nil {
		t.Error("OpenBadger with no directory succeeded")
	}
	dir := t.TempDir()
	if _, err := store.OpenBadger(dir, store.BadgerOptions{Retention: -time.Hour}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("OpenBadger with a negative retention = %v, want an error naming %q", err, dir)
	}
	if _, err := store.OpenBadger(dir, store.BadgerOptions{MaxWaiting: -1}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("OpenBadger with a negative MaxWaiting = %v, want an error naming %q", err, dir)
	}
	if _, err := store.OpenBadger(dir, store.BadgerOptions{GCInterval: -time.Second}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("OpenBadger with a negative GCInterval = %v, want an error naming %q", err, dir)
	}
}

// Badger's own lines reach zap under "badger", and its info lines (one per
// open) are demoted to debug.
func TestBadgerLogger(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	openStore(t, t.TempDir(), store.BadgerOptions{Logger: zap.New(core)})
	if logs.Len() == 0 {
		t.Fatal("no Badger log lines reached zap")
	}
	for _, e := range logs.All() {
		if e.LoggerName != "badger" {
			t.Errorf("line %q from logger %q, want badger", e.Message, e.LoggerName)
		}
		if e.Level == zapcore.InfoLevel {
			t.Errorf("line %q at info level", e.Message)
		}
		if strings.HasSuffix(e.Message, "\n") {
			t.Errorf("line %q ends in a newline", e.Message)
		}
	}
}

// A step's message is stored once, however many holds share it: eight
// holds of a 2 MiB message take about 2 MiB, not 16 (incompressible bytes;
// Badger compresses nothing here anyway).
func TestBadgerStoresMessageOnce(t *testing.T) {
	s := openStore(t, t.TempDir(), store.BadgerOptions{})
	ctx := context.Background()
	before := size(t, s)
	random := make([]byte, 3<<19)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	message := json.RawMessage(`"` + base64.StdEncoding.EncodeToString(random) + `"`) // 2 MiB
	stepID := newID(t)
	holds := make([]store.Hold, 8)
	for i := range holds {
		holds[i] = newHold(newID(t), stepID, i, time.Now())
		holds[i].Message = message
	}
	if err := s.Put(ctx, holds); err != nil {
		t.Fatalf("Put: %v", err)
	}
	grown := size(t, s) - before
	if grown < 2<<20 || grown > 3<<20 {
		t.Errorf("a step of 8 holds sharing a 2 MiB message grew the store by %d bytes, want 2 to 3 MiB", grown)
	}
	for _, h := range holds {
		got, err := s.Get(ctx, h.ID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if !bytes.Equal(got.Message, message) {
			t.Fatalf("hold %d: message of %d bytes, want the step's %d", h.Position, len(got.Message), len(message))
		}
	}
}

// The GC loop is bound to the store: after Close no goroutine of the store
// (or of Badger) is left, even with rounds running all the time.
func TestBadgerCloseStopsGC(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 5 {
		s, err := store.OpenBadger(t.TempDir(), store.BadgerOptions{GCInterval: time.Millisecond})
		if err != nil {
			t.Fatalf("OpenBadger: %v", err)
		}
		putStep(t, s, 1, time.Now())
		time.Sleep(5 * time.Millisecond) // a few rounds
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after closing the stores:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The audit log outlives the process: entries chained before a close are
// there after it and the chain goes on from them; events a process
// appended but did not chain (it died first) are chained by the next
// open, after them.
func TestBadgerAuditAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := store.OpenBadger(dir, store.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Audit(ctx, store.Event{Kind: "test", Reason: "first " + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What a process that died between an append and its chaining
	// leaves: a pending event.
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(txn *badger.Txn) error {
		return txn.Set([]byte("ap/09999999999999999999"), []byte(`{"time":"2030-01-01T00:00:00Z","kind":"test","reason":"left pending"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, store.BadgerOptions{})
	if err := s.Audit(ctx, store.Event{Kind: "test", Reason: "second"}); err != nil {
		t.Fatal(err)
	}
	_, records := chained(t, s)
	var got []string
	for _, r := range records {
		got = append(got, r.Reason)
	}
	if want := "[first 0 first 1 first 2 left pending second]"; fmt.Sprint(got) != want {
		t.Errorf("entries after a restart: %v, want %s", got, want)
	}
	mustVerify(t, s, 1, 5)
}

// A hold read is the caller's: changing its bytes changes nothing that a
// later read returns (the store keeps decoded holds to answer faster, see
// badgercache.go), and each step's progress shows in every read.
func TestBadgerReadsAreTheCallers(t *testing.T) {
	clock := newTestClock()
	s := openStore(t, t.TempDir(), store.BadgerOptions{Now: clock.Now})
	ctx := context.Background()
	hold := putStep(t, s, 1, clock.Now())[0]

	scribble := func(h store.Hold) {
		for _, b := range [][]byte{h.Shown, h.Call, h.Arguments, h.Message, h.Values, h.Reply} {
			for i := range b {
				b[i] = 'x'
			}
		}
	}
	for range 2 {
		got, err := s.Get(ctx, hold.ID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		assertHold(t, got, hold)
		scribble(got)
	}
	c, err := s.Claim(ctx, hold.ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1", Values: json.RawMessage(`{"a":1}`)})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	scribble(c.Hold)
	scribble(c.Step[0])
	started, err := s.Begin(ctx, hold.ID)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if started.State != store.Running || string(started.Values) != `{"a":1}` || !bytes.Equal(started.Call, hold.Call) || !bytes.Equal(started.Message, hold.Message) {
		t.Fatalf("Begin = %s %s %s, want running, the values and the call as put", started.State, started.Values, started.Call)
	}
	scribble(started)
	if err := s.SettleWithReply(ctx, hold.ID, "released", []byte("reply")); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	got, err := s.Get(ctx, hold.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.State != store.Settled || got.Values != nil || string(got.Reply) != "reply" || !bytes.Equal(got.Shown, hold.Shown) || !bytes.Equal(got.Arguments, hold.Arguments) {
		t.Fatalf("Get after Settle = %s values %s reply %q shown %s", got.State, got.Values, got.Reply, got.Shown)
	}
}
