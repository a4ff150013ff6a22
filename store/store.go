// Package store keeps holds: the gated calls waiting for a person.
//
// A hold is one record; the calls of one model response share a step id,
// one link and one assistant message (stored once for the step). The Store
// interface is the seam for a second backend; nothing backend-specific
// leaks past it. The embedded default is Badger (badger.go); PostgreSQL
// (postgres.go) is shared by several processes and keeps every guarantee
// across them. Each guarantee maps to one atomic operation there:
//
//   - Claim: UPDATE … SET state='answered' … WHERE id=$1 AND state='waiting'
//     AND (expires > now OR allow_expired) RETURNING …, reading the step in
//     the same transaction for Complete (the step's rows locked FOR UPDATE,
//     so claims on one step run one after the other).
//   - Begin: UPDATE … SET state='running', started_at=now WHERE id=$1 AND
//     state='answered' RETURNING ….
//   - Settle: UPDATE … SET state='settled', outcome=$2, values=NULL, reply=$6 WHERE
//     id=$1 AND state IN ('answered','running'); when no row changed, one
//     read of the (then final) row tells a retry with the same outcome from
//     ErrAnswered, ErrNotFound and a waiting hold.
//   - Put under MaxWaiting: one transaction that first locks a row per
//     (tenant, owner) (INSERT … ON CONFLICT DO UPDATE, or an advisory
//     transaction lock on their hash), counts the pair's waiting rows with
//     expires > now, and inserts the step or refuses it.
//   - Unsettled: SELECT … WHERE state <> 'settled' AND id > $1 ORDER BY id
//     LIMIT $2, over a partial index on id WHERE state <> 'settled'.
//   - Expiry is decided from the stored Expires against the store's clock
//     (Hold.StateAt), never by a sweeper. On PostgreSQL the store's clock
//     is the database's now(), read in the statement that decides, so
//     replicas whose clocks disagree still agree on expiry.
//   - Retention: DELETE … WHERE keep_until < now in batches of 1,000 rows,
//     by one replica at a time (pg_try_advisory_lock).
//   - The audit log: an event is an INSERT INTO audit_pending in the
//     transaction (or statement) of the change it reports; one chainer
//     at a time, on any replica, chains pending events: it locks the
//     chain's head row (SELECT … FROM audit_head FOR UPDATE), so chain
//     rounds run one after the other across replicas, assigns the next
//     seq to each inside that transaction, and commits the entries with
//     the new head. One chain, whatever the number of replicas.
//
// The contract is tested once, as a table of cases run against every
// backend (contract_test.go).
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Kind says what the person is asked.
type Kind string

const (
	KindCard Kind = "card" // a confirmation card (destructive, external)
	KindForm Kind = "form" // a form for missing fields (read, write)
	// KindTicket is the record behind one MCP requestState: redeemed by
	// one claim, never shown on a page.
	KindTicket Kind = "ticket"
)

// State is where a hold is in its life.
type State string

const (
	// Waiting: nobody has answered. A waiting hold past Expires reads as
	// Expired (see Hold.StateAt) without any sweeper having run.
	Waiting State = "waiting"
	// Answered: claimed by exactly one answer (Hold.Answer says which);
	// the run, if any, has not begun yet.
	Answered State = "answered"
	// Running: the release of an answered hold has begun (Begin won); its
	// outcome is not recorded yet. A crash leaves it Running; the gate's
	// sweeper settles it as unknown, never runs it again.
	Running State = "running"
	// Settled: the outcome is final and Outcome holds what the model reads.
	Settled State = "settled"
	// Expired is never stored; StateAt reports it for a waiting hold past
	// its TTL.
	Expired State = "expired"
)

// Answers a hold can be claimed with.
const (
	AnswerConfirm   = "confirm"   // the person confirmed the card
	AnswerSubmit    = "submit"    // the person submitted the form
	AnswerDecline   = "decline"   // the person declined
	AnswerLater     = "later"     // the person closed the form without answering ("Not now")
	AnswerMovedOn   = "moved_on"  // the person wrote a new message instead
	AnswerTimedOut  = "timed_out" // settled after expiry
	AnswerUsed      = "used"      // an MCP ticket redeemed by the client's retry
	AnswerWithdrawn = "withdrawn" // an operator withdrew the waiting hold (the admin API)
	// AnswerFollowed: a call attached to another hold's card (one card per
	// intent, gate/intent.go) takes that card's answer; it runs nothing
	// itself.
	AnswerFollowed = "followed"
)

