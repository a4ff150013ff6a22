package store_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// killDirEnv names the store directory of the writer process of
// TestBadgerKilledDuringBurst; set, the test is that process.
const killDirEnv = "TOOLGATE_TEST_KILL_DIR"

// A process killed (SIGKILL) during a burst of concurrent writes loses
// none it acknowledged: every hold whose Put returned is there after
// reopening, and every hold whose Settle returned is settled with its
// outcome. The writer is this test binary in a process of its own; it
// prints each acknowledgement after the call returned. About a quarter
// of the steps carry a message larger than Badger's value threshold, so
// their step records go to the value log: a group that commits one
// syncs the value log too, the others only the memtable's log (see
// store/badgersync.go); each comes back whole.
func TestBadgerKilledDuringBurst(t *testing.T) {
	if dir := os.Getenv(killDirEnv); dir != "" {
		burstWriter(dir)
		return
	}
	if testing.Short() {
		t.Skip("runs a writer process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBadgerKilledDuringBurst$", "-test.count=1")
	cmd.Env = append(os.Environ(), killDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	put, settled := map[string]bool{}, map[string]bool{}
	killed := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		kind, id, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch kind {
		case "put":
			put[id] = true
		case "settled":
			settled[id] = true
		}
		if len(settled) >= 300 && !killed {
			_ = cmd.Process.Signal(syscall.SIGKILL) // mid-burst: the writers never stop
			killed = true
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("the writer ended before it was killed, after %d puts and %d settles", len(put), len(settled))
	}

	s := openStore(t, dir, store.BadgerOptions{})
	ctx := context.Background()
	for id := range put {
		h, err := s.Get(ctx, id)
		if err != nil {
			t.Errorf("acknowledged Put of %s lost: %v", id, err)
			continue
		}
		if want := messageOf(id); !bytes.Equal(h.Message, want) {
			t.Errorf("acknowledged Put of %s: message of %d bytes, want %d", id, len(h.Message), len(want))
		}
		if settled[id] && (h.State != store.Settled || h.Outcome != outcomeOf(id)) {
			t.Errorf("acknowledged Settle of %s: state %q, outcome %q", id, h.State, h.Outcome)
		}
	}
	for id := range settled {
		if !put[id] {
			t.Errorf("%s settled but its Put was never acknowledged", id)
		}
	}
	t.Logf("killed after %d acknowledged puts and %d acknowledged settles", len(put), len(settled))
}

func outcomeOf(id string) string { return "The person confirmed. Removed " + id + "." }

// messageOf is the step message of the hold id in the burst: for about a
// quarter of the ids (by their last character), one of 100 KiB, above
// Badger's value threshold (64 KiB).
func messageOf(id string) json.RawMessage {
	if id[len(id)-1]%4 != 0 {
		return testMessage
	}
	return json.RawMessage(`{"role":"assistant","content":"` + strings.Repeat(id[:8], 100<<10/8) + `"}`)
}

// burstWriter is the writer process: 16 goroutines put, claim, begin and
// settle holds until it is killed, and print each Put and Settle once it
// has returned.
func burstWriter(dir string) {
	s, err := store.OpenBadger(dir, store.BadgerOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "OpenBadger:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	ack := func(kind, id string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, "%s %s\n", kind, id) // unbuffered: a write(2) each
	}
	fail := func(what string, err error) {
		fmt.Fprintln(os.Stderr, what+":", err)
		os.Exit(2)
	}
	ctx := context.Background()
	for range 16 {
		go func() {
			for {
				id, _ := store.NewID()
				step, _ := store.NewID()
				h := newHold(id, step, 0, time.Now())
				h.Owner = id
				h.Message = messageOf(id)
				if err := s.Put(ctx, []store.Hold{h}, store.Event{Kind: store.EventHeld, HoldID: id}); err != nil {
					fail("Put", err)
				}
				ack("put", id)
				if _, err := s.Claim(ctx, id, store.Answer{Choice: store.AnswerConfirm, By: "person-1"},
					store.Event{Kind: store.EventAnswered, HoldID: id}); err != nil {
					fail("Claim", err)
				}
				if _, err := s.Begin(ctx, id); err != nil {
					fail("Begin", err)
				}
				if err := s.Settle(ctx, id, outcomeOf(id), store.Event{Kind: store.EventSettled, HoldID: id}); err != nil {
					fail("Settle", err)
				}
				ack("settled", id)
			}
		}()
	}
	time.Sleep(time.Hour) // until killed
}
