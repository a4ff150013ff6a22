package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/dgraph-io/badger/v4"
)

// Keys. Ids are base32 and never contain "/"; tenants and owners may
// contain anything, so ownerKey spells each with its length first, which
// makes one pair's key never the prefix of another's.
func holdKey(id string) []byte      { return append([]byte("h/"), id...) }
func stepKey(stepID string) []byte  { return append([]byte("s/"), stepID...) }
func unsettledKey(id string) []byte { return append([]byte("u/"), id...) }
func capKey(owner string) []byte    { return append([]byte("c/"), owner...) }
func waitingPrefix(owner string) []byte {
	return append(append([]byte("w/"), owner...), '/')
}
func waitingKey(owner, id string) []byte { return append(waitingPrefix(owner), id...) }

// ownerKey is a (tenant, owner) identity as one key part.
func ownerKey(tenant, owner string) string {
	return strconv.Itoa(len(tenant)) + "/" + tenant + strconv.Itoa(len(owner)) + "/" + owner
}

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
