package store_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/store"
)

// openPostgres opens a store on dsn and closes it when the test ends.
func openPostgres(tb testing.TB, dsn string, opts store.PostgresOptions) *store.Postgres {
	tb.Helper()
	s, err := store.OpenPostgres(dsn, opts)
	if err != nil {
		tb.Fatalf("OpenPostgres: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// The store contract on PostgreSQL: each case in a schema of its own,
// dropped when it ends. The retention loop runs often, so that records
// past their retention go within the contract's bounded waits.
func TestPostgresContract(t *testing.T) {
	dsn := pgtest.DSN(t)
	runContract(t, func(t *testing.T, cfg contractConfig) store.Store {
		return openPostgres(t, dsn, store.PostgresOptions{
			Schema:            pgtest.Schema(t, dsn),
			Now:               cfg.Now,
			Retention:         cfg.Retention,
			MaxWaiting:        cfg.MaxWaiting,
			AuditRetention:    cfg.AuditRetention,
			RetentionInterval: 20 * time.Millisecond,
			Logger:            failOnWarning(t),
		})
	})
}

// failOnWarning is a logger that fails the test on any warning or error
// line (the retention loop's failures are only logged).
func failOnWarning(t *testing.T) *zap.Logger {
	return zaptest.NewLogger(t, zaptest.WrapOptions(zap.Hooks(func(e zapcore.Entry) error {
		if e.Level >= zapcore.WarnLevel {
			t.Errorf("the store logged %s: %s", e.Level, e.Message)
		}
		return nil
	})))
}

// Five replicas starting together on an empty database: all open, the
// schema is created once and carries this build's version.
func TestPostgresConcurrentOpen(t *testing.T) {
	dsn := pgtest.Database(t, pgtest.DSN(t))
	const n = 5
	stores := make([]*store.Postgres, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = store.OpenPostgres(dsn, store.PostgresOptions{})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
			continue
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	if t.Failed() {
		return
	}
	if got := pgtest.QueryInt(t, dsn, "SELECT count(*) FROM toolgate.schema_version"); got != 1 {
		t.Errorf("schema_version has %d rows, want 1", got)
	}
	if got, want := pgtest.QueryInt(t, dsn, "SELECT version FROM toolgate.schema_version"), int64(store.SchemaVersion()); got != want || want < 1 {
		t.Errorf("schema version %d, want %d", got, want)
	}

	// Each one works on the one schema: a hold put through one is read
	// through another.
	clock := newTestClock()
	hold := putStep(t, stores[0], 1, clock.Now())[0]
	got, err := stores[n-1].Get(context.Background(), hold.ID)
	if err != nil {
		t.Fatalf("Get through another store: %v", err)
	}
	assertHold(t, got, hold)
}

// Opening again keeps what is stored; a schema newer than this build is
// refused, naming both versions.
func TestPostgresSchemaVersion(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	clock := newTestClock()
	s, err := store.OpenPostgres(dsn, store.PostgresOptions{Schema: schema})
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	hold := putStep(t, s, 1, clock.Now())[0]
	s.Close()

	s = openPostgres(t, dsn, store.PostgresOptions{Schema: schema})
	got, err := s.Get(context.Background(), hold.ID)
	if err != nil {
		t.Fatalf("Get after reopening: %v", err)
	}
	assertHold(t, got, hold)

	pgtest.Exec(t, dsn, "UPDATE "+schema+".schema_version SET version = 99")
	_, err = store.OpenPostgres(dsn, store.PostgresOptions{Schema: schema})
	if err == nil || !strings.Contains(err.Error(), "version 99, newer than this build's") {
		t.Errorf("OpenPostgres on a newer schema = %v, want a refusal naming version 99", err)
	}
}

func TestPostgresMigrationFiles(t *testing.T) {
	names, err := store.Migrations()
	if err != nil {
		t.Fatalf("migrations: %v", err)
	}
	if len(names) == 0 || len(names) != store.SchemaVersion() || !strings.HasPrefix(names[0], "001_") {
		t.Errorf("embedded schema files %v, version %d", names, store.SchemaVersion())
	}
}

// An unreachable database at open: a clear error naming the host, port,
// database and user, never the password, within the timeout.
func TestPostgresOpenUnreachable(t *testing.T) {
	const password = "Sup3r-s3cret-PW"
	port := closedPort(t)
	for name, dsn := range map[string]string{
		"url":       "postgres://alice:" + password + "@127.0.0.1:" + port + "/holds_db?sslmode=disable",
		"key=value": "host=127.0.0.1 port=" + port + " user=alice password='" + password + "' dbname=holds_db sslmode=disable",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := store.OpenPostgres(dsn, store.PostgresOptions{Timeout: 5 * time.Second})
			if err == nil {
				t.Fatal("OpenPostgres of a closed port succeeded")
			}
			msg := err.Error()
			t.Logf("the operator reads: %s", msg)
			for _, want := range []string{"127.0.0.1:" + port, `database "holds_db"`, `user "alice"`} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %s", msg, want)
				}
			}
			if strings.Contains(msg, password) || strings.Contains(msg, "s3cret") {
				t.Errorf("error %q holds the password", msg)
			}
		})
	}
}

