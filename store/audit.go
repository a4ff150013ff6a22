package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The audit log: every event of a hold's life, in one hash chain.
//
// Writing an event is two steps, so that an event is never lost and the
// chain costs the hold path nothing it can feel:
//
//  1. Appended: the event is written as a pending record, in the same
//     transaction as the change of state it reports (Put, Claim, Settle
//     take events for that), or on its own (Audit) for what changes no
//     state (the person opened the page, a call refused before any hold
//     was stored). A Put, Claim or Settle that committed has its events;
//     one that failed has none. A pending record is not yet chained.
//  2. Chained: one chainer at a time (a goroutine of the store, woken by
//     every append and by a timer) takes the pending records in the
//     order they were appended, gives each the next sequence number and
//     the hash of the entry before it, writes the entries and deletes the
//     pending records, in one transaction. SyncAudit chains what is
//     pending at once (verify and export call it first).
//
// An entry's hash is the SHA-256 of its body: the entry's canonical JSON
// (AuditRecord as encoding/json writes it, without HTML escaping: fixed
// field order, no spaces, omitted empty fields), which holds its sequence number and the hash of
// the entry before it. The body is stored as written, and the hash over
// those very bytes, so a body written by an older or newer build verifies
// the same. Removing, editing or reordering an entry breaks the chain at
// that entry (VerifyAudit names it); entries removed from the chain's end
// are caught by its head, which the chainer records with each round.
//
// A chain is only as good as its anchor: someone who can write the
// database can rewrite every entry from one point on, and the head with
// them. Keep the head VerifyAudit reports (seq and hash) somewhere else
// from time to time: a later chain must still hold that entry unchanged.
//
// Entries older than the audit retention are pruned from the chain's
// start, in order; the head then records the last pruned entry (its seq,
// hash and time), and the chain verifies from there.

// EventKind says what happened. Adding a kind is one constant here: the
// store keeps any kind it is given.
type EventKind string

// Events of a hold's life.
const (
	EventHeld     EventKind = "held"     // a call was held: the person is asked (a card or a form; an MCP ticket)
	EventShown    EventKind = "shown"    // the person opened the page that asks
	EventAnswered EventKind = "answered" // a hold was claimed: by whom, with which answer (an operator's withdrawal too)
	EventReleased EventKind = "released" // the gate sent the call to the action's endpoint: what came back, how long it took
	EventSettled  EventKind = "settled"  // the outcome the model reads was recorded
	EventRefused  EventKind = "refused"  // a call was refused: nothing was asked, nothing ran
	// EventShadowed: a call of an action in shadow mode passed untouched;
	// the event says what enforce mode would have done (HoldKind and
	// Shown for a card or a form, Reason and Detail for a refusal).
	EventShadowed EventKind = "shadowed"
)

// Event is one thing that happened, as the audit log keeps it. It never
// holds the person's form values, secrets, or the model's arguments
// beyond what the card showed: the gate fills Shown with what the person
// saw (a card's sentence and rows, a form's field names).
//
// For an event with a HoldID the chainer fills StepID, Tenant, Owner,
// Action, Policy, HoldKind and Protocol from the hold's record when they
// are empty (they never change after Put), so a caller reporting an
// answer needs only the hold's id.
type Event struct {
	// Time is when it happened on the store's clock, set when the event
	// is appended (any value given is replaced), unless At is set.
	Time time.Time `json:"time"`
	Kind EventKind `json:"kind"`
	// At, when set, is the Time the event keeps: it happened before it
	// was appended (a hold expired at its TTL, noticed by a later
	// request or the sweeper). It is not written apart from Time.
	At time.Time `json:"-"`

	HoldID   string `json:"hold_id,omitempty"`
	StepID   string `json:"step_id,omitempty"`
	Tenant   string `json:"tenant,omitempty"`
	Owner    string `json:"owner,omitempty"`
	Action   string `json:"action,omitempty"`
	HoldKind Kind   `json:"hold_kind,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	// Policy is the key of the policy that declared the action (its
	// file); PolicyVersion and ActionVersion the versions of the policy
	// and of its action the call was held or refused under (see
	// Hold.PolicyVersion).
	Policy        string `json:"policy,omitempty"`
	PolicyVersion string `json:"policy_version,omitempty"`
	ActionVersion string `json:"action_version,omitempty"`

	// Shown is what the person is shown: a card's sentence and rows, or
	// a form's message and field names (never values).
	Shown json.RawMessage `json:"shown,omitempty"`

	By     string `json:"by,omitempty"`     // who answered (or opened the page)
	Answer string `json:"answer,omitempty"` // the answer (store.Answer* values)
	// Changed names the arguments the person corrected before confirming
	// a card (card.editable), never their values.
	Changed []string `json:"changed,omitempty"`

	// Endpoint is the action's method and URL as the policy writes it
	// (the template, without the call's arguments); Status what it
	// answered (0: no answer); DurationMS how long the request took.
	Endpoint   string  `json:"endpoint,omitempty"`
	Status     int     `json:"status,omitempty"`
	DurationMS float64 `json:"duration_ms,omitempty"`

	Outcome string `json:"outcome,omitempty"` // what the model reads
	Reason  string `json:"reason,omitempty"`  // why a call was refused (a fixed word), or why a release got no answer
	Detail  string `json:"detail,omitempty"`  // a refusal's text, as the model reads it
}

// AuditRecord is an entry's body: what its hash covers.
type AuditRecord struct {
	Seq  uint64 `json:"seq"`
	Prev string `json:"prev"` // hex SHA-256 of the entry before; "" before the first entry
	Event
}

// AuditEntry is one chained entry as stored.
type AuditEntry struct {
	Seq  uint64
	Time time.Time // the event's time, as in Body
	Body []byte    // the canonical JSON of its AuditRecord, as written
	Hash []byte    // SHA-256 of Body, as written
}

// Record decodes the entry's body.
func (e AuditEntry) Record() (AuditRecord, error) {
	var r AuditRecord
	if err := json.Unmarshal(e.Body, &r); err != nil {
		return AuditRecord{}, fmt.Errorf("decoding audit entry %d: %w", e.Seq, err)
	}
	return r, nil
}

// Line is the entry as one line of JSON Lines: its body with the hash
// added as the last member. Removing `,"hash":"…"` from the end of a line
// gives back the bytes the hash covers.
func (e AuditEntry) Line() []byte {
	if len(e.Body) < 2 || e.Body[len(e.Body)-1] != '}' {
		return nil
	}
	line := make([]byte, 0, len(e.Body)+80)
	line = append(line, e.Body[:len(e.Body)-1]...)
	line = append(line, `,"hash":"`...)
	line = hex.AppendEncode(line, e.Hash)
	return append(line, '"', '}', '\n')
}

