package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// The gate's own tests run it against a real Badger store (in memory, or
// on disk where a restart matters), a fake app over real HTTP
// (testkit.App) and a clock shared by the gate and the store.

const testSecret = "test-secret-0123456789abcdef"

// testPolicy has a destructive card action with a record, and a write
// action asked for with a form. APP is the fake app's URL.
const testPolicy = "app: Test blog\nactions:\n" + testkit.DeletePostAction + `  draft_post:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        title: {type: string, title: Title}
        body: {type: string, title: Body}
      required: [title, body]
    run:
      url: APP/drafts
    reply: Drafted.
`

// events counts the gate's observer events.
type events struct {
	mu       sync.Mutex
	refused  map[string]int // reason → count
	decided  map[string]int // decision → count
	runsSeen int
	// auditFailed counts audit events not appended, by kind
	auditFailed map[string]int
}

func (e *events) Held(string) {}
func (e *events) Refused(_, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refused[reason]++
}
func (e *events) Decided(_, d string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.decided[d]++
}
func (e *events) Ran(string, int, time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runsSeen++
}

// AuditFailed counts audit events the gate could not append.
func (e *events) AuditFailed(kind string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.auditFailed == nil {
		e.auditFailed = map[string]int{}
	}
	e.auditFailed[kind]++
}

func (e *events) refusals(reason string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.refused[reason]
}

// rig is one gate with its store, fake app, policy and clock.
type rig struct {
	t       testing.TB
	clock   *testkit.Clock
	app     *testkit.App
	policy  *policies.Policy
	db      store.Store
	gate    *Gate
	events  *events
	timeout time.Duration
	dir     string // the store's directory ("" in memory)
	pg      string // the store's PostgreSQL database ("" Badger)
	opts    store.BadgerOptions
	wrap    func(store.Store) store.Store // what the gate sees of the store (nil: the store)
	actions *actions.Client               // one for the rig's life: its pooled connections outlive restarts
	// routes are the policies of other routes, by key; any other key
	// reads policy.
	routes map[string]*policies.Policy
	mu     sync.Mutex // guards policy against the gate's readers while reload swaps it
}

type rigOptions struct {
	disk          bool                          // a store on disk (restarts keep it)
	wrap          func(store.Store) store.Store // what the gate sees of the store
	maxWaiting    int                           // the store's cap
	actionTimeout time.Duration                 // default 2s
	postgres      bool                          // a PostgreSQL database of its own (TOOLGATE_TEST_POSTGRES), the rig's clock as the store's
}

func newRig(t testing.TB, o rigOptions) *rig {
	t.Helper()
	r := &rig{t: t, clock: testkit.NewClock(time.Date(2031, 5, 4, 10, 0, 0, 0, time.UTC)), app: testkit.NewApp(t, []byte(testSecret)), events: &events{refused: map[string]int{}, decided: map[string]int{}}}
	pol, err := policies.Parse("policy.yaml", []byte(strings.ReplaceAll(testPolicy, "APP", r.app.URL)))
	if err != nil {
		t.Fatal(err)
	}
	r.policy = pol
	r.timeout = o.actionTimeout
	if r.timeout == 0 {
		r.timeout = 2 * time.Second
	}
	r.opts = store.BadgerOptions{Now: r.clock.Now, MaxWaiting: o.maxWaiting, InMemory: !o.disk}
	r.wrap = o.wrap
	r.actions = &actions.Client{Secret: []byte(testSecret), Timeout: r.timeout}
	if o.disk {
		r.dir = t.TempDir()
	}
	if o.postgres {
		r.pg = pgtest.Database(t, pgtest.DSN(t))
	}
	r.open()
	t.Cleanup(func() { r.gate.Stop(5 * time.Second); r.db.Close() })
	return r
}

