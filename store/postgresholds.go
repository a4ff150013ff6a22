package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Put writes the holds of one step in one transaction, committed before it
// returns; the refusals are Badger's (see Badger.Put). With MaxWaiting
// set, the transaction first takes an advisory transaction lock per
// (tenant, owner) of its waiting holds: racing Puts for one person, on any
// replica, count that person's waiting holds one after the other, each
// seeing what the one before it committed (READ COMMITTED reads a fresh
// snapshot per statement, taken after the lock was granted).
//
// The whole transaction is one batch: the statements go to the database
// in one round trip, and the commit (or the rollback of a refusal) in a
// second. Events are inserted as pending in the same batch.
func (p *Postgres) Put(ctx context.Context, holds []Hold, events ...Event) error {
	if err := checkPut(holds); err != nil {
		return err
	}
	pending, err := pendingArgs(events)
	if err != nil {
		return err
	}
	var (
		message []byte
		keep    = make([]int64, len(holds))
		stepKey int64
	)
	if !storableID(holds[0].StepID) {
		return errors.New("putting holds: holds[0]: step id holds a NUL byte or invalid UTF-8")
	}
	for i := range holds {
		h := &holds[i]
		if !storableID(h.ID) {
			return fmt.Errorf("putting holds: holds[%d]: id holds a NUL byte or invalid UTF-8", i)
		}
		for _, t := range []time.Time{h.Created, h.Expires, h.AnsweredAt, h.StartedAt} {
			if !storable(t) {
				return fmt.Errorf("putting holds: holds[%d]: time %v out of range", i, t)
			}
		}
		if len(h.Message) > 0 {
			message = h.Message
		}
		keep[i] = addNanos(h.Expires.UnixNano(), p.retention)
		stepKey = max(stepKey, keep[i])
	}
	owners := p.waitingOwners(holds)
	filed := filings(holds, func(i int) int64 { return keep[i] })

	err = p.run(ctx, "putting holds", false, func(ctx context.Context) error {
		return p.tx(ctx, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue("SELECT "+fmt.Sprintf(dbNow, 1), p.nowParam())
			if p.maxWaiting > 0 {
				for _, o := range owners {
					b.Queue("SELECT pg_advisory_xact_lock($1)", o.lock)
				}
				for _, o := range owners {
					b.Queue(`SELECT count(*) FROM holds WHERE owner_key = $1 AND tenant = $2 AND owner = $3
						AND state = 'waiting' AND expires > `+fmt.Sprintf(dbNow, 4),
						o.hash, []byte(o.tenant), []byte(o.owner), p.nowParam())
				}
			}
			b.Queue(`INSERT INTO steps (id, message, keep_until) VALUES ($1, $2, $3)`, holds[0].StepID, nilIfEmpty(message), stepKey)
			for i := range holds {
				b.Queue(insertHold, holdArgs(&holds[i], keep[i])...)
			}
			if len(events) > 0 {
				b.Queue(insertPending("", 1, 3), pending[0], pending[1], p.nowParam())
			}
			for _, f := range filed {
				b.Queue(`INSERT INTO step_index (key_hash, step_id, filed, keep_until)
					VALUES ($1, $2, `+fmt.Sprintf(dbNow, 4)+`, $3) ON CONFLICT (key_hash, step_id) DO NOTHING`,
					keyHash(f.key), holds[0].StepID, f.expires, p.nowParam())
			}
			return p.readPut(tx.SendBatch(ctx, b), holds, owners, keep, len(events) > 0, len(filed))
		})
	})
	if err == nil && len(events) > 0 {
		p.wakeChainer()
	}
	return err
}

