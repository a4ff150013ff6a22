package gate

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// The model-based test of the release path: random interleavings of the
// person's answers (confirm, decline, submit, later), new messages, the
// model's reads, TTL expiry, sweeps, restarts, crashes inside a release
// (before Begin, after the send) and the app's failures (500, a dropped
// connection, no answer), over steps of 1–3 holds (cards and forms),
// against a reference model of what each hold's answer must be. After
// each sequence it checks: no hold reached the app twice (requests counted
// by Idempotency-Key at the fake app), every hold ended settled, and what
// the model read matches what ran.
//
// Replay a failing sequence with the seed it prints:
//
//	go test ./gate -run TestReleaseModel -args -model.seed=N
var (
	modelSeed = flag.Uint64("model.seed", 0, "TestReleaseModel: run only the sequence with this seed")
	modelN    = flag.Int("model.n", 0, "TestReleaseModel: how many sequences (default 10000; 1500 with -race, 1000 with -short)")
	modelPgN  = flag.Int("model.pgn", 0, "TestReleaseModelPostgres: how many sequences (default 200; 40 with -race)")
)

// modelWorkers run sequences side by side, each on rigs of its own; most
// of a sequence's time is spent waiting on the fake app, not on a CPU.
const modelWorkers = 8

// diskEvery: one sequence in diskEvery runs on a store on disk and
// restarts at least once (closing and reopening it); the others run on a
// store in memory, where a restart is a new gate on the open store. A
// disk sequence costs a synced write per change: they are the few.
const diskEvery = 40

func TestReleaseModel(t *testing.T) {
	n := *modelN
	if n == 0 {
		switch {
		case testing.Short():
			n = 1000
		case raceBuild:
			n = 1500 // .ci/run runs the full 10,000 without -race; a sequence now has up to four conversations
		default:
			n = 10000
		}
	}
	runModel(t, n, false)
}

// TestReleaseModelPostgres runs the model's sequences on PostgreSQL
// (TOOLGATE_TEST_POSTGRES), the rig's clock passed to every statement as
// the store's; fewer of them, as each change is a round trip. The disk
// sequences close and reopen the store.
func TestReleaseModelPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	pgtest.DSN(t)
	n := *modelPgN
	if n == 0 {
		n = 200
		if raceBuild {
			n = 40
		}
	}
	runModel(t, n, true)
}

func runModel(t *testing.T, n int, pg bool) {
	base := rand.Uint64()
	if *modelSeed != 0 {
		n, base = 1, *modelSeed
	}
	t.Logf("%d sequences from seed %d", n, base)
	var stats modelStats
	var failures atomic.Int32
	t.Run("workers", func(t *testing.T) {
		for w := range modelWorkers {
			t.Run(fmt.Sprint(w), func(t *testing.T) {
				t.Parallel()
				wk := newModelWorker(t, pg)
				for i := w; i < n; i += modelWorkers {
					if failures.Load() >= 3 {
						return
					}
					seed := base + uint64(i)
					if err := wk.run(seed, &stats); err != nil {
						failures.Add(1)
						t.Errorf("sequence with seed %d failed: %v\nreplay: go test ./gate -run TestReleaseModel -args -model.seed=%d", seed, err, seed)
					}
				}
			})
		}
	})
	t.Logf("%s", stats.String())
}

// modelWorker holds a worker's rigs: one in memory, one on disk.
type modelWorker struct {
	t        *testing.T
	mem      *rig
	disk     *rig
	memF     *faultStore
	diskF    *faultStore
	behaves  sync.Map                     // hold id → endpointScript
	versions map[*rig][2]*policies.Policy // the main route's two policies, per rig
	postSeq  int
	personID int
}

type endpointScript struct {
	behave testkit.Behaviour
	status int
}

func newModelWorker(t *testing.T, pg bool) *modelWorker {
	wk := &modelWorker{t: t}
	wk.memF, wk.diskF = &faultStore{}, &faultStore{}
	// A short action timeout: the app's "no answer" costs that long.
	wk.mem = newRig(t, rigOptions{actionTimeout: 300 * time.Millisecond, wrap: wk.memF.wrap, postgres: pg})
	wk.disk = newRig(t, rigOptions{disk: !pg, actionTimeout: 300 * time.Millisecond, wrap: wk.diskF.wrap, postgres: pg})
	wk.versions = map[*rig][2]*policies.Policy{}
	for _, r := range []*rig{wk.mem, wk.disk} {
		// Another app's route: its delete_post runs another endpoint.
		r.routes = map[string]*policies.Policy{shopRoute: r.parsePolicy(shopRoute, func(s string) string {
			return strings.ReplaceAll(withNote(t, s), r.app.URL+"/posts/", r.app.URL+"/shopitems/")
		})}
		// The main route's delete_post takes a decline note (note.go) and
		// an edit of its note argument (edit.go) in both versions.
		wk.versions[r] = [2]*policies.Policy{r.parsePolicy(mainRoute, func(s string) string { return withDeclineNote(withNote(t, s)) }),
			r.parsePolicy(mainRoute, func(s string) string {
				return withDeclineNote(strings.Replace(withNote(t, s), "method: DELETE", "method: POST", 1))
			})}
		r.app.Script(func(key string) (testkit.Behaviour, int) {
			if s, ok := wk.behaves.Load(key); ok {
				return s.(endpointScript).behave, s.(endpointScript).status
			}
			return testkit.Respond, 200
		})
	}
	return wk
}

