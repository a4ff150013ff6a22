package store

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
)

// DefaultGCInterval is how often the store reclaims space when
// BadgerOptions.GCInterval is zero.
const DefaultGCInterval = time.Minute

const (
	// memTableSize is Badger's memtable: what it keeps in memory (and in
	// its write-ahead log) before it writes a table. Badger allocates it
	// whole, as one Go slice the collector counts as live, and the heap
	// grows to twice what is live before a collection: it costs an idle
	// gate about twice its size in memory, and spares the collector as
	// much (docs/speed.md, "Idle memory"). 2 MiB against 4: 2.4 MiB less
	// resident when idle (1.13x plain Caddy against 1.21x), 30% more
	// collections in the in-process benchmark, and no difference in the
	// CPU per request passed through that shows from outside (same run).
	// A hold's writes take a few KB of it, so a table is written every
	// few hundred holds. valueThreshold must stay below 15% of it.
	memTableSize = 2 << 20
	// gcDiscardRatio: a value-log file is rewritten once at least half of
	// it is garbage (Badger's own advice).
	gcDiscardRatio = 0.5
	// gcRewrites bounds the value-log files one GC round rewrites, so a
	// round ends and Close never waits long.
	gcRewrites = 64
	// fillerValue is the size of one filler entry (see flushMemtable):
	// well under the value threshold, so it stays in the memtable.
	fillerValue = 32 << 10
)

// Space in Badger comes back in two steps, and neither happens by itself
// in a store that is written little:
//
//  1. A compaction drops expired and overwritten entries from the tables
//     it rewrites, and counts the value-log bytes they pointed at.
//  2. RunValueLogGC rewrites a value-log file whose counted garbage is at
//     least gcDiscardRatio of it, and deletes the file.
//
// Compactions follow memtable flushes, and a memtable flushes only when it
// is full. So the records of a flood can sit, expired, in the memtable and
// in tables no compaction revisits, pinning every value-log file they
// point into: the store never shrinks. Badger has no call that flushes or
// compacts without stopping writes (DropPrefix stops them; Flatten leaves
// the memtable and the last level alone). The GC loop therefore fills the
// memtable itself, with entries that are already expired, once the
// ledger says at least a memtable's worth of records has expired since it
// last did: the flush that follows makes Badger compact the new table into
// the level below, rewriting every table there (the filler spans the whole
// key space), which drops what expired, filler included, and counts the
// value-log garbage for step 2. In a store large enough for Badger to use
// two levels, the upper one overflows into the last within a flush or
// two, and that compaction drops the rest.
//
// The cost is bounded by what it reclaims: at most one memtable (2 MiB) of
// filler per memtable of expired records, and nothing while nothing
// expires.

// ledger counts the bytes written, by the wall-clock time at which Badger
// may drop them (their ExpiresAt), so the GC loop knows how much has
// expired without reading the database.
type ledger struct {
	mu    sync.Mutex
	due   map[uint64]int64 // bucket end (unix seconds) → bytes
	width uint64           // bucket width, seconds
}

// staged is one write of a transaction: its size and ExpiresAt.
type staged struct {
	at    uint64
	bytes int64
}

// bucketWidth keeps the ledger to about one bucket per GC round.
func bucketWidth(interval time.Duration) uint64 {
	return max(1, uint64(interval/time.Second))
}

func (l *ledger) add(writes []staged) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range writes {
		if w.at == 0 {
			continue // no expiry: never garbage by time
		}
		l.due[(w.at+l.width-1)/l.width*l.width] += w.bytes
	}
}

// take removes and returns the bytes that expire at or before now.
func (l *ledger) take(now time.Time) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for at, bytes := range l.due {
		if at <= uint64(now.Unix()) {
			n += bytes
			delete(l.due, at)
		}
	}
	return n
}

// collect is the GC loop, bound to the store: Close stops it and waits for
// it. Each round collects the value log, then forces a flush when enough
// has expired (see above). It first learns from the database what the
// last process wrote, which the ledger did not see.
func (b *Badger) collect(interval time.Duration) {
	defer close(b.gcDone)
	b.seedLedger()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var expired int64
	for {
		select {
		case <-b.gcStop:
			return
		case <-tick.C:
		}
		b.collectValueLog()
		expired += b.ledger.take(time.Now())
		if expired < memTableSize {
			continue
		}
		if err := b.flushMemtable(); err != nil {
			b.logger.Warn("forcing a compaction of expired records", zap.Error(err))
			continue
		}
		b.logger.Debug("forced a compaction of expired records", zap.Int64("expired_bytes", expired))
		expired = 0
	}
}

// stopped reports whether Close has asked the GC loop to return.
func (b *Badger) stopped() bool {
	select {
	case <-b.gcStop:
		return true
	default:
		return false
	}
}

// collectValueLog rewrites value-log files that are mostly garbage, until
// none is left or the round's bound is reached.
func (b *Badger) collectValueLog() {
	if b.dir == "" {
		return // in memory: no value log
	}
	if b.rotated != nil {
		// The rewrite puts values in the value log: every sync until it
		// ends, and the first after, syncs it (see rotated).
		b.rotated.gcRunning.Add(1)
		defer func() {
			b.rotated.vlogWritten.Store(true)
			b.rotated.gcRunning.Add(-1)
		}()
	}
	rewritten := 0
	for ; rewritten < gcRewrites && !b.stopped(); rewritten++ {
		err := b.db.RunValueLogGC(gcDiscardRatio)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			break
		}
		if err != nil {
			b.logger.Warn("collecting the value log", zap.Error(err))
			break
		}
	}
	if rewritten > 0 {
		b.logger.Debug("collected the value log", zap.Int("files_rewritten", rewritten))
	}
}

// flushMemtable fills the memtable with entries that expired long ago
// (ExpiresAt 1), a little more than it holds, so Badger flushes it and
// compacts the table into the level below. Every transaction of filler
// also writes the smallest and the largest key the store can have, so
// every table flushed from it spans the whole key space and its
// compaction rewrites every table of the level below (a table of "g/"
// keys alone would overlap none of the records and be compacted on its
// own). Nothing reads these keys, and the compaction drops them with the
// rest of what expired.
func (b *Badger) flushMemtable() error {
	value := make([]byte, fillerValue)
	const perTxn = 8 // well under Badger's batch size (15% of the memtable)
	for n := 0; n < memTableSize/fillerValue+perTxn; n += perTxn {
		if b.stopped() {
			return nil
		}
		err := b.db.Update(func(txn *badger.Txn) error {
			keys := [][]byte{{0}, {0xff, 0xff}}
			for i := range perTxn - len(keys) {
				keys = append(keys, []byte("g/"+strconv.Itoa(n+i)))
			}
			for _, k := range keys {
				e := badger.NewEntry(k, value)
				e.ExpiresAt = 1
				if err := txn.SetEntry(e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// seedLedger adds every record in the database to the ledger by its
// ExpiresAt (keys only; the value log is not read). Records written while
// it reads may be counted twice, which only brings a flush forward.
func (b *Badger) seedLedger() {
	err := b.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		batch := make([]staged, 0, 1024)
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			batch = append(batch, staged{at: item.ExpiresAt(), bytes: item.EstimatedSize()})
			if len(batch) == cap(batch) {
				b.ledger.add(batch)
				batch = batch[:0]
				if b.stopped() {
					return nil
				}
			}
		}
		b.ledger.add(batch)
		return nil
	})
	if err != nil {
		b.logger.Warn("reading the store's records for its GC", zap.Error(err))
	}
}
