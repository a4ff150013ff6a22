package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Put writes the holds of one step in one transaction, synced to disk before
// it returns. The holds must share a non-empty StepID, have distinct ids,
// be Waiting (or Settled with an Outcome: a call refused when it was held,
// kept so history can pair it with its result) and have an Expires, and
// their non-empty Messages must be one message (the step's: it is stored
// once, in the step's record); a step or hold id already stored is refused
// (ids are random, so a repeat is a bug, never a retry to absorb). With
// MaxWaiting set, a step that would take a (tenant, owner) over the cap is
// refused with ErrLimit. Events are appended in the same transaction.
func (b *Badger) Put(ctx context.Context, holds []Hold, events ...Event) error {
	if err := checkPut(holds); err != nil {
		return err
	}
	if err := checkEvents(events); err != nil {
		return err
	}
	now := b.now()
	sorted := slices.Clone(holds)
	slices.SortStableFunc(sorted, func(x, y Hold) int { return cmp.Compare(x.Position, y.Position) })

	step := stepRecord{IDs: make([]string, len(sorted))}
	values := make([][]byte, len(sorted))
	expires := make([]uint64, len(sorted))
	var stepExpires uint64
	for i := range sorted {
		h := &sorted[i]
		exp, err := b.expiresAt(h, now)
		if err != nil {
			return fmt.Errorf("putting holds: %w", err)
		}
		if len(h.Message) > 0 {
			step.Message = h.Message
		}
		record := *h
		record.Message = nil // kept once, in the step's record
		v, err := encodeHold(&record)
		if err != nil {
			return fmt.Errorf("putting holds: %w", err)
		}
		step.IDs[i], values[i], expires[i] = h.ID, v, exp
		stepExpires = max(stepExpires, exp)
	}
	stepValue, err := encodeStep(step)
	if err != nil {
		return fmt.Errorf("putting holds: %w", err)
	}
	stepID := holds[0].StepID
	filed := filings(sorted, func(i int) uint64 { return expires[i] })
	owners := waitingOwners(sorted)
	if b.maxWaiting > 0 {
		defer b.lockOwners(owners)()
	}

	err = b.update(ctx, func(w *writeTxn) error {
		// Reading the keys first also puts them in the read set, so two
		// Puts of one id conflict and the retry refuses the second.
		if err := absent(w.Txn, stepKey(stepID)); err != nil {
			return fmt.Errorf("putting holds: step: %w", err)
		}
		for i := range holds {
			if err := absent(w.Txn, holdKey(holds[i].ID)); err != nil {
				return fmt.Errorf("putting holds: holds[%d]: %w", i, err)
			}
		}
		if b.maxWaiting > 0 {
			now := b.now()
			for _, o := range owners {
				if err := b.checkCap(w, o, now, stepExpires); err != nil {
					return err
				}
			}
		}
		for i := range step.IDs {
			if err := w.set(holdKey(step.IDs[i]), values[i], expires[i]); err != nil {
				return fmt.Errorf("putting holds: %w", err)
			}
			if err := w.set(listKey(&sorted[i]), nil, expires[i]); err != nil {
				return fmt.Errorf("putting holds: %w", err)
			}
		}
		if err := w.set(stepKey(stepID), stepValue, stepExpires); err != nil {
			return fmt.Errorf("putting holds: %w", err)
		}
		for i := range sorted {
			if h := &sorted[i]; h.State == Waiting {
				if err := b.putOpen(w, h, expires[i], now); err != nil {
					return fmt.Errorf("putting holds: %w", err)
				}
			}
		}
		for _, f := range filed {
			k := append(append(indexPrefix(f.key), fmt.Sprintf("%020d/", now.UnixNano())...), stepID...)
			if err := w.set(k, []byte(stepID), f.expires); err != nil {
				return fmt.Errorf("putting holds: filing: %w", err)
			}
		}
		return b.stageEvents(w, events, now)
	})
	if err == nil && len(events) > 0 {
		b.wakeChainer()
	}
	return err
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
	message := -1 // index of the first hold with a message
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
		if len(h.Message) > 0 {
			if message >= 0 && !bytes.Equal(h.Message, holds[message].Message) {
				return fmt.Errorf("putting holds: holds[%d]: message differs from holds[%d]'s; a step has one message", i, message)
			}
			if message < 0 {
				message = i
			}
		}
	}
	return nil
}

// owner is one (tenant, owner) identity and how many waiting holds a Put
// adds for it.
type owner struct {
	key    string // ownerKey(tenant, owner)
	adding int
}

// waitingOwners counts the waiting holds of a step per (tenant, owner), in
// key order (so locks are always taken in one order).
func waitingOwners(holds []Hold) []owner {
	var owners []owner
	for i := range holds {
		if holds[i].State != Waiting {
			continue
		}
		k := ownerKey(holds[i].Tenant, holds[i].Owner)
		j := slices.IndexFunc(owners, func(o owner) bool { return o.key == k })
		if j < 0 {
			owners = append(owners, owner{key: k})
			j = len(owners) - 1
		}
		owners[j].adding++
	}
	slices.SortFunc(owners, func(x, y owner) int { return cmp.Compare(x.key, y.key) })
	return owners
}