// withNote gives the policy's delete_post an optional note the person may
// correct before confirming (card.editable): the model's confirmations
// sometimes carry one.
func withNote(t *testing.T, policy string) string {
	const from = "        post: {type: integer}\n      required: [post]\n    card:\n      reason: Delete this post?\n"
	if !strings.Contains(policy, from) {
		t.Fatal("test broken: delete_post is not as withNote expects")
	}
	return strings.Replace(policy, from, "        post: {type: integer}\n        note: {type: string}\n      required: [post]\n    card:\n      reason: Delete this post?\n      editable: [note]\n", 1)
}

// editedNote is the note a corrected confirmation gives.
const editedNote = "n"

// faultStore is the store as a gate sees it, with one-shot faults that
// stand for the process dying inside a release: a Begin that fails (the
// hold stays answered, nothing was sent), or the Settle of a release (the
// hold stays running when the request was sent). A fault returns an error
// that is not an outage, so the gate does not retry it, as a dead process
// would not.
type faultStore struct {
	store.Store
	mu      sync.Mutex
	begin   bool              // the next Begin fails
	settle  bool              // the next Settle of a confirmed or submitted hold fails
	faulted map[string]string // hold id → "begin" or "settle"
}

var errCrash = errors.New("the process died here")

func (f *faultStore) wrap(s store.Store) store.Store {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Store = s
	f.begin, f.settle = false, false
	return f
}

func (f *faultStore) disarm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.begin, f.settle = false, false
}

func (f *faultStore) arm(begin bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if begin {
		f.begin = true
	} else {
		f.settle = true
	}
}

// fault reports the fault the hold met, "" none.
func (f *faultStore) fault(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.faulted[id]
}

func (f *faultStore) fire(id, kind string) {
	if f.faulted == nil {
		f.faulted = map[string]string{}
	}
	f.faulted[id] = kind
}

func (f *faultStore) Begin(ctx context.Context, id string) (store.Hold, error) {
	f.mu.Lock()
	if f.begin {
		f.begin = false
		f.fire(id, "begin")
		f.mu.Unlock()
		return store.Hold{}, errCrash
	}
	f.mu.Unlock()
	return f.Store.Begin(ctx, id)
}

func (f *faultStore) Settle(ctx context.Context, id, outcome string, events ...store.Event) error {
	f.mu.Lock()
	if f.settle {
		// The settlement of a release (confirm or submit), Begin or not:
		// a release path that sent without Begin must not escape it.
		if h, err := f.Store.Get(ctx, id); err == nil && h.State != store.Settled && (h.Answer == store.AnswerConfirm || h.Answer == store.AnswerSubmit) {
			f.settle = false
			f.fire(id, "settle")
			f.mu.Unlock()
			return errCrash
		}
	}
	f.mu.Unlock()
	return f.Store.Settle(ctx, id, outcome, events...)
}

// modelHold is the reference model of one hold.
type modelHold struct {
	id, callID   string
	form         bool
	post         int    // the card's post, or the form's title number
	refused      bool   // refused when it was held
	answer       string // the answer it must have ("" none yet; store.AnswerFollowed: its primary's)
	script       endpointScript
	edited       bool     // confirmed with a corrected note (card.editable): the release carries it
	changed      bool     // its record changed while it waited
	changedFirst bool     // ... before its release reached the app: it must never run
	reloaded     bool     // the route's policy was swapped while it lived: it may read that the policy changed
	reads        []string // what the model read of it, in order
	expires      time.Time
	conv         *conv
	version      int        // the action's version it was held under (cards on the main route follow the policy swaps)
	primary      *modelHold // the waiting hold it attached to (one card per intent), nil when it has its own card
	note         string     // the note it was declined with (a card of the main route), "" none
}

// conv is one conversation of the person: the step its model response
// made, on a route (its policy) and a protocol.
type conv struct {
	n        int
	route    string // "policy.yaml" or "shop.yaml"
	protocol string
	message  []byte
	step     string
	holds    []*modelHold
}

