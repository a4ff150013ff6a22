package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	// level). May be nil.
	Logger *zap.Logger
	// InMemory keeps everything in memory: no directory, no lock, nothing
	// survives Close. For tests only; dir is ignored.
	InMemory bool
}

// Badger is the embedded Store: one Badger database in a directory, opened
// once per process (Badger locks the directory; a second open fails).
//
// Layout: "h/<id>" holds one hold as JSON; "s/<stepID>" holds the ids of the
// step's holds as a JSON list, in Position order. Every entry carries a
// Badger TTL of the hold's Expires plus the retention, so records disappear
// without a sweeper; a waiting hold past Expires reads as Expired (StateAt)
// before that.
//
// Writes are synced to disk before they return (SyncWrites): the app sees the
// waiting text only after Put, and a hold it was told about must survive a
// crash or power loss, or the person's link would lead nowhere. That costs
// about 0.3 ms per write on a typical disk, once per held step and once per
// answer, which is nothing next to a model response.
//
// No value-log GC runs. With ValueThreshold at 64 KiB a hold (a tool call,
// its message, a few card rows) lives in the LSM tree, where compaction
// drops expired and overwritten versions. Only a value above the threshold
// goes to the value log, whose space nothing but RunValueLogGC reclaims; if
// holds routinely grow past 64 KiB, add a GC loop bound to the store's
// lifetime.
type Badger struct {
	db        *badger.DB
	retention time.Duration    // how long a record outlives its hold's Expires
	now       func() time.Time // the store clock
}

// OpenBadger opens (creating if needed) the store in dir. A directory
// already open, in this process or another, fails with an error naming dir.
func OpenBadger(dir string, opts BadgerOptions) (*Badger, error) {
	if opts.Retention < 0 {
		return nil, fmt.Errorf("opening badger %q: negative retention %v", dir, opts.Retention)
	}
	if opts.Retention == 0 {
		opts.Retention = DefaultRetention
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
	// or Open fails, and a zero block cache needs compression off, or Open
	// panics.
	bo := badger.DefaultOptions(path).
		WithInMemory(opts.InMemory).
		WithLogger(badgerLogger{logger: logger.Named("badger")}).
		WithSyncWrites(true).
		WithDetectConflicts(true). // the single-use claim depends on it
		WithMemTableSize(4 << 20).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(4).
		WithBaseTableSize(1 << 20).
		WithBaseLevelSize(4 << 20).
		WithValueLogFileSize(16 << 20).
		WithValueThreshold(64 << 10).
		WithBlockCacheSize(0).
		WithIndexCacheSize(0).
		WithCompression(options.None).
		WithNumCompactors(2).
		WithNumVersionsToKeep(1)
	db, err := badger.Open(bo)
	if err != nil {
		return nil, fmt.Errorf("opening badger %q: %w", dir, err)
	}
	return &Badger{db: db, retention: opts.Retention, now: opts.Now}, nil
}

// Put writes the holds of one step in one transaction, synced to disk before
// it returns. The holds must share a non-empty StepID, have distinct ids,
// be Waiting (or Settled with an Outcome: a call refused when it was held,
// kept so history can pair it with its result) and have an Expires; a step
// or hold id already stored is
// refused (ids are random, so a repeat is a bug, never a retry to absorb).
func (b *Badger) Put(ctx context.Context, holds []Hold) error {
	if err := checkPut(holds); err != nil {
		return err
	}
	now := b.now()
	sorted := slices.Clone(holds)
	slices.SortStableFunc(sorted, func(x, y Hold) int { return cmp.Compare(x.Position, y.Position) })

	ids := make([]string, len(sorted))
	values := make([][]byte, len(sorted))
	expires := make([]uint64, len(sorted))
	var stepExpires uint64
	for i := range sorted {
		h := &sorted[i]
		exp, err := b.expiresAt(h, now)
		if err != nil {
			return fmt.Errorf("putting holds: %w", err)
		}
		v, err := encodeHold(h)
		if err != nil {
			return fmt.Errorf("putting holds: %w", err)
		}
		ids[i], values[i], expires[i] = h.ID, v, exp
		stepExpires = max(stepExpires, exp)
	}
	stepValue, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("putting holds: encoding step: %w", err)
	}
	stepID := holds[0].StepID

	return b.update(ctx, func(txn *badger.Txn) error {
		// Reading the keys first also puts them in the read set, so two
		// Puts of one id conflict and the retry refuses the second.
		if err := absent(txn, stepKey(stepID)); err != nil {
			return fmt.Errorf("putting holds: step: %w", err)
		}
		for i := range holds {
			if err := absent(txn, holdKey(holds[i].ID)); err != nil {
				return fmt.Errorf("putting holds: holds[%d]: %w", i, err)
			}
		}
		for i := range ids {
			if err := setEntry(txn, holdKey(ids[i]), values[i], expires[i]); err != nil {
				return fmt.Errorf("putting holds: %w", err)
			}
		}
		if err := setEntry(txn, stepKey(stepID), stepValue, stepExpires); err != nil {
			return fmt.Errorf("putting holds: %w", err)
		}
		return nil
	})
}

