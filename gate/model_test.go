package gate

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/internal/testkit"
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
	modelN    = flag.Int("model.n", 0, "TestReleaseModel: how many sequences (default 10000; 2000 with -race, 1000 with -short)")
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
			n = 2000 // .ci/run runs the full 10,000 without -race
		default:
			n = 10000
		}
	}
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
				wk := newModelWorker(t)
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
	behaves  sync.Map // hold id → endpointScript
	postSeq  int
	personID int
}

type endpointScript struct {
	behave testkit.Behaviour
	status int
}

func newModelWorker(t *testing.T) *modelWorker {
	wk := &modelWorker{t: t}
	wk.memF, wk.diskF = &faultStore{}, &faultStore{}
	// A short action timeout: the app's "no answer" costs that long.
	wk.mem = newRig(t, rigOptions{actionTimeout: 300 * time.Millisecond, wrap: wk.memF.wrap})
	wk.disk = newRig(t, rigOptions{disk: true, actionTimeout: 300 * time.Millisecond, wrap: wk.diskF.wrap})
	for _, r := range []*rig{wk.mem, wk.disk} {
		r.app.Script(func(key string) (testkit.Behaviour, int) {
			if s, ok := wk.behaves.Load(key); ok {
				return s.(endpointScript).behave, s.(endpointScript).status
			}
			return testkit.Respond, 200
		})
	}
	return wk
}

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
	post         int
	refused      bool   // refused when it was held
	answer       string // the answer it must have ("" none yet)
	script       endpointScript
	changed      bool     // its record changed while it waited
	changedFirst bool     // ... before its release reached the app: it must never run
	reads        []string // what the model read of it, in order
}

// sequence is one run: one person, one step.
type sequence struct {
	wk      *modelWorker
	r       *rig
	faults  *faultStore
	rnd     *rand.Rand
	who     Person
	step    string
	expires time.Time // the step's holds' TTL ends
	held    bool      // the step was stored (not every call refused)
	holds   []*modelHold
	ops     []string
}