// The model's routes and protocols: the main route (whose policy a reload
// swaps between two versions of delete_post), another app's route whose
// delete_post runs another endpoint, and another protocol on the main
// route.
const (
	mainRoute = "policy.yaml"
	shopRoute = "shop.yaml"
)

// sequence is one run: one person, one to four conversations.
type sequence struct {
	wk      *modelWorker
	r       *rig
	faults  *faultStore
	rnd     *rand.Rand
	who     Person
	held    bool // the first conversation's step was stored (not every call refused)
	convs   []*conv
	version int // the main route's policy now: 0 or 1 (delete_post's method differs)
	ops     []string
}

func (wk *modelWorker) run(seed uint64, stats *modelStats) (err error) {
	s := &sequence{wk: wk, rnd: rand.New(rand.NewPCG(seed, seed^0x5eed)), r: wk.mem, faults: wk.memF}
	if seed%diskEvery == 0 {
		s.r, s.faults = wk.disk, wk.diskF
	}
	s.r.swapPolicy(wk.versions[s.r][0])
	wk.personID++
	s.who = Person{Owner: fmt.Sprintf("p%d", seed), Tenant: "t"}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\nops: %s", err, strings.Join(s.ops, ", "))
		}
	}()
	if err := s.start(); err != nil {
		return err
	}
	if !s.held {
		stats.add("refused at hold")
		return nil
	}
	// Most sequences repeat calls in other conversations, from the start
	// (while the first holds wait) or later.
	if s.rnd.IntN(10) < 6 {
		if err := s.repeat(); err != nil {
			return err
		}
	}
	ops := 2 + s.rnd.IntN(7)
	restartAt := -1
	if s.r == wk.disk {
		restartAt = s.rnd.IntN(ops)
	}
	for i := range ops {
		if i == restartAt {
			s.restart()
		}
		if err := s.op(); err != nil {
			return err
		}
	}
	return s.check(stats)
}

// start holds 1–3 calls, cards or forms, each with what the app will do
// with its release, in the first conversation.
func (s *sequence) start() error {
	n := 1 + s.rnd.IntN(3)
	c := s.newConv(mainRoute, "openai-chat")
	for i := range n {
		h := &modelHold{callID: fmt.Sprintf("call_%d", i), form: s.rnd.IntN(3) == 0}
		s.wk.postSeq++
		h.post = s.wk.postSeq
		c.holds = append(c.holds, h)
	}
	if err := s.holdConv(c); err != nil {
		return err
	}
	s.held = c.step != ""
	return nil
}

func (s *sequence) newConv(route, protocol string) *conv {
	c := &conv{n: len(s.convs), route: route, protocol: protocol}
	c.message = []byte(fmt.Sprintf(`{"role":"assistant","content":"conversation %d of %s","tool_calls":[]}`, c.n, s.who.Owner))
	return c
}

// repeat is a model response in a new conversation that calls again some
// of the first conversation's calls (and perhaps a new one): on the same
// route and protocol, on another app's route, on another protocol, or
// after a reload that changed delete_post.
func (s *sequence) repeat() error {
	if len(s.convs) >= 4 {
		return nil
	}
	route, protocol := mainRoute, "openai-chat"
	switch x := s.rnd.IntN(100); {
	case x < 20:
		route = shopRoute
	case x < 35:
		protocol = "anthropic"
	case x < 50:
		s.reload()
	}
	c := s.newConv(route, protocol)
	for i, p := range s.convs[0].holds {
		if s.rnd.IntN(3) == 0 && i > 0 {
			continue
		}
		c.holds = append(c.holds, &modelHold{callID: fmt.Sprintf("call_%d_%d", c.n, i), form: p.form, post: p.post})
	}
	if s.rnd.IntN(4) == 0 {
		s.wk.postSeq++
		c.holds = append(c.holds, &modelHold{callID: fmt.Sprintf("call_%d_new", c.n), post: s.wk.postSeq})
	}
	return s.holdConv(c)
}

// reload swaps the main route's policy to its other version.
func (s *sequence) reload() {
	s.version = 1 - s.version
	s.log("reload(v%d)", s.version)
	s.r.swapPolicy(s.wk.versions[s.r][s.version])
	for _, c := range s.convs {
		for _, h := range c.holds {
			h.reloaded = true
		}
	}
}