// readPut reads the results of Put's batch, in its order, and returns the
// first refusal: a hold past its retention, an id already stored, then
// the cap.
func (p *Postgres) readPut(br pgx.BatchResults, holds []Hold, owners []pgOwner, keep []int64, events bool, filed int) (err error) {
	defer func() {
		if cerr := br.Close(); err == nil {
			err = db(cerr)
		}
	}()
	var now int64
	if err := br.QueryRow().Scan(&now); err != nil {
		return db(err)
	}
	for i := range holds {
		if keep[i] <= now {
			return fmt.Errorf("putting holds: holds[%d]: hold expired more than the retention (%v) ago", i, p.retention)
		}
	}
	waiting := make([]int, len(owners))
	if p.maxWaiting > 0 {
		for range owners {
			if _, err := br.Exec(); err != nil {
				return db(err)
			}
		}
		for i := range owners {
			if err := br.QueryRow().Scan(&waiting[i]); err != nil {
				return db(err)
			}
		}
	}
	if _, err := br.Exec(); isUniqueViolation(err) {
		return errors.New("putting holds: step: id already exists")
	} else if err != nil {
		return db(err)
	}
	for i := range holds {
		if _, err := br.Exec(); isUniqueViolation(err) {
			return fmt.Errorf("putting holds: holds[%d]: id already exists", i)
		} else if err != nil {
			return db(err)
		}
	}
	if events {
		if _, err := br.Exec(); err != nil {
			return db(err)
		}
	}
	for range filed {
		if _, err := br.Exec(); err != nil {
			return db(err)
		}
	}
	for i, o := range owners {
		if p.maxWaiting > 0 && waiting[i]+o.adding > p.maxWaiting {
			return fmt.Errorf("putting holds: %w: %d waiting, %d more, at most %d", ErrLimit, waiting[i], o.adding, p.maxWaiting)
		}
	}
	return nil
}

// pgOwner is one (tenant, owner) a Put adds waiting holds for.
type pgOwner struct {
	tenant, owner string
	hash          []byte // ownerHash
	lock          int64  // its advisory lock
	adding        int
}

// waitingOwners counts a step's waiting holds per (tenant, owner), in the
// order of their locks, so that two Puts take shared locks in one order
// and never deadlock.
func (p *Postgres) waitingOwners(holds []Hold) []pgOwner {
	var owners []pgOwner
	for i := range holds {
		h := &holds[i]
		if h.State != Waiting {
			continue
		}
		j := slices.IndexFunc(owners, func(o pgOwner) bool { return o.tenant == h.Tenant && o.owner == h.Owner })
		if j < 0 {
			owners = append(owners, pgOwner{
				tenant: h.Tenant, owner: h.Owner, hash: ownerHash(h.Tenant, h.Owner),
				lock: lockKey(p.schema, "owner", ownerKey(h.Tenant, h.Owner)),
			})
			j = len(owners) - 1
		}
		owners[j].adding++
	}
	slices.SortFunc(owners, func(x, y pgOwner) int { return cmp.Compare(x.lock, y.lock) })
	return owners
}

// Get returns one hold by id, with its step's message, or ErrNotFound.
func (p *Postgres) Get(ctx context.Context, id string) (Hold, error) {
	if !storableID(id) {
		return Hold{}, ErrNotFound
	}
	var h Hold
	err := p.run(ctx, "reading hold", true, func(ctx context.Context) error {
		var r holdRow
		var message []byte
		err := p.pool.QueryRow(ctx, `SELECT `+holdColumns("h")+`, s.message
			FROM holds h LEFT JOIN steps s ON s.id = h.step_id WHERE h.id = $1`, id).Scan(r.dest(&message)...)
		if err == pgx.ErrNoRows {
			return ErrNotFound
		}
		if err != nil {
			return db(err)
		}
		h = r.hold()
		h.Message = nilIfEmpty(message)
		return nil
	})
	return h, err
}