// checkPut refuses input that is not one new step. Errors name indexes, not
// ids: an id is the secret part of a link and errors end up in logs.
func checkPut(holds []Hold) error {
	if len(holds) == 0 {
		return errors.New("putting holds: no holds")
	}
	stepID := holds[0].StepID
	if stepID == "" {
		return errors.New("putting holds: holds[0]: empty step id")
	}
	seen := make(map[string]int, len(holds))
	for i := range holds {
		h := &holds[i]
		switch {
		case h.ID == "":
			return fmt.Errorf("putting holds: holds[%d]: empty id", i)
		case h.StepID != stepID:
			return fmt.Errorf("putting holds: holds[%d]: step id differs from holds[0]; one Put is one step", i)
		case h.State != Waiting && (h.State != Settled || h.Outcome == ""):
			return fmt.Errorf("putting holds: holds[%d]: state %q, want %q (or %q with an outcome)", i, h.State, Waiting, Settled)
		case h.Expires.IsZero():
			return fmt.Errorf("putting holds: holds[%d]: no expiry", i)
		}
		if j, ok := seen[h.ID]; ok {
			return fmt.Errorf("putting holds: holds[%d]: same id as holds[%d]", i, j)
		}
		seen[h.ID] = i
	}
	return nil
}

// Get returns one hold by id, or ErrNotFound.
func (b *Badger) Get(ctx context.Context, id string) (Hold, error) {
	var h Hold
	err := b.view(ctx, func(txn *badger.Txn) error {
		var err error
		h, _, err = getHold(txn, id)
		return err
	})
	if err != nil {
		return Hold{}, err
	}
	return h, nil
}