// holdConv makes the model response of c; the reference says which of its
// calls attach to a waiting hold of the same intent.
func (s *sequence) holdConv(c *conv) error {
	var calls []provider.Call
	for i, h := range c.holds {
		h.conv = c
		if !h.form && c.route == mainRoute {
			h.version = s.version
		}
		// A hang costs the action timeout of waiting, so it is rare; a
		// drop takes the same path in the gate (sent, no answer) at once.
		switch x := s.rnd.IntN(100); {
		case x < 70:
			h.script = endpointScript{testkit.Respond, 200}
		case x < 80:
			h.script = endpointScript{testkit.Respond, 500}
		case x < 91:
			h.script = endpointScript{testkit.Drop, 0}
		case x < 92:
			h.script = endpointScript{testkit.Hang, 0}
		default:
			h.script = endpointScript{testkit.Respond, 422}
		}
		if !h.form && !slices.ContainsFunc(s.all(), func(o *modelHold) bool { return o.post == h.post }) {
			s.r.app.SetRecord(fmt.Sprintf("/posts/%d", h.post), `{"title":"Post"}`)
			s.r.app.SetRecord(fmt.Sprintf("/shopitems/%d", h.post), `{"title":"Post"}`)
		}
		h.primary = s.waitingPrimary(h)
		calls = append(calls, modelCall(i, h))
	}
	s.log("hold(conv %d, %s %s) %s", c.n, c.route, c.protocol, describe(c.holds))
	v := s.front(c).Hold(context.Background(), calls, c.message, provider.Kept{})
	i := strings.Index(v.Text, "/h/")
	if i < 0 {
		// Every record read timed out on a loaded machine: each call is
		// refused, nothing waits, nothing runs.
		for _, ref := range v.Refusals {
			if !strings.HasPrefix(ref.Content, "Toolgate refused ") {
				return fmt.Errorf("nothing held, and %q", ref.Content)
			}
		}
		if len(v.Refusals) != len(calls) {
			return fmt.Errorf("nothing held: %+v", v)
		}
		return nil
	}
	c.step = v.Text[i+3 : i+3+26]
	if v.Step != c.step {
		return fmt.Errorf("conversation %d: the verdict's step %q, its link %q", c.n, v.Step, c.step)
	}
	s.convs = append(s.convs, c)
	for _, sh := range s.r.step(c.step) {
		for _, h := range c.holds {
			if h.callID != sh.CallID {
				continue
			}
			h.id, h.expires = sh.ID, sh.Expires
			h.refused = sh.Answer == "refused"
			s.wk.behaves.Store(h.id, h.script)
			want := ""
			if h.primary != nil && !h.refused {
				want = h.primary.id
			} else {
				h.primary = nil
			}
			if got := primaryOf(sh); got != want {
				return fmt.Errorf("conversation %d's %s attached to %q, want %q", c.n, h.callID, got, want)
			}
		}
	}
	return nil
}

// waitingPrimary is the hold a new call h attaches to: the newest waiting
// hold of the very same request (person, route, protocol, action version,
// tool and arguments) — or, when that is itself attached, its primary if
// that still waits.
func (s *sequence) waitingPrimary(h *modelHold) *modelHold {
	for i := len(s.convs) - 1; i >= 0; i-- {
		c := s.convs[i]
		for _, o := range c.holds {
			if o.refused || o.form != h.form || o.post != h.post || c.route != h.conv.route || c.protocol != h.conv.protocol || o.version != h.version {
				continue
			}
			if !s.waits(o) || o.changed {
				continue // answered, or its card no longer reads as the record does now
			}
			if o.primary == nil {
				return o
			}
			if s.waits(o.primary) {
				return o.primary
			}
		}
	}
	return nil
}

// waits reports whether a hold still waits for the person.
func (s *sequence) waits(h *modelHold) bool {
	return h.answer == "" && !h.refused && s.r.clock.Now().Before(h.expires)
}

// modelCall is the call of h at index i: a delete_post of its post, or a
// draft_post missing body, titled with its number.
func modelCall(i int, h *modelHold) provider.Call {
	args := fmt.Sprintf(`{"post":%d}`, h.post)
	name := "delete_post"
	if h.form {
		args, name = fmt.Sprintf(`{"title":"Hi %d"}`, h.post), "draft_post"
	}
	return provider.Call{Position: i, ID: h.callID, Type: "function", Name: name, Arguments: []byte(args),
		Raw: []byte(`{"id":"` + h.callID + `","type":"function","function":{"name":"` + name + `","arguments":` + jsonString(args) + `}}`)}
}

// front is the gate of one request of conversation c.
func (s *sequence) front(c *conv) *Front {
	p := s.r.policyOf(c.route)
	return s.r.gate.Front(p, c.route, func() Person { return s.who }, c.protocol)
}

func describe(holds []*modelHold) string {
	var parts []string
	for _, h := range holds {
		kind := "card"
		if h.form {
			kind = "form"
		}
		parts = append(parts, fmt.Sprintf("%s%d/%d/%d", kind, h.post, h.script.behave, h.script.status))
	}
	return strings.Join(parts, " ")
}