// lockOwners takes the locks of the given owners in index order and
// returns the function that releases them.
func (b *Badger) lockOwners(owners []owner) func() {
	var idx []int
	for _, o := range owners {
		h := fnv.New32a()
		h.Write([]byte(o.key))
		idx = append(idx, int(h.Sum32()%uint32(len(b.ownerLocks))))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		b.ownerLocks[i].Lock()
	}
	return func() {
		for _, i := range idx {
			b.ownerLocks[i].Unlock()
		}
	}
}

// checkCap refuses a Put that would leave o with more than MaxWaiting
// waiting, unexpired holds. It counts the owner's waiting entries whose
// stored Expires is still ahead on the store clock, and reads and rewrites
// the owner's cap key: two Puts for one owner therefore conflict (each read
// what the other wrote), so one of them retries and counts again. Without
// that key two Puts could each count the same entries and both pass.
func (b *Badger) checkCap(w *writeTxn, o owner, now time.Time, expiresAt uint64) error {
	ck := capKey(o.key)
	if _, err := w.Get(ck); err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
		return unavailable(err)
	}
	waiting := 0
	it := w.NewIterator(badger.IteratorOptions{Prefix: waitingPrefix(o.key)})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		var expires int64
		err := it.Item().Value(func(v []byte) error {
			var err error
			expires, err = strconv.ParseInt(string(v), 10, 64)
			return err
		})
		if err != nil {
			return unavailable(fmt.Errorf("reading waiting entry: %w", err))
		}
		if now.UnixNano() < expires {
			waiting++
		}
	}
	if waiting+o.adding > b.maxWaiting {
		return fmt.Errorf("putting holds: %w: %d waiting, %d more, at most %d", ErrLimit, waiting, o.adding, b.maxWaiting)
	}
	return w.set(ck, nil, expiresAt)
}

// putOpen files a new waiting hold in the two indexes of open holds: the
// unsettled index (until Settle, for the sweeper) and its owner's waiting
// entries (until Claim or Expires, for the cap). A waiting entry holds the
// hold's Expires on the store clock; Badger drops it once that has passed.
func (b *Badger) putOpen(w *writeTxn, h *Hold, expiresAt uint64, now time.Time) error {
	if err := w.set(unsettledKey(h.ID), nil, expiresAt); err != nil {
		return err
	}
	at, ok := wallDeadline(h.Expires, now)
	if !ok {
		return nil // already expired: it counts for nobody's cap
	}
	v := strconv.AppendInt(nil, h.Expires.UnixNano(), 10)
	return w.set(waitingKey(ownerKey(h.Tenant, h.Owner), h.ID), v, at)
}

