package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// The audit log in PostgreSQL (see audit.go and pgschema/003_audit.sql).
// An append is an INSERT INTO audit_pending in the statement or
// transaction of the change it reports. A chain round is one transaction
// that locks audit_head's one row (FOR UPDATE), reads the pending events
// in id order, writes their entries with the next seqs and the new head,
// and deletes them: rounds run one after the other whichever replica runs
// them, so the replicas keep one chain. Every replica's chain loop runs
// rounds (woken by its own appends, and on a timer for what a replica
// that died left pending); a round that finds nothing pending writes
// nothing.

// pgChainInterval is how often a replica chains without being woken.
const pgChainInterval = 5 * time.Second

// insertPending is the statement (or CTE) that appends events: hold ids
// in parameter ids, events in ids+1, the store clock in now; with from
// set, once per row of from (so only when the statement changed a row).
func insertPending(from string, ids, now int) string {
	src := fmt.Sprintf("unnest($%d::text[], $%d::bytea[]) AS x(h, e)", ids, ids+1)
	if from != "" {
		src = from + ", " + src
	}
	return `INSERT INTO audit_pending (at, hold_id, event) SELECT ` + fmt.Sprintf(dbNow, now) +
		`, nullif(x.h, ''), x.e FROM ` + src
}

// pendingArgs are the two array parameters of insertPending: hold ids and
// events (JSON, without their time unless Event.At gives it).
func pendingArgs(events []Event) ([2]any, error) {
	if err := checkEvents(events); err != nil {
		return [2]any{}, err
	}
	ids := make([]string, len(events))
	evs := make([][]byte, len(events))
	for i, ev := range events {
		if !storableID(ev.HoldID) {
			return [2]any{}, fmt.Errorf("auditing: events[%d]: hold id holds a NUL byte or invalid UTF-8", i)
		}
		ev.Time = ev.At.UTC() // zero (the row's at decides) unless the event gives it
		b, err := encodeEvent(ev)
		if err != nil {
			return [2]any{}, err
		}
		ids[i], evs[i] = ev.HoldID, b
	}
	return [2]any{ids, evs}, nil
}

// wakeChainer tells the chain loop that events are pending.
func (p *Postgres) wakeChainer() {
	select {
	case p.chainWake <- struct{}{}:
	default:
	}
}

// Audit appends events on their own, committed before it returns.
func (p *Postgres) Audit(ctx context.Context, events ...Event) error {
	if len(events) == 0 {
		return nil
	}
	pending, err := pendingArgs(events)
	if err != nil {
		return err
	}
	err = p.run(ctx, "auditing", false, func(ctx context.Context) error {
		_, err := p.pool.Exec(ctx, insertPending("", 1, 3), pending[0], pending[1], p.nowParam())
		return db(err)
	})
	if err == nil {
		p.wakeChainer()
	}
	return err
}

// SyncAudit chains every event pending when it was called (and any
// appended meanwhile, up to a batch).
func (p *Postgres) SyncAudit(ctx context.Context) error {
	for {
		var n int
		err := p.run(ctx, "chaining audit events", false, func(ctx context.Context) error {
			var err error
			n, err = p.chainOnce(ctx)
			return err
		})
		if err != nil || n < auditBatch {
			return err
		}
	}
}

// chainLoop chains when woken and every pgChainInterval, until the store
// closes. Close stops it and waits for it.
func (p *Postgres) chainLoop() {
	defer close(p.chainDone)
	tick := time.NewTicker(pgChainInterval)
	defer tick.Stop()
	for {
		select {
		case <-p.loopCtx.Done():
			return
		case <-p.chainWake:
			select {
			case <-time.After(chainDelay):
			case <-p.loopCtx.Done():
				return
			}
		case <-tick.C:
		}
		if err := p.SyncAudit(p.loopCtx); err != nil && p.loopCtx.Err() == nil {
			p.logger.Warn("chaining audit events", zap.String("database", p.target), zap.Error(err))
		}
	}
}

// chainOnce is one chain round; it returns how many events it chained.
func (p *Postgres) chainOnce(ctx context.Context) (int, error) {
	n := 0
	err := p.tx(ctx, func(tx pgx.Tx) (err error) {
		b := &pgx.Batch{}
		b.Queue(`SELECT seq, hash FROM audit_head FOR UPDATE`)
		// A statement of its own, after the lock: its snapshot sees every
		// round committed before this one, and what they deleted.
		b.Queue(`SELECT a.id, a.at, a.event, h.step_id, h.tenant, h.owner, h.action, h.policy, h.kind, h.protocol
			FROM audit_pending a LEFT JOIN holds h ON h.id = a.hold_id ORDER BY a.id LIMIT $1`, auditBatch)
		br := tx.SendBatch(ctx, b)
		var (
			seq     uint64
			prev    []byte
			ids     []int64
			entries []AuditEntry
		)
		err = func() (err error) {
			defer func() {
				if cerr := br.Close(); err == nil {
					err = db(cerr)
				}
			}()
			if err := br.QueryRow().Scan(&seq, &prev); err != nil {
				return db(fmt.Errorf("reading audit head: %w", err))
			}
			rows, err := br.Query()
			if err != nil {
				return db(err)
			}
			defer rows.Close()
			for rows.Next() {
				var (
					id, at int64
					raw    []byte
					stepID *string
					f      [6][]byte // tenant, owner, action, policy, kind, protocol
				)
				if err := rows.Scan(&id, &at, &raw, &stepID, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5]); err != nil {
					return db(fmt.Errorf("reading audit event: %w", err))
				}
				var ev Event
				if err := json.Unmarshal(raw, &ev); err != nil {
					return db(fmt.Errorf("reading audit event %d: %w", id, err))
				}
				if ev.Time.IsZero() {
					ev.Time = time.Unix(0, at).UTC()
				}
				if stepID != nil {
					fillEvent(&ev, &Hold{StepID: *stepID, Tenant: string(f[0]), Owner: string(f[1]), Action: string(f[2]),
						Policy: string(f[3]), Kind: Kind(f[4]), Protocol: string(f[5])})
				}
				e, err := chainEntry(seq, prev, ev)
				if err != nil {
					return err
				}
				seq, prev = e.Seq, e.Hash
				ids = append(ids, id)
				entries = append(entries, e)
			}
			return db(rows.Err())
		}()
		if err != nil || len(entries) == 0 {
			return err
		}
		seqs, ats, bodies, hashes := make([]int64, len(entries)), make([]int64, len(entries)), make([][]byte, len(entries)), make([][]byte, len(entries))
		for i, e := range entries {
			seqs[i], ats[i], bodies[i], hashes[i] = int64(e.Seq), e.Time.UnixNano(), e.Body, e.Hash
		}
		w := &pgx.Batch{}
		w.Queue(`INSERT INTO audit_log (seq, at, body, hash) SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bytea[], $4::bytea[])`, seqs, ats, bodies, hashes)
		w.Queue(`DELETE FROM audit_pending WHERE id = ANY($1)`, ids)
		w.Queue(`UPDATE audit_head SET seq = $1, hash = $2`, int64(seq), prev)
		if err := tx.SendBatch(ctx, w).Close(); err != nil {
			return db(err)
		}
		n = len(entries)
		return nil
	})
	return n, err
}