func (s *sequence) log(format string, a ...any) { s.ops = append(s.ops, fmt.Sprintf(format, a...)) }

// all is every hold of every conversation.
func (s *sequence) all() []*modelHold {
	var out []*modelHold
	for _, c := range s.convs {
		out = append(out, c.holds...)
	}
	return out
}

// op runs one random operation and moves the reference model with it.
func (s *sequence) op() error {
	switch x := s.rnd.IntN(100); {
	case x < 38:
		return s.answer()
	case x < 48:
		c := s.convs[s.rnd.IntN(len(s.convs))]
		s.log("message(conv %d)", c.n)
		return s.read(c, true)
	case x < 56:
		c := s.convs[s.rnd.IntN(len(s.convs))]
		s.log("read(conv %d)", c.n)
		return s.read(c, false)
	case x < 63:
		s.log("expire")
		s.r.clock.Advance(DefaultTTL + time.Minute)
	case x < 69:
		s.log("sweep")
		s.timeOutBesideAnswers()
		if err := s.r.gate.Sweep(context.Background(), false); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	case x < 75:
		s.restart()
	case x < 82:
		begin := s.rnd.IntN(2) == 0
		s.log("fault(begin=%v)", begin)
		s.faults.arm(begin)
	case x < 86:
		s.log("stale")
		s.r.clock.Advance(s.r.gate.releaseTakes(MaxHeld) + time.Second)
	case x < 91:
		return s.repeat()
	case x < 93:
		s.reload()
	default:
		all := s.all()
		h := all[s.rnd.IntN(len(all))]
		if h.form || h.refused {
			return nil
		}
		s.log("change(%d)", h.post)
		for _, o := range all {
			if !o.form && o.post == h.post {
				o.changed = true
				o.changedFirst = o.changedFirst || s.r.app.RunCount(o.id) == 0
			}
		}
		title := fmt.Sprintf(`{"title":"Post, changed %d"}`, s.rnd.Int())
		s.r.app.SetRecord(fmt.Sprintf("/posts/%d", h.post), title)
		s.r.app.SetRecord(fmt.Sprintf("/shopitems/%d", h.post), title)
	}
	return nil
}

// restart is the process dying between two operations and starting again.
func (s *sequence) restart() {
	s.log("restart")
	s.timeOutBesideAnswers()
	s.r.restart()
}

// expired reports whether a hold is past its TTL.
func (s *sequence) expired(h *modelHold) bool {
	return !s.r.clock.Now().Before(h.expires)
}

// answer answers a random hold, on its own conversation's link, with a
// random answer of its kind; the reference says whether the gate must
// take it, and for which hold: an attached call's answer is its primary's
// while that waits.
func (s *sequence) answer() error {
	all := s.all()
	h := all[s.rnd.IntN(len(all))]
	if h.refused {
		return nil
	}
	choices := []string{store.AnswerConfirm, store.AnswerConfirm, store.AnswerDecline}
	if h.form {
		choices = []string{store.AnswerSubmit, store.AnswerSubmit, store.AnswerDecline, store.AnswerLater}
	}
	choice := choices[s.rnd.IntN(len(choices))]
	want := h.answer == "" && !s.expired(h)
	to := h
	var group []*modelHold // the attachments that answer as one (intent.go's standIn)
	switch {
	case want && h.primary != nil && s.waits(h.primary):
		to = h.primary
	case want && h.primary != nil && !decides(h.primary.answer):
		// Its card ended without a decision: its attachments answer as
		// one, and once one of them has the answer the others take it.
		for _, o := range s.all() {
			if o.primary == h.primary {
				group = append(group, o)
				if decides(o.answer) {
					want = false
				}
			}
		}
	}
	// Half the declines of the main route's cards come with a note, with
	// a quotation mark in it.
	note := ""
	if choice == store.AnswerDecline && !h.form && h.conv.route == mainRoute && s.rnd.IntN(2) == 0 {
		note = fmt.Sprintf("not %q, %d", h.callID, s.rnd.IntN(1000))
	}
	s.log("%s(conv %d %s)%s", choice, h.conv.n, h.callID, map[bool]string{true: " with a note"}[note != ""])
	var err error
	edit := choice == store.AnswerConfirm && s.rnd.IntN(2) == 0
	switch {
	case choice == store.AnswerSubmit:
		_, err = s.r.gate.Submit(context.Background(), h.conv.step, h.id, s.who, "", map[string][]string{"body": {"Text"}}, nil, false)
	case note != "":
		_, err = s.r.gate.Decline(context.Background(), h.conv.step, h.id, s.who, note)
	case edit:
		s.log("(with an edit)")
		_, err = s.r.gate.Confirm(context.Background(), h.conv.step, h.id, s.who, "", Edits{JSON: []byte(`{"note":"` + editedNote + `"}`)})
	default:
		_, err = s.r.gate.Answer(context.Background(), h.conv.step, h.id, s.who, choice)
	}
	switch {
	case want && err != nil:
		return fmt.Errorf("%s of a waiting hold refused: %w", choice, err)
	case !want && err == nil:
		return fmt.Errorf("%s of a hold answered %q (or expired) was taken", choice, h.answer)
	case !want && Status(err) != 409:
		return fmt.Errorf("%s of a hold answered %q: %v (status %d), want 409", choice, h.answer, err, Status(err))
	}
	if want && group != nil {
		// Which of them took it is the gate's choice (the oldest still
		// waiting; equal times fall to the ids): the store says.
		to = nil
		for _, o := range group {
			if sh, err := s.r.gate.cfg.Store.Get(context.Background(), o.id); err == nil && decides(sh.Answer) {
				to = o
			}
		}
		if to == nil {
			return fmt.Errorf("%s of %s, attached to an ended card: no hold of its group took it", choice, h.callID)
		}
		for _, o := range group {
			if o != to && o.answer == "" {
				o.primary = to // it follows the one that took the answer
			}
		}
		to.primary = nil
	}
	if want {
		to.edited = edit
		s.decide(to, choice)
		to.note = note
	}
	return nil
}

