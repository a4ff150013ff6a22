package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Index files stepID under key until expires plus the retention. The key
// is kept as its SHA-256 (keys have no length limit; an index entry has
// one); filing order is the store clock's, then the order of insertion.
func (p *Postgres) Index(ctx context.Context, key, stepID string, expires time.Time) error {
	if key == "" || stepID == "" {
		return errors.New("indexing: empty key or step id")
	}
	if !storableID(stepID) {
		return errors.New("indexing: step id holds a NUL byte or invalid UTF-8")
	}
	if !storable(expires) {
		return fmt.Errorf("indexing: expiry %v out of range", expires)
	}
	keep := addNanos(expires.UnixNano(), p.retention)
	return p.run(ctx, "indexing", false, func(ctx context.Context) error {
		var live bool
		err := p.pool.QueryRow(ctx, `WITH c AS (SELECT `+fmt.Sprintf(dbNow, 4)+` AS now),
			i AS (
				INSERT INTO step_index (key_hash, step_id, filed, keep_until)
				SELECT $1, $2, c.now, $3 FROM c WHERE $3 > c.now
				ON CONFLICT (key_hash, step_id) DO NOTHING)
			SELECT $3 > now FROM c`, keyHash(key), stepID, keep, p.nowParam()).Scan(&live)
		if err != nil {
			return db(err)
		}
		if !live {
			return fmt.Errorf("indexing: hold expired more than the retention (%v) ago", p.retention)
		}
		return nil
	})
}

// Indexed returns the step ids filed under key, oldest first.
func (p *Postgres) Indexed(ctx context.Context, key string) ([]string, error) {
	var ids []string
	err := p.run(ctx, "reading index", true, func(ctx context.Context) error {
		rows, err := p.pool.Query(ctx, `SELECT step_id FROM step_index WHERE key_hash = $1 ORDER BY filed, seq`, keyHash(key))
		if err != nil {
			return db(err)
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return db(err)
	})
	return ids, err
}

// Unindex takes stepID off key.
func (p *Postgres) Unindex(ctx context.Context, key, stepID string) error {
	if !storableID(stepID) {
		return nil // never filed
	}
	return p.run(ctx, "unindexing", true, func(ctx context.Context) error {
		_, err := p.pool.Exec(ctx, `DELETE FROM step_index WHERE key_hash = $1 AND step_id = $2`, keyHash(key), stepID)
		return db(err)
	})
}
