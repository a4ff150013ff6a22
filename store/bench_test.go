package store_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/store"
)

// The store's share of the hold path and the answer path, on each backend
// (PostgreSQL when TOOLGATE_TEST_POSTGRES is set): a held step is one Put;
// a confirmation is a Claim, a Begin and a Settle.

func benchStores(b *testing.B, run func(b *testing.B, s store.Store)) {
	b.Run("badger", func(b *testing.B) {
		run(b, openStore(b, b.TempDir(), store.BadgerOptions{MaxWaiting: 100}))
	})
	b.Run("postgres", func(b *testing.B) {
		dsn := pgtest.DSN(b)
		run(b, openPostgres(b, dsn, store.PostgresOptions{Schema: pgtest.Schema(b, dsn), MaxWaiting: 100}))
	})
}

// benchSteps returns n one-hold steps for distinct owners (so the cap
// never refuses them), waiting for an hour.
func benchSteps(b *testing.B, n int) [][]store.Hold {
	steps := make([][]store.Hold, n)
	now := time.Now()
	for i := range steps {
		h := newHold(newID(b), newID(b), 0, now)
		h.Owner = newID(b)
		h.Expires = now.Add(time.Hour)
		steps[i] = []store.Hold{h}
	}
	return steps
}

// putAll puts steps and returns their holds' ids.
func putAll(b *testing.B, s store.Store, steps [][]store.Hold) []string {
	ids := make([]string, len(steps))
	for i, st := range steps {
		if err := s.Put(context.Background(), st); err != nil {
			b.Fatalf("Put: %v", err)
		}
		ids[i] = st[0].ID
	}
	return ids
}

// BenchmarkPut is the store's part of holding a call: one step, durable
// when Put returns, under a cap.
func BenchmarkPut(b *testing.B) {
	benchStores(b, func(b *testing.B, s store.Store) {
		steps := benchSteps(b, b.N)
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if err := s.Put(ctx, steps[i]); err != nil {
				b.Fatalf("Put: %v", err)
			}
		}
	})
}

func BenchmarkClaim(b *testing.B) {
	benchStores(b, func(b *testing.B, s store.Store) {
		ids := putAll(b, s, benchSteps(b, b.N))
		ctx := context.Background()
		answer := store.Answer{Choice: store.AnswerConfirm, By: "person-1"}
		b.ReportAllocs()
		b.ResetTimer()
		for _, id := range ids {
			if _, err := s.Claim(ctx, id, answer); err != nil {
				b.Fatalf("Claim: %v", err)
			}
		}
	})
}

func BenchmarkBeginSettle(b *testing.B) {
	benchStores(b, func(b *testing.B, s store.Store) {
		ids := putAll(b, s, benchSteps(b, b.N))
		ctx := context.Background()
		for _, id := range ids {
			if _, err := s.Claim(ctx, id, store.Answer{Choice: store.AnswerConfirm, By: "person-1"}); err != nil {
				b.Fatalf("Claim: %v", err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for _, id := range ids {
			if _, err := s.Begin(ctx, id); err != nil {
				b.Fatalf("Begin: %v", err)
			}
			if err := s.Settle(ctx, id, "The person confirmed. Removed."); err != nil {
				b.Fatalf("Settle: %v", err)
			}
		}
	})
}

// BenchmarkConfirmParallel is a confirmation's store work (Claim, Begin,
// Settle) from 8 answerers at once; ns/op is the inverse of the
// confirmations per second one process gets from the store.
func BenchmarkConfirmParallel(b *testing.B) {
	benchStores(b, func(b *testing.B, s store.Store) {
		ids := putAll(b, s, benchSteps(b, b.N))
		next := make(chan string, len(ids))
		for _, id := range ids {
			next <- id
		}
		close(next)
		ctx := context.Background()
		b.SetParallelism(4) // 4 × GOMAXPROCS (2 here): 8 answerers
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				id := <-next
				if _, err := s.Claim(ctx, id, store.Answer{Choice: store.AnswerConfirm, By: "person-1"}); err != nil {
					b.Errorf("Claim: %v", err)
					return
				}
				if _, err := s.Begin(ctx, id); err != nil {
					b.Errorf("Begin: %v", err)
					return
				}
				if err := s.Settle(ctx, id, "The person confirmed. Removed."); err != nil {
					b.Errorf("Settle: %v", err)
					return
				}
			}
		})
	})
}

