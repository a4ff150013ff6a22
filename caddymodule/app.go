// Package caddymodule is Toolgate's Caddy glue: the `toolgate` app that
// owns the store, the `http.handlers.toolgate` handler on model traffic,
// and the `http.handlers.toolgate_pages` handler for the person's pages.
// It holds no gating logic: it configures and routes to the gate, and asks
// the registered wire protocols (package provider; the blank imports in
// providers.go) which paths they serve, what they refuse and where a
// request's owner and tools are.
package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/pages"
	"github.com/toolgate/toolgate/store"
)

func init() {
	caddy.RegisterModule(App{})
}

// stores keeps each open store by its key (storeKey: a Badger directory's
// clean path, or a PostgreSQL DSN), so a config reload (which starts the
// new app before stopping the old one) reuses the open database instead
// of hitting Badger's directory lock or opening a second pool.
var stores = caddy.NewUsagePool()

// App is the `toolgate` app: it owns the store of holds, opened once and
// shared by every Toolgate handler, and kept across config reloads. It is
// configured in the Caddyfile's global options (`toolgate { ... }`).
type App struct {
	// Store is the directory of the embedded Badger store of holds, for a
	// gate on one machine. Default: "toolgate" in Caddy's data directory.
	// Placeholders such as {env.X} are resolved at load.
	Store string `json:"store,omitempty"`

	// Postgres, instead of Store, keeps the holds in a PostgreSQL database
	// that several replicas share: any number of them with the same
	// Postgres, Secret, Pages and policies behave as one gate (a hold made
	// on one is viewed, answered and restored on any, and runs once). It
	// is a DSN, postgres://user:password@host:port/database?sslmode=verify-full
	// or key=value pairs; write it as a placeholder such as
	// {env.TOOLGATE_DATABASE_URL} rather than into the config. Pool
	// settings go in the DSN (pool_max_conns, default 16; connect_timeout,
	// default 5s).
	//
	// The store's tables live in the schema "toolgate", created or
	// upgraded at start under an advisory lock (replicas starting together
	// wait for each other). The database is connected to at start, never
	// by `caddy validate`; unreachable then, the start fails naming its
	// host, port and database (never the password). Unreachable later,
	// gated calls are refused and the person's pages answer 503 until it is
	// back, which needs no restart. Expiry is decided by the database's
	// clock.
	Postgres string `json:"postgres,omitempty"`

	// Secret keys the HMAC signature on every request the gate sends to
	// an app, and the person's form tokens. Required, at least 16 bytes;
	// use a placeholder such as {env.TOOLGATE_SECRET} rather than writing
	// it into the config.
	Secret string `json:"secret,omitempty"`

	// PreviousSecrets are secrets being rotated out, each at least 16
	// bytes: what they signed (the person's page tokens, MCP
	// requestStates) is still taken, and every request to an app carries
	// a signature by each of them beside the one by Secret, so an app
	// still on an old secret verifies it. Nothing new is signed with them
	// alone. Remove them one TTL (ttl, or an MCP route's state_ttl if
	// longer) after every replica runs the new Secret.
	//
	// The store records a fingerprint of the secrets in use (never the
	// secrets): a start whose Secret and PreviousSecrets all differ from
	// the recorded ones is refused, so a replica with another secret
	// cannot join the others on the same store. See docs/operations.md,
	// "Secret rotation".
	PreviousSecrets []string `json:"previous_secrets,omitempty"`

	// Pages is the absolute base URL under which the `toolgate_pages`
	// handler is reachable for the person, e.g.
	// "https://gate.example.com/toolgate". Links are Pages + "/h/" + id.
	// Required.
	Pages string `json:"pages,omitempty"`

	// TTL is how long a hold waits for the person's answer unless the
	// policy gives the action its own. Default: 30m.
	TTL caddy.Duration `json:"ttl,omitempty"`

	// Retention is how long a hold's record is kept after its TTL, so a
	// late request still reads its outcome. Default: 24h.
	Retention caddy.Duration `json:"retention,omitempty"`

	// ActionTimeout bounds each request to the app (the record GET and the
	// release). A release runs on when the person closes the page; one
	// the app does not answer within it is told as unknown ("it may or may
	// not have run; nothing was retried"), never sent again. A config
	// reload or stop waits for releases in flight, up to twice this plus
	// 5s. Default: 10s.
	ActionTimeout caddy.Duration `json:"action_timeout,omitempty"`

	// MaxWaiting caps the holds waiting for one person's answer, counted
	// per (tenant, owner). A model response whose held calls would take
	// the person over it has every call refused: the model reads "too many
	// of this person's requests are already waiting for their answer;
	// nothing ran." (refusals metric reason "too_many_waiting"). A hold
	// stops counting once answered or expired. Default: 100; negative: no
	// cap (the Caddyfile's `max_waiting 0`). It is read when the store is
	// opened: a reload that changes it takes effect at the next start.
	MaxWaiting int `json:"max_waiting,omitempty"`

	// AuditRetention is how long an entry of the audit log (every event
	// of every hold's life: see docs/operations.md, "Audit trail") is kept, by
	// the time of its event. Older entries are pruned from the chain's
	// start, and the chain then verifies from the last one pruned.
	// Default: 2160h (90 days); negative (the Caddyfile's
	// `audit_retention forever`): never pruned. Like MaxWaiting it is read
	// when the store is opened.
	AuditRetention caddy.Duration `json:"audit_retention,omitempty"`

	// PolicyPoll is how often the policy files the handlers load are
	// checked for edits. An edited file takes effect on its own, without
	// a config reload (Caddy skips a reload whose config is unchanged):
	// once two reads one poll apart agree and it loads, its new version
	// is used for new calls, and holds made under the old one are judged
	// as after a reload (an action whose version changed runs nothing).
	// A file that does not load is logged, and the policy before it
	// stays. Default: 2s; negative (the Caddyfile's `policy_poll off`):
	// not watched.
	PolicyPoll caddy.Duration `json:"policy_poll,omitempty"`

	// SweepInterval is how often the sweeper ends what a crash, a stop or
	// a store outage left open: a release cut mid-run is settled as
	// unknown (never run again), an answered step whose release never
	// began is released, a step whose last waiting hold expired beside
	// answered ones is completed. It also runs once at start. Default: 1m.
	SweepInterval caddy.Duration `json:"sweep_interval,omitempty"`

	secret   []byte
	previous [][]byte // PreviousSecrets, placeholders resolved
	dir      string   // the Badger directory; "" when dsn is set
	dsn      string   // the PostgreSQL DSN, placeholders resolved
	ctx      caddy.Context
	gate     *gate.Gate
	pages    *pages.Pages
	logger   *zap.Logger
	metrics  *metrics
	live     *live
}