// Step returns the holds of a step in Position order, or ErrNotFound.
func (b *Badger) Step(ctx context.Context, stepID string) ([]Hold, error) {
	var holds []Hold
	err := b.view(ctx, func(txn *badger.Txn) error {
		var err error
		holds, err = getStep(txn, stepID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return holds, nil
}

// Claim answers a waiting hold. It is one Badger transaction that reads the
// hold and writes it back: with conflict detection, of any number of racing
// claims exactly one commits and the others fail with ErrConflict, retry,
// find the hold answered and return ErrAnswered.
//
// The same transaction reads every hold of the step, which makes claims on
// different holds of one step conflict too. So they run as if one after the
// other, and Complete is true for exactly one of them: the one that answered
// the last waiting hold (neither both, nor neither).
//
// A waiting hold past Expires gives ErrExpired unless a.AllowExpired; an
// answered or settled hold gives ErrAnswered.
func (b *Badger) Claim(ctx context.Context, id string, a Answer) (Claimed, error) {
	if a.Choice == "" {
		return Claimed{}, errors.New("claiming hold: empty answer choice")
	}
	var c Claimed
	err := b.update(ctx, func(txn *badger.Txn) error {
		now := b.now().Round(0) // as stored: JSON keeps no monotonic reading
		h, exp, err := getHold(txn, id)
		if err != nil {
			return err
		}
		switch h.StateAt(now) {
		case Waiting:
		case Expired:
			if !a.AllowExpired {
				return ErrExpired
			}
		default:
			return ErrAnswered
		}
		h.State = Answered
		h.Answer = a.Choice
		h.AnsweredBy = a.By
		h.Values = json.RawMessage(slices.Clone([]byte(a.Values)))
		h.AnsweredAt = now

		step, err := getStep(txn, h.StepID)
		if errors.Is(err, ErrNotFound) {
			step = []Hold{h} // not written by Put; treat the hold as its own step
		} else if err != nil {
			return err
		}
		complete := true
		for i := range step {
			if step[i].ID == h.ID {
				step[i] = h
			} else if step[i].State == Waiting {
				complete = false
			}
		}
		if err := putHold(txn, &h, exp); err != nil {
			return fmt.Errorf("claiming hold: %w", err)
		}
		c = Claimed{Hold: h, Step: step, Complete: complete}
		return nil
	})
	if err != nil {
		return Claimed{}, err
	}
	return c, nil
}

// Settle records the outcome of an answered hold, marks it Settled and drops
// the person's values. A waiting hold must be claimed first (the gate claims
// an expired one with AnswerTimedOut). Settling a settled hold again with the
// same outcome succeeds, so a caller may retry a Settle whose result it did
// not see; another outcome is refused.
func (b *Badger) Settle(ctx context.Context, id, outcome string) error {
	if outcome == "" {
		return errors.New("settling hold: empty outcome")
	}
	return b.update(ctx, func(txn *badger.Txn) error {
		h, exp, err := getHold(txn, id)
		if err != nil {
			return err
		}
		switch h.State {
		case Answered:
		case Settled:
			if h.Outcome == outcome {
				return nil
			}
			return errors.New("settling hold: already settled with another outcome")
		default:
			return fmt.Errorf("settling hold: state %q; claim it first", h.State)
		}
		h.State = Settled
		h.Outcome = outcome
		h.Values = nil
		if err := putHold(txn, &h, exp); err != nil {
			return fmt.Errorf("settling hold: %w", err)
		}
		return nil
	})
}

// Close closes the database, flushing what is in memory. Closing twice is
// harmless; every call after Close fails with ErrUnavailable.
func (b *Badger) Close() error {
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("closing badger: %w", err)
	}
	return nil
}

// update runs fn in a read-write transaction, retrying on ErrConflict with a
// fresh transaction (which re-reads everything). An error from fn is returned
// as is: fn classifies its own errors. An error from Badger itself (closed
// database, failed commit) wraps ErrUnavailable.
func (b *Badger) update(ctx context.Context, fn func(*badger.Txn) error) error {
	var err error
	for range updateAttempts {
		if err := ctx.Err(); err != nil {
			return err
		}
		var fnErr error
		err = b.db.Update(func(txn *badger.Txn) error {
			fnErr = fn(txn)
			return fnErr
		})
		if fnErr != nil {
			return fnErr
		}
		if !errors.Is(err, badger.ErrConflict) {
			return unavailable(err)
		}
	}
	return fmt.Errorf("%w: %d conflicting attempts: %w", ErrUnavailable, updateAttempts, err)
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
// measured on the store clock. Badger compares ExpiresAt with the wall clock
// in whole seconds, so the time left on the store clock is added to the
// wall clock and rounded up; a store clock that is not the wall clock (a
// test's) still keeps the record for the full retention.
func (b *Badger) expiresAt(h *Hold, now time.Time) (uint64, error) {
	left := h.Expires.Add(b.retention).Sub(now)
	if left <= 0 {
		return 0, fmt.Errorf("hold expired more than the retention (%v) ago", b.retention)
	}
	deadline := time.Now().Add(left)
	secs := deadline.Unix()
	if deadline.Nanosecond() > 0 {
		secs++
	}
	return uint64(secs), nil
}

func holdKey(id string) []byte     { return append([]byte("h/"), id...) }
func stepKey(stepID string) []byte { return append([]byte("s/"), stepID...) }

// getHold reads a hold and the ExpiresAt of its record, which a rewrite
// keeps: the record's lifetime is fixed when the hold is put.
func getHold(txn *badger.Txn, id string) (Hold, uint64, error) {
	item, err := txn.Get(holdKey(id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Hold{}, 0, ErrNotFound
	}
	if err != nil {
		return Hold{}, 0, unavailable(err)
	}
	var h Hold
	if err := item.Value(func(v []byte) error { return decodeHold(v, &h) }); err != nil {
		return Hold{}, 0, unavailable(fmt.Errorf("reading hold: %w", err))
	}
	return h, item.ExpiresAt(), nil
}

// getStep reads the holds of a step in Position order. A hold whose record
// is already gone (an earlier Expires than its siblings) is left out.
func getStep(txn *badger.Txn, stepID string) ([]Hold, error) {
	item, err := txn.Get(stepKey(stepID))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, unavailable(err)
	}
	var ids []string
	if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &ids) }); err != nil {
		return nil, unavailable(fmt.Errorf("reading step: %w", err))
	}
	holds := make([]Hold, 0, len(ids))
	for _, id := range ids {
		h, _, err := getHold(txn, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		holds = append(holds, h)
	}
	if len(holds) == 0 {
		return nil, ErrNotFound
	}
	return holds, nil
}

// absent returns nil when key is not stored.
func absent(txn *badger.Txn, key []byte) error {
	_, err := txn.Get(key)
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return nil
	case err != nil:
		return unavailable(err)
	default:
		return errors.New("id already exists")
	}
}