// Hold is one gated call waiting for (or answered by) a person.
type Hold struct {
	ID     string `json:"id"`      // 128 random bits, base32; also a secret
	StepID string `json:"step_id"` // shared by the held calls of one model response; the link's secret part
	Owner  string `json:"owner"`   // the person the conversation belongs to
	Tenant string `json:"tenant,omitempty"`

	Policy   string `json:"policy"`   // key of the policy that declared the action
	Action   string `json:"action"`   // tool name
	Kind     Kind   `json:"kind"`     // card or form
	Protocol string `json:"protocol"` // wire adapter that held it ("openai-chat", ...)

	// PolicyVersion and ActionVersion are the versions of that policy and
	// of its action the hold was made under (policies.Policy.Version,
	// policies.Action.Version); "" for holds made before versions were
	// recorded. The gate re-checks a hold whose policy has changed since.
	PolicyVersion string `json:"policy_version,omitempty"`
	ActionVersion string `json:"action_version,omitempty"`

	// Shown is what the person was shown (card rows or form fields), as the
	// part that built it encoded it; opaque to the store.
	Shown       json.RawMessage `json:"shown,omitempty"`
	Fingerprint string          `json:"fingerprint,omitempty"`

	// Call is the original tool call, raw bytes as the provider sent it;
	// Arguments its arguments as a JSON object; Message the assistant
	// message it came from (raw, for restoring history); Position the
	// call's index in that message.
	//
	// Message belongs to the step: the store keeps it once, and every hold
	// of the step reads back with it, including one put without it. Holds
	// read together may share its bytes: treat it as read-only.
	CallID    string          `json:"call_id"`
	Call      json.RawMessage `json:"call"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Message   json.RawMessage `json:"message,omitempty"`
	Position  int             `json:"position"`
	Text      string          `json:"text,omitempty"` // the waiting text the app received in place of the step's calls

	State      State           `json:"state"`
	Answer     string          `json:"answer,omitempty"`
	AnsweredBy string          `json:"answered_by,omitempty"`
	Values     json.RawMessage `json:"values,omitempty"` // the person's form values (sealed by the gate); dropped by Settle
	// Outcome is what became of the hold, encoded by the gate (structured
	// data: kind, status, why; never a sentence to parse back), opaque
	// to the store. The store compares it only for equality (Settle's
	// retry).
	Outcome string `json:"outcome,omitempty"`
	// Reply is the app's answer the model is still to read, sealed by the
	// gate: recorded by SettleWithReply, dropped by DropReply once the
	// model has read it.
	Reply []byte `json:"reply,omitempty"`

	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires"`
	AnsweredAt time.Time `json:"answered_at,omitzero"`
	StartedAt  time.Time `json:"started_at,omitzero"` // when Begin ran (store clock)

	// Filed are index keys (see Index) that Put files the hold's step
	// under in its own transaction, until the hold's Expires: the step is
	// findable by them exactly when it is stored, and holding a call
	// costs one durable write, not one per index. Put alone reads it; it
	// is not stored with the hold, and holds read back have none.
	Filed []string `json:"-"`
}

// StateAt is the hold's state at now: a waiting hold past Expires is
// Expired.
func (h *Hold) StateAt(now time.Time) State {
	if h.State == Waiting && !now.Before(h.Expires) {
		return Expired
	}
	return h.State
}

// Answer is what Claim records.
type Answer struct {
	Choice string          // one of the Answer* constants
	By     string          // who answered ("" for the gate itself: moved on, timed out)
	Values json.RawMessage // form values, kept only until Settle
	// AllowExpired lets the gate itself settle an expired hold (AnswerTimedOut).
	AllowExpired bool
}

// Claimed is the result of a won claim.
type Claimed struct {
	Hold Hold   // the claimed hold, as now stored
	Step []Hold // every hold of its step, as now stored, in Position order
	// Complete is true for exactly one claim per step: the one that gave
	// the last waiting hold of the step its answer.
	Complete bool
}

// Errors the store returns; callers test with errors.Is.
var (
	ErrNotFound    = errors.New("hold not found")
	ErrAnswered    = errors.New("hold already answered") // a lost or late claim
	ErrExpired     = errors.New("hold expired")
	ErrUnavailable = errors.New("store unavailable") // wraps the backend's error
	// ErrLimit: Put would leave the (tenant, owner) with more waiting holds
	// than the store's MaxWaiting.
	ErrLimit = errors.New("too many holds waiting for this person")
)

// Stats is the store's size, for a metric.
type Stats struct {
	Bytes int64 // on disk (Badger: LSM + value log); the backend's own measure
}

