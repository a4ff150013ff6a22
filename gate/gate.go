// Package gate decides what happens to a gated tool call: it builds the
// card, stores the hold, takes the person's answer, releases the call, and
// tells the model what happened. It joins the parts (policies, cards,
// store, actions) and knows no wire format: the interceptor adapters call
// it through interceptor.Holder and interceptor.Restorer.
package gate

import (
	"errors"
	"strings"
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
	// Policy returns the policy loaded under key (its file path) in the
	// running configuration, or nil.
	Policy   func(key string) *policies.Policy
	Logger   *zap.Logger
	Observer Observer
	// Secret keys the signature of MCP request states.
	Secret []byte
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Gate is safe for concurrent use.
type Gate struct {
	cfg Config
	log *zap.Logger
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
	cfg.Pages = strings.TrimRight(cfg.Pages, "/")
	return &Gate{cfg: cfg, log: log}
}

// LinkPrefix is what every link to a step starts with; a request history
// holding it may refer to a hold.
func (g *Gate) LinkPrefix() string { return g.cfg.Pages + "/h/" }

// Link is the page of a step.
func (g *Gate) Link(stepID string) string { return g.LinkPrefix() + stepID }

// Person is who a conversation belongs to.
type Person struct {
	Owner  string
	Tenant string
}

func (p Person) caller() actions.Caller { return actions.Caller{Person: p.Owner, Tenant: p.Tenant} }

// Errors of the answer path. Pages map them to statuses with Status.
var (
	ErrNotFound = errors.New("no such hold")
	ErrNotOwner = errors.New("the hold belongs to another person")
	ErrBadToken = errors.New("invalid form token")
	ErrChoice   = errors.New("unknown answer")
)

type nopObserver struct{}

func (nopObserver) Held(string)                    {}
func (nopObserver) Refused(string, string)         {}
func (nopObserver) Decided(string, string)         {}
func (nopObserver) Ran(string, int, time.Duration) {}