func (wk *modelWorker) run(seed uint64, stats *modelStats) (err error) {
	s := &sequence{wk: wk, rnd: rand.New(rand.NewPCG(seed, seed^0x5eed)), r: wk.mem, faults: wk.memF}
	if seed%diskEvery == 0 {
		s.r, s.faults = wk.disk, wk.diskF
	}
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
	ops := 2 + s.rnd.IntN(7)
	restartAt := -1
	if s.r.dir != "" {
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
// with its release.
func (s *sequence) start() error {
	n := 1 + s.rnd.IntN(3)
	var calls []callSpec
	for i := range n {
		h := &modelHold{callID: fmt.Sprintf("call_%d", i), form: s.rnd.IntN(3) == 0}
		if !h.form {
			s.wk.postSeq++
			h.post = s.wk.postSeq
			s.r.app.SetRecord(fmt.Sprintf("/posts/%d", h.post), `{"title":"Post"}`)
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
		s.holds = append(s.holds, h)
		calls = append(calls, callSpec{i, h.post})
	}
	s.log("hold %s", describe(s.holds))
	step, v := s.r.hold(s.who, specs(calls)...)
	if step == "" {
		// Every record read timed out on a loaded machine: each call is
		// refused, nothing waits, nothing runs.
		for _, ref := range v.Refusals {
			if !strings.HasPrefix(ref.Content, "Toolgate refused ") {
				return fmt.Errorf("nothing held, and %q", ref.Content)
			}
		}
		if len(v.Refusals) != n {
			return fmt.Errorf("nothing held: %+v", v)
		}
		s.held = false
		return nil
	}
	s.held = true
	s.step = step
	for _, sh := range s.r.step(step) {
		s.expires = sh.Expires
		for _, h := range s.holds {
			if h.callID == sh.CallID {
				h.id = sh.ID
				h.refused = sh.Answer == "refused"
				s.wk.behaves.Store(h.id, h.script)
			}
		}
	}
	return nil
}

type callSpec struct{ i, post int }

func specs(cs []callSpec) []interceptor.Call {
	out := make([]interceptor.Call, len(cs))
	for i, c := range cs {
		out[i] = call(c.i, c.post)
	}
	return out
}

func describe(holds []*modelHold) string {
	var parts []string
	for _, h := range holds {
		kind := "card"
		if h.form {
			kind = "form"
		}
		parts = append(parts, fmt.Sprintf("%s/%d/%d", kind, h.script.behave, h.script.status))
	}
	return strings.Join(parts, " ")
}

func (s *sequence) log(format string, a ...any) { s.ops = append(s.ops, fmt.Sprintf(format, a...)) }

// op runs one random operation and moves the reference model with it.
func (s *sequence) op() error {
	switch x := s.rnd.IntN(100); {
	case x < 40:
		return s.answer()
	case x < 50:
		s.log("message")
		s.read(true)
	case x < 58:
		s.log("read")
		s.read(false)
	case x < 66:
		s.log("expire")
		s.r.clock.Advance(DefaultTTL + time.Minute)
	case x < 73:
		s.log("sweep")
		s.timeOutBesideAnswers()
		if err := s.r.gate.Sweep(context.Background(), false); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	case x < 80:
		s.restart()
	case x < 88:
		begin := s.rnd.IntN(2) == 0
		s.log("fault(begin=%v)", begin)
		s.faults.arm(begin)
	case x < 93:
		s.log("stale")
		s.r.clock.Advance(s.r.gate.releaseTakes(MaxHeld) + time.Second)
	default:
		h := s.holds[s.rnd.IntN(len(s.holds))]
		if h.form || h.refused {
			return nil
		}
		s.log("change(%s)", h.callID)
		h.changed = true
		h.changedFirst = h.changedFirst || s.r.app.RunCount(h.id) == 0
		s.r.app.SetRecord(fmt.Sprintf("/posts/%d", h.post), fmt.Sprintf(`{"title":"Post, changed %d"}`, s.rnd.Int()))
	}
	return nil
}

// restart is the process dying between two operations and starting again.
func (s *sequence) restart() {
	s.log("restart")
	s.timeOutBesideAnswers()
	s.r.restart()
}

// expired reports whether the step's holds are past their TTL.
func (s *sequence) expired() bool {
	return !s.r.clock.Now().Before(s.expires)
}

// answer answers a random hold with a random answer of its kind; the
// reference says whether the gate must take it.
func (s *sequence) answer() error {
	h := s.holds[s.rnd.IntN(len(s.holds))]
	if h.refused {
		return nil
	}
	choices := []string{store.AnswerConfirm, store.AnswerConfirm, store.AnswerDecline}
	if h.form {
		choices = []string{store.AnswerSubmit, store.AnswerSubmit, store.AnswerDecline, store.AnswerLater}
	}
	choice := choices[s.rnd.IntN(len(choices))]
	want := h.answer == "" && !s.expired()
	s.log("%s(%s)", choice, h.callID)
	var err error
	if choice == store.AnswerSubmit {
		_, err = s.r.gate.Submit(context.Background(), s.step, h.id, s.who, "", map[string][]string{"body": {"Text"}}, nil, false)
	} else {
		_, err = s.r.gate.Answer(context.Background(), s.step, h.id, s.who, choice)
	}
	switch {
	case want && err != nil:
		return fmt.Errorf("%s of a waiting hold refused: %w", choice, err)
	case !want && err == nil:
		return fmt.Errorf("%s of a hold answered %q (or expired) was taken", choice, h.answer)
	case !want && Status(err) != 409:
		return fmt.Errorf("%s of a hold answered %q: %v (status %d), want 409", choice, h.answer, err, Status(err))
	}
	if want {
		h.answer = choice
	}
	return nil
}

// read is the model's next request; userFollows when the person wrote on.
func (s *sequence) read(userFollows bool) {
	expired := s.expired()
	for _, h := range s.holds {
		if h.answer == "" && !h.refused {
			switch {
			case expired:
				h.answer = store.AnswerTimedOut
			case userFollows:
				h.answer = store.AnswerMovedOn
			}
		}
	}
	s.collect(s.r.restore(s.who, s.step, userFollows))
}

func (s *sequence) collect(results []string) {
	for i, text := range results {
		s.holds[i].reads = append(s.holds[i].reads, text)
	}
}

// timeOutBesideAnswers is what a sweep (or a restart's) does to the
// reference: in a step where the person answered but some holds still
// wait past their TTL, those are timed out.
func (s *sequence) timeOutBesideAnswers() {
	answered, waiting := false, false
	for _, h := range s.holds {
		switch h.answer {
		case store.AnswerConfirm, store.AnswerSubmit, store.AnswerDecline, store.AnswerLater:
			answered = true
		case "":
			waiting = waiting || !h.refused
		}
	}
	if !answered || !waiting || !s.expired() {
		return
	}
	for _, h := range s.holds {
		if h.answer == "" && !h.refused {
			h.answer = store.AnswerTimedOut
		}
	}
}

// check ends the sequence (everything expires, a sweep, the model's next
// request) and checks every hold.
func (s *sequence) check(stats *modelStats) error {
	s.faults.disarm()
	s.r.clock.Advance(2 * time.Hour)
	s.timeOutBesideAnswers()
	if err := s.r.gate.Sweep(context.Background(), false); err != nil {
		return fmt.Errorf("final sweep: %w", err)
	}
	s.log("end")
	s.read(true)
	again := s.r.restore(s.who, s.step, true)
	stored := s.r.step(s.step)
	for i, h := range s.holds {
		text := h.reads[len(h.reads)-1]
		if again[i] != text {
			return fmt.Errorf("%s: the model read %q, then %q", h.callID, text, again[i])
		}
		runs := s.r.app.RunCount(h.id)
		if runs > 1 {
			return fmt.Errorf("%s reached the app %d times", h.callID, runs)
		}
		if st := stored[i].State; st != store.Settled {
			return fmt.Errorf("%s ended %s, not settled (answer %q)", h.callID, st, stored[i].Answer)
		}
		if says := s.r.gate.outcomeText(stored[i]); text != says {
			return fmt.Errorf("%s: the model read %q, the store says %q", h.callID, text, says)
		}
		kind, err := h.judge(text, runs, s.faults.fault(h.id))
		if err != nil {
			return fmt.Errorf("%s (answer %q, app %d/%d, fault %q, ran %d): %w", h.callID, h.answer, h.script.behave, h.script.status, s.faults.fault(h.id), runs, err)
		}
		for _, read := range h.reads[:len(h.reads)-1] {
			if read != text && read != OutcomeWaiting && read != OutcomeAnswered && read != OutcomeRunning {
				return fmt.Errorf("%s: the model read %q before the final %q", h.callID, read, text)
			}
		}
		stats.add(kind)
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
	case h.answer == store.AnswerDecline:
		return fixed("declined", OutcomeDeclined)
	case h.answer == store.AnswerMovedOn:
		return fixed("moved on", OutcomeMovedOn)
	case h.answer == store.AnswerTimedOut:
		return fixed("timed out", OutcomeExpired)
	case h.answer == "":
		return "", fmt.Errorf("the reference has no answer for a hold read as %q", text)
	}
	if h.changedFirst && runs > 0 {
		return "", fmt.Errorf("ran against a record that changed after the person saw it (read %q)", text)
	}
	person, reply := PersonConfirmed, "Removed."
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
	case !h.form && text == outcomeUnchecked(uncheckedDown):
		return fixed("slow: unchecked", outcomeUnchecked(uncheckedDown))
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
	for _, k := range []string{"ran", "app failed", "app refused", "dropped: unknown", "no answer: unknown", "cut after the send: unknown",
		"changed", "declined", "later", "moved on", "timed out", "refused at hold", "slow: unknown", "slow: unchecked", "slow: not reached"} {
		fmt.Fprintf(&b, " %s %d;", k, m.kinds[k])
	}
	return b.String()
}
