package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// The flood of issue 8: responses with many large gated calls, whose holds
// expire unanswered. Once their records are past retention the store must
// give the space back, with no writes from outside, and keep every live
// hold intact; also when the process that wrote the flood has gone.
func TestBadgerSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reclaims a few hundred megabytes")
	}
	t.Run("running", func(t *testing.T) { soak(t, false) })
	t.Run("reopened", func(t *testing.T) { soak(t, true) })
}

func soak(t *testing.T, reopen bool) {
	const (
		steps   = 128     // responses
		calls   = 8       // gated calls in each
		message = 1 << 19 // bytes of each response's assistant message
		// slack is what may stay behind: the value-log file being written
		// (Badger never collects the current one; 16 MiB), the memtable's
		// write-ahead log and a few small tables.
		slack = 32 << 20
	)
	dir := t.TempDir()
	opts := store.BadgerOptions{
		Retention:  time.Millisecond,
		GCInterval: 50 * time.Millisecond,
	}
	s, err := store.OpenBadger(dir, opts)
	if err != nil {
		t.Fatalf("OpenBadger: %v", err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	ctx := context.Background()
	start := size(t, s)

	live := putLive(t, s, "before")
	var peak int64
	big := json.RawMessage(`{"role":"assistant","content":"` + strings.Repeat("x", message) + `"}`)
	var flood []store.Hold
	for range steps {
		stepID := newID(t)
		holds := make([]store.Hold, calls)
		for i := range holds {
			holds[i] = newHold(newID(t), stepID, i, time.Now())
			holds[i].Message = big
			holds[i].Expires = holds[i].Created.Add(3 * time.Second)
		}
		if err := s.Put(ctx, holds); err != nil {
			t.Fatalf("Put: %v", err)
		}
		flood = append(flood, holds[0])
		peak = max(peak, size(t, s))
	}
	live = append(live, putLive(t, s, "after")...)
	// No check of the peak: the flood wrote steps*message = 64 MiB, twice
	// the slack, and on a loaded machine the loop may already collect its
	// first part while the rest is written (Stats growing with what is
	// stored is a contract case of its own).
	if reopen {
		// The new process learns what expires from the database itself.
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if s, err = store.OpenBadger(dir, opts); err != nil {
			t.Fatalf("OpenBadger again: %v", err)
		}
	}

	// Bounded wait for the GC loop: the records become droppable about four
	// seconds after they were put, then the loop has to reclaim them.
	deadline := time.Now().Add(20 * time.Second)
	now := size(t, s)
	for now > start+slack {
		if time.Now().After(deadline) {
			t.Fatalf("the store grew from %d to %d bytes in the flood and is still %d bytes 20 s later, want at most %d",
				start, peak, now, start+slack)
		}
		time.Sleep(100 * time.Millisecond)
		now = size(t, s)
	}
	t.Logf("store size: %d bytes at start, %d at the peak of the flood, %d after collection", start, peak, now)

	for _, h := range flood[:4] {
		if _, err := s.Get(ctx, h.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get of a flood hold past retention = %v, want ErrNotFound", err)
		}
	}
	for _, want := range live {
		got, err := s.Get(ctx, want.ID)
		if err != nil {
			t.Fatalf("Get of a live hold after collection: %v", err)
		}
		if !bytes.Equal(got.Message, want.Message) || !bytes.Equal(got.Call, want.Call) || got.State != store.Waiting {
			t.Errorf("live hold %s changed in collection: %q, message of %d bytes", want.ID, got.State, len(got.Message))
		}
	}
}

// putLive puts a step of two holds that stay for an hour, with a message
// large enough to sit in the value log.
func putLive(t *testing.T, s store.Store, tag string) []store.Hold {
	t.Helper()
	stepID := newID(t)
	msg := json.RawMessage(`{"role":"assistant","content":"` + tag + strings.Repeat("y", 200<<10) + `"}`)
	holds := []store.Hold{newHold(newID(t), stepID, 0, time.Now()), newHold(newID(t), stepID, 1, time.Now())}
	for i := range holds {
		holds[i].Message = msg
		holds[i].Expires = holds[i].Created.Add(time.Hour)
	}
	if err := s.Put(context.Background(), holds); err != nil {
		t.Fatalf("Put: %v", err)
	}
	return holds
}

func size(t *testing.T, s store.Store) int64 {
	t.Helper()
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st.Bytes
}