// Step returns the holds of a step in Position order, sharing the step's
// message, or ErrNotFound.
func (p *Postgres) Step(ctx context.Context, stepID string) ([]Hold, error) {
	if !storableID(stepID) {
		return nil, ErrNotFound
	}
	var holds []Hold
	err := p.run(ctx, "reading step", true, func(ctx context.Context) (err error) {
		b := &pgx.Batch{}
		b.Queue(stepMessage, stepID)
		b.Queue(`SELECT `+holdColumns("h")+` FROM holds h WHERE h.step_id = $1 ORDER BY h.position`, stepID)
		br := p.pool.SendBatch(ctx, b)
		defer func() {
			if cerr := br.Close(); err == nil {
				err = db(cerr)
			}
		}()
		message, err := readMessage(br)
		if err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return db(err)
		}
		if holds, err = readHolds(rows, message); err != nil {
			return err
		}
		if len(holds) == 0 {
			return ErrNotFound
		}
		return nil
	})
	return holds, err
}

// claimHold answers a waiting hold ($1) with $2 by $3 (values $4) unless
// it expired on the store clock ($6) and $5 does not allow it, and returns
// it as now stored (claimed true) with every other hold of its step. When
// it answers the hold, it appends the events $7 (hold ids), $8 (events).
var claimHold = `WITH u AS (
		UPDATE holds h SET state = 'answered', answer = $2, answered_by = $3, answer_values = $4,
			answered_at = ` + fmt.Sprintf(dbNow, 6) + `
		WHERE h.id = $1 AND h.state = 'waiting' AND ($5::boolean OR h.expires > ` + fmt.Sprintf(dbNow, 6) + `)
		RETURNING ` + holdColumns("h") + `),
	a AS (` + insertPending("u", 7, 6) + `)
	SELECT ` + holdColumns("u") + `, true FROM u
	UNION ALL
	SELECT ` + holdColumns("h") + `, false FROM holds h WHERE h.step_id = (SELECT step_id FROM u) AND h.id <> $1`

// Claim answers a waiting hold in one transaction, sent as one batch (one
// round trip):
//
//  1. lock the step's waiting holds (SELECT … FOR UPDATE, in Position
//     order), so claims on one step run one after the other, on any
//     replica: each claim locks its own hold and every other one still
//     waiting, so two claims on one step always meet on a lock;
//  2. UPDATE the hold WHERE state = 'waiting' AND it has not expired on
//     the database's clock, RETURNING it, with the rest of its step as
//     this claim's lock lets it see them: Complete is then true for
//     exactly the claim that answered the step's last waiting hold;
//  3. read the step's message, and the hold as the claim left it (why
//     it lost, if it did).
//
// Of any number of racing claims exactly one updates the row; the others
// wait for its lock, find it answered and get ErrAnswered. A hold that is
// not waiting gives ErrAnswered, one that expired ErrExpired (unless
// a.AllowExpired). Events are inserted as pending by the UPDATE's
// statement, only when it answered the hold.
func (p *Postgres) Claim(ctx context.Context, id string, a Answer, events ...Event) (Claimed, error) {
	if a.Choice == "" {
		return Claimed{}, errors.New("claiming hold: empty answer choice")
	}
	if !storableID(id) {
		return Claimed{}, ErrNotFound
	}
	pending, err := pendingArgs(events)
	if err != nil {
		return Claimed{}, err
	}
	var c Claimed
	err = p.run(ctx, "claiming hold", false, func(ctx context.Context) (err error) {
		now := p.nowParam()
		b := &pgx.Batch{}
		// Only waiting rows are locked, and only while the hold is: a
		// claim that lost (or comes late) locks nothing, so its
		// transaction writes nothing and commits without a disk flush,
		// and a crowd of answers to one hold does not queue flushes behind
		// its row lock. A row answered while this claim waited for it is
		// skipped (re-checked after the wait), not locked.
		b.Queue(`SELECT h.id FROM holds h
			WHERE h.step_id = (SELECT step_id FROM holds WHERE id = $1 AND state = 'waiting') AND h.state = 'waiting'
			ORDER BY h.position FOR UPDATE`, id)
		b.Queue(claimHold, id, []byte(a.Choice), append([]byte{}, a.By...), nilIfEmpty(a.Values), a.AllowExpired, now, pending[0], pending[1])
		b.Queue(`SELECT message FROM steps WHERE id = (SELECT step_id FROM holds WHERE id = $1)`, id)
		// Why a claim did not take the hold, as it is once the claim ran.
		b.Queue(`SELECT state, expires > `+fmt.Sprintf(dbNow, 2)+` FROM holds WHERE id = $1`, id, now)
		// No BEGIN: a batch is one implicit transaction, committed
		// when the last statement has run, so the claim is one round
		// trip. Close reads the commit's outcome: nil only once it is
		// committed.
		br := p.pool.SendBatch(ctx, b)
		defer func() {
			if cerr := br.Close(); err == nil {
				err = db(cerr)
			}
		}()

		if _, err := br.Exec(); err != nil {
			return db(err)
		}
		rows, err := br.Query()
		if err != nil {
			return db(err)
		}
		var (
			step    []Hold
			claimed = -1
		)
		for rows.Next() {
			var r holdRow
			var mine bool
			if err := rows.Scan(r.dest(&mine)...); err != nil {
				rows.Close()
				return db(fmt.Errorf("reading hold: %w", err))
			}
			if mine {
				claimed = len(step)
			}
			step = append(step, r.hold())
		}
		if err := rows.Err(); err != nil {
			return db(err)
		}
		message, err := readMessage(br)
		if err != nil {
			return err
		}
		var (
			state string
			live  bool
		)
		err = br.QueryRow().Scan(&state, &live)
		switch {
		case err == pgx.ErrNoRows:
			return ErrNotFound
		case err != nil:
			return db(err)
		case claimed >= 0:
		case state == string(Waiting) && !live:
			return ErrExpired
		default:
			return ErrAnswered
		}
		mine := step[claimed].ID
		slices.SortFunc(step, func(x, y Hold) int { return cmp.Compare(x.Position, y.Position) })
		c = Claimed{Complete: true}
		for i := range step {
			step[i].Message = message
			if step[i].State == Waiting {
				c.Complete = false
			}
			if step[i].ID == mine {
				c.Hold = step[i]
			}
		}
		c.Step = step
		return nil
	})
	if err != nil {
		return Claimed{}, err
	}
	if len(events) > 0 {
		p.wakeChainer()
	}
	return c, nil
}

