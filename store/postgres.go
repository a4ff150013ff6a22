package store

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// Defaults of PostgresOptions.
const (
	DefaultPostgresSchema    = "toolgate"
	DefaultRetentionInterval = time.Minute
	DefaultPostgresTimeout   = 10 * time.Second
	// defaultPoolSize is the pool's size when the DSN sets no
	// pool_max_conns: a claim holds its connection for a commit (a disk
	// flush), so answers in parallel need connections in parallel.
	defaultPoolSize = 16
	// defaultConnectTimeout bounds one connection attempt when the DSN
	// sets no connect_timeout: an unreachable host fails an operation in
	// seconds instead of at the operating system's TCP timeout.
	defaultConnectTimeout = 5 * time.Second
)

// PostgresOptions configure OpenPostgres. The zero value is usable.
type PostgresOptions struct {
	// Schema is the PostgreSQL schema that holds the store's tables; it is
	// created (when missing) and upgraded at open. Replicas that share
	// holds use the same database and schema. It replaces any search_path
	// the DSN sets. Default: "toolgate".
	Schema string
	// Retention is how long a record is kept after its hold's Expires, so a
	// late request (or a person opening an old link) still reads the
	// outcome instead of "not found". Default: 24h.
	Retention time.Duration
	// RetentionInterval is how often the store deletes records past their
	// retention (in batches of 1,000 rows, one replica at a time).
	// Default: 1m.
	RetentionInterval time.Duration
	// Timeout bounds one operation, waiting for a connection included:
	// past it the operation fails with ErrUnavailable (the gate then fails
	// closed). It also bounds the open (connecting and upgrading the
	// schema). Default: 10s.
	Timeout time.Duration
	// Now, when set, is the store clock, passed to every statement in
	// place of the database's now(). For tests only: in production the
	// database's clock decides expiry, so replicas whose clocks differ
	// still agree on it.
	Now func() time.Time
	// Logger receives the retention loop's lines (what it deleted at
	// debug, failures as warnings). May be nil.
	Logger *zap.Logger
	// MaxWaiting caps the holds waiting for one (tenant, owner), exactly,
	// across every replica: see BadgerOptions.MaxWaiting. Default: 0, no
	// cap.
	MaxWaiting int
	// AuditRetention is how long an entry of the audit log is kept: see
	// BadgerOptions.AuditRetention (pruned by the retention loop, every
	// RetentionInterval). Default: 90 days. Negative: never pruned.
	AuditRetention time.Duration
}

// Postgres is the Store shared by several processes: holds in PostgreSQL
// tables (pgschema/*.sql), reached through a pool of connections (pgx).
// Any number of replicas open it on one database and schema and behave as
// one store; each guarantee is one atomic statement or one transaction in
// the database (see the package doc), never a replica's memory.
//
// Time. Expiry is decided by the database's clock: every statement that
// compares a hold's Expires with "now" reads now() in the database, so
// clock skew between replicas does not matter for expiry (a replica's own
// clock only sets Expires when it holds a call, as created + TTL, and
// stamps what its pages show). AnsweredAt, StartedAt and the filing time
// of the step index come from the same clock. PostgresOptions.Now replaces
// it, as a statement parameter, in tests.
//
// Faults. The pool reconnects by itself: while the database is
// unreachable every operation fails with an error wrapping
// ErrUnavailable, after at most the Timeout, and once it is back the next
// operation succeeds. A Put, Claim, Begin or Settle that returned nil is
// committed; one that failed with ErrUnavailable may have committed or
// not (the connection broke around the commit): nothing is lost, and a
// claim that did commit is found by its next Claim (ErrAnswered) and by
// the gate's sweeper.
//
// Connections must reach PostgreSQL directly or through a session-pooling
// proxy: the store uses prepared statements and session advisory locks,
// which a transaction-pooling proxy (PgBouncer's transaction mode) breaks.
type Postgres struct {
	pool       *pgxpool.Pool
	schema     string // the schema's name, as given
	target     string // where the DSN points, for messages (dsnTarget)
	retention  time.Duration
	timeout    time.Duration
	now        func() time.Time // nil: the database's clock
	maxWaiting int
	logger     *zap.Logger

	retentionKey   int64         // the advisory lock of the retention loop
	auditRetention time.Duration // PostgresOptions.AuditRetention; negative: never pruned
	chainWake      chan struct{} // an append wakes the chain loop (buffered, one)
	chainDone      chan struct{} // closed by the chain loop when it has returned

	closed   atomic.Bool
	stop     context.CancelFunc // cancels loopCtx: the retention loop returns
	loopCtx  context.Context
	done     chan struct{} // closed by the retention loop when it has returned
	stopOnce sync.Once
}

