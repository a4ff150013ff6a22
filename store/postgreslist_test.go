package store_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/store"
)

// Every filter of List reads a range of the index made for it, in the
// list's order, on a table where each value holds a small share of the
// holds: the plan of each page uses that index, with no sequential scan
// and no sort. (Sequential and bitmap scans and sorts are priced out, so
// the plan shows whether such an index exists; on a table of a few
// thousand rows the planner might otherwise read it whole.)
func TestPostgresListUsesIndexes(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	s := openPostgres(t, dsn, store.PostgresOptions{Schema: schema})
	clock := newTestClock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// A table with the proportions of a real one: tenants, people and
	// actions that each hold a small share, holds made one after the
	// other.
	for range 4 {
		step := make([]store.Hold, 500)
		stepID := newID(t)
		for i := range step {
			clock.Advance(time.Second)
			h := newHold(newID(t), stepID, i, clock.Now())
			h.Owner, h.Tenant, h.Action = "person-"+strconv.Itoa(i%100), "tenant-"+strconv.Itoa(i%25), "action-"+strconv.Itoa(i%20)
			step[i] = h
		}
		if err := s.Put(context.Background(), step); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "ANALYZE "+pgx.Identifier{schema, "holds"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	page, err := s.List(context.Background(), store.HoldFilter{}, "", 5)
	if err != nil || page.Next == "" {
		t.Fatalf("List: %v, next %q", err, page.Next)
	}
	tenant := "tenant-1"
	for _, c := range []struct {
		name   string
		f      store.HoldFilter
		cursor string
		index  string
	}{
		{"all", store.HoldFilter{}, "", "holds_listed"},
		{"all, next page", store.HoldFilter{}, page.Next, "holds_listed"},
		{"waiting", store.HoldFilter{State: store.Waiting}, "", "holds_open_listed"},
		{"expired", store.HoldFilter{State: store.Expired}, page.Next, "holds_open_listed"},
		{"answered", store.HoldFilter{State: store.Answered}, "", "holds_open_listed"},
		{"running", store.HoldFilter{State: store.Running}, "", "holds_open_listed"},
		{"settled", store.HoldFilter{State: store.Settled}, "", "holds_listed"},
		{"action", store.HoldFilter{Action: "action-1"}, page.Next, "holds_action_listed"},
		{"owner", store.HoldFilter{Owner: "person-1", Tenant: &tenant}, page.Next, "holds_owner_listed"},
		{"tenant", store.HoldFilter{Tenant: &tenant}, "", "holds_tenant_listed"},
		{"age", store.HoldFilter{CreatedBefore: clock.Now(), CreatedAfter: clock.Now().Add(-time.Hour)}, "", "holds_listed"},
		{"kind", store.HoldFilter{Kind: store.KindCard}, "", "holds_listed"},
	} {
		q, args, err := store.ListQuery(s, c.f, c.cursor, 50)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+pgx.Identifier{schema}.Sanitize()+"; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off"); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, "EXPLAIN "+q, args...)
			if err != nil {
				return err
			}
			plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		if err != nil {
			t.Fatalf("%s: EXPLAIN: %v", c.name, err)
		}
		text := strings.Join(plan, "\n")
		if strings.Contains(text, "Seq Scan") || strings.Contains(text, "Sort") || !strings.Contains(text, "Index Scan Backward using "+c.index+" ") {
			t.Errorf("%s: the page is not one index range:\n%s", c.name, text)
		}
	}
}