func putHold(txn *badger.Txn, h *Hold, expiresAt uint64) error {
	v, err := encodeHold(h)
	if err != nil {
		return err
	}
	return setEntry(txn, holdKey(h.ID), v, expiresAt)
}

// setEntry stages one write. Its errors are about the write's size (a step
// too large for one transaction), not the store's health, so they do not
// wrap ErrUnavailable.
func setEntry(txn *badger.Txn, key, value []byte, expiresAt uint64) error {
	e := badger.NewEntry(key, value)
	e.ExpiresAt = expiresAt
	if err := txn.SetEntry(e); err != nil {
		return fmt.Errorf("writing record: %w", err)
	}
	return nil
}

// unavailable marks a Badger error as an outage (nil stays nil).
func unavailable(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// record is how a hold is stored: the Hold's JSON, except that its raw JSON
// fields are base64 strings. encoding/json compacts and HTML-escapes a
// json.RawMessage it marshals, and the original call and message must come
// back byte for byte to restore the history the provider saw. The record's
// own fields shadow the embedded ones of the same JSON name.
type record struct {
	holdFields
	Shown     []byte `json:"shown,omitempty"`
	Call      []byte `json:"call,omitempty"`
	Arguments []byte `json:"arguments,omitempty"`
	Message   []byte `json:"message,omitempty"`
	Values    []byte `json:"values,omitempty"`
}

// holdFields is Hold without its methods, to embed in record.
type holdFields Hold

func encodeHold(h *Hold) ([]byte, error) {
	v, err := json.Marshal(record{
		holdFields: holdFields(*h),
		Shown:      h.Shown,
		Call:       h.Call,
		Arguments:  h.Arguments,
		Message:    h.Message,
		Values:     h.Values,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding hold: %w", err)
	}
	return v, nil
}

func decodeHold(v []byte, h *Hold) error {
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return err
	}
	*h = Hold(r.holdFields)
	h.Shown = r.Shown
	h.Call = r.Call
	h.Arguments = r.Arguments
	h.Message = r.Message
	h.Values = r.Values
	return nil
}

// Interface guards
var _ Store = (*Badger)(nil)