// OpenPostgres connects to the database named by dsn (a URL,
// postgres://user:password@host:port/database?sslmode=require, or
// key=value pairs; see pgx), creates or upgrades the store's schema and
// starts the retention loop. An unreachable database fails within the
// Timeout with an error naming the DSN's hosts, ports, database and user,
// never its password.
func OpenPostgres(dsn string, opts PostgresOptions) (*Postgres, error) {
	switch {
	case opts.Retention < 0:
		return nil, fmt.Errorf("opening postgres: negative retention %v", opts.Retention)
	case opts.RetentionInterval < 0:
		return nil, fmt.Errorf("opening postgres: negative retention interval %v", opts.RetentionInterval)
	case opts.Timeout < 0:
		return nil, fmt.Errorf("opening postgres: negative timeout %v", opts.Timeout)
	case opts.MaxWaiting < 0:
		return nil, fmt.Errorf("opening postgres: negative max waiting %d", opts.MaxWaiting)
	}
	if opts.Schema == "" {
		opts.Schema = DefaultPostgresSchema
	}
	if opts.Retention == 0 {
		opts.Retention = DefaultRetention
	}
	if opts.RetentionInterval == 0 {
		opts.RetentionInterval = DefaultRetentionInterval
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultPostgresTimeout
	}
	if opts.AuditRetention == 0 {
		opts.AuditRetention = DefaultAuditRetention
	}
	logger := opts.Logger
	if logger == nil {
		logger = zap.NewNop()
	}

	cfg, err := parseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("opening postgres: %w", err)
	}
	// The target is redacted too: in a DSN that reads two ways, what pgx
	// took for the database may be what the operator meant as a password.
	target := redact(dsnTarget(&cfg.ConnConfig.Config), dsn)
	schema := pgx.Identifier{opts.Schema}.Sanitize()
	if len(opts.Schema) > 63 {
		return nil, fmt.Errorf("opening postgres %s: schema name longer than 63 bytes", target)
	}
	// Every statement names its tables unqualified: the search path is
	// the store's schema alone (pg_catalog is always searched first).
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "toolgate"
	}

	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("opening postgres %s: %s", target, redact(err.Error(), dsn))
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	if err := migrate(ctx, pool, opts.Schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("opening postgres %s: %s", target, redact(err.Error(), dsn))
	}

	loopCtx, stop := context.WithCancel(context.Background())
	p := &Postgres{
		pool:         pool,
		schema:       opts.Schema,
		target:       target,
		retention:    opts.Retention,
		timeout:      opts.Timeout,
		now:          opts.Now,
		maxWaiting:   opts.MaxWaiting,
		logger:       logger,
		retentionKey: lockKey(opts.Schema, "retention"),
		stop:         stop,
		loopCtx:      loopCtx,
		done:         make(chan struct{}),

		auditRetention: opts.AuditRetention,
		chainWake:      make(chan struct{}, 1),
		chainDone:      make(chan struct{}),
	}
	go p.retain(opts.RetentionInterval)
	go p.chainLoop()
	p.wakeChainer() // what was left pending
	return p, nil
}

// Target names the database the store uses, for logs: its hosts and ports,
// database and user; never the password.
func (p *Postgres) Target() string { return p.target }

// parseDSN reads a DSN into a pool configuration with the store's
// defaults. Its error never holds the password: pgx's own is best effort,
// and the text of a URL error repeats the URL, so it is redacted again.
func parseDSN(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("reading the DSN: %s", redact(err.Error(), dsn))
	}
	// pgxpool fills in its default size when the DSN sets none, so only
	// the DSN's text tells whether it did; a password that happens to
	// hold these words only leaves pgx's default.
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = defaultPoolSize
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	return cfg, nil
}