// AuditHead is where the chain ends and where it starts.
type AuditHead struct {
	Seq  uint64 // the last chained entry (0: none yet)
	Hash []byte // its hash
	// Pruned is the last entry pruned from the chain's start (Seq 0:
	// none): the first stored entry follows it.
	Pruned AuditCheckpoint
}

// AuditCheckpoint is an entry that is no longer stored.
type AuditCheckpoint struct {
	Seq  uint64
	Hash []byte
	Time time.Time
}

// AuditQuery selects chained entries, in seq order.
type AuditQuery struct {
	After uint64    // seq > After
	Since time.Time // time at or after Since (zero: from the start)
	Until time.Time // time before Until (zero: to the end)
	Limit int       // at most this many (more than 0)
}

// auditBatch bounds the pending records one chain round takes and the
// entries one prune deletes, so no transaction grows large.
const auditBatch = 1000

// DefaultAuditRetention is how long audit entries are kept when the
// options give no AuditRetention: the record of who approved what
// outlives the holds by far.
const DefaultAuditRetention = 90 * 24 * time.Hour

// chainEntry makes the entry that follows prev (seq prevSeq) from an
// event.
func chainEntry(prevSeq uint64, prev []byte, ev Event) (AuditEntry, error) {
	r := AuditRecord{Seq: prevSeq + 1, Prev: hex.EncodeToString(prev), Event: ev}
	r.Time = r.Time.UTC()
	body, err := marshalPlain(r)
	if err != nil {
		return AuditEntry{}, fmt.Errorf("encoding audit entry: %w", err)
	}
	sum := sha256.Sum256(body)
	return AuditEntry{Seq: r.Seq, Time: r.Time, Body: body, Hash: sum[:]}, nil
}

// checkEvents refuses events the log cannot keep.
func checkEvents(events []Event) error {
	for i := range events {
		if events[i].Kind == "" {
			return fmt.Errorf("auditing: events[%d]: no kind", i)
		}
	}
	return nil
}

// encodeEvent is a pending record's value: the event as JSON.
func encodeEvent(ev Event) ([]byte, error) {
	b, err := marshalPlain(ev)
	if err != nil {
		return nil, fmt.Errorf("encoding audit event: %w", err)
	}
	return b, nil
}

// marshalPlain is json.Marshal without its HTML escaping: a card's "<b>"
// stays "<b>" in the log (the export is data, never HTML).
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// fillEvent gives an event the fields of its hold it lacks.
func fillEvent(ev *Event, h *Hold) {
	set := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	set(&ev.StepID, h.StepID)
	set(&ev.Tenant, h.Tenant)
	set(&ev.Owner, h.Owner)
	set(&ev.Action, h.Action)
	set(&ev.Policy, h.Policy)
	set(&ev.Protocol, h.Protocol)
	if ev.HoldKind == "" {
		ev.HoldKind = h.Kind
	}
}

// AuditReport is what VerifyAudit found.
type AuditReport struct {
	// From and To are the first and last seq checked; Entries how many.
	From, To uint64
	Entries  int
	Head     AuditHead
	// Broken is the first entry that breaks the chain; nil when it holds.
	Broken *AuditBreak
}