// Get returns one hold by id, or ErrNotFound.
func (b *Badger) Get(ctx context.Context, id string) (Hold, error) {
	var h Hold
	err := b.view(ctx, func(txn *badger.Txn) error {
		var err error
		h, err = b.getFilled(txn, id)
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
		holds, err = b.getStep(txn, stepID)
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
// answered, running or settled hold gives ErrAnswered. The claimed hold
// leaves its owner's waiting entries (it no longer counts for the cap).
// Events are appended in the winning claim's transaction.
func (b *Badger) Claim(ctx context.Context, id string, a Answer, events ...Event) (Claimed, error) {
	if a.Choice == "" {
		return Claimed{}, errors.New("claiming hold: empty answer choice")
	}
	if err := checkEvents(events); err != nil {
		return Claimed{}, err
	}
	var c Claimed
	err := b.update(ctx, func(w *writeTxn) error {
		now := b.now().Round(0) // as stored: JSON keeps no monotonic reading
		h, exp, err := b.getHold(w.Txn, id)
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

		if err := putHold(w, &h, exp); err != nil {
			return fmt.Errorf("claiming hold: %w", err)
		}
		if err := w.delete(waitingKey(ownerKey(h.Tenant, h.Owner), h.ID)); err != nil {
			return fmt.Errorf("claiming hold: %w", err)
		}

		r, err := getStepRecord(w.Txn, h.StepID)
		if errors.Is(err, ErrNotFound) {
			r = stepRecord{IDs: []string{h.ID}} // its step went first; the hold is its own step
		} else if err != nil {
			return err
		}
		h = filled(h, r.Message)
		step := make([]Hold, 0, len(r.IDs))
		complete := true
		for _, id := range r.IDs {
			sibling := h
			if id != h.ID {
				if sibling, _, err = b.getHold(w.Txn, id); errors.Is(err, ErrNotFound) {
					continue
				} else if err != nil {
					return err
				}
				sibling = filled(sibling, r.Message)
			}
			if sibling.State == Waiting {
				complete = false
			}
			step = append(step, sibling)
		}
		c = Claimed{Hold: h, Step: step, Complete: complete}
		return b.stageEvents(w, events, now)
	})
	if err != nil {
		return Claimed{}, err
	}
	if len(events) > 0 {
		b.wakeChainer()
	}
	return c, nil
}

// Begin moves an answered hold to Running in one transaction that reads
// and writes the hold: as with Claim, exactly one of racing callers
// commits, the others retry and find it running (ErrAnswered).
func (b *Badger) Begin(ctx context.Context, id string) (Hold, error) {
	var h Hold
	err := b.update(ctx, func(w *writeTxn) error {
		now := b.now().Round(0)
		var exp uint64
		var err error
		h, exp, err = b.getHold(w.Txn, id)
		if err != nil {
			return err
		}
		if h.State != Answered {
			return ErrAnswered
		}
		h.State = Running
		h.StartedAt = now
		if err := putHold(w, &h, exp); err != nil {
			return fmt.Errorf("beginning hold: %w", err)
		}
		r, err := getStepRecord(w.Txn, h.StepID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		h = filled(h, r.Message)
		return nil
	})
	if err != nil {
		return Hold{}, err
	}
	return h, nil
}

// Settle records the outcome of an answered or running hold, marks it
// Settled, drops the person's values and takes the hold off the unsettled
// index. A waiting hold must be claimed first (the gate claims an expired
// one with AnswerTimedOut). Settling a settled hold again with the same
// outcome succeeds, so a caller may retry a Settle whose result it did not
// see; another outcome gives ErrAnswered and the first one stands. Events
// are appended in the transaction that settles it (not by such a retry).
func (b *Badger) Settle(ctx context.Context, id, outcome string, events ...Event) error {
	return b.SettleWithReply(ctx, id, outcome, nil, events...)
}

// SettleWithReply is Settle that records reply too (see Store).
func (b *Badger) SettleWithReply(ctx context.Context, id, outcome string, reply []byte, events ...Event) error {
	if outcome == "" {
		return errors.New("settling hold: empty outcome")
	}
	if err := checkEvents(events); err != nil {
		return err
	}
	staged := false
	err := b.update(ctx, func(w *writeTxn) error {
		staged = false
		h, exp, err := b.getHold(w.Txn, id)
		if err != nil {
			return err
		}
		switch h.State {
		case Answered, Running:
		case Settled:
			if h.Outcome == outcome {
				return nil
			}
			return fmt.Errorf("settling hold: settled with another outcome: %w", ErrAnswered)
		default:
			return fmt.Errorf("settling hold: state %q; claim it first", h.State)
		}
		h.State = Settled
		h.Outcome = outcome
		h.Values = nil
		h.Reply = slices.Clone(reply)
		if err := putHold(w, &h, exp); err != nil {
			return fmt.Errorf("settling hold: %w", err)
		}
		if err := w.delete(unsettledKey(h.ID)); err != nil {
			return fmt.Errorf("settling hold: %w", err)
		}
		staged = len(events) > 0
		return b.stageEvents(w, events, b.now())
	})
	if err == nil && staged {
		b.wakeChainer()
	}
	return err
}

// DropReply drops a settled hold's reply. The value log keeps the old
// record until garbage collection rewrites it: the reply is sealed, and
// its key (the gate's secret with the salt in the reply) is gone from the
// live record (see gate/seal.go).
func (b *Badger) DropReply(ctx context.Context, id string) error {
	return b.update(ctx, func(w *writeTxn) error {
		h, exp, err := b.getHold(w.Txn, id)
		if err != nil {
			return err
		}
		if h.Reply == nil {
			return nil
		}
		h.Reply = nil
		if err := putHold(w, &h, exp); err != nil {
			return fmt.Errorf("dropping reply: %w", err)
		}
		return nil
	})
}

// Unsettled walks the unsettled index from after: one key per open hold,
// so settled records are never read.
func (b *Badger) Unsettled(ctx context.Context, after string, limit int) ([]Hold, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("listing unsettled holds: limit %d, want more than 0", limit)
	}
	var holds []Hold
	err := b.view(ctx, func(txn *badger.Txn) error {
		prefix := unsettledKey("")
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(unsettledKey(after)); it.Valid() && len(holds) < limit; it.Next() {
			id := string(it.Item().Key()[len(prefix):])
			if id <= after {
				continue // Seek lands on after itself
			}
			h, _, err := b.getHold(txn, id)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if h.State == Settled {
				continue
			}
			h.Message = nil
			holds = append(holds, h)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return holds, nil
}

// filing is one index key a Put files its step under, and until when.
type filing[T cmp.Ordered] struct {
	key     string
	expires T
}

// filings are the holds' Filed keys, each once, in the order first named,
// kept until the latest expiry of the holds naming it (a step filed twice
// under one key is filed once, as by Index).
func filings[T cmp.Ordered](holds []Hold, expires func(i int) T) []filing[T] {
	var out []filing[T]
	for i := range holds {
		for _, key := range holds[i].Filed {
			j := slices.IndexFunc(out, func(f filing[T]) bool { return f.key == key })
			if j < 0 {
				out = append(out, filing[T]{key, expires(i)})
			} else {
				out[j].expires = max(out[j].expires, expires(i))
			}
		}
	}
	return out
}