// Close stops the retention and chain loops (waiting for a round in
// progress to end) and closes the pool. Events still pending stay in the
// database: another replica, or the next start, chains them. Closing twice is harmless; every call after
// Close fails with ErrUnavailable.
func (p *Postgres) Close() error {
	p.stopOnce.Do(func() {
		p.closed.Store(true)
		p.stop()
		<-p.done
		<-p.chainDone
		p.pool.Close()
	})
	return nil
}

// lockKey is an advisory lock's key: PostgreSQL has one space of them per
// database, so the key names the schema and what the lock is for.
func lockKey(schema string, parts ...string) int64 {
	h := fnv.New64a()
	h.Write([]byte("toolgate\x00" + schema))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return int64(h.Sum64())
}

// dbNow is the store clock inside a statement: the parameter when the
// store has a test clock, else the database's now() (the transaction's
// start), in nanoseconds since the epoch. %d is the parameter's number.
const dbNow = "coalesce($%d::bigint, (extract(epoch from now()) * 1000000000)::bigint)"

// nowParam is the parameter dbNow reads: NULL (the database's clock) or
// the test clock.
func (p *Postgres) nowParam() any {
	if p.now == nil {
		return nil
	}
	return p.now().UnixNano()
}

// dbError marks an error of the database or of the connection to it, as
// opposed to the store's own refusals (ErrNotFound, a bad Put, ...).
type dbError struct{ err error }

func (e dbError) Error() string { return e.err.Error() }
func (e dbError) Unwrap() error { return e.err }

// db marks err as the database's (nil stays nil).
func db(err error) error {
	if err == nil {
		return nil
	}
	return dbError{err}
}

// attempts bounds how often run tries an operation whose failure is safe
// to retry: a deadlock or serialization failure PostgreSQL rolled back, a
// request the connection never sent, or any failure of a read.
const attempts = 3

// run runs one operation with the store's timeout. fn returns the store's
// refusals as they are and the database's errors marked by db; run retries
// what is safe to retry and turns the rest into ErrUnavailable, or into
// the caller's own context error when that is why it failed. read says fn
// changes nothing, so any failure of it may be retried.
func (p *Postgres) run(ctx context.Context, what string, read bool, fn func(ctx context.Context) error) error {
	if p.closed.Load() {
		return fmt.Errorf("%s: %w: the store is closed", what, ErrUnavailable)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	opCtx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var err error
	for attempt := 1; ; attempt++ {
		err = fn(opCtx)
		var de dbError
		if !errors.As(err, &de) {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("%s: %w", what, cerr)
		}
		if p.closed.Load() {
			return fmt.Errorf("%s: %w: the store is closed", what, ErrUnavailable)
		}
		if opCtx.Err() != nil {
			return fmt.Errorf("%s: %w: no answer from postgres %s within %v: %w", what, ErrUnavailable, p.target, p.timeout, de.err)
		}
		if attempt < attempts && retryable(de.err, read) {
			continue
		}
		return fmt.Errorf("%s: %w: postgres %s: %w", what, ErrUnavailable, p.target, de.err)
	}
}

// retryable reports whether a failed statement may run again: the server
// rolled its transaction back for a conflict, nothing was sent, or it only
// read.
func retryable(err error, read bool) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40P01" || pe.Code == "40001" // deadlock_detected, serialization_failure
	}
	return read || pgconn.SafeToRetry(err)
}

// isUniqueViolation reports whether err is PostgreSQL's unique_violation.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// Stats reports the bytes the store's tables take in the database, with
// their indexes and TOAST tables (pg_total_relation_size).
func (p *Postgres) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := p.run(ctx, "reading store size", true, func(ctx context.Context) error {
		return db(p.pool.QueryRow(ctx, `
			SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relkind = 'r'`, p.schema).Scan(&st.Bytes))
	})
	return st, err
}

// Interface guards
var _ Store = (*Postgres)(nil)