// live is the app's state that changes while it runs.
type live struct {
	mu sync.RWMutex
	db store.Store // set in Start, cleared in Stop

	polMu sync.RWMutex
	files map[string]*policyFile // by clean path (policyfiles.go)

	stopLoop  context.CancelFunc // ends the sweeper loop and the policy watcher (set in Start)
	loopDone  chan struct{}      // closed when the loop has ended
	watchDone chan struct{}      // closed when the policy watcher has ended (nil: not watching)

	started     chan struct{} // closed once Start has set db, or by Stop
	startedOnce sync.Once
}

// markStarted wakes the operations waiting for Start (see appStore).
func (l *live) markStarted() { l.startedOnce.Do(func() { close(l.started) }) }

// DefaultMaxWaiting is MaxWaiting's default.
const DefaultMaxWaiting = 100

// statsInterval is how often the store's size is sampled for its gauge.
const statsInterval = 15 * time.Second

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "toolgate", New: func() caddy.Module { return new(App) }}
}

// Provision resolves placeholders and builds the gate. It opens nothing,
// so `caddy validate` never takes the store's lock.
func (a *App) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
	a.live = &live{started: make(chan struct{})}
	a.resolve()
	if a.TTL == 0 {
		a.TTL = caddy.Duration(gate.DefaultTTL)
	}
	if a.Retention == 0 {
		a.Retention = caddy.Duration(24 * time.Hour)
	}
	if a.ActionTimeout == 0 {
		a.ActionTimeout = caddy.Duration(10 * time.Second)
	}
	if a.MaxWaiting == 0 {
		a.MaxWaiting = DefaultMaxWaiting
	}
	if a.SweepInterval == 0 {
		a.SweepInterval = caddy.Duration(time.Minute)
	}
	if a.PolicyPoll == 0 {
		a.PolicyPoll = caddy.Duration(DefaultPolicyPoll)
	}
	a.ctx = ctx
	m, err := newMetrics(ctx.GetMetricsRegistry())
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	a.metrics = m
	a.gate = gate.New(gate.Config{
		Store:   (*appStore)(a),
		Actions: &actions.Client{Secret: a.secret, Previous: a.previous, Timeout: time.Duration(a.ActionTimeout)},
		Secret:  a.secret,

		PreviousSecrets: a.previous,
		Pages:           a.Pages,
		TTL:             time.Duration(a.TTL),
		Policy:          a.policy,
		Logger:          a.logger,
		Observer:        m,
		Context:         ctx,

		ActionTimeout: time.Duration(a.ActionTimeout),
	})
	a.pages = &pages.Pages{Gate: a.gate, Secret: a.secret, Previous: a.previous, Logger: a.logger}
	return nil
}

