package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Keys. Ids are base32 and never contain "/"; tenants and owners may
// contain anything, so ownerKey spells each with its length first, which
// makes one pair's key never the prefix of another's.
func holdKey(id string) []byte      { return append([]byte("h/"), id...) }
func stepKey(stepID string) []byte  { return append([]byte("s/"), stepID...) }
func unsettledKey(id string) []byte { return append([]byte("u/"), id...) }
func progressKey(id string) []byte  { return append([]byte("p/"), id...) }
func capKey(owner string) []byte    { return append([]byte("c/"), owner...) }
func waitingPrefix(owner string) []byte {
	return append(append([]byte("w/"), owner...), '/')
}
func waitingKey(owner, id string) []byte { return append(waitingPrefix(owner), id...) }

// ownerKey is a (tenant, owner) identity as one key part.
func ownerKey(tenant, owner string) string {
	return strconv.Itoa(len(tenant)) + "/" + tenant + strconv.Itoa(len(owner)) + "/" + owner
}

// getHold reads a hold as its records have it (without its step's
// message; see filled) and the ExpiresAt of the record, which a rewrite
// keeps: the record's lifetime is fixed when the hold is put. The hold's
// progress record, once there is one, gives its state and answer; before
// that (and for a record written before progress records) the hold's own
// record does. The progress key is read even when absent, so that two
// transactions that answer one hold conflict.
//
// The decoded record comes from b.cache when it has it (see holdCache).
func (b *Badger) getHold(txn *badger.Txn, id string) (Hold, uint64, error) {
	item, err := txn.Get(holdKey(id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Hold{}, 0, ErrNotFound
	}
	if err != nil {
		return Hold{}, 0, unavailable(err)
	}
	h, ok := b.cache.get(id)
	if !ok {
		if err := item.Value(func(v []byte) error { return decodeHold(v, &h) }); err != nil {
			return Hold{}, 0, unavailable(fmt.Errorf("reading hold: %w", err))
		}
		b.cache.put(id, &h)
	}
	exp := item.ExpiresAt()
	item, err = txn.Get(progressKey(id))
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
	case err != nil:
		return Hold{}, 0, unavailable(err)
	default:
		if err := item.Value(func(v []byte) error { return decodeProgress(v, &h) }); err != nil {
			return Hold{}, 0, unavailable(fmt.Errorf("reading hold: %w", err))
		}
	}
	return h, exp, nil
}

// getFilled reads a hold as callers see it: with its step's message.
func (b *Badger) getFilled(txn *badger.Txn, id string) (Hold, error) {
	h, _, err := b.getHold(txn, id)
	if err != nil {
		return Hold{}, err
	}
	r, err := getStepRecord(txn, h.StepID)
	if errors.Is(err, ErrNotFound) {
		return h, nil // the step's record went first; the hold is what is left
	}
	if err != nil {
		return Hold{}, err
	}
	return filled(h, r.Message), nil
}

// filled gives a hold read from its record the step's message. A record
// written before messages moved to the step carries its own; it keeps it.
func filled(h Hold, message json.RawMessage) Hold {
	if len(message) > 0 {
		h.Message = message
	}
	return h
}

// getStepRecord reads a step's record.
func getStepRecord(txn *badger.Txn, stepID string) (stepRecord, error) {
	item, err := txn.Get(stepKey(stepID))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return stepRecord{}, ErrNotFound
	}
	if err != nil {
		return stepRecord{}, unavailable(err)
	}
	var r stepRecord
	if err := item.Value(func(v []byte) error {
		var err error
		r, err = decodeStep(v)
		return err
	}); err != nil {
		return stepRecord{}, unavailable(fmt.Errorf("reading step: %w", err))
	}
	return r, nil
}