// BenchmarkChainAudit is the audit log's work per event: b.N events of
// confirmed holds (answered, released, settled: three per hold, as a
// confirmation appends them), appended a hundred at a time, then chained
// (SyncAudit, or the store's own chain loop); each entry is filled with
// its hold's names.
func BenchmarkChainAudit(b *testing.B) {
	benchStores(b, func(b *testing.B, s store.Store) {
		ids := putAll(b, s, benchSteps(b, b.N/3+1))
		ctx := context.Background()
		kinds := []store.EventKind{store.EventAnswered, store.EventReleased, store.EventSettled}
		events := make([]store.Event, b.N)
		for i := range events {
			events[i] = store.Event{Kind: kinds[i%3], HoldID: ids[i/3]}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for batch := range slices.Chunk(events, 100) {
			if err := s.Audit(ctx, batch...); err != nil {
				b.Fatalf("Audit: %v", err)
			}
		}
		if err := s.SyncAudit(ctx); err != nil {
			b.Fatalf("SyncAudit: %v", err)
		}
	})
}

// BenchmarkGroupCommit is settles from 8 goroutines at once on Badger,
// with group commit (the store as it runs) and with a sync per
// transaction (Badger's SyncWrites, as before), in one run: ops/s and
// syncs/op (group syncs per settle; per-txn is one by construction).
func BenchmarkGroupCommit(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts store.BadgerOptions
	}{
		{"group", store.BadgerOptions{}},
		{"per-txn", store.WithPerTxnSync(store.BadgerOptions{})},
	} {
		b.Run(mode.name, func(b *testing.B) {
			s := openStore(b, b.TempDir(), mode.opts)
			ids := putAll(b, s, benchSteps(b, b.N))
			ctx := context.Background()
			for _, id := range ids {
				if _, err := s.Claim(ctx, id, store.Answer{Choice: store.AnswerConfirm, By: "person-1"}); err != nil {
					b.Fatalf("Claim: %v", err)
				}
			}
			next := make(chan string, len(ids))
			for _, id := range ids {
				next <- id
			}
			close(next)
			syncs := store.Syncs(s)
			b.SetParallelism(4) // 4 × GOMAXPROCS (2 here): 8 settlers
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.Settle(ctx, <-next, "The person confirmed. Removed."); err != nil {
						b.Errorf("Settle: %v", err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
			if mode.name == "group" {
				b.ReportMetric(float64(store.Syncs(s)-syncs)/float64(b.N), "syncs/op")
			} else {
				b.ReportMetric(1, "syncs/op")
			}
		})
	}
}

// BenchmarkPutAlone is one Put at a time (the hold path of a quiet gate)
// with group commit and with a sync per transaction, in one run: group
// commit must not cost a lone writer more than its hand-off to the sync.
func BenchmarkPutAlone(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts store.BadgerOptions
	}{
		{"group", store.BadgerOptions{}},
		{"per-txn", store.WithPerTxnSync(store.BadgerOptions{})},
	} {
		b.Run(mode.name, func(b *testing.B) {
			s := openStore(b, b.TempDir(), mode.opts)
			steps := benchSteps(b, b.N)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := s.Put(ctx, steps[i]); err != nil {
					b.Fatalf("Put: %v", err)
				}
			}
		})
	}
}

// BenchmarkIndexed is the lookup a held call makes for its intent's card
// (gate's one card per intent), in a store that holds 2,000 other keys'
// entries: a key filed under nothing (a new intent, the common case), and
// a key with one step.
func BenchmarkIndexed(b *testing.B) {
	benchStores(b, func(b *testing.B, s store.Store) {
		ctx := context.Background()
		expires := time.Now().Add(time.Hour)
		for i := range 2000 {
			if err := s.Index(ctx, "intent:"+strconv.Itoa(i), "step"+strconv.Itoa(i), expires); err != nil {
				b.Fatalf("Index: %v", err)
			}
		}
		b.Run("miss", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if got, err := s.Indexed(ctx, "intent:new"+strconv.Itoa(i)); err != nil || len(got) != 0 {
					b.Fatalf("Indexed = %v, %v", got, err)
				}
			}
		})
		b.Run("hit", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if got, err := s.Indexed(ctx, "intent:"+strconv.Itoa(i%2000)); err != nil || len(got) != 1 {
					b.Fatalf("Indexed = %v, %v", got, err)
				}
			}
		})
	})
}
