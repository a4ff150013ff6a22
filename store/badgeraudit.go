package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
)

// The audit log in Badger (see audit.go). Keys:
//
//	ap/<n>    a pending event (n: 20 digits, in the order appended), its JSON
//	a/<seq>   a chained entry (seq: 20 digits): the event's time (8 bytes,
//	          nanoseconds, big-endian), its hash (32 bytes), its body
//	ah        the chain's head (auditHeadRecord)
//
// None has a TTL: entries go only by pruning, from the chain's start.
// One process owns the directory, and in it one goroutine chains (the
// chain loop, or SyncAudit, under chainMu): pending keys are written by
// any transaction, entries and the head by the chainer alone, so appends
// never conflict with each other or with the chain.

// chainDelay is how long the chain loop waits after a wake-up before it
// chains, so that a burst of appends is chained in one transaction. Each
// round is a durable write of its own, which on Badger queues behind and
// ahead of the answers' on one writer: at 10 ms, under a steady stream of
// answers, the chain took a round every 10 ms plus a sync. Readers do not
// wait for it (AuditEntries' callers run SyncAudit first), and the events
// it chains were durable when appended.
const chainDelay = 100 * time.Millisecond

func pendingKey(n uint64) []byte { return fmt.Appendf([]byte("ap/"), "%020d", n) }
func entryKey(seq uint64) []byte { return fmt.Appendf([]byte("a/"), "%020d", seq) }

var (
	pendingPrefix = []byte("ap/")
	entryPrefix   = []byte("a/")
	headKey       = []byte("ah")
)

// auditHeadRecord is the head as stored (hashes in hex).
type auditHeadRecord struct {
	Seq        uint64 `json:"seq"`
	Hash       string `json:"hash"`
	PrunedSeq  uint64 `json:"pruned_seq,omitempty"`
	PrunedHash string `json:"pruned_hash,omitempty"`
	PrunedTime int64  `json:"pruned_time,omitempty"`
}

func (r auditHeadRecord) head() (AuditHead, error) {
	h := AuditHead{Seq: r.Seq, Pruned: AuditCheckpoint{Seq: r.PrunedSeq}}
	var err1, err2 error
	h.Hash, err1 = decodeHex(r.Hash)
	h.Pruned.Hash, err2 = decodeHex(r.PrunedHash)
	if r.PrunedTime != 0 {
		h.Pruned.Time = time.Unix(0, r.PrunedTime).UTC()
	}
	return h, errors.Join(err1, err2)
}

// stageEvents writes events as pending records in w's transaction, each
// stamped with the store clock.
func (b *Badger) stageEvents(w *writeTxn, events []Event, now time.Time) error {
	for _, ev := range events {
		ev.Time = now.UTC()
		if !ev.At.IsZero() {
			ev.Time = ev.At.UTC()
		}
		v, err := encodeEvent(ev)
		if err != nil {
			return err
		}
		if err := w.set(pendingKey(b.pendingSeq.Add(1)), v, 0); err != nil {
			return fmt.Errorf("appending audit event: %w", err)
		}
	}
	return nil
}

// wakeChainer tells the chain loop that events are pending.
func (b *Badger) wakeChainer() {
	select {
	case b.chainWake <- struct{}{}:
	default:
	}
}

// Audit appends events on their own, durably, before it returns.
func (b *Badger) Audit(ctx context.Context, events ...Event) error {
	if len(events) == 0 {
		return nil
	}
	if err := checkEvents(events); err != nil {
		return err
	}
	err := b.update(ctx, func(w *writeTxn) error { return b.stageEvents(w, events, b.now()) })
	if err == nil {
		b.wakeChainer()
	}
	return err
}

// SyncAudit chains every pending event.
func (b *Badger) SyncAudit(ctx context.Context) error {
	for {
		n, err := b.chainOnce(ctx)
		if err != nil || n < auditBatch {
			return err
		}
	}
}

// chainLoop chains pending events when woken and once per interval, and
// prunes entries past the audit retention; it chains what is left when
// the store closes. Close stops it and waits for it.
func (b *Badger) chainLoop(interval time.Duration) {
	defer close(b.chainDone)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	ctx := context.Background()
	for {
		select {
		case <-b.gcStop:
			if err := b.SyncAudit(ctx); err != nil {
				b.logger.Error("chaining audit events at close", zap.Error(err))
			}
			return
		case <-b.chainWake:
			select {
			case <-time.After(chainDelay):
			case <-b.gcStop:
			}
		case <-tick.C:
			if err := b.pruneAudit(ctx); err != nil {
				b.logger.Warn("pruning audit entries past their retention", zap.Error(err))
			}
		}
		if err := b.SyncAudit(ctx); err != nil {
			b.logger.Warn("chaining audit events", zap.Error(err))
		}
	}
}