// AuditBreak is where a chain breaks and why.
type AuditBreak struct {
	Seq     uint64
	Problem string
}

func (b *AuditBreak) Error() string {
	return fmt.Sprintf("audit chain broken at seq %d: %s", b.Seq, b.Problem)
}

// ErrAuditBroken is what errors.Is finds in an AuditReport's Err.
var ErrAuditBroken = errors.New("audit chain broken")

// Err is nil when the chain holds, else an error naming the first broken
// entry.
func (r AuditReport) Err() error {
	if r.Broken == nil {
		return nil
	}
	return fmt.Errorf("%w at seq %d: %s", ErrAuditBroken, r.Broken.Seq, r.Broken.Problem)
}

// verifyPage is how many entries VerifyAudit reads at once.
const verifyPage = 1000

// VerifyAudit checks the chain of s from its checkpoint (the last pruned
// entry, or the start) to its head, after chaining what is pending. It
// reports the first entry that breaks it, if any: a seq that does not
// follow the one before (an entry removed, or moved), a body that does not
// match its hash (edited), a body naming another seq (moved), a prev that
// is not the hash of the entry before (the one before was edited or
// replaced), or a chain that ends before its head (entries removed from
// the end). An error is returned only when the store cannot be read.
//
// The chain may grow and be pruned while it is read: entries chained
// after the head was read are left for the next verify, and a check that
// a prune overtook is started again from the new checkpoint.
func VerifyAudit(ctx context.Context, s Store) (AuditReport, error) {
	if err := s.SyncAudit(ctx); err != nil {
		return AuditReport{}, err
	}
	for attempt := 0; ; attempt++ {
		head, err := s.AuditHead(ctx)
		if err != nil {
			return AuditReport{}, err
		}
		rep, err := verifyFrom(ctx, s, head)
		if err != nil || rep.Broken == nil || attempt == 2 {
			return rep, err
		}
		now, err := s.AuditHead(ctx)
		if err != nil {
			return AuditReport{}, err
		}
		if now.Pruned.Seq == head.Pruned.Seq {
			return rep, nil
		}
	}
}

// verifyFrom checks the chain from head's checkpoint to head.
func verifyFrom(ctx context.Context, s Store, head AuditHead) (AuditReport, error) {
	rep := AuditReport{Head: head, From: head.Pruned.Seq + 1}
	prevSeq, prev := head.Pruned.Seq, head.Pruned.Hash
	brk := func(seq uint64, format string, args ...any) (AuditReport, error) {
		rep.Broken = &AuditBreak{Seq: seq, Problem: fmt.Sprintf(format, args...)}
		return rep, nil
	}
	for prevSeq < head.Seq {
		page, err := s.AuditEntries(ctx, AuditQuery{After: prevSeq, Limit: verifyPage})
		if err != nil {
			return AuditReport{}, err
		}
		for _, e := range page {
			if e.Seq > head.Seq {
				break // chained after the head was read
			}
			if e.Seq != prevSeq+1 {
				return brk(prevSeq+1, "missing: the entry after seq %d is seq %d (an entry was removed or moved)", prevSeq, e.Seq)
			}
			if sum := sha256.Sum256(e.Body); !equalBytes(sum[:], e.Hash) {
				return brk(e.Seq, "its content does not match its hash (the entry was edited)")
			}
			r, err := e.Record()
			if err != nil {
				return brk(e.Seq, "its content is not an audit entry: %v", err)
			}
			if r.Seq != e.Seq {
				return brk(e.Seq, "it holds the content of seq %d (entries were reordered)", r.Seq)
			}
			// The time exports select by is stored beside the body (an
			// index); the body's time is hashed. Binding the one to the
			// other keeps an entry from being hidden from a time range.
			if !r.Time.Equal(e.Time) {
				return brk(e.Seq, "its stored time %s is not the time its content holds, %s (the entry was moved in time)",
					e.Time.Format(time.RFC3339Nano), r.Time.Format(time.RFC3339Nano))
			}
			if r.Prev != hex.EncodeToString(prev) {
				return brk(e.Seq, "its prev is not the hash of seq %d (an entry before it was edited, removed or reordered)", prevSeq)
			}
			prevSeq, prev = e.Seq, e.Hash
			rep.Entries++
		}
		if len(page) < verifyPage {
			break
		}
	}
	rep.To = prevSeq
	switch {
	case prevSeq < head.Seq:
		return brk(prevSeq+1, "missing: the chain ends at seq %d, but its head records seq %d (entries were removed from its end)", prevSeq, head.Seq)
	case !equalBytes(prev, head.Hash):
		return brk(prevSeq, "its hash is not the one its head records (the last entry was replaced)")
	}
	return rep, nil
}

func equalBytes(a, b []byte) bool {
	return string(a) == string(b)
}

// decodeHex reads a stored hex hash; "" is none.
func decodeHex(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	return hex.DecodeString(s)
}