// resolve fills in the placeholders of the secret, the pages URL and the
// store (Provision, and Preflight before Caddy starts).
func (a *App) resolve() {
	repl := caddy.NewReplacer()
	a.secret = []byte(repl.ReplaceAll(a.Secret, ""))
	a.previous = nil
	for _, p := range a.PreviousSecrets {
		a.previous = append(a.previous, []byte(repl.ReplaceAll(p, "")))
	}
	a.Pages = repl.ReplaceAll(a.Pages, "")
	a.dir, a.dsn = storeLocation(repl, a.Store, a.Postgres)
}

// Validate checks the configuration. Its messages say the fix: `toolgate
// run` prints them as a plain line before Caddy's log (Preflight).
func (a *App) Validate() error {
	if len(a.secret) < 16 {
		return errors.New("toolgate: " + secretProblem(a.Secret, a.secret))
	}
	for i, p := range a.previous {
		if len(p) < 16 {
			return fmt.Errorf("toolgate: previous_secrets[%d] must be at least 16 bytes (is its environment variable set?)", i)
		}
	}
	if a.Pages == "" {
		return errors.New("toolgate: pages is not set: give the toolgate global option `pages <absolute URL>`, the base URL the toolgate_pages handler answers under (e.g. pages https://gate.example.com/toolgate)")
	}
	if err := checkBaseURL(a.Pages); err != nil {
		return fmt.Errorf("toolgate: pages: %w", err)
	}
	if a.Postgres != "" && a.Store != "" {
		return errors.New("toolgate: store: give a Badger directory or a PostgreSQL DSN, not both")
	}
	if a.Postgres != "" && a.dsn == "" {
		// The placeholder resolved to nothing: never fall back to a store
		// of this machine's own, which the other replicas would not see.
		return fmt.Errorf("toolgate: store postgres: the DSN %q is empty once resolved (is the environment variable set?)", a.Postgres)
	}
	if a.TTL < 0 || a.Retention < 0 || a.ActionTimeout < 0 || a.SweepInterval < 0 {
		return errors.New("toolgate: durations must not be negative")
	}
	return nil
}

// Start opens the store, or shares the one a previous config opened, and
// starts the sweeper (one pass now, then every SweepInterval) and the
// store's size gauge.
//
// With PostgreSQL the sweeper runs on every replica, which is safe: it
// ends a hold only through the store's single-winner operations (Claim,
// Begin, Settle), so two replicas sweeping the same hold never run it
// twice; and it never takes the store for its own (a release in flight
// on another replica is left the time a release may take).
func (a *App) Start() error {
	v, loaded, err := stores.LoadOrNew(a.storeKey(), a.openStore)
	if err != nil {
		a.live.markStarted() // what waits for the store fails closed now
		return fmt.Errorf("toolgate: opening store: %w", err)
	}
	db := v.(pooledStore).Store
	if err := a.checkSecrets(db); err != nil {
		a.live.markStarted()
		_, _ = stores.Delete(a.storeKey())
		return err
	}
	a.live.mu.Lock()
	a.live.db = db
	a.live.mu.Unlock()
	a.live.markStarted()
	setRunning(a) // the admin API's app (admin.go)
	if p, ok := db.(*store.Postgres); ok {
		a.logger.Info("store ready", zap.String("postgres", p.Target()), zap.Bool("reused", loaded))
	} else {
		a.logger.Info("store ready", zap.String("path", a.dir), zap.Bool("reused", loaded))
	}
	ctx, cancel := context.WithCancel(a.ctx)
	a.live.stopLoop, a.live.loopDone = cancel, make(chan struct{})
	// Only a Badger this app opened is nobody else's: a shared database
	// may have releases in flight on other replicas.
	go a.background(ctx, a.live.loopDone, !loaded && a.dsn == "")
	if a.PolicyPoll > 0 {
		a.live.watchDone = make(chan struct{})
		go a.watchPolicies(ctx, a.live.watchDone)
	}
	return nil
}

// checkSecrets refuses a start whose secrets match none of those the
// store records (store.SecretKeeper): another replica on the same store
// signs with another secret. It then records this config's.
func (a *App) checkSecrets(db store.Store) error {
	k, ok := db.(store.SecretKeeper)
	if !ok {
		return nil // a store of a test's own
	}
	fps := []string{store.SecretFingerprint(a.secret)}
	for _, p := range a.previous {
		fps = append(fps, store.SecretFingerprint(p))
	}
	ctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
	defer cancel()
	if err := k.CheckSecrets(ctx, fps); err != nil {
		return fmt.Errorf("toolgate: secret: %w", err)
	}
	return nil
}