// open opens the store and makes a fresh gate on it, as a start does.
func (r *rig) open() {
	r.t.Helper()
	var db store.Store
	var err error
	if r.pg != "" {
		db, err = store.OpenPostgres(r.pg, store.PostgresOptions{Now: r.clock.Now, MaxWaiting: r.opts.MaxWaiting})
	} else {
		db, err = store.OpenBadger(r.dir, r.opts)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	r.db = db
	r.newGate()
}

// newGate makes a fresh gate on the open store.
func (r *rig) newGate() {
	var gs store.Store = r.db
	if r.wrap != nil {
		gs = r.wrap(r.db)
	}
	r.gate = New(Config{
		Store:         gs,
		Actions:       r.actions,
		Pages:         "http://gate.test/toolgate",
		Policy:        r.policyOf,
		Observer:      r.events,
		Secret:        []byte(testSecret),
		Now:           r.clock.Now,
		ActionTimeout: r.timeout,
	})
}

// policyOf is the policy the gate reads under key.
func (r *rig) policyOf(key string) *policies.Policy {
	if p, ok := r.routes[key]; ok {
		return p
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.policy
}

// swapPolicy swaps the route's policy, as a configuration reload does.
func (r *rig) swapPolicy(p *policies.Policy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.policy = p
}

// parsePolicy is testPolicy with edit applied, for the fake app.
func (r *rig) parsePolicy(name string, edit func(string) string) *policies.Policy {
	r.t.Helper()
	p, err := policies.Parse(name, []byte(edit(strings.ReplaceAll(testPolicy, "APP", r.app.URL))))
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

// restart stops the gate (waiting for nothing in flight), closes the store
// without settling anything and reopens it (on disk; in memory the store
// stays open), makes a new gate and runs the start-up sweep.
func (r *rig) restart() {
	r.t.Helper()
	r.gate.Stop(0)
	if r.dir != "" || r.pg != "" {
		if err := r.db.Close(); err != nil {
			r.t.Fatal(err)
		}
		r.open()
	} else {
		r.newGate()
	}
	if err := r.gate.Sweep(context.Background(), true); err != nil {
		r.t.Fatalf("sweep after restart: %v", err)
	}
}

// front is the model front of one request by who.
func (r *rig) front(who Person) *Front {
	return r.gate.Front(r.policy, "policy.yaml", func() Person { return who }, "openai-chat")
}

// call is a delete_post call for a post, or a draft_post call missing
// body when post is 0.
func call(i, post int) provider.Call {
	id := fmt.Sprintf("call_%d", i)
	if post == 0 {
		args := `{"title":"Hi"}`
		return provider.Call{Position: i, ID: id, Type: "function", Name: "draft_post", Arguments: []byte(args),
			Raw: []byte(`{"id":"` + id + `","type":"function","function":{"name":"draft_post","arguments":` + jsonString(args) + `}}`)}
	}
	args := fmt.Sprintf(`{"post":%d}`, post)
	return provider.Call{Position: i, ID: id, Type: "function", Name: "delete_post", Arguments: []byte(args),
		Raw: []byte(`{"id":"` + id + `","type":"function","function":{"name":"delete_post","arguments":` + jsonString(args) + `}}`)}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// hold makes the model call calls in who's conversation and returns the
// step id, or the verdict when nothing was held.
func (r *rig) hold(who Person, calls ...provider.Call) (string, provider.Verdict) {
	r.t.Helper()
	v := r.front(who).Hold(context.Background(), calls, []byte(`{"role":"assistant","content":null,"tool_calls":[]}`), provider.Kept{})
	i := strings.Index(v.Text, "/h/")
	if i < 0 {
		return "", v
	}
	return v.Text[i+3 : i+3+26], v
}

// step reads a step's holds.
func (r *rig) step(stepID string) []store.Hold {
	r.t.Helper()
	holds, err := r.db.Step(context.Background(), stepID)
	if err != nil {
		r.t.Fatalf("reading step: %v", err)
	}
	return holds
}

// restore is the model's next request: the result of each held call.
func (r *rig) restore(who Person, stepID string, userFollows bool) []string {
	r.t.Helper()
	res, ok := r.front(who).Restore(context.Background(), stepID, userFollows)
	if !ok {
		return nil
	}
	out := make([]string, len(res.Results))
	for i, x := range res.Results {
		out[i] = x.Content
	}
	return out
}

var ana = Person{Owner: "ana", Tenant: "acme"}
