package store

import (
	"context"
	"fmt"
	"strings"
)

// listOrder is the order List pages in: newest first. The indexes of
// pgschema/003_audit.sql have it as their last two columns, so every
// filter reads one index range, in order, and stops at the page's end.
const listOrder = `(coalesce(h.created, 0), h.id)`

// listQuery is List's statement and its parameters.
func (p *Postgres) listQuery(f HoldFilter, c listCursor, from bool, limit int) (string, []any) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if from {
		where = append(where, listOrder+" < ("+arg(c.created)+"::bigint, "+arg(c.id)+"::text)")
	}
	now := func() string {
		args = append(args, p.nowParam())
		return fmt.Sprintf(dbNow, len(args))
	}
	// The open states repeat the partial index's predicate, so the
	// planner can use it.
	switch f.State {
	case Waiting:
		where = append(where, "h.state <> 'settled' AND h.state = 'waiting' AND h.expires > "+now())
	case Expired:
		where = append(where, "h.state <> 'settled' AND h.state = 'waiting' AND h.expires <= "+now())
	case Answered, Running:
		where = append(where, "h.state <> 'settled' AND h.state = "+arg(string(f.State)))
	case Settled:
		where = append(where, "h.state = 'settled'")
	}
	if f.Kind != "" {
		where = append(where, "h.kind = "+arg([]byte(f.Kind)))
	}
	if f.Action != "" {
		where = append(where, "h.action = "+arg([]byte(f.Action)))
	}
	if f.Owner != "" {
		tenant := f.ownerTenant()
		where = append(where, "h.owner_key = "+arg(ownerHash(tenant, f.Owner))+
			" AND h.tenant = "+arg([]byte(tenant))+" AND h.owner = "+arg([]byte(f.Owner)))
	} else if f.Tenant != nil {
		where = append(where, "h.tenant = "+arg([]byte(*f.Tenant)))
	}
	if !f.CreatedBefore.IsZero() {
		where = append(where, "coalesce(h.created, 0) <= "+arg(f.CreatedBefore.UnixNano()))
	}
	if !f.CreatedAfter.IsZero() {
		where = append(where, "coalesce(h.created, 0) >= "+arg(f.CreatedAfter.UnixNano()))
	}
	q := `SELECT ` + holdColumns("h") + ` FROM holds h`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += ` ORDER BY coalesce(h.created, 0) DESC, h.id DESC LIMIT ` + arg(limit+1)
	return q, args
}

// List reads one page: limit+1 rows through the filter's index, the last
// one only to tell whether another page follows.
func (p *Postgres) List(ctx context.Context, f HoldFilter, cursor string, limit int) (HoldPage, error) {
	c, from, err := listArgs(f, cursor, limit)
	if err != nil {
		return HoldPage{}, err
	}
	q, args := p.listQuery(f, c, from, limit)
	var page HoldPage
	err = p.run(ctx, "listing holds", true, func(ctx context.Context) error {
		rows, err := p.pool.Query(ctx, q, args...)
		if err != nil {
			return db(err)
		}
		holds, err := readHolds(rows, nil)
		if err != nil {
			return err
		}
		if len(holds) > limit {
			last := &holds[limit-1]
			page.Next = listCursor{created: createdNanos(last), id: last.ID}.encode()
			holds = holds[:limit]
		}
		page.Holds = holds
		return nil
	})
	return page, err
}