// decide records the person's answer to h: the calls attached to it that
// still wait take it.
func (s *sequence) decide(h *modelHold, choice string) {
	h.answer = choice
	for _, o := range s.all() {
		if o.primary == h && o.answer == "" {
			o.answer = store.AnswerFollowed
		}
	}
}

// read is conversation c's next model request; userFollows when the
// person wrote on. It checks that c restores its own message and call
// ids only.
func (s *sequence) read(c *conv, userFollows bool) error {
	for _, h := range c.holds {
		if h.answer == "" && !h.refused {
			switch {
			case s.expired(h):
				h.answer = store.AnswerTimedOut
			case userFollows:
				h.answer = store.AnswerMovedOn
			}
		}
	}
	results, err := s.restore(c, userFollows)
	if err != nil {
		return err
	}
	for i, text := range results {
		c.holds[i].reads = append(c.holds[i].reads, text)
	}
	return nil
}

// restore is c's request restoring its step: its own message, and one
// result per call of its own, in order.
func (s *sequence) restore(c *conv, userFollows bool) ([]string, error) {
	res, ok := s.front(c).Restore(context.Background(), c.step, userFollows)
	if !ok {
		return nil, fmt.Errorf("conversation %d's link restores nothing", c.n)
	}
	if string(res.Message) != string(c.message) {
		return nil, fmt.Errorf("conversation %d restored another conversation's message %s", c.n, res.Message)
	}
	if len(res.Results) != len(c.holds) {
		return nil, fmt.Errorf("conversation %d restored %d results for %d calls", c.n, len(res.Results), len(c.holds))
	}
	out := make([]string, len(res.Results))
	for i, x := range res.Results {
		if x.CallID != c.holds[i].callID {
			return nil, fmt.Errorf("conversation %d restored call id %q where its call is %q", c.n, x.CallID, c.holds[i].callID)
		}
		out[i] = x.Content
	}
	return out, nil
}

// timeOutBesideAnswers is what a sweep (or a restart's) does to the
// reference: in a step where the person answered but some holds still
// wait past their TTL, those are timed out.
func (s *sequence) timeOutBesideAnswers() {
	for _, c := range s.convs {
		answered, waiting := false, false
		for _, h := range c.holds {
			switch h.answer {
			case store.AnswerConfirm, store.AnswerSubmit, store.AnswerDecline, store.AnswerLater, store.AnswerFollowed:
				answered = true
			case "":
				waiting = waiting || !h.refused && s.expired(h)
			}
		}
		if !answered || !waiting {
			continue
		}
		for _, h := range c.holds {
			if h.answer == "" && !h.refused && s.expired(h) {
				h.answer = store.AnswerTimedOut
			}
		}
	}
}

