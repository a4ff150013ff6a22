package store

import (
	"context"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// RecordExpiresAt returns when Badger may drop the record of hold id and of
// its step (ExpiresAt, whole seconds of wall time). Badger's TTL runs on the
// wall clock, so tests read it instead of waiting for it.
func RecordExpiresAt(b *Badger, id string) (hold, step time.Time, err error) {
	err = b.view(context.Background(), func(txn *badger.Txn) error {
		item, err := txn.Get(holdKey(id))
		if err != nil {
			return err
		}
		hold = time.Unix(int64(item.ExpiresAt()), 0)
		h, _, err := getHold(txn, id)
		if err != nil {
			return err
		}
		item, err = txn.Get(stepKey(h.StepID))
		if err != nil {
			return err
		}
		step = time.Unix(int64(item.ExpiresAt()), 0)
		return nil
	})
	return hold, step, err
}
