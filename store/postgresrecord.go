package store

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// holdColumns are a hold's columns (its step's message apart) in the order
// holdRow reads them, under a table alias.
func holdColumns(alias string) string {
	return strings.ReplaceAll(`h.id, h.step_id, h.position, h.tenant, h.owner, h.policy, h.action, h.kind,
		h.protocol, h.shown, h.fingerprint, h.call_id, h.call, h.arguments, h.waiting_text,
		h.state, h.answer, h.answered_by, h.answer_values, h.outcome,
		h.created, h.expires, h.answered_at, h.started_at, h.policy_version, h.action_version, h.reply`, "h.", alias+".")
}

// holdRow is one row of holdColumns being scanned. The strings a hold
// carries from outside are bytea columns (see pgschema/001_holds.sql),
// scanned as bytes.
type holdRow struct {
	h       Hold
	state   string
	kind    []byte
	fields  [11][]byte // tenant … outcome, in holdColumns order (see strings)
	raw     [5][]byte  // shown, call, arguments, values, reply
	times   [3]*int64  // created, answered_at, started_at
	expires int64
}

// dest returns the scan targets of holdColumns, then extra.
func (r *holdRow) dest(extra ...any) []any {
	h, f := &r.h, &r.fields
	return append([]any{
		&h.ID, &h.StepID, &h.Position, &f[0], &f[1], &f[2], &f[3], &r.kind,
		&f[4], &r.raw[0], &f[5], &f[6], &r.raw[1], &r.raw[2], &f[7],
		&r.state, &f[8], &f[9], &r.raw[3], &f[10],
		&r.times[0], &r.expires, &r.times[1], &r.times[2], &h.PolicyVersion, &h.ActionVersion, &r.raw[4],
	}, extra...)
}

// strings are the hold's string fields stored as bytea, in the order of
// holdRow.fields.
func (h *Hold) strings() [11]*string {
	return [11]*string{&h.Tenant, &h.Owner, &h.Policy, &h.Action, &h.Protocol, &h.Fingerprint,
		&h.CallID, &h.Text, &h.Answer, &h.AnsweredBy, &h.Outcome}
}

// hold returns the scanned hold. Raw fields stored empty read back nil,
// as from Badger.
func (r *holdRow) hold() Hold {
	h := r.h
	for i, f := range h.strings() {
		*f = string(r.fields[i])
	}
	h.Kind, h.State = Kind(r.kind), State(r.state)
	h.Shown, h.Call, h.Arguments, h.Values = nilIfEmpty(r.raw[0]), nilIfEmpty(r.raw[1]), nilIfEmpty(r.raw[2]), nilIfEmpty(r.raw[3])
	h.Reply = nilIfEmpty(r.raw[4])
	h.Created, h.AnsweredAt, h.StartedAt = fromNanos(r.times[0]), fromNanos(r.times[1]), fromNanos(r.times[2])
	h.Expires = time.Unix(0, r.expires).UTC()
	return h
}

// holdArgs are the values of a new hold's row, in the column order of
// insertHold.
func holdArgs(h *Hold, keepUntil int64) []any {
	var f [11][]byte
	for i, s := range h.strings() {
		f[i] = append([]byte{}, *s...) // bytea: empty, never NULL
	}
	return []any{
		h.ID, h.StepID, h.Position, f[0], f[1], ownerHash(h.Tenant, h.Owner), f[2], f[3], append([]byte{}, h.Kind...),
		f[4], nilIfEmpty(h.Shown), f[5], f[6], nilIfEmpty(h.Call), nilIfEmpty(h.Arguments), f[7],
		string(h.State), f[8], f[9], nilIfEmpty(h.Values), f[10],
		nanos(h.Created), h.Expires.UnixNano(), nanos(h.AnsweredAt), nanos(h.StartedAt), keepUntil,
		h.PolicyVersion, h.ActionVersion,
	}
}

const insertHold = `INSERT INTO holds (id, step_id, position, tenant, owner, owner_key, policy, action, kind,
		protocol, shown, fingerprint, call_id, call, arguments, waiting_text,
		state, answer, answered_by, answer_values, outcome,
		created, expires, answered_at, started_at, keep_until, policy_version, action_version)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28)`

// storableID reports whether an id can be a key: text columns refuse a
// NUL byte and invalid UTF-8. Ids the store makes (NewID) always can; an
// id that cannot was never stored, so looking it up finds nothing rather
// than failing the database.
func storableID(id string) bool {
	return utf8.ValidString(id) && !strings.ContainsRune(id, 0)
}

// nilIfEmpty keeps raw fields as Badger's record does: empty is absent.
func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// nanos is a time as stored: nanoseconds since the epoch, NULL for the
// zero time.
func nanos(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

func fromNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}

// storable reports whether a time fits in the nanoseconds a row keeps
// (years 1678 to 2261, with a margin).
func storable(t time.Time) bool {
	return t.IsZero() || (t.Year() > 1678 && t.Year() < 2262)
}

// addNanos adds a duration to a time in nanoseconds, stopping at the
// largest one rather than wrapping around.
func addNanos(at int64, d time.Duration) int64 {
	if d > 0 && at > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return at + int64(d)
}

// ownerHash is the index key of a (tenant, owner) identity.
func ownerHash(tenant, owner string) []byte {
	sum := sha256.Sum256([]byte(ownerKey(tenant, owner)))
	return sum[:16]
}

// keyHash is the index key of a step-index key.
func keyHash(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

// tx runs fn in a transaction and commits it; an error from fn rolls it
// back and is returned as fn gave it (fn marks the database's errors).
func (p *Postgres) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return db(err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx) // a broken connection is dropped by the pool
		return err
	}
	return db(tx.Commit(ctx))
}

// stepMessage is the statement reading a step's message, $1 the step id.
const stepMessage = `SELECT message FROM steps WHERE id = $1`

// readMessage reads the result of stepMessage (nil when the step's row is
// gone or has no message).
func readMessage(br pgx.BatchResults) ([]byte, error) {
	var message []byte
	err := br.QueryRow().Scan(&message)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, db(err)
	}
	return nilIfEmpty(message), nil
}

// readHolds reads the holds a query of holdColumns returns, each given
// message. It marks errors as the database's.
func readHolds(rows pgx.Rows, message []byte) ([]Hold, error) {
	defer rows.Close()
	var holds []Hold
	for rows.Next() {
		var r holdRow
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, db(fmt.Errorf("reading hold: %w", err))
		}
		h := r.hold()
		h.Message = message
		holds = append(holds, h)
	}
	return holds, db(rows.Err())
}