// check ends the sequence (everything expires, a sweep, each
// conversation's next request) and checks every hold.
func (s *sequence) check(stats *modelStats) error {
	s.faults.disarm()
	s.r.clock.Advance(2 * time.Hour)
	s.timeOutBesideAnswers()
	if err := s.r.gate.Sweep(context.Background(), false); err != nil {
		return fmt.Errorf("final sweep: %w", err)
	}
	s.log("end")
	// Twice: a primary settled by one conversation's request settles the
	// calls attached to it in the others.
	for range 2 {
		for _, c := range s.convs {
			if err := s.read(c, true); err != nil {
				return err
			}
		}
	}
	for _, c := range s.convs {
		again, err := s.restore(c, true)
		if err != nil {
			return err
		}
		stored := s.r.step(c.step)
		for i, h := range c.holds {
			text := h.reads[len(h.reads)-1]
			if again[i] != text {
				return fmt.Errorf("%s: the model read %q, then %q", h.callID, text, again[i])
			}
			runs := s.r.app.RunCount(h.id)
			if runs > 1 {
				return fmt.Errorf("%s reached the app %d times", h.callID, runs)
			}
			if runs == 1 && !h.form {
				// The release carries exactly what the person confirmed.
				want := map[string]any{"post": float64(h.post)}
				if h.edited {
					want["note"] = editedNote
				}
				for _, c := range s.r.app.Calls() {
					var got map[string]any
					if c.Header.Get("Idempotency-Key") == h.id && (json.Unmarshal(c.Body, &got) != nil || !reflect.DeepEqual(got, want)) {
						return fmt.Errorf("%s ran with %s, want %v", h.callID, c.Body, want)
					}
				}
			}
			if st := stored[i].State; st != store.Settled {
				return fmt.Errorf("%s ended %s, not settled (answer %q)", h.callID, st, stored[i].Answer)
			}
			if says := s.r.gate.outcomeText(stored[i]); text != says {
				return fmt.Errorf("%s: the model read %q, the store says %q", h.callID, text, says)
			}
			noted := 0
			for _, read := range h.reads[:len(h.reads)-1] {
				if h.note != "" && read == declinedWithNote(h.note) {
					noted++ // the note: read once, the settlement's first read
					continue
				}
				if h.note != "" && read == OutcomeDeclined {
					continue // declined while the step still waited for other answers
				}
				if read != text && read != OutcomeWaiting && read != OutcomeAnswered && read != OutcomeRunning {
					return fmt.Errorf("%s: the model read %q before the final %q", h.callID, read, text)
				}
			}
			if h.note != "" && h.answer == store.AnswerDecline {
				// The model read the note exactly once; the store keeps it
				// no longer, sealed or not.
				if noted != 1 || len(stored[i].Reply) != 0 || len(stored[i].Values) != 0 {
					return fmt.Errorf("%s declined with a note: read %d times (reads %q), store keeps reply %d bytes, values %d bytes",
						h.callID, noted, h.reads, len(stored[i].Reply), len(stored[i].Values))
				}
			}
			if h.answer == store.AnswerFollowed {
				// It reads what came of its card, and never runs itself.
				p := h.primary
				want := p.reads[len(p.reads)-1]
				if p.note != "" && p.answer == store.AnswerDecline {
					want = outcomeNoteElsewhere // the note went to the card's conversation
				}
				if text != want || runs != 0 {
					return fmt.Errorf("%s attached to %s: read %q, ran %d; want %q, ran 0", h.callID, p.callID, text, runs, want)
				}
				stats.add("followed")
				continue
			}
			kind, err := h.judge(text, runs, s.faults.fault(h.id))
			if err != nil {
				return fmt.Errorf("%s (answer %q, app %d/%d, fault %q, ran %d): %w", h.callID, h.answer, h.script.behave, h.script.status, s.faults.fault(h.id), runs, err)
			}
			stats.add(kind)
		}
	}
	// One card per intent runs at most once, whichever link was answered.
	for _, p := range s.all() {
		runs := s.r.app.RunCount(p.id)
		for _, h := range s.all() {
			if h.primary == p {
				runs += s.r.app.RunCount(h.id)
			}
		}
		if runs > 1 {
			return fmt.Errorf("%s and the calls attached to it reached the app %d times", p.callID, runs)
		}
	}
	return nil
}

