package store

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// HoldFilter selects holds for List. Each field set narrows the list; the
// zero value selects every hold the store keeps.
type HoldFilter struct {
	// State is Waiting (unexpired), Expired (waiting past its TTL, on the
	// store clock), Answered, Running or Settled; "" any.
	State State
	Kind  Kind // card, form or ticket; "" any
	// Action is the tool name; "" any.
	Action string
	// Owner selects one person: (Tenant, Owner) is the identity, so it
	// is matched with Tenant (nil: the empty tenant). "" any.
	Owner string
	// Tenant selects one tenant (the empty one too); nil any.
	Tenant *string
	// CreatedBefore and CreatedAfter bound when the hold was made,
	// inclusive (an age); zero: no bound.
	CreatedBefore time.Time
	CreatedAfter  time.Time
}

// MaxListLimit bounds one page of List.
const MaxListLimit = 500

// HoldPage is one page of List.
type HoldPage struct {
	// Holds are newest first (by Created, then id), each without its
	// step's Message.
	Holds []Hold
	// Next is the cursor of the next page; "" when there is none. A page
	// may hold fewer holds than asked while Next is set: a backend bounds
	// the records one page examines (Badger), and the next page goes on
	// from where it stopped.
	Next string
}

// check refuses a filter naming a state or kind that does not exist.
func (f HoldFilter) check() error {
	switch f.State {
	case "", Waiting, Expired, Answered, Running, Settled:
	default:
		return fmt.Errorf("listing holds: unknown state %q", f.State)
	}
	switch f.Kind {
	case "", KindCard, KindForm, KindTicket:
	default:
		return fmt.Errorf("listing holds: unknown kind %q", f.Kind)
	}
	return nil
}

// match reports whether h passes the filter at now (the store clock).
func (f HoldFilter) match(h *Hold, now time.Time) bool {
	switch {
	case f.State != "" && h.StateAt(now) != f.State,
		f.Kind != "" && h.Kind != f.Kind,
		f.Action != "" && h.Action != f.Action,
		f.Tenant != nil && h.Tenant != *f.Tenant,
		f.Owner != "" && (h.Owner != f.Owner || h.Tenant != f.ownerTenant()),
		!f.CreatedBefore.IsZero() && h.Created.After(f.CreatedBefore),
		!f.CreatedAfter.IsZero() && h.Created.Before(f.CreatedAfter):
		return false
	}
	return true
}

// ownerTenant is the tenant Owner is matched in.
func (f HoldFilter) ownerTenant() string {
	if f.Tenant == nil {
		return ""
	}
	return *f.Tenant
}

// listCursor is a position in the list: a hold's Created (nanoseconds,
// 0 for none) and id; the next page starts after it.
type listCursor struct {
	created int64
	id      string
}

// encode is the cursor as List gives it: opaque to callers.
func (c listCursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.created, 10) + "." + c.id))
}

// decodeCursor reads a cursor List gave; "" is the start.
func decodeCursor(s string) (listCursor, bool, error) {
	if s == "" {
		return listCursor{}, false, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	bad := errors.New("listing holds: not a cursor this store gave")
	if err != nil {
		return listCursor{}, false, bad
	}
	n, id, ok := strings.Cut(string(b), ".")
	created, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || id == "" || !storableID(id) {
		return listCursor{}, false, bad
	}
	return listCursor{created: created, id: id}, true, nil
}

// createdNanos is a hold's place in the list: its Created in
// nanoseconds, 0 when it has none.
func createdNanos(h *Hold) int64 {
	if h.Created.IsZero() {
		return 0
	}
	return h.Created.UnixNano()
}

// listArgs checks List's arguments, the same on every backend, and
// decodes its cursor (from: the cursor names a place to go on from).
func listArgs(f HoldFilter, cursor string, limit int) (c listCursor, from bool, err error) {
	if limit <= 0 || limit > MaxListLimit {
		return listCursor{}, false, fmt.Errorf("listing holds: limit %d, want 1 to %d", limit, MaxListLimit)
	}
	if err := f.check(); err != nil {
		return listCursor{}, false, err
	}
	return decodeCursor(cursor)
}