// storeLocation is where the store of an app configured with these
// Store and Postgres values lives, placeholders resolved: a Badger
// directory (clean; Caddy's data directory by default), or a DSN.
func storeLocation(repl *caddy.Replacer, dirConfig, dsnConfig string) (dir, dsn string) {
	if dsnConfig != "" {
		return "", repl.ReplaceAll(dsnConfig, "")
	}
	dir = repl.ReplaceAll(dirConfig, "")
	if dir == "" {
		dir = filepath.Join(caddy.AppDataDir(), "toolgate")
	}
	return filepath.Clean(dir), ""
}

// storeKey keys the app's store in the stores pool.
func (a *App) storeKey() string {
	if a.dsn != "" {
		return "postgres\x00" + a.dsn
	}
	return "badger\x00" + a.dir
}

// openStore opens the store the config names.
func (a *App) openStore() (caddy.Destructor, error) {
	if a.dsn != "" {
		db, err := store.OpenPostgres(a.dsn, store.PostgresOptions{
			Retention:  time.Duration(a.Retention),
			MaxWaiting: max(a.MaxWaiting, 0),
			Logger:     a.logger.Named("postgres"),

			AuditRetention: time.Duration(a.AuditRetention),
		})
		if err != nil {
			return nil, err
		}
		return pooledStore{db}, nil
	}
	db, err := store.OpenBadger(a.dir, store.BadgerOptions{
		Retention:  time.Duration(a.Retention),
		MaxWaiting: max(a.MaxWaiting, 0),
		Logger:     a.logger.Named("badger"),

		AuditRetention: time.Duration(a.AuditRetention),
	})
	if err != nil {
		return nil, err
	}
	return pooledStore{db}, nil
}

// Stop ends the sweeper, waits for releases in flight (up to twice the
// action timeout plus 5s; the rest are cut and the next start's sweeper
// settles them as unknown), and lets go of the store; the last config to
// use it closes it.
func (a *App) Stop() error {
	clearRunning(a)
	if a.live.stopLoop != nil {
		a.live.stopLoop()
	}
	if !a.gate.Stop(2*time.Duration(a.ActionTimeout) + 5*time.Second) {
		a.logger.Warn("stopping: releases still running were cut; the sweeper settles them at the next start")
	}
	if a.live.loopDone != nil {
		select {
		case <-a.live.loopDone:
		case <-time.After(5 * time.Second):
			a.logger.Error("stopping: the sweeper did not end")
		}
	}
	if a.live.watchDone != nil {
		<-a.live.watchDone // a poll reads one small file at a time
	}
	a.live.mu.Lock()
	a.live.db = nil
	a.live.mu.Unlock()
	a.live.markStarted() // nothing waits for a Start that will not come
	_, err := stores.Delete(a.storeKey())
	return err
}

// background runs the sweeper and samples the store's size until ctx
// ends, then closes done. opened says this app opened the store (no
// earlier config shares it): nothing of it can be in flight.
func (a *App) background(ctx context.Context, done chan<- struct{}, opened bool) {
	defer close(done)
	a.sweep(ctx, opened)
	a.sampleStore(ctx)
	sweep := time.NewTicker(time.Duration(a.SweepInterval))
	defer sweep.Stop()
	stats := time.NewTicker(statsInterval)
	defer stats.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sweep.C:
			a.sweep(ctx, false)
		case <-stats.C:
			a.sampleStore(ctx)
		}
	}
}

func (a *App) sweep(ctx context.Context, afterOpen bool) {
	if err := a.gate.Sweep(ctx, afterOpen); err != nil && ctx.Err() == nil {
		a.logger.Error("sweeping open holds", zap.Error(err))
	}
}

func (a *App) sampleStore(ctx context.Context) {
	st, err := (*appStore)(a).Stats(ctx)
	if err != nil {
		if ctx.Err() == nil {
			a.logger.Warn("reading the store's size", zap.Error(err))
		}
		return
	}
	a.metrics.storeBytes.Set(float64(st.Bytes))
}

type pooledStore struct{ store.Store }

func (p pooledStore) Destruct() error { return p.Close() }

// Interface guards
var (
	_ caddy.App         = (*App)(nil)
	_ caddy.Provisioner = (*App)(nil)
	_ caddy.Validator   = (*App)(nil)
)