// chainOnce chains up to auditBatch pending events in one transaction and
// returns how many.
func (b *Badger) chainOnce(ctx context.Context) (int, error) {
	b.chainMu.Lock()
	defer b.chainMu.Unlock()
	var n int
	err := b.update(ctx, func(w *writeTxn) error {
		n = 0
		r, err := readHead(w.Txn)
		if err != nil {
			return err
		}
		prev, err := decodeHex(r.Hash)
		if err != nil {
			return unavailable(fmt.Errorf("reading audit head: %w", err))
		}
		it := w.NewIterator(badger.IteratorOptions{Prefix: pendingPrefix, PrefetchValues: true})
		defer it.Close()
		names := map[string]*Hold{} // a hold's events are mostly chained together
		for it.Rewind(); it.Valid() && n < auditBatch; it.Next() {
			var ev Event
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &ev) }); err != nil {
				return unavailable(fmt.Errorf("reading audit event: %w", err))
			}
			if ev.HoldID != "" {
				h, ok := names[ev.HoldID]
				if !ok {
					if h, err = b.holdNamesOf(w.Txn, ev.HoldID); err != nil {
						return err
					}
					names[ev.HoldID] = h
				}
				if h != nil {
					fillEvent(&ev, h)
				}
			}
			e, err := chainEntry(r.Seq, prev, ev)
			if err != nil {
				return err
			}
			if err := w.set(entryKey(e.Seq), entryValue(e), 0); err != nil {
				return fmt.Errorf("chaining audit event: %w", err)
			}
			if err := w.delete(it.Item().KeyCopy(nil)); err != nil {
				return fmt.Errorf("chaining audit event: %w", err)
			}
			r.Seq, r.Hash, prev = e.Seq, hex.EncodeToString(e.Hash), e.Hash
			n++
		}
		if n == 0 {
			return nil
		}
		return writeHead(w, r)
	})
	return n, err
}

// holdNamesOf reads what fillEvent takes of a stored hold (its step,
// tenant, owner, policy, action, kind and protocol), decoding nothing else:
// the chain reads a hold for each of its events, and the rest of the
// record (the call, the card, base64) is most of the decoding; a hold
// the answer path has just read is in the cache, decoded. Nil when the
// hold is gone.
func (b *Badger) holdNamesOf(txn *badger.Txn, id string) (*Hold, error) {
	item, err := txn.Get(holdKey(id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable(err)
	}
	if h, ok := b.cache.names(id); ok {
		return h, nil
	}
	var n struct {
		StepID   string `json:"step_id"`
		Owner    string `json:"owner"`
		Tenant   string `json:"tenant"`
		Policy   string `json:"policy"`
		Action   string `json:"action"`
		Kind     Kind   `json:"kind"`
		Protocol string `json:"protocol"`
	}
	if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &n) }); err != nil {
		return nil, unavailable(fmt.Errorf("reading hold: %w", err))
	}
	return &Hold{ID: id, StepID: n.StepID, Owner: n.Owner, Tenant: n.Tenant, Policy: n.Policy, Action: n.Action, Kind: n.Kind, Protocol: n.Protocol}, nil
}

// pruneAudit deletes entries older than the audit retention from the
// chain's start, in seq order and in batches, recording the last one
// deleted in the head.
func (b *Badger) pruneAudit(ctx context.Context) error {
	if b.auditRetention < 0 {
		return nil
	}
	b.chainMu.Lock()
	defer b.chainMu.Unlock()
	cutoff := b.now().Add(-b.auditRetention).UnixNano()
	for {
		n := 0
		err := b.update(ctx, func(w *writeTxn) error {
			n = 0
			r, err := readHead(w.Txn)
			if err != nil {
				return err
			}
			it := w.NewIterator(badger.IteratorOptions{Prefix: entryPrefix})
			defer it.Close()
			for it.Seek(entryKey(r.PrunedSeq + 1)); it.Valid() && n < auditBatch; it.Next() {
				e, err := readEntry(it.Item())
				if err != nil {
					return err
				}
				if e.Time.UnixNano() >= cutoff {
					break
				}
				if err := w.delete(it.Item().KeyCopy(nil)); err != nil {
					return fmt.Errorf("pruning audit entry: %w", err)
				}
				r.PrunedSeq, r.PrunedHash, r.PrunedTime = e.Seq, hex.EncodeToString(e.Hash), e.Time.UnixNano()
				n++
			}
			if n == 0 {
				return nil
			}
			return writeHead(w, r)
		})
		if err != nil {
			return err
		}
		if n > 0 {
			b.logger.Debug("pruned audit entries past their retention", zap.Int("entries", n))
		}
		if n < auditBatch {
			return nil
		}
	}
}