// judge checks a hold's final text against its answer, the app's
// behaviour and how often it ran, and names the kind of outcome.
func (h *modelHold) judge(text string, runs int, fault string) (string, error) {
	fixed := func(kind, want string) (string, error) {
		if text != want || runs != 0 {
			return "", fmt.Errorf("read %q, ran %d; want %q, ran 0", text, runs, want)
		}
		return kind, nil
	}
	switch {
	case h.refused:
		if !strings.HasPrefix(text, "Toolgate refused ") || runs != 0 {
			return "", fmt.Errorf("refused at hold time, read %q, ran %d", text, runs)
		}
		return "refused at hold", nil
	case h.answer == store.AnswerDecline && h.form:
		return fixed("declined", "The person declined to fill in body; nothing ran.")
	case h.answer == store.AnswerLater:
		return fixed("later", "The person closed the form without answering (body); nothing ran.")
	case h.answer == store.AnswerDecline && h.note != "":
		return fixed("declined with a note", outcomeNoteGone)
	case h.answer == store.AnswerDecline:
		return fixed("declined", OutcomeDeclined)
	case h.answer == store.AnswerMovedOn:
		return fixed("moved on", OutcomeMovedOn)
	case h.answer == store.AnswerTimedOut:
		return fixed("timed out", OutcomeExpired)
	case h.answer == "":
		return "", fmt.Errorf("the reference has no answer for a hold read as %q", text)
	}
	if h.reloaded && text == outcomePolicyChanged {
		return fixed("policy changed", outcomePolicyChanged)
	}
	if h.changedFirst && runs > 0 {
		return "", fmt.Errorf("ran against a record that changed after the person saw it (read %q)", text)
	}
	person, reply := PersonConfirmed, "Removed."
	var changed []string
	if h.edited {
		person, changed = PersonConfirmedWith+"note", []string{"note"}
	}
	if h.form {
		person, reply = PersonFilledIn+"body", "Drafted."
	}
	ran := func(kind, want string) (string, error) {
		if text != want || runs != 1 {
			return "", fmt.Errorf("read %q, ran %d; want %q, ran 1", text, runs, want)
		}
		return kind, nil
	}
	switch {
	case fault == "settle" && text == Ran{Text: clauseLost}.After(person):
		// The process died after Begin: unknown, never sent again.
		return "cut after the send: unknown", nil
	case h.changed && text == OutcomeChanged:
		return fixed("changed", OutcomeChanged)
	case text == Ran{Text: clauseNoAnswer}.After(person) && h.script.behave == testkit.Respond:
		// The app answers at once, but a loaded machine can miss the
		// action timeout: the outcome is unknown, which is honest.
		return "slow: unknown", nil
	case !h.form && text == (Outcome{Kind: ResultUnchecked, Person: personConfirmed, Why: uncheckedDown, Changed: changed}).sentence(""):
		return fixed("slow: unchecked", text)
	case text == Ran{Text: clauseNotSent}.After(person):
		// No connection within the action timeout: nothing was sent.
		return fixed("slow: not reached", text)
	}
	// Unknown is unknown: the request may have reached the app, and on a
	// loaded machine it can even reach it after the gate gave up on it.
	unknown := func(kind string) (string, error) {
		if want := (Ran{Text: clauseNoAnswer}.After(person)); text != want {
			return "", fmt.Errorf("read %q; want %q", text, want)
		}
		return kind, nil
	}
	switch h.script.behave {
	case testkit.Drop:
		return unknown("dropped: unknown")
	case testkit.Hang:
		return unknown("no answer: unknown")
	}
	switch h.script.status {
	case 200:
		if h.edited {
			return ran("ran with changes", Ran{OK: true, Text: reply}.After(person))
		}
		return ran("ran", Ran{OK: true, Text: reply}.After(person))
	case 500:
		return ran("app failed", Ran{Text: "the app failed (HTTP 500); it may or may not have made changes; nothing was retried."}.After(person))
	}
	return ran("app refused", Ran{Text: "the app refused the arguments; nothing ran."}.After(person))
}

// modelStats counts the outcomes the sequences reached, to show what the
// test explored.
type modelStats struct {
	mu    sync.Mutex
	kinds map[string]int
	holds int
}

func (m *modelStats) add(kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kinds == nil {
		m.kinds = map[string]int{}
	}
	m.kinds[kind]++
	m.holds++
}

func (m *modelStats) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d holds:", m.holds)
	for _, k := range []string{"ran", "ran with changes", "app failed", "app refused", "dropped: unknown", "no answer: unknown", "cut after the send: unknown",
		"changed", "declined", "declined with a note", "later", "moved on", "timed out", "refused at hold", "followed", "policy changed", "slow: unknown", "slow: unchecked", "slow: not reached"} {
		fmt.Fprintf(&b, " %s %d;", k, m.kinds[k])
	}
	return b.String()
}

// seedsThatFailed are sequences that once found a bug; they run every
// time, whatever the random base.
var seedsThatFailed = []uint64{
	419647816991994602,   // an ended card's attachments answered one by one: each ran
	3015117318891431990,  // a stand-in's group learnt of its decision only when it settled: moved on meanwhile
	17254178427504573961, // a stand-in's step left the intent index: its group timed out
}

// TestReleaseModelSeedsThatFailed replays seedsThatFailed on Badger.
func TestReleaseModelSeedsThatFailed(t *testing.T) {
	var stats modelStats
	for _, seed := range seedsThatFailed {
		// Ten times each, with a worker of its own each time (as when the
		// seed is replayed with -model.seed): hold ids are random, and
		// which attachment stands in can fall to the id order.
		for range 10 {
			if err := newModelWorker(t, false).run(seed, &stats); err != nil {
				t.Errorf("sequence with seed %d failed: %v", seed, err)
				break
			}
		}
	}
}
