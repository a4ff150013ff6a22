package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"go.uber.org/zap"
)

// DefaultRetention is how long a record is kept after its hold expires when
// BadgerOptions.Retention is zero.
const DefaultRetention = 24 * time.Hour

// updateAttempts bounds the conflict retries of one write. A conflict means
// another transaction on the same keys committed first, so every retry
// follows someone's progress; running out takes more racing writers on one
// step than a person's answers produce.
const updateAttempts = 16

// BadgerOptions configure OpenBadger. The zero value is usable.
type BadgerOptions struct {
	// Retention is how long a record is kept after its hold's Expires, so a
	// late request (or a person opening an old link) still reads the
	// outcome instead of "not found". Default: 24h.
	Retention time.Duration
	// Now is the store's clock: it decides whether a waiting hold has
	// expired and stamps AnsweredAt. Default: time.Now. It lives on the
	// store, not in a package variable, so tests of one store cannot move
	// the clock of another.
	Now func() time.Time
	// Logger receives Badger's own log lines (info and debug lines at debug
	// level, under "badger") and the GC loop's (what it reclaimed at debug,
	// failures as warnings). May be nil.
	Logger *zap.Logger
	// InMemory keeps everything in memory: no directory, no lock, nothing
	// survives Close. For tests only; dir is ignored.
	InMemory bool
	// MaxWaiting caps the holds waiting for one person: Put refuses a step
	// (ErrLimit) whose waiting holds would leave their (tenant, owner)
	// with more than MaxWaiting waiting, unexpired holds. A hold stops
	// counting once it is answered or expired. The same owner id in two
	// tenants has two separate caps. MCP tickets count like holds.
	// Default: 0, no cap.
	MaxWaiting int
	// GCInterval is how often the store gives back the space of records
	// past their retention and of overwritten versions (value-log garbage
	// collection, and a forced compaction once enough has expired; see
	// Badger), and prunes audit entries past AuditRetention. Default: 1m.
	GCInterval time.Duration
	// AuditRetention is how long an entry of the audit log is kept (by
	// the time of its event): older entries are pruned from the chain's
	// start, and the chain verifies from the last one pruned. Default:
	// 90 days. Negative: never pruned.
	AuditRetention time.Duration

	// syncHook, when set (tests), runs each group's sync: it is given the
	// store's own and returns what the store takes as its result.
	syncHook func(sync func() error) error
	// perTxnSync opens Badger with SyncWrites on and no group commit: each
	// transaction syncs on its own, as before group commit (benchmarks).
	perTxnSync bool
}

