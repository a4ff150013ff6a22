package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// retentionBatch bounds the rows one retention statement deletes, so no
// statement holds many row locks or runs long.
const retentionBatch = 1000

// retentionTables are what the retention loop deletes from: rows whose
// keep_until (Expires plus the retention) the store clock has passed,
// whatever their state. The rows are picked with SKIP LOCKED: a row a
// claim or settlement holds is left for the next round, and the loop
// never waits for (or deadlocks with) an answer.
var retentionTables = []struct{ table, key string }{
	{"holds", "id"},
	{"steps", "id"},
	{"step_index", "key_hash, step_id"},
}

// retain is the retention loop, bound to the store: Close stops it and
// waits for it.
func (p *Postgres) retain(interval time.Duration) {
	defer close(p.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-p.loopCtx.Done():
			return
		case <-tick.C:
		}
		deleted, err := p.retainOnce(p.loopCtx)
		switch {
		case p.loopCtx.Err() != nil:
			return
		case err != nil:
			p.logger.Warn("deleting records past their retention", zap.String("database", p.target), zap.Error(err))
		case deleted > 0:
			p.logger.Debug("deleted records past their retention", zap.Int64("rows", deleted))
		}
	}
}

// retainOnce deletes every record past its retention, and prunes audit
// entries past the audit retention, in batches, when no
// other replica is doing it: it holds a session advisory lock (tried, not
// waited for) on one connection for the round. The lock goes with the
// connection, so a replica that dies mid-round frees it.
func (p *Postgres) retainOnce(ctx context.Context) (deleted int64, err error) {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	var mine bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", p.retentionKey).Scan(&mine); err != nil {
		return 0, fmt.Errorf("taking the retention lock: %w", err)
	}
	if !mine {
		return 0, nil
	}
	defer func() {
		unlockCtx, cancel := context.WithTimeout(context.Background(), p.timeout)
		defer cancel()
		if _, uerr := conn.Exec(unlockCtx, "SELECT pg_advisory_unlock($1)", p.retentionKey); uerr != nil {
			// A session lock outlives a returned connection: end the
			// session, which frees it.
			_ = conn.Conn().Close(unlockCtx)
		}
	}()
	for _, t := range retentionTables {
		for {
			tag, err := conn.Exec(ctx, fmt.Sprintf(`DELETE FROM %s WHERE (%s) IN (
				SELECT %s FROM %s WHERE keep_until < `+dbNow+` LIMIT %d FOR UPDATE SKIP LOCKED)`,
				t.table, t.key, t.key, t.table, 1, retentionBatch), p.nowParam())
			if err != nil {
				return deleted, fmt.Errorf("deleting from %s: %w", t.table, err)
			}
			deleted += tag.RowsAffected()
			if tag.RowsAffected() < retentionBatch || ctx.Err() != nil {
				break
			}
		}
	}
	for p.auditRetention >= 0 && ctx.Err() == nil {
		var n int64
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var err error
			n, err = p.pruneAudit(ctx, tx)
			return err
		})
		if err != nil {
			return deleted, fmt.Errorf("pruning audit entries: %w", err)
		}
		deleted += n
		if n < auditBatch {
			break
		}
	}
	return deleted, nil
}