// A DSN that does not parse: an error that says so, without the password.
func TestPostgresOpenBadDSN(t *testing.T) {
	const password = "Sup3r-s3cret-PW"
	for _, dsn := range []string{
		"postgres://alice:" + password + "@127.0.0.1:notaport/holds_db",
		"postgres://alice:" + password + "@[::1/holds_db",
		"host=127.0.0.1 port=abc password=" + password,
		"host=127.0.0.1 password='" + password,
		"postgres://alice:" + password + "@127.0.0.1/holds_db?sslmode=nonsense",
	} {
		_, err := store.OpenPostgres(dsn, store.PostgresOptions{Timeout: time.Second})
		if err == nil {
			t.Errorf("OpenPostgres(%q) succeeded", dsn)
			continue
		}
		t.Logf("the operator reads: %s", err)
		if msg := err.Error(); strings.Contains(msg, password) || strings.Contains(msg, "s3cret") || !strings.Contains(msg, "DSN") {
			t.Errorf("OpenPostgres error %q: want the DSN named as the cause and no password", msg)
		}
	}
}

// closedPort returns a loopback port nothing listened on a moment ago.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// The database stopped under a running store, then started again: every
// operation fails with ErrUnavailable (never the password) while it is
// down, and works again once it is back, on the same store; what was
// committed before is all there.
func TestPostgresOutage(t *testing.T) {
	cluster := pgtest.StartCluster(t)
	// The cluster trusts every local connection; the password is there to
	// be kept out of the errors.
	const password = "Sup3r-s3cret-PW"
	dsn := strings.Replace(cluster.DSN, "toolgate@", "toolgate:"+password+"@", 1)
	s := openPostgres(t, dsn, store.PostgresOptions{Timeout: 3 * time.Second})
	ctx := context.Background()
	now := time.Now()
	before := putStep(t, s, 2, now)
	answered, err := s.Claim(ctx, before[0].ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}

	cluster.Stop()
	_, getErr := s.Get(ctx, before[1].ID)
	_, claimErr := s.Claim(ctx, before[1].ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"})
	_, beginErr := s.Begin(ctx, before[0].ID)
	_, unsettledErr := s.Unsettled(ctx, "", 10)
	for name, err := range map[string]error{
		"Get":       getErr,
		"Put":       s.Put(ctx, []store.Hold{newHold(newID(t), newID(t), 0, now)}),
		"Claim":     claimErr,
		"Begin":     beginErr,
		"Settle":    s.Settle(ctx, before[0].ID, "done"),
		"Unsettled": unsettledErr,
	} {
		t.Logf("%s with the database down: %v", name, err)
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with the database down = %v, want ErrUnavailable", name, err)
		} else if strings.Contains(err.Error(), password) {
			t.Errorf("%s with the database down = %q: holds the password", name, err)
		}
	}

	cluster.Start()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := s.Get(ctx, before[1].ID)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Get 30s after the database came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	got, err := s.Get(ctx, before[0].ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.State != store.Answered || got.AnsweredBy != "person-1" || !got.AnsweredAt.Equal(answered.Hold.AnsweredAt) {
		t.Errorf("the claim committed before the outage reads %q by %q at %v", got.State, got.AnsweredBy, got.AnsweredAt)
	}
	c, err := s.Claim(ctx, before[1].ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"})
	if err != nil || !c.Complete {
		t.Fatalf("Claim after the outage: complete %v, %v", c.Complete, err)
	}
	if _, err := s.Begin(ctx, before[0].ID); err != nil {
		t.Errorf("Begin after the outage: %v", err)
	}
}

// Retention runs on one replica at a time: while another session holds
// its lock, a round deletes nothing; once free, one round deletes every
// record past its retention, in batches (more rows than one batch), and
// nothing else.
func TestPostgresRetentionOneAtATime(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	clock := newTestClock()
	s := openPostgres(t, dsn, store.PostgresOptions{
		Schema: schema, Now: clock.Now, Retention: time.Minute,
		RetentionInterval: time.Hour, // rounds run only when the test asks
	})
	ctx := context.Background()

	const steps, perStep = 25, 100 // 2,500 holds: three batches
	for range steps {
		stepID := newID(t)
		holds := make([]store.Hold, perStep)
		for i := range holds {
			holds[i] = newHold(newID(t), stepID, i, clock.Now())
			holds[i].Expires = clock.Now().Add(time.Minute)
		}
		if err := s.Put(ctx, holds); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	live := putStep(t, s, 1, clock.Now())[0] // expires in 30 minutes
	clock.Advance(3 * time.Minute)

	// Another replica's round, in progress: its session holds the lock.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", store.RetentionLockKey(s)); err != nil {
		t.Fatalf("taking the retention lock: %v", err)
	}
	if n, err := store.RetainOnce(s); err != nil || n != 0 {
		t.Errorf("a round while another replica holds the lock deleted %d rows (%v), want 0", n, err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", store.RetentionLockKey(s)); err != nil {
		t.Fatalf("releasing the retention lock: %v", err)
	}

	n, err := store.RetainOnce(s)
	if err != nil {
		t.Fatalf("RetainOnce: %v", err)
	}
	if want := int64(steps*perStep + steps); n != want {
		t.Errorf("a round deleted %d rows, want %d (every hold and step past the retention)", n, want)
	}
	left := pgtest.QueryInt(t, dsn, "SELECT count(*) FROM "+schema+".holds")
	if left != 1 {
		t.Errorf("%d holds left, want the live one", left)
	}
	got, err := s.Get(ctx, live.ID)
	if err != nil {
		t.Fatalf("Get of the live hold: %v", err)
	}
	assertHold(t, got, live)
	// The round gave its lock back.
	var free bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", store.RetentionLockKey(s)).Scan(&free); err != nil || !free {
		t.Errorf("the retention lock after a round: free %v, %v", free, err)
	}
}