// AuditHead reads the chain's head.
func (b *Badger) AuditHead(ctx context.Context) (AuditHead, error) {
	var h AuditHead
	err := b.view(ctx, func(txn *badger.Txn) error {
		r, err := readHead(txn)
		if err != nil {
			return err
		}
		if h, err = r.head(); err != nil {
			return unavailable(fmt.Errorf("reading audit head: %w", err))
		}
		return nil
	})
	return h, err
}

// AuditEntries walks the entries from q.After. Entries are in seq order
// and their times nearly so; the walk reads each from q.After on and
// keeps those in the time range.
func (b *Badger) AuditEntries(ctx context.Context, q AuditQuery) ([]AuditEntry, error) {
	if q.Limit <= 0 {
		return nil, fmt.Errorf("reading audit entries: limit %d, want more than 0", q.Limit)
	}
	var out []AuditEntry
	err := b.view(ctx, func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: entryPrefix, PrefetchValues: true})
		defer it.Close()
		for it.Seek(entryKey(q.After + 1)); it.Valid() && len(out) < q.Limit; it.Next() {
			e, err := readEntry(it.Item())
			if err != nil {
				return err
			}
			if e.Seq <= q.After || !q.Since.IsZero() && e.Time.Before(q.Since) || !q.Until.IsZero() && !e.Time.Before(q.Until) {
				continue
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// entryValue is a chained entry's value: time, hash, body.
func entryValue(e AuditEntry) []byte {
	v := make([]byte, 8, 8+len(e.Hash)+len(e.Body))
	binary.BigEndian.PutUint64(v, uint64(e.Time.UnixNano()))
	v = append(v, e.Hash...)
	return append(v, e.Body...)
}

// readEntry reads a chained entry; its seq comes from the key, so an
// entry moved to another key reads as that seq (VerifyAudit catches it).
func readEntry(item *badger.Item) (AuditEntry, error) {
	var e AuditEntry
	key := item.Key()
	if _, err := fmt.Sscanf(string(key[len(entryPrefix):]), "%d", &e.Seq); err != nil {
		return AuditEntry{}, unavailable(fmt.Errorf("reading audit entry key %q: %w", key, err))
	}
	err := item.Value(func(v []byte) error {
		if len(v) < 8+32 {
			return fmt.Errorf("audit entry %d: %d bytes, too short", e.Seq, len(v))
		}
		e.Time = time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
		e.Hash = bytes.Clone(v[8:40])
		e.Body = bytes.Clone(v[40:])
		return nil
	})
	if err != nil {
		return AuditEntry{}, unavailable(fmt.Errorf("reading audit entry: %w", err))
	}
	return e, nil
}

// readHead reads the head record; an empty chain has none.
func readHead(txn *badger.Txn) (auditHeadRecord, error) {
	var r auditHeadRecord
	item, err := txn.Get(headKey)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return r, nil
	}
	if err != nil {
		return r, unavailable(err)
	}
	if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &r) }); err != nil {
		return r, unavailable(fmt.Errorf("reading audit head: %w", err))
	}
	return r, nil
}

func writeHead(w *writeTxn, r auditHeadRecord) error {
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("writing audit head: %w", err)
	}
	return w.set(headKey, v, 0)
}

// lastPending is the number of the last pending event stored, 0 when none.
func lastPending(db *badger.DB) (uint64, error) {
	var n uint64
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: pendingPrefix, Reverse: true})
		defer it.Close()
		it.Seek(append(bytes.Clone(pendingPrefix), 0xff))
		if !it.Valid() {
			return nil
		}
		_, err := fmt.Sscanf(string(it.Item().Key()[len(pendingPrefix):]), "%d", &n)
		return err
	})
	return n, err
}
