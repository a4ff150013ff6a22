package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// indexPrefix is the key of an index: "i/", the key's length and the key
// (so one key is never the prefix of another), then per step the filing
// time (zero-padded nanoseconds, so keys sort oldest first) and the id.
func indexPrefix(key string) []byte {
	return []byte("i/" + strconv.Itoa(len(key)) + "/" + key + "/")
}

// Index files stepID under key until expires plus the retention.
func (b *Badger) Index(ctx context.Context, key, stepID string, expires time.Time) error {
	if key == "" || stepID == "" {
		return errors.New("indexing: empty key or step id")
	}
	now := b.now()
	exp, err := b.expiresAt(&Hold{Expires: expires}, now)
	if err != nil {
		return fmt.Errorf("indexing: %w", err)
	}
	prefix := indexPrefix(key)
	return b.update(ctx, func(w *writeTxn) error {
		if k, _ := findIndexed(w.Txn, prefix, stepID); k != nil {
			return nil
		}
		k := append(append(prefix, fmt.Sprintf("%020d/", now.UnixNano())...), stepID...)
		return w.set(k, []byte(stepID), exp)
	})
}

// Indexed returns the step ids filed under key, oldest first.
func (b *Badger) Indexed(ctx context.Context, key string) ([]string, error) {
	var ids []string
	prefix := indexPrefix(key)
	err := b.view(ctx, func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			ids = append(ids, string(k[bytes.LastIndexByte(k, '/')+1:]))
		}
		return nil
	})
	return ids, err
}

// Unindex takes stepID off key.
func (b *Badger) Unindex(ctx context.Context, key, stepID string) error {
	prefix := indexPrefix(key)
	return b.update(ctx, func(w *writeTxn) error {
		k, err := findIndexed(w.Txn, prefix, stepID)
		if err != nil || k == nil {
			return err
		}
		return w.delete(k)
	})
}

// findIndexed returns the index entry of stepID under prefix, or nil.
func findIndexed(txn *badger.Txn, prefix []byte, stepID string) ([]byte, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().Key()
		if string(k[bytes.LastIndexByte(k, '/')+1:]) == stepID {
			return it.Item().KeyCopy(nil), nil
		}
	}
	return nil, nil
}
