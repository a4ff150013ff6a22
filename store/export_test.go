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
		h, _, err := b.getHold(txn, id)
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

// RetainOnce runs one round of the retention loop of p now.
func RetainOnce(p *Postgres) (int64, error) { return p.retainOnce(context.Background()) }

// RetentionLockKey is the advisory lock a round of p's retention holds.
func RetentionLockKey(p *Postgres) int64 { return p.retentionKey }

// Migrations returns the names of the embedded schema files, in order.
func Migrations() ([]string, error) {
	ms, err := migrations()
	var names []string
	for _, m := range ms {
		names = append(names, m.name)
	}
	return names, err
}

// Redact is redact.
func Redact(text, dsn string) string { return redact(text, dsn) }

// ListQuery is the statement and parameters of one page of p.List.
func ListQuery(p *Postgres, f HoldFilter, cursor string, limit int) (string, []any, error) {
	c, from, err := decodeCursor(cursor)
	if err != nil {
		return "", nil, err
	}
	q, args := p.listQuery(f, c, from, limit)
	return q, args, nil
}

// WithSyncHook returns opts whose store runs each group's sync through
// hook (given the store's own sync).
func WithSyncHook(opts BadgerOptions, hook func(sync func() error) error) BadgerOptions {
	opts.syncHook = hook
	return opts
}

// WithPerTxnSync returns opts whose store syncs every transaction on its
// own (Badger's SyncWrites), without group commit.
func WithPerTxnSync(opts BadgerOptions) BadgerOptions {
	opts.perTxnSync = true
	return opts
}

// Syncs is the number of group syncs b has run.
func Syncs(b *Badger) uint64 {
	if b.group == nil {
		return 0
	}
	return b.group.count()
}

// SpaceByKind sums the bytes of the live entries' keys and values, by the
// kind of key (the part before the first "/": h, s, u, w, i, t, a, ap...),
// with the number of entries of each.
func SpaceByKind(b *Badger) (bytes, entries map[string]int, err error) {
	bytes, entries = map[string]int{}, map[string]int{}
	err = b.view(context.Background(), func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			kind := string(k)
			if i := indexByte(k, '/'); i >= 0 {
				kind = string(k[:i])
			}
			bytes[kind] += len(k) + int(it.Item().ValueSize())
			entries[kind]++
		}
		return nil
	})
	return bytes, entries, err
}

func indexByte(k []byte, c byte) int {
	for i := range k {
		if k[i] == c {
			return i
		}
	}
	return -1
}

// Compact flattens b's tables into one level and runs value-log GC until
// nothing is left to collect: what Badger's own compaction makes of it.
func Compact(b *Badger) error {
	if err := b.db.Flatten(1); err != nil {
		return err
	}
	for b.db.RunValueLogGC(0.01) == nil {
	}
	return nil
}

// DirLister lists dir as the sync loop does (kept open, rewound each
// time), and closes it.
func DirLister(dir string) (list func() ([]string, error), close func()) {
	r := &rotated{dir: dir, synced: map[string]bool{}}
	return func() ([]string, error) {
		entries, err := r.list()
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names, err
	}, r.close
}

// SyncKinds counts the group syncs that synced the value log too (db.Sync)
// and those that synced only the active memtable's log.
func SyncKinds(b *Badger) (full, mem uint64) {
	return b.rotated.fullSyncs.Load(), b.rotated.memSyncs.Load()
}