// pruneAudit deletes entries older than the audit retention from the
// chain's start, in seq order and in batches, recording the last one
// deleted in the head. The retention loop runs it, on one replica at a
// time; the head's row lock keeps it and the chain rounds apart.
func (p *Postgres) pruneAudit(ctx context.Context, tx pgx.Tx) (int64, error) {
	var pruned, seq int64
	var hash []byte
	if err := tx.QueryRow(ctx, `SELECT pruned_seq, pruned_hash FROM audit_head FOR UPDATE`).Scan(&seq, &hash); err != nil {
		return 0, fmt.Errorf("reading audit head: %w", err)
	}
	// The entries to prune: from the start while older than the cutoff
	// (the first newer one ends the run, so the chain stays whole).
	rows, err := tx.Query(ctx, `SELECT seq, hash, at, at < coalesce($2::bigint - $3::bigint, (extract(epoch from now()) * 1000000000)::bigint - $3::bigint)
		FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT $4`, seq, p.nowParam(), int64(p.auditRetention), auditBatch)
	if err != nil {
		return 0, err
	}
	var last struct {
		seq, at int64
		hash    []byte
	}
	for rows.Next() {
		var s, at int64
		var h []byte
		var old bool
		if err := rows.Scan(&s, &h, &at, &old); err != nil {
			rows.Close()
			return 0, err
		}
		if !old {
			break
		}
		last.seq, last.hash, last.at = s, h, at
		pruned++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if pruned == 0 {
		return 0, nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM audit_log WHERE seq > $1 AND seq <= $2`, seq, last.seq); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `UPDATE audit_head SET pruned_seq = $1, pruned_hash = $2, pruned_at = $3`, last.seq, last.hash, last.at); err != nil {
		return 0, err
	}
	return pruned, nil
}

// AuditHead reads the chain's head.
func (p *Postgres) AuditHead(ctx context.Context) (AuditHead, error) {
	var h AuditHead
	err := p.run(ctx, "reading audit head", true, func(ctx context.Context) error {
		var seq, prunedSeq, prunedAt int64
		var hash, prunedHash []byte
		err := p.pool.QueryRow(ctx, `SELECT seq, hash, pruned_seq, pruned_hash, pruned_at FROM audit_head`).
			Scan(&seq, &hash, &prunedSeq, &prunedHash, &prunedAt)
		if err != nil {
			return db(err)
		}
		h = AuditHead{Seq: uint64(seq), Hash: nilIfEmpty(hash), Pruned: AuditCheckpoint{Seq: uint64(prunedSeq), Hash: nilIfEmpty(prunedHash)}}
		if prunedAt != 0 {
			h.Pruned.Time = time.Unix(0, prunedAt).UTC()
		}
		return nil
	})
	return h, err
}

// AuditEntries reads entries by seq from q.After, within q's time range
// (through audit_log_at when the range is narrow).
func (p *Postgres) AuditEntries(ctx context.Context, q AuditQuery) ([]AuditEntry, error) {
	if q.Limit <= 0 {
		return nil, fmt.Errorf("reading audit entries: limit %d, want more than 0", q.Limit)
	}
	since, until := int64(-1<<63), int64(1<<63-1)
	if !q.Since.IsZero() {
		since = q.Since.UnixNano()
	}
	if !q.Until.IsZero() {
		until = q.Until.UnixNano()
	}
	var out []AuditEntry
	err := p.run(ctx, "reading audit entries", true, func(ctx context.Context) error {
		rows, err := p.pool.Query(ctx, `SELECT seq, at, body, hash FROM audit_log
			WHERE seq > $1 AND at >= $2 AND at < $3 ORDER BY seq LIMIT $4`, int64(q.After), since, until, q.Limit)
		if err != nil {
			return db(err)
		}
		defer rows.Close()
		out = out[:0]
		for rows.Next() {
			var seq, at int64
			var e AuditEntry
			if err := rows.Scan(&seq, &at, &e.Body, &e.Hash); err != nil {
				return db(err)
			}
			e.Seq, e.Time = uint64(seq), time.Unix(0, at).UTC()
			out = append(out, e)
		}
		return db(rows.Err())
	})
	return out, err
}
