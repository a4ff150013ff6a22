package store

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGroupSyncInterleavings runs writers against a groupSync whose sync
// takes a random while, with close arriving at a random moment, against
// the rule a small model states: syncs never overlap, and a wait that
// returns nil returns after a sync that began after it was called has
// ended; every wait returns (close drains what waits); a wait after close
// is refused. Seeds vary the interleavings; -race checks the hand-offs
// between a leading writer and the loop.
func TestGroupSyncInterleavings(t *testing.T) {
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 7))
		var (
			begun, ended atomic.Int64
			inSync       atomic.Int32
		)
		pause := make([]time.Duration, 256)
		for i := range pause {
			pause[i] = time.Duration(r.IntN(300)) * time.Microsecond
		}
		var next atomic.Int64
		g := newGroupSync(func() error {
			if inSync.Add(1) != 1 {
				t.Errorf("seed %d: two syncs at once", seed)
			}
			begun.Add(1)
			time.Sleep(pause[next.Add(1)%int64(len(pause))])
			ended.Add(1)
			inSync.Add(-1)
			return nil
		})
		writers := 2 + r.IntN(12)
		rounds := 1 + r.IntN(8)
		closeAfter := time.Duration(r.IntN(3000)) * time.Microsecond
		var wg sync.WaitGroup
		var refused atomic.Int64
		for w := range writers {
			wg.Go(func() {
				for i := range rounds {
					time.Sleep(pause[(w*rounds+i)%len(pause)] / 4)
					before := begun.Load()
					err := g.wait()
					if err != nil {
						refused.Add(1)
						continue
					}
					if got := ended.Load(); got < before+1 {
						t.Errorf("seed %d: a wait returned after %d syncs ended; %d had begun when it was called", seed, got, before)
					}
				}
			})
		}
		time.Sleep(closeAfter)
		g.close()
		finished := make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Fatalf("seed %d: a wait never returned", seed)
		}
		if err := g.wait(); err == nil {
			t.Errorf("seed %d: a wait after close succeeded", seed)
		}
		if b, e := begun.Load(), ended.Load(); b != e || int64(g.count()) != b {
			t.Errorf("seed %d: %d syncs begun, %d ended, %d counted", seed, b, e, g.count())
		}
	}
}