// Badger is the embedded Store: one Badger database in a directory, opened
// once per process (Badger locks the directory; a second open fails).
//
// Layout (ids are base32; <owner> is ownerKey(tenant, owner), which spells
// each part with its length first):
//
//	h/<id>              one hold as JSON (record, badgerrecord.go), without its message,
//	                    as Put wrote it: never rewritten
//	p/<id>              what changed of it since (progress: state, answer, outcome,
//	                    reply), once it is claimed
//	s/<stepID>          the step: its holds' ids in Position order and their
//	                    shared message (stepRecord)
//	u/<id>              an unsettled hold (Put of a waiting hold; Settle deletes it)
//	w/<owner>/<id>      a hold waiting for owner: its Expires on the store clock
//	                    (Claim deletes it; Badger drops it at Expires)
//	c/<owner>           touched by every capped Put for owner (a conflict key)
//	i/<len>/<key>/...   the step index (index.go)
//	t/<created>/<id>    a hold by the time it was made, for List (badgerlist.go)
//	ap/, a/, ah         the audit log: pending events, chained entries, the
//	                    chain's head (badgeraudit.go; kept without a TTL)
//	g/<n>, 0x00, 0xffff filler the GC writes already expired (badgergc.go)
//
// Every entry carries a Badger TTL: a hold's and its step's records, its
// unsettled entry and its index entries live until the hold's Expires plus
// the retention, so records disappear without a sweeper; a waiting hold
// past Expires reads as Expired (StateAt) before that. The records are
// read with the store clock, the TTL runs on the wall clock (see
// wallDeadline).
//
// Writes are synced to disk before they return: the app sees the waiting
// text only after Put, and a hold it was told about must survive a crash
// or power loss, or the person's link would lead nowhere. The writes in
// flight at once share one sync (group commit, badgersync.go), so a crowd
// of answers costs a couple of syncs, not one each.
//
// Space: a value above ValueThreshold (64 KiB: a large message or call)
// goes to the value log, the rest stays in the LSM tree. Neither gives
// space back by itself in a store written little, so a GC loop runs for
// the store's lifetime (badgergc.go): it collects value-log files that
// are mostly garbage and forces a compaction once enough has expired.
// After a flood the store returns to its live size plus about one
// value-log file (16 MiB) and one memtable (2 MiB) of garbage.
type Badger struct {
	db         *badger.DB
	dir        string           // the database's directory; "" in memory
	retention  time.Duration    // how long a record outlives its hold's Expires
	now        func() time.Time // the store clock
	maxWaiting int              // BadgerOptions.MaxWaiting

	// ownerLocks serialise the capped Puts of one (tenant, owner) in this
	// process (by a hash of the pair, so unrelated owners rarely share
	// one). Conflict detection alone keeps the cap exact, but a crowd of
	// racing Puts for one owner would each retry once per winner and could
	// run out of attempts; queued on a lock they do not conflict at all.
	ownerLocks [64]sync.Mutex

	ledger   ledger        // bytes written, by when Badger may drop them
	gcStop   chan struct{} // closed by Close: the GC and chain loops return
	gcDone   chan struct{} // closed by the GC loop when it has returned
	stopOnce sync.Once
	logger   *zap.Logger

	auditRetention time.Duration // BadgerOptions.AuditRetention; negative: never pruned
	pendingSeq     atomic.Uint64 // the number of the last pending audit event given out
	chainWake      chan struct{} // an append wakes the chain loop (buffered, one)
	chainDone      chan struct{} // closed by the chain loop when it has returned
	chainMu        sync.Mutex    // one chain round (or prune) at a time

	group   *groupSync // group commit; nil with perTxnSync or in memory
	rotated *rotated   // the group's record of rotated logs; closed after it

	cache *holdCache // holds decoded from their records (badgercache.go)
}

// valueThreshold is the size from which Badger keeps a value in the value
// log rather than in the tree (see rotated for why the store tracks it).
const valueThreshold = 64 << 10

