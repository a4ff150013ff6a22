package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// N concurrent writes share syncs: fewer syncs than writes, and no writer
// returns before a sync that began after it was called has ended.
func TestBadgerGroupCommit(t *testing.T) {
	var started, finished atomic.Int64
	hook := func(sync func() error) error {
		started.Add(1)
		time.Sleep(20 * time.Millisecond) // a slow disk: writers pile up behind it
		err := sync()
		finished.Add(1)
		return err
	}
	s := openStore(t, t.TempDir(), store.WithSyncHook(store.BadgerOptions{}, hook))
	const n = 64
	now := time.Now()
	steps := make([][]store.Hold, n)
	for i := range steps {
		steps[i] = []store.Hold{newHold(newID(t), newID(t), 0, now)}
	}
	before := store.Syncs(s)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			begun := started.Load()
			if err := s.Put(context.Background(), steps[i]); err != nil {
				t.Errorf("Put: %v", err)
				return
			}
			// Syncs run one at a time: sync number begun+1 began after
			// this Put was called; it must have ended.
			if done := finished.Load(); done < begun+1 {
				t.Errorf("Put returned after %d syncs ended, %d had begun when it was called", done, begun)
			}
		})
	}
	wg.Wait()
	syncs := store.Syncs(s) - before
	if syncs >= n {
		t.Errorf("%d concurrent Puts took %d syncs, want fewer", n, syncs)
	}
	t.Logf("%d concurrent Puts, %d syncs", n, syncs)
	for i := range steps {
		if _, err := s.Get(context.Background(), steps[i][0].ID); err != nil {
			t.Errorf("Get(steps[%d]): %v", i, err)
		}
	}
}

// A write blocked in its sync does not return until the sync does.
func TestBadgerGroupCommitWaitsForSync(t *testing.T) {
	release := make(chan struct{})
	var block atomic.Bool
	hook := func(sync func() error) error {
		if block.Load() {
			<-release
		}
		return sync()
	}
	s := openStore(t, t.TempDir(), store.WithSyncHook(store.BadgerOptions{}, hook))
	block.Store(true)
	done := make(chan error, 1)
	go func() { done <- s.Put(context.Background(), []store.Hold{newHold(newID(t), newID(t), 0, time.Now())}) }()
	select {
	case err := <-done:
		t.Fatalf("Put returned (%v) while its sync was blocked", err)
	case <-time.After(100 * time.Millisecond):
	}
	block.Store(false)
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Put: %v", err)
	}
}

// A failed sync fails every writer of its group with ErrUnavailable, and
// the store refuses writes after it.
func TestBadgerSyncFailure(t *testing.T) {
	var fail atomic.Bool
	hook := func(sync func() error) error {
		if fail.Load() {
			return errors.New("disk on fire")
		}
		return sync()
	}
	s := openStore(t, t.TempDir(), store.WithSyncHook(store.BadgerOptions{}, hook))
	ctx := context.Background()
	held := putStep(t, s, 1, time.Now())[0]
	fail.Store(true)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			err := s.Put(ctx, []store.Hold{newHold(newID(t), newID(t), 0, time.Now())})
			if !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("Put during a failing sync = %v, want ErrUnavailable", err)
			}
		})
	}
	wg.Wait()
	fail.Store(false)
	if _, err := s.Claim(ctx, held.ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Claim after a failed sync = %v, want ErrUnavailable", err)
	}
	if _, err := s.Get(ctx, held.ID); err != nil {
		t.Errorf("Get after a failed sync: %v (reads still work)", err)
	}
}

// The sync loop keeps the store's directory open and lists it again on
// each sync: a listing sees the log files created and deleted since the
// one before, as a listing of a freshly opened directory would.
func TestBadgerSyncListsTheDirectoryAfresh(t *testing.T) {
	dir := t.TempDir()
	list, closeDir := store.DirLister(dir)
	defer closeDir()
	want := func(names ...string) {
		t.Helper()
		got, err := list()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, names) {
			t.Fatalf("listed %q, want %q", got, names)
		}
	}
	touch := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	touch("00001.mem")
	want("00001.mem")
	want("00001.mem") // read to the end before: rewound, not empty
	touch("00002.mem")
	touch("000001.vlog")
	want("000001.vlog", "00001.mem", "00002.mem")
	if err := os.Remove(filepath.Join(dir, "00001.mem")); err != nil {
		t.Fatal(err)
	}
	want("000001.vlog", "00002.mem")
}

// A group syncs the value log (db.Sync) only when a value large enough
// to go there was committed since the last time: a step whose message is
// over Badger's value threshold is followed by a full sync, small writes
// by syncs of the memtable's log alone; and what was written reads back
// whole after reopening.
func TestBadgerSyncsTheValueLogWhenUsed(t *testing.T) {
	dir := t.TempDir()
	s, err := store.OpenBadger(dir, store.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	put := func(message json.RawMessage) store.Hold {
		t.Helper()
		h := newHold(newID(t), newID(t), 0, time.Now())
		h.Message = message
		if err := s.Put(ctx, []store.Hold{h}); err != nil {
			t.Fatalf("Put: %v", err)
		}
		return h
	}
	full0, mem0 := store.SyncKinds(s)
	small := put(testMessage)
	full1, mem1 := store.SyncKinds(s)
	if full1 != full0 || mem1 == mem0 {
		t.Errorf("a small Put: %d full syncs and %d of the memtable's log, want 0 and 1 or more", full1-full0, mem1-mem0)
	}
	large := put(json.RawMessage(`{"role":"assistant","content":"` + strings.Repeat("x", 100<<10) + `"}`))
	full2, _ := store.SyncKinds(s)
	if full2 == full1 {
		t.Error("a Put of a 100 KiB message: no full sync, want the value log synced")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, store.BadgerOptions{})
	for _, want := range []store.Hold{small, large} {
		got, err := s.Get(ctx, want.ID)
		if err != nil {
			t.Fatalf("Get after reopening: %v", err)
		}
		if !bytes.Equal(got.Message, want.Message) {
			t.Errorf("message after reopening: %d bytes, want %d", len(got.Message), len(want.Message))
		}
	}
}