// Begin moves an answered hold to Running: one UPDATE … WHERE state =
// 'answered' RETURNING, which exactly one of any number of racing callers
// wins; the others wait for its row lock, find it running and get
// ErrAnswered.
func (p *Postgres) Begin(ctx context.Context, id string) (Hold, error) {
	if !storableID(id) {
		return Hold{}, ErrNotFound
	}
	var h Hold
	err := p.run(ctx, "beginning hold", false, func(ctx context.Context) error {
		var r holdRow
		var message []byte
		err := p.pool.QueryRow(ctx, `WITH u AS (
				UPDATE holds h SET state = 'running', started_at = `+fmt.Sprintf(dbNow, 2)+`
				WHERE h.id = $1 AND h.state = 'answered'
				RETURNING `+holdColumns("h")+`)
			SELECT `+holdColumns("u")+`, s.message FROM u LEFT JOIN steps s ON s.id = u.step_id`,
			id, p.nowParam()).Scan(r.dest(&message)...)
		if err == pgx.ErrNoRows {
			return p.notAnswered(ctx, id)
		}
		if err != nil {
			return db(err)
		}
		h = r.hold()
		h.Message = nilIfEmpty(message)
		return nil
	})
	return h, err
}

// notAnswered tells why a hold could not begin: ErrNotFound, or
// ErrAnswered for any state but Answered.
func (p *Postgres) notAnswered(ctx context.Context, id string) error {
	var exists bool
	if err := p.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM holds WHERE id = $1)`, id).Scan(&exists); err != nil {
		return db(err)
	}
	if !exists {
		return ErrNotFound
	}
	return ErrAnswered
}

// Settle records the outcome of an answered or running hold: one UPDATE
// … WHERE state IN ('answered', 'running'); the first of racing
// settlements wins. When no row changed, one read of the row, then final,
// tells a retry with the same outcome (nil) from another outcome
// (ErrAnswered), a waiting hold and a missing one. Events are inserted as
// pending by the UPDATE's statement, only when it settled the hold.
func (p *Postgres) Settle(ctx context.Context, id, outcome string, events ...Event) error {
	return p.SettleWithReply(ctx, id, outcome, nil, events...)
}

// SettleWithReply is Settle that records reply in the same UPDATE.
func (p *Postgres) SettleWithReply(ctx context.Context, id, outcome string, reply []byte, events ...Event) error {
	if outcome == "" {
		return errors.New("settling hold: empty outcome")
	}
	if !storableID(id) {
		return ErrNotFound
	}
	pending, err := pendingArgs(events)
	if err != nil {
		return err
	}
	// A settlement may be retried whatever broke: a second run of one that
	// committed finds it settled with the same outcome (and appends
	// nothing again).
	settled := false
	err = p.run(ctx, "settling hold", true, func(ctx context.Context) error {
		var n int
		err := p.pool.QueryRow(ctx, `WITH u AS (
				UPDATE holds SET state = 'settled', outcome = $2, answer_values = NULL, reply = $6
				WHERE id = $1 AND state IN ('answered', 'running') RETURNING id),
			a AS (`+insertPending("u", 3, 5)+`)
			SELECT count(*) FROM u`, id, []byte(outcome), pending[0], pending[1], p.nowParam(), nilIfEmpty(reply)).Scan(&n)
		if err != nil {
			return db(err)
		}
		if n == 1 {
			settled = true
			return nil
		}
		var state string
		var stored []byte
		err = p.pool.QueryRow(ctx, `SELECT state, outcome FROM holds WHERE id = $1`, id).Scan(&state, &stored)
		switch {
		case err == pgx.ErrNoRows:
			return ErrNotFound
		case err != nil:
			return db(err)
		case state != string(Settled):
			return fmt.Errorf("settling hold: state %q; claim it first", state)
		case string(stored) != outcome:
			return fmt.Errorf("settling hold: settled with another outcome: %w", ErrAnswered)
		}
		return nil
	})
	if settled && len(events) > 0 {
		p.wakeChainer()
	}
	return err
}

// DropReply sets a hold's reply to NULL. The old row version keeps the
// sealed reply until vacuum, and the WAL until its segment is recycled;
// the key is not in the database (see gate/seal.go).
func (p *Postgres) DropReply(ctx context.Context, id string) error {
	if !storableID(id) {
		return ErrNotFound
	}
	return p.run(ctx, "dropping reply", true, func(ctx context.Context) error {
		var exists bool
		err := p.pool.QueryRow(ctx, `WITH u AS (UPDATE holds SET reply = NULL WHERE id = $1 AND reply IS NOT NULL RETURNING id)
			SELECT EXISTS (SELECT 1 FROM holds WHERE id = $1)`, id).Scan(&exists)
		if err != nil {
			return db(err)
		}
		if !exists {
			return ErrNotFound
		}
		return nil
	})
}

// Unsettled pages through the partial index of unsettled holds by id.
func (p *Postgres) Unsettled(ctx context.Context, after string, limit int) ([]Hold, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("listing unsettled holds: limit %d, want more than 0", limit)
	}
	if !storableID(after) {
		return nil, errors.New("listing unsettled holds: after holds a NUL byte or invalid UTF-8")
	}
	var holds []Hold
	err := p.run(ctx, "listing unsettled holds", true, func(ctx context.Context) error {
		rows, err := p.pool.Query(ctx, `SELECT `+holdColumns("h")+` FROM holds h
			WHERE h.state <> 'settled' AND h.id > $1 ORDER BY h.id LIMIT $2`, after, limit)
		if err != nil {
			return db(err)
		}
		holds, err = readHolds(rows, nil)
		return err
	})
	return holds, err
}