// getStep reads the holds of a step in Position order, each with the
// step's message. A hold whose record is already gone (an earlier Expires
// than its siblings) is left out.
func (b *Badger) getStep(txn *badger.Txn, stepID string) ([]Hold, error) {
	r, err := getStepRecord(txn, stepID)
	if err != nil {
		return nil, err
	}
	holds := make([]Hold, 0, len(r.IDs))
	for _, id := range r.IDs {
		h, _, err := b.getHold(txn, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		holds = append(holds, filled(h, r.Message))
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

// putHold writes what changes of a stored hold as getHold reads it: its
// progress record (state, answer, outcome, reply, times). The hold's own
// record, written once by Put, is never rewritten: a confirmation rewrote
// it four times (claim, begin, settle, the reply dropped), and each
// version stays on disk until a compaction drops it.
func putHold(w *writeTxn, h *Hold, expiresAt uint64) error {
	v, err := encodeProgress(h)
	if err != nil {
		return err
	}
	return w.set(progressKey(h.ID), v, expiresAt)
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
// json.RawMessage it marshals, and the original call must come back byte
// for byte to restore the history the provider saw. The record's own
// fields shadow the embedded ones of the same JSON name. Message is empty:
// the step's record keeps it once for all its holds (records written
// before that carry their own, which is read and kept).
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

// progress is how what changes of a hold after Put is stored (p/<id>):
// its fields as in the hold's record, the raw ones base64 as there. A
// progress record replaces all of them: an empty field is empty (a
// dropped reply, values dropped by Settle).
type progress struct {
	State      State     `json:"state"`
	Answer     string    `json:"answer,omitempty"`
	AnsweredBy string    `json:"answered_by,omitempty"`
	Values     []byte    `json:"values,omitempty"`
	Outcome    string    `json:"outcome,omitempty"`
	Reply      []byte    `json:"reply,omitempty"`
	AnsweredAt time.Time `json:"answered_at,omitzero"`
	StartedAt  time.Time `json:"started_at,omitzero"`
}

func encodeProgress(h *Hold) ([]byte, error) {
	v, err := json.Marshal(progress{
		State: h.State, Answer: h.Answer, AnsweredBy: h.AnsweredBy, Values: h.Values,
		Outcome: h.Outcome, Reply: h.Reply, AnsweredAt: h.AnsweredAt, StartedAt: h.StartedAt,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding hold: %w", err)
	}
	return v, nil
}

func decodeProgress(v []byte, h *Hold) error {
	var p progress
	if err := json.Unmarshal(v, &p); err != nil {
		return err
	}
	h.State, h.Answer, h.AnsweredBy, h.Values = p.State, p.Answer, p.AnsweredBy, p.Values
	h.Outcome, h.Reply, h.AnsweredAt, h.StartedAt = p.Outcome, p.Reply, p.AnsweredAt, p.StartedAt
	return nil
}

// stepRecord is how a step is stored: the ids of its holds in Position
// order and the assistant message they share, kept once for the step
// rather than once per hold (a response with eight large calls would
// otherwise store its message eight times).
//
// Encoded as a header line of compact JSON, {"ids":[...]}, then the
// message's bytes as they are (no base64: the message is most of the
// record). Compact JSON never holds a raw newline, so the first newline
// ends the header. A record from before the message moved here is a bare
// JSON list of ids.
type stepRecord struct {
	IDs     []string        `json:"ids"`
	Message json.RawMessage `json:"-"`
}

func encodeStep(r stepRecord) ([]byte, error) {
	if len(r.IDs) == 0 {
		return nil, errors.New("encoding step: no ids")
	}
	header, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding step: %w", err)
	}
	v := make([]byte, 0, len(header)+1+len(r.Message))
	v = append(v, header...)
	v = append(v, '\n')
	v = append(v, r.Message...)
	return v, nil
}

// decodeStep reads a step record. The message is copied: v is Badger's
// buffer, valid only while the transaction reads it.
func decodeStep(v []byte) (stepRecord, error) {
	var r stepRecord
	if len(v) > 0 && v[0] == '[' {
		if err := json.Unmarshal(v, &r.IDs); err != nil {
			return stepRecord{}, fmt.Errorf("decoding step: %w", err)
		}
	} else {
		end := bytes.IndexByte(v, '\n')
		if end < 0 {
			return stepRecord{}, errors.New("decoding step: no end of header")
		}
		if err := json.Unmarshal(v[:end], &r); err != nil {
			return stepRecord{}, fmt.Errorf("decoding step: %w", err)
		}
		if rest := v[end+1:]; len(rest) > 0 {
			r.Message = bytes.Clone(rest)
		}
	}
	if len(r.IDs) == 0 {
		return stepRecord{}, errors.New("decoding step: no ids")
	}
	return r, nil
}