// OpenBadger opens (creating if needed) the store in dir. A directory
// already open, in this process or another, fails with an error naming dir.
func OpenBadger(dir string, opts BadgerOptions) (*Badger, error) {
	if opts.Retention < 0 {
		return nil, fmt.Errorf("opening badger %q: negative retention %v", dir, opts.Retention)
	}
	if opts.MaxWaiting < 0 {
		return nil, fmt.Errorf("opening badger %q: negative max waiting %d", dir, opts.MaxWaiting)
	}
	if opts.GCInterval < 0 {
		return nil, fmt.Errorf("opening badger %q: negative gc interval %v", dir, opts.GCInterval)
	}
	if opts.Retention == 0 {
		opts.Retention = DefaultRetention
	}
	if opts.GCInterval == 0 {
		opts.GCInterval = DefaultGCInterval
	}
	if opts.AuditRetention == 0 {
		opts.AuditRetention = DefaultAuditRetention
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	logger := opts.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	path := dir
	if opts.InMemory {
		path = "" // Badger refuses a directory in memory mode
	} else if dir == "" {
		return nil, errors.New("opening badger: no directory")
	}

	// Small-store options (reference/caddy-badger-notes.md §3): Badger's
	// defaults size a database for gigabytes (64 MB memtables, a 256 MB
	// block cache, 1 GB value-log files); a hold store keeps a few thousand
	// small records. ValueThreshold must stay below 15% of MemTableSize,
	// or Open fails.
	//
	// Space on disk: tables are Snappy-compressed (the records are JSON,
	// which takes about half), which needs a block cache (Open panics on
	// compression without one); 1 MiB holds the blocks of the few tables
	// being read. CompactL0OnClose compacts the table Close flushes into
	// the level below, so the overwritten versions and the tombstones a
	// hold's life leaves (the claim, the start, the settle, the pending
	// audit events) are not carried to the next start. With both, a
	// settled hold takes about 2 KB once its memtable is flushed; until
	// then its writes sit in the memtable's log (at most one memtable).
	bo := badger.DefaultOptions(path).
		WithInMemory(opts.InMemory).
		WithLogger(badgerLogger{logger: logger.Named("badger")}).
		WithSyncWrites(opts.perTxnSync). // off: group commit syncs (badgersync.go)
		WithDetectConflicts(true).       // the single-use claim depends on it
		WithMemTableSize(memTableSize).
		WithNumMemtables(2).
		WithNumLevelZeroTables(1). // compact every flushed table at once (see badgergc.go)
		WithNumLevelZeroTablesStall(4).
		WithBaseTableSize(1 << 20).
		WithBaseLevelSize(4 << 20).
		WithValueLogFileSize(16 << 20).
		WithValueThreshold(valueThreshold).
		WithBlockCacheSize(1 << 20).
		WithIndexCacheSize(0).
		WithCompression(options.Snappy).
		WithCompactL0OnClose(true).
		WithNumCompactors(2).
		WithNumVersionsToKeep(1)
	db, err := badger.Open(bo)
	if err != nil {
		return nil, fmt.Errorf("opening badger %q: %w", dir, err)
	}
	// Pending audit events are numbered in the order appended, across
	// restarts: on from the last one stored, or from the wall clock.
	last, err := lastPending(db)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("opening badger %q: reading the audit log: %w", dir, err)
	}
	b := &Badger{
		db:             db,
		dir:            dir,
		retention:      opts.Retention,
		now:            opts.Now,
		maxWaiting:     opts.MaxWaiting,
		ledger:         ledger{due: make(map[uint64]int64), width: bucketWidth(opts.GCInterval)},
		gcStop:         make(chan struct{}),
		gcDone:         make(chan struct{}),
		logger:         logger,
		auditRetention: opts.AuditRetention,
		chainWake:      make(chan struct{}, 1),
		chainDone:      make(chan struct{}),
		cache:          newHoldCache(),
	}
	if !opts.perTxnSync && !opts.InMemory {
		r := &rotated{dir: dir, synced: map[string]bool{}}
		sync := func() error { return r.syncDB(db) }
		if opts.syncHook != nil {
			hook := opts.syncHook
			sync = func() error { return hook(func() error { return r.syncDB(db) }) }
		}
		b.group, b.rotated = newGroupSync(sync), r
	}
	b.pendingSeq.Store(max(last, uint64(time.Now().UnixNano())))
	go b.collect(opts.GCInterval)
	go b.chainLoop(opts.GCInterval)
	b.wakeChainer() // what the last process left pending
	return b, nil
}

// Close stops the GC loop (waiting for a round in progress to end) and
// the chain loop (which first chains the audit events still pending), and
// closes the database, flushing what is in memory. Closing twice is
// harmless; every call after Close fails with ErrUnavailable.
func (b *Badger) Close() error {
	b.stopOnce.Do(func() {
		close(b.gcStop)
		<-b.gcDone
		<-b.chainDone
		if b.group != nil {
			b.group.close() // the writes still waiting are synced
			b.rotated.close()
		}
	})
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("closing badger: %w", err)
	}
	return nil
}

// writeTxn is one attempt of a write: Badger's transaction, and what it
// staged, which the GC ledger learns of once it commits.
type writeTxn struct {
	*badger.Txn
	staged []staged
	big    bool // a value that may go to the value log (see rotated)
}

// set stages one write. Its errors are about the write's size (a step too
// large for one transaction), not the store's health, so they do not wrap
// ErrUnavailable.
func (w *writeTxn) set(key, value []byte, expiresAt uint64) error {
	e := badger.NewEntry(key, value)
	e.ExpiresAt = expiresAt
	if err := w.SetEntry(e); err != nil {
		return fmt.Errorf("writing record: %w", err)
	}
	w.staged = append(w.staged, staged{at: expiresAt, bytes: int64(len(key) + len(value))})
	w.big = w.big || len(value) >= valueThreshold/2 // half: a margin, whatever Badger counts
	return nil
}

// delete stages the removal of key (stored or not).
func (w *writeTxn) delete(key []byte) error {
	if err := w.Delete(key); err != nil {
		return fmt.Errorf("deleting record: %w", err)
	}
	return nil
}