// Store keeps holds. Implementations are safe for concurrent use, by any
// number of goroutines and, where the backend is shared (PostgreSQL), by
// any number of processes: every guarantee below holds across them.
//
// The life of a hold: Put (Waiting) → Claim (Answered) → Begin (Running,
// only when an action is released) → Settle (Settled). Claim and Begin are
// each won by exactly one caller; Settle records the outcome once.
// Expiry is not a stored state: a Waiting hold past Expires reads as
// Expired (Hold.StateAt), judged on the store's clock from the stored
// Expires, with no sweeper.
type Store interface {
	// Put writes the holds of one step, durably, before it returns. Each
	// record is kept until its Expires plus the store's retention, so a
	// late request still reads the outcome. The holds must be Waiting, or
	// Settled with an Outcome (a call refused when it was held, kept so
	// history can pair it with its result). Their non-empty Messages must
	// be one message, the step's, which is kept once; a step whose holds
	// carry different messages is refused.
	//
	// With a MaxWaiting cap, Put refuses the whole step with ErrLimit when
	// its Waiting holds would leave their (Tenant, Owner) with more than
	// MaxWaiting Waiting, unexpired holds. The count is exact under any
	// concurrency: racing Puts for one (tenant, owner) never together
	// pass the cap. A hold stops counting once claimed or expired.
	//
	// Events are appended to the audit log in the same transaction: when
	// Put returns nil they are kept, when it fails they are not (so is
	// it for Claim and Settle).
	Put(ctx context.Context, holds []Hold, events ...Event) error
	// Get returns one hold by id.
	Get(ctx context.Context, id string) (Hold, error)
	// Step returns the holds of a step in Position order; ErrNotFound when
	// there are none.
	Step(ctx context.Context, stepID string) ([]Hold, error)
	// Claim moves a waiting hold to Answered in one atomic operation that
	// exactly one of any number of racing callers wins; the others get
	// ErrAnswered. An expired hold gives ErrExpired (unless
	// Answer.AllowExpired). Events are appended only by the claim that
	// wins.
	Claim(ctx context.Context, id string, a Answer, events ...Event) (Claimed, error)
	// Begin marks an answered hold Running just before its action is sent:
	// one atomic operation that exactly one of any number of racing callers
	// wins (across processes sharing the backend). Any state but Answered
	// gives ErrAnswered (waiting, expired, running, settled). The hold is
	// returned as now stored, StartedAt set from the store clock.
	Begin(ctx context.Context, id string) (Hold, error)
	// Settle records the outcome of an Answered or Running hold, marks it
	// Settled and drops Values. Settling again with the same outcome
	// succeeds (a retry); with another outcome it fails with ErrAnswered
	// (the first settlement stands). A Waiting hold must be claimed first
	// (an error that is neither ErrAnswered nor ErrUnavailable). Events
	// are appended only by the call that settles the hold (not by a
	// retry that finds it settled).
	Settle(ctx context.Context, id, outcome string, events ...Event) error
	// SettleWithReply is Settle that also records reply (Hold.Reply) in
	// the same atomic write. A retry compares the outcome only.
	SettleWithReply(ctx context.Context, id, outcome string, reply []byte, events ...Event) error
	// DropReply drops a hold's Reply (the model has read it). A hold
	// without one is left as it is; an unknown id gives ErrNotFound.
	DropReply(ctx context.Context, id string) error
	// Unsettled lists holds that are not Settled — waiting (expired or
	// not), answered, running; tickets too — with id > after, in id order,
	// at most limit (limit > 0). Listed holds carry every field but
	// Message (read the step for it): the list is for a sweeper, which
	// decides from state, answer and expiry. The gate's sweeper pages
	// through it at start-up and periodically to find answers a crash
	// left unsettled and steps whose last waiting hold expired. It never
	// scans settled records (an index of unsettled ids), so its cost
	// follows what is open, not what is kept.
	Unsettled(ctx context.Context, after string, limit int) ([]Hold, error)
	// Index files a step under a key, such as the provider's response or
	// conversation that holds the step's calls, for as long as the step's
	// records are kept (expires is the step's Expires). A step filed twice
	// under one key is filed once.
	Index(ctx context.Context, key, stepID string, expires time.Time) error
	// Indexed returns the step ids filed under key, oldest first; none is
	// not an error.
	Indexed(ctx context.Context, key string) ([]string, error)
	// Unindex takes a step off a key.
	Unindex(ctx context.Context, key, stepID string) error
	// List pages through the holds the store keeps, newest first,
	// selected by f (see HoldFilter), limit at most MaxListLimit. cursor
	// is "" or a HoldPage.Next. Listed holds carry every field but
	// Message. It is for operators: each page reads a bounded number of
	// records (PostgreSQL: through an index for each filter).
	List(ctx context.Context, f HoldFilter, cursor string, limit int) (HoldPage, error)

	// Audit appends events to the audit log on their own, for what
	// changes no hold (the person opened the page; a call refused
	// before anything was stored). See audit.go for the log.
	Audit(ctx context.Context, events ...Event) error
	// SyncAudit chains every event appended before it was called, so
	// that AuditEntries and AuditHead show them.
	SyncAudit(ctx context.Context) error
	// AuditHead reads where the chain ends, and the checkpoint it
	// starts from once pruned.
	AuditHead(ctx context.Context) (AuditHead, error)
	// AuditEntries reads chained entries in seq order (see AuditQuery).
	AuditEntries(ctx context.Context, q AuditQuery) ([]AuditEntry, error)

	// Stats reports the store's size, for a metric.
	Stats(ctx context.Context) (Stats, error)
	// Close releases the backend. Closing twice is harmless; every call
	// after Close fails with ErrUnavailable.
	Close() error
}
