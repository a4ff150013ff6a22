// Package gate decides what happens to a gated tool call: it builds the
// card, stores the hold, takes the person's answer, releases the call, and
// tells the model what happened. It joins the parts (policies, cards,
// store, actions) and knows no wire format: the interceptor adapters call
// it through provider.Holder and provider.Restorer.
package gate

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// DefaultTTL is how long a hold waits for its answer unless the policy or
// the configuration says otherwise (the seed's approvals.ttl).
const DefaultTTL = 30 * time.Minute

// MaxHeld is how many calls of one model response can wait behind one link.
const MaxHeld = 8

// Observer receives the gate's events, for metrics. Every method must be
// cheap and safe for concurrent use. Labels are bounded: the action name
// comes from the policy, outcome from a fixed set.
type Observer interface {
	Held(action string)
	Refused(action, reason string)
	Decided(action, outcome string)
	Ran(action string, status int, d time.Duration)
}

// Config is what a Gate needs.
type Config struct {
	Store   store.Store
	Actions *actions.Client
	// Pages is the base URL of the person's pages, without a trailing
	// slash; a step's link is Pages + "/h/" + step id.
	Pages string
	// TTL is the default hold TTL; DefaultTTL when zero.
	TTL time.Duration
	// Policy returns the policy a hold names by key (its identity,
	// policies.Policy.Identity) as it reads in the running configuration:
	// the same version, or the version its file has now; nil when none.
	Policy   func(key string) *policies.Policy
	Logger   *zap.Logger
	Observer Observer
	// Secret keys the signature of MCP request states.
	Secret []byte
	// PreviousSecrets still verify request states signed before a
	// rotation (nothing is signed with them).
	PreviousSecrets [][]byte
	// Now is the clock; time.Now when nil. It must read like the store's:
	// the sweeper compares it with the times the store stamps.
	Now func() time.Time
	// ActionTimeout is how long one request to the app may take, as the
	// Actions client bounds it (default 10s). The sweeper takes a release
	// that began longer ago than this, plus SweepGrace, for one a crash cut.
	ActionTimeout time.Duration
	// SweepGrace is the sweeper's margin over the time a release may take
	// before it settles what it finds open (default 30s).
	SweepGrace time.Duration
	// NotifyBackoff is the wait before a failed notice is tried again; it
	// doubles after each attempt (default 1s; see notify.go).
	NotifyBackoff time.Duration
	// Context is the life of the gate's background work (Caddy's context);
	// releases in flight are cancelled when it ends or Stop gives up on
	// them. Default: never ends.
	Context context.Context
}

// Gate is safe for concurrent use.
type Gate struct {
	cfg     Config
	log     *zap.Logger
	life    context.Context // ends when the gate stops: in-flight releases are cancelled
	stop    context.CancelFunc
	track   tracker  // releases in flight
	wake    waiters  // streams of this process waiting for steps (Front.Await)
	notices notifier // notices on their way (notify.go)
	// sealSecret derives the keys of sealed values (seal.go): the
	// configured Secret, or without one a random key of this process only
	// (what it sealed cannot be read after a restart or on a replica).
	sealSecret []byte
	// linkPrefix is LinkPrefix's answer, built once: every request on a
	// gated route is searched for it.
	linkPrefix string
}

// New returns a Gate.
func New(cfg Config) *Gate {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.ActionTimeout <= 0 {
		cfg.ActionTimeout = 10 * time.Second
	}
	if cfg.SweepGrace <= 0 {
		cfg.SweepGrace = 30 * time.Second
	}
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	cfg.Pages = strings.TrimRight(cfg.Pages, "/")
	cfg.Store = audited{cfg.Store} // every change of a hold carries its audit event (audit.go)
	g := &Gate{cfg: cfg, log: log, sealSecret: cfg.Secret, linkPrefix: cfg.Pages + "/h/"}
	if len(g.sealSecret) == 0 {
		g.sealSecret = make([]byte, 32)
		_, _ = rand.Read(g.sealSecret) // never fails (crypto/rand)
	}
	g.life, g.stop = context.WithCancel(cfg.Context)
	g.track.idle = make(chan struct{})
	return g
}

// Stop refuses new releases (their holds stay Answered for the next
// start's sweeper), waits up to wait for those in flight to finish and
// settle, then cancels any still running: their requests end with an
// unknown outcome. It reports whether every release finished in time.
func (g *Gate) Stop(wait time.Duration) bool {
	drained := g.track.close(wait)
	g.stop()
	return drained
}

// tracker counts releases in flight, so Stop can wait for them.
type tracker struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // closed when closed and n reaches 0
}

// add counts a new release; false once the gate is stopping.
func (t *tracker) add() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.n++
	return true
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.closed && t.n == 0 {
		close(t.idle)
	}
}

// close stops new releases and waits up to wait for the others.
func (t *tracker) close(wait time.Duration) bool {
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		if t.n == 0 {
			close(t.idle)
		}
	}
	t.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-t.idle:
		return true
	case <-timer.C:
		return false
	}
}

// LinkPrefix is what every link to a step starts with; a request history
// holding it may refer to a hold.
func (g *Gate) LinkPrefix() string { return g.linkPrefix }

// Link is the page of a step.
func (g *Gate) Link(stepID string) string { return g.LinkPrefix() + stepID }

// Person is who a conversation belongs to, or (on the pages) who is
// signed in: Owner is then their id, and Roles their roles, which name
// them among an action's approvers.
type Person struct {
	Owner  string
	Tenant string
	Roles  []string // the pages only; nil elsewhere
}

func (p Person) caller() actions.Caller { return actions.Caller{Person: p.Owner, Tenant: p.Tenant} }

// owns reports whether h is this person's: the same owner (never empty)
// in the same tenant. (tenant, owner) is the identity everywhere.
func (p Person) owns(h store.Hold) bool {
	return p.Owner != "" && h.Owner == p.Owner && h.Tenant == p.Tenant
}

// Errors of the answer path. Pages map them to statuses with Status.
var (
	ErrNotFound = errors.New("no such hold")
	ErrNotOwner = errors.New("the hold belongs to another person")
	ErrBadToken = errors.New("invalid form token")
	ErrChoice   = errors.New("unknown answer")
	// ErrFourEyes: the owner confirming their own call where the policy
	// says four_eyes; one of the approvers must.
	ErrFourEyes = errors.New("the owner may not confirm their own call (four_eyes)")
)

type nopObserver struct{}

func (nopObserver) Held(string)                    {}
func (nopObserver) Refused(string, string)         {}
func (nopObserver) Decided(string, string)         {}
func (nopObserver) Ran(string, int, time.Duration) {}