// update runs fn in a read-write transaction, retrying on ErrConflict with a
// fresh transaction (which re-reads everything). An error from fn is returned
// as is: fn classifies its own errors. An error from Badger itself (closed
// database, failed commit, failed sync) wraps ErrUnavailable.
//
// A commit returns only once it is on disk (durable). An error from fn
// returns after a sync too: fn may have decided on what it read (a hold
// already answered), and a caller told so must not find, after a crash,
// that the write it was refused by is gone.
func (b *Badger) update(ctx context.Context, fn func(*writeTxn) error) error {
	if b.group != nil {
		if err := b.group.healthy(); err != nil {
			return err
		}
	}
	var err error
	for range updateAttempts {
		if err := ctx.Err(); err != nil {
			return err
		}
		var (
			fnErr error
			w     writeTxn
		)
		err = b.db.Update(func(txn *badger.Txn) error {
			w = writeTxn{Txn: txn}
			fnErr = fn(&w)
			return fnErr
		})
		if fnErr != nil {
			if b.group != nil && !errors.Is(fnErr, ErrUnavailable) {
				_ = b.group.wait() // what fn read is durable; fn's error stands
			}
			return fnErr
		}
		if err == nil {
			b.ledger.add(w.staged)
			if w.big && b.rotated != nil {
				b.rotated.vlogWritten.Store(true) // before the wait: its group syncs the value log
			}
			return b.durable()
		}
		if !errors.Is(err, badger.ErrConflict) {
			return unavailable(err)
		}
	}
	return fmt.Errorf("%w: %d conflicting attempts: %w", ErrUnavailable, updateAttempts, err)
}

// durable returns once what was committed before it is on disk.
func (b *Badger) durable() error {
	if b.group == nil {
		return nil // SyncWrites (or in memory): the commit was synced
	}
	return b.group.wait()
}

// view runs fn in a read-only transaction; errors as for update.
func (b *Badger) view(ctx context.Context, fn func(*badger.Txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var fnErr error
	err := b.db.View(func(txn *badger.Txn) error {
		fnErr = fn(txn)
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	return unavailable(err)
}

// expiresAt is when Badger may drop h's record: Expires plus the retention,
// measured on the store clock (see wallDeadline).
func (b *Badger) expiresAt(h *Hold, now time.Time) (uint64, error) {
	at, ok := wallDeadline(h.Expires.Add(b.retention), now)
	if !ok {
		return 0, fmt.Errorf("hold expired more than the retention (%v) ago", b.retention)
	}
	return at, nil
}

// wallDeadline turns an instant on the store clock into a Badger ExpiresAt.
// Badger compares ExpiresAt with the wall clock in whole seconds, so the
// time left on the store clock is added to the wall clock and rounded up; a
// store clock that is not the wall clock (a test's) still keeps the record
// for the full time. False when at is not after now.
func wallDeadline(at, now time.Time) (uint64, bool) {
	left := at.Sub(now)
	if left <= 0 {
		return 0, false
	}
	deadline := time.Now().Add(left)
	secs := deadline.Unix()
	if deadline.Nanosecond() > 0 {
		secs++
	}
	return uint64(secs), true
}

// Stats reports the bytes the database takes on disk: every file in its
// directory (LSM tables, value log, write-ahead logs, manifest), counted by
// the blocks allocated to it where the system says (Badger preallocates
// sparse files, whose length overstates them). An in-memory store has
// nothing on disk: 0.
func (b *Badger) Stats(ctx context.Context) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	if b.db.IsClosed() {
		return Stats{}, unavailable(badger.ErrDBClosed)
	}
	if b.dir == "" {
		return Stats{}, nil
	}
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		return Stats{}, unavailable(fmt.Errorf("reading store size: %w", err))
	}
	var st Stats
	for _, e := range entries {
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed by a compaction or value-log GC meanwhile
		}
		if err != nil {
			return Stats{}, unavailable(fmt.Errorf("reading store size: %w", err))
		}
		if info.Mode().IsRegular() {
			st.Bytes += allocated(info)
		}
	}
	return st, nil
}

// Interface guards
var _ Store = (*Badger)(nil)
