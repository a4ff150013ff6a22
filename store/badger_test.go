package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgate/toolgate/store"
)

// testClock is a store clock that moves only when told to. It starts years
// away from the wall clock on purpose: Badger's TTL runs on the wall clock,
// and the store must not confuse the two.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2031, 5, 4, 10, 0, 0, 123456789, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// openStore opens a store on disk in dir and closes it when the test ends.
func openStore(tb testing.TB, dir string, opts store.BadgerOptions) *store.Badger {
	tb.Helper()
	s, err := store.OpenBadger(dir, opts)
	if err != nil {
		tb.Fatalf("OpenBadger: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func newID(tb testing.TB) string {
	tb.Helper()
	id, err := store.NewID()
	if err != nil {
		tb.Fatalf("NewID: %v", err)
	}
	return id
}

// newHold returns a waiting hold with every field a Put sets. The raw fields
// carry spaces, newlines and HTML characters, which encoding/json would
// compact or escape if the store let it.
func newHold(id, stepID string, position int, created time.Time) store.Hold {
	return store.Hold{
		ID:          id,
		StepID:      stepID,
		Owner:       "person-1",
		Tenant:      "tenant-a",
		Policy:      "blog",
		Action:      "delete_post",
		Kind:        store.KindCard,
		Protocol:    "openai-chat",
		Shown:       json.RawMessage(`[ {"label": "Post", "value": "<b>Hello</b> & bye"} ]`),
		Fingerprint: "sha256:9f86d081",
		CallID:      "call_" + strconv.Itoa(position),
		Call:        json.RawMessage(`{"id": "call_1", "type": "function",  "function": {"name": "delete_post", "arguments": "{\"post\": 7}"}}`),
		Arguments:   json.RawMessage(`{"post": 7}`),
		Message:     json.RawMessage("{\n  \"role\": \"assistant\",\n  \"content\": null,\n  \"tool_calls\": [ ]\n}"),
		Position:    position,
		Text:        "Waiting for your confirmation: Delete this post?",
		State:       store.Waiting,
		Created:     created,
		Expires:     created.Add(30 * time.Minute),
	}
}

// putStep puts a step of n waiting holds and returns them.
func putStep(tb testing.TB, s store.Store, n int, created time.Time) []store.Hold {
	tb.Helper()
	stepID := newID(tb)
	holds := make([]store.Hold, n)
	for i := range holds {
		holds[i] = newHold(newID(tb), stepID, i, created)
	}
	if err := s.Put(context.Background(), holds); err != nil {
		tb.Fatalf("Put: %v", err)
	}
	return holds
}

func TestBadgerRoundTrip(t *testing.T) {
	clock := newTestClock()
	s := openStore(t, t.TempDir(), store.BadgerOptions{Now: clock.Now})
	ctx := context.Background()

	stepID := newID(t)
	first := newHold(newID(t), stepID, 0, clock.Now())
	// Put accepts a waiting hold with the answer fields set; they must
	// survive too, so every field is checked.
	first.Answer = store.AnswerSubmit
	first.AnsweredBy = "person-1"
	first.Values = json.RawMessage(`{"title": "Hi <there>"}`)
	first.Outcome = "pending"
	first.AnsweredAt = clock.Now().Add(time.Minute)
	second := newHold(newID(t), stepID, 1, clock.Now())
	second.Kind = store.KindForm
	second.Tenant = ""

	// Given out of order: Step must return Position order.
	if err := s.Put(ctx, []store.Hold{second, first}); err != nil {
		t.Fatalf("Put: %v", err)
	}

	for _, want := range []store.Hold{first, second} {
		got, err := s.Get(ctx, want.ID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		assertHold(t, got, want)
	}

	step, err := s.Step(ctx, stepID)
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	if len(step) != 2 {
		t.Fatalf("Step returned %d holds, want 2", len(step))
	}
	assertHold(t, step[0], first)
	assertHold(t, step[1], second)
}

// assertHold compares every field, and the raw JSON ones byte for byte.
func assertHold(t *testing.T, got, want store.Hold) {
	t.Helper()
	raw := map[string][2]json.RawMessage{
		"Shown":     {got.Shown, want.Shown},
		"Call":      {got.Call, want.Call},
		"Arguments": {got.Arguments, want.Arguments},
		"Message":   {got.Message, want.Message},
		"Values":    {got.Values, want.Values},
	}
	for name, pair := range raw {
		if !bytes.Equal(pair[0], pair[1]) {
			t.Errorf("hold %s: %s = %s, want %s", want.ID, name, pair[0], pair[1])
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hold %s:\n got %+v\nwant %+v", want.ID, got, want)
	}
}

func TestBadgerPutRefuses(t *testing.T) {
	clock := newTestClock()
	s := openStore(t, t.TempDir(), store.BadgerOptions{Now: clock.Now})
	ctx := context.Background()
	now := clock.Now()

	stored := putStep(t, s, 1, now)[0]

	stepID := newID(t)
	a := newHold(newID(t), stepID, 0, now)
	b := newHold(newID(t), stepID, 1, now)
	other := newHold(newID(t), newID(t), 0, now)
	answered := a
	answered.State = store.Answered
	noExpiry := a
	noExpiry.Expires = time.Time{}
	noID := a
	noID.ID = ""
	noStep := newHold(newID(t), "", 0, now)
	longGone := newHold(newID(t), newID(t), 0, now.Add(-48*time.Hour))
	sameStep := newHold(newID(t), stored.StepID, 1, now)
	sameID := newHold(stored.ID, newID(t), 0, now)

	tests := []struct {
		name  string
		holds []store.Hold
		want  string
	}{
		{"empty", nil, "no holds"},
		{"mixed steps", []store.Hold{a, other}, "step id differs"},
		{"repeated id", []store.Hold{a, b, a}, "holds[2]: same id as holds[0]"},
		{"empty id", []store.Hold{noID}, "empty id"},
		{"empty step id", []store.Hold{noStep}, "empty step id"},
		{"not waiting", []store.Hold{answered}, `state "answered"`},
		{"no expiry", []store.Hold{noExpiry}, "no expiry"},
		{"past retention", []store.Hold{longGone}, "retention"},
		{"existing step", []store.Hold{sameStep}, "step: id already exists"},
		{"existing hold", []store.Hold{sameID}, "holds[0]: id already exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Put(ctx, tt.holds)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Put = %v, want an error containing %q", err, tt.want)
			}
			if errors.Is(err, store.ErrUnavailable) {
				t.Errorf("Put = %v, a refusal, not an outage", err)
			}
		})
	}

	// Nothing of a refused Put was written.
	if _, err := s.Get(ctx, sameStep.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a refused hold = %v, want ErrNotFound", err)
	}
	got, err := s.Get(ctx, stored.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	assertHold(t, got, stored)
}

func TestBadgerClaimRace(t *testing.T) {
	clock := newTestClock()
	s := openStore(t, t.TempDir(), store.BadgerOptions{Now: clock.Now})
	ctx := context.Background()
	hold := putStep(t, s, 1, clock.Now())[0]

	const n = 100
	var (
		start   = make(chan struct{})
		wg      sync.WaitGroup
		results = make([]store.Claimed, n)
		errs    = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = s.Claim(ctx, hold.ID, store.Answer{
				Choice: store.AnswerConfirm,
				By:     "person-" + strconv.Itoa(i),
			})
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("claims %d and %d both won", winner, i)
			}
			winner = i
		case !errors.Is(err, store.ErrAnswered):
			t.Errorf("claim %d = %v, want ErrAnswered", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no claim won")
	}
	won := results[winner]
	if !won.Complete {
		t.Error("the only hold of the step was claimed, but Complete is false")
	}

	got, err := s.Get(ctx, hold.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want := "person-" + strconv.Itoa(winner)
	if got.State != store.Answered || got.AnsweredBy != want || got.Answer != store.AnswerConfirm {
		t.Errorf("stored hold: state %q, answer %q by %q; want answered, confirm by %q",
			got.State, got.Answer, got.AnsweredBy, want)
	}
	if !got.AnsweredAt.Equal(clock.Now()) {
		t.Errorf("AnsweredAt = %v, want the store clock %v", got.AnsweredAt, clock.Now())
	}
	assertHold(t, got, won.Hold)
}

// Two holds of one step answered at the same moment: exactly one of the two
// claims must report the step complete, every time.
func TestBadgerClaimStepRace(t *testing.T) {
	clock := newTestClock()
	s := openStore(t, t.TempDir(), store.BadgerOptions{Now: clock.Now})
	ctx := context.Background()

	const rounds = 200
	for round := range rounds {
		holds := putStep(t, s, 2, clock.Now())
		var (
			start   = make(chan struct{})
			wg      sync.WaitGroup
			results [2]store.Claimed
			errs    [2]error
		)
		for i := range holds {
			wg.Go(func() {
				<-start
				results[i], errs[i] = s.Claim(ctx, holds[i].ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"})
			})
		}
		close(start)
		wg.Wait()

		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: claim %d: %v", round, i, err)
			}
		}
		if results[0].Complete == results[1].Complete {
			t.Fatalf("round %d: Complete = %v and %v, want exactly one true",
				round, results[0].Complete, results[1].Complete)
		}
		last := results[0]
		if results[1].Complete {
			last = results[1]
		}
		for _, h := range last.Step {
			if h.State != store.Answered {
				t.Fatalf("round %d: the completing claim sees hold %d %q", round, h.Position, h.State)
			}
		}
	}
}

func TestBadgerClaimStep(t *testing.T) {
	clock := newTestClock()
	s := openStore(t, t.TempDir(), store.BadgerOptions{Now: clock.Now})
	ctx := context.Background()
	holds := putStep(t, s, 3, clock.Now())

	values := json.RawMessage(`{"title": "Hello"}`)
	for i, id := range []string{holds[2].ID, holds[0].ID, holds[1].ID} {
		c, err := s.Claim(ctx, id, store.Answer{Choice: store.AnswerSubmit, By: "person-1", Values: values})
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		if want := i == 2; c.Complete != want {
			t.Errorf("claim %d: Complete = %v, want %v", i, c.Complete, want)
		}
		if c.Hold.ID != id || c.Hold.State != store.Answered || !bytes.Equal(c.Hold.Values, values) {
			t.Errorf("claim %d: Hold = %s %q %s", i, c.Hold.ID, c.Hold.State, c.Hold.Values)
		}
		if len(c.Step) != 3 {
			t.Fatalf("claim %d: Step has %d holds, want 3", i, len(c.Step))
		}
		for pos, h := range c.Step {
			if h.Position != pos {
				t.Errorf("claim %d: Step[%d].Position = %d", i, pos, h.Position)
			}
		}
	}
	if _, err := s.Claim(ctx, holds[0].ID, store.Answer{Choice: store.AnswerDecline}); !errors.Is(err, store.ErrAnswered) {
		t.Errorf("second claim = %v, want ErrAnswered", err)
	}
	if _, err := s.Claim(ctx, holds[0].ID, store.Answer{}); err == nil {
		t.Error("claim with no choice succeeded")
	}
}

func TestBadgerExpiry(t *testing.T) {
	clock := newTestClock()
	s := openStore(t, t.TempDir(), store.BadgerOptions{Now: clock.Now})
	ctx := context.Background()
	holds := putStep(t, s, 2, clock.Now())

	clock.Advance(30 * time.Minute) // exactly Expires: already expired
	got, err := s.Get(ctx, holds[0].ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.State != store.Waiting {
		t.Errorf("stored State = %q, want waiting: nothing sweeps", got.State)
	}
	if st := got.StateAt(clock.Now()); st != store.Expired {
		t.Errorf("StateAt(Expires) = %q, want expired", st)
	}

	if _, err := s.Claim(ctx, holds[0].ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"}); !errors.Is(err, store.ErrExpired) {
		t.Fatalf("Claim of an expired hold = %v, want ErrExpired", err)
	}
	for i, h := range holds {
		c, err := s.Claim(ctx, h.ID, store.Answer{Choice: store.AnswerTimedOut, AllowExpired: true})
		if err != nil {
			t.Fatalf("Claim %d with AllowExpired: %v", i, err)
		}
		if c.Hold.State != store.Answered || c.Hold.Answer != store.AnswerTimedOut || c.Hold.AnsweredBy != "" {
			t.Errorf("claimed hold %d: %q %q by %q", i, c.Hold.State, c.Hold.Answer, c.Hold.AnsweredBy)
		}
		if want := i == 1; c.Complete != want {
			t.Errorf("claim %d: Complete = %v, want %v", i, c.Complete, want)
		}
	}
}

func TestBadgerSettle(t *testing.T) {
	clock := newTestClock()
	s := openStore(t, t.TempDir(), store.BadgerOptions{Now: clock.Now})
	ctx := context.Background()
	hold := putStep(t, s, 1, clock.Now())[0]
	const outcome = "The person filled in: title. Done."

	if err := s.Settle(ctx, hold.ID, outcome); err == nil {
		t.Fatal("Settle of a waiting hold succeeded")
	}
	if err := s.Settle(ctx, newID(t), outcome); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Settle of an unknown hold = %v, want ErrNotFound", err)
	}

	if _, err := s.Claim(ctx, hold.ID, store.Answer{
		Choice: store.AnswerSubmit,
		By:     "person-1",
		Values: json.RawMessage(`{"title": "secret-ish"}`),
	}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if err := s.Settle(ctx, hold.ID, ""); err == nil {
		t.Error("Settle with an empty outcome succeeded")
	}
	if err := s.Settle(ctx, hold.ID, outcome); err != nil {
		t.Fatalf("Settle: %v", err)
	}

	got, err := s.Get(ctx, hold.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.State != store.Settled || got.Outcome != outcome || got.Answer != store.AnswerSubmit {
		t.Errorf("settled hold: %q, outcome %q, answer %q", got.State, got.Outcome, got.Answer)
	}
	if got.Values != nil {
		t.Errorf("settled hold kept Values %s", got.Values)
	}
	if !bytes.Equal(got.Call, hold.Call) || !bytes.Equal(got.Message, hold.Message) {
		t.Error("Settle changed the stored call or message")
	}

	if err := s.Settle(ctx, hold.ID, outcome); err != nil {
		t.Errorf("repeated Settle with the same outcome = %v, want nil", err)
	}
	if err := s.Settle(ctx, hold.ID, "The person declined; nothing ran."); err == nil {
		t.Error("Settle with another outcome succeeded")
	}
	if _, err := s.Claim(ctx, hold.ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"}); !errors.Is(err, store.ErrAnswered) {
		t.Errorf("Claim of a settled hold = %v, want ErrAnswered", err)
	}
}

func TestBadgerDurability(t *testing.T) {
	clock := newTestClock()
	dir := t.TempDir()
	ctx := context.Background()

	s, err := store.OpenBadger(dir, store.BadgerOptions{Now: clock.Now})
	if err != nil {
		t.Fatalf("OpenBadger: %v", err)
	}
	hold := putStep(t, s, 1, clock.Now())[0]

	_, err = store.OpenBadger(dir, store.BadgerOptions{Now: clock.Now})
	if err == nil {
		t.Fatal("a second OpenBadger on an open directory succeeded")
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("second OpenBadger = %q, want the directory %q named", err, dir)
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = openStore(t, dir, store.BadgerOptions{Now: clock.Now})
	got, err := s.Get(ctx, hold.ID)
	if err != nil {
		t.Fatalf("Get after reopening: %v", err)
	}
	assertHold(t, got, hold)
	c, err := s.Claim(ctx, hold.ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"})
	if err != nil {
		t.Fatalf("Claim after reopening: %v", err)
	}
	if !c.Complete {
		t.Error("Claim after reopening: Complete is false")
	}
}

func TestBadgerRetention(t *testing.T) {
	clock := newTestClock() // years from the wall clock
	s := openStore(t, t.TempDir(), store.BadgerOptions{Now: clock.Now, Retention: 2 * time.Hour})
	ctx := context.Background()

	before := time.Now()
	hold := putStep(t, s, 1, clock.Now())[0]
	after := time.Now()

	// Expires is 30 minutes away on the store clock; the record must be
	// kept that long plus the retention, on Badger's wall clock.
	keep := 30*time.Minute + 2*time.Hour
	low, high := before.Add(keep).Truncate(time.Second), after.Add(keep).Add(time.Second)
	holdAt, stepAt, err := store.RecordExpiresAt(s, hold.ID)
	if err != nil {
		t.Fatalf("RecordExpiresAt: %v", err)
	}
	for name, at := range map[string]time.Time{"hold": holdAt, "step": stepAt} {
		if at.Before(low) || at.After(high) {
			t.Errorf("%s record expires at %v, want between %v and %v", name, at, low, high)
		}
	}

	// A claim and a settle rewrite the record but keep its lifetime.
	if _, err := s.Claim(ctx, hold.ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if err := s.Settle(ctx, hold.ID, "The person confirmed. Removed."); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	again, _, err := store.RecordExpiresAt(s, hold.ID)
	if err != nil {
		t.Fatalf("RecordExpiresAt: %v", err)
	}
	if !again.Equal(holdAt) {
		t.Errorf("after Claim and Settle the record expires at %v, want %v", again, holdAt)
	}
}

func TestBadgerDefaultRetention(t *testing.T) {
	clock := newTestClock()
	s := openStore(t, "", store.BadgerOptions{Now: clock.Now, InMemory: true})
	before := time.Now()
	hold := putStep(t, s, 1, clock.Now())[0]
	holdAt, _, err := store.RecordExpiresAt(s, hold.ID)
	if err != nil {
		t.Fatalf("RecordExpiresAt: %v", err)
	}
	if want := before.Add(30*time.Minute + store.DefaultRetention).Truncate(time.Second); holdAt.Before(want) {
		t.Errorf("record expires at %v, want at least %v", holdAt, want)
	}
}

func TestBadgerNotFound(t *testing.T) {
	s := openStore(t, t.TempDir(), store.BadgerOptions{})
	ctx := context.Background()
	id := newID(t)
	if _, err := s.Get(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get = %v, want ErrNotFound", err)
	}
	if _, err := s.Step(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Step = %v, want ErrNotFound", err)
	}
	if _, err := s.Claim(ctx, id, store.Answer{Choice: store.AnswerConfirm}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Claim = %v, want ErrNotFound", err)
	}
}

func TestBadgerClosed(t *testing.T) {
	clock := newTestClock()
	s, err := store.OpenBadger(t.TempDir(), store.BadgerOptions{Now: clock.Now})
	if err != nil {
		t.Fatalf("OpenBadger: %v", err)
	}
	hold := putStep(t, s, 1, clock.Now())[0]
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	ctx := context.Background()
	_, getErr := s.Get(ctx, hold.ID)
	_, stepErr := s.Step(ctx, hold.StepID)
	_, claimErr := s.Claim(ctx, hold.ID, store.Answer{Choice: store.AnswerConfirm})
	for name, err := range map[string]error{
		"Get":    getErr,
		"Step":   stepErr,
		"Put":    s.Put(ctx, []store.Hold{newHold(newID(t), newID(t), 0, clock.Now())}),
		"Claim":  claimErr,
		"Settle": s.Settle(ctx, hold.ID, "done"),
	} {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on a closed store = %v, want ErrUnavailable", name, err)
		}
	}
}

func TestBadgerContext(t *testing.T) {
	s := openStore(t, "", store.BadgerOptions{InMemory: true})
	hold := putStep(t, s, 1, time.Now())[0]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Get(ctx, hold.ID); !errors.Is(err, context.Canceled) {
		t.Errorf("Get = %v, want context.Canceled", err)
	}
	if _, err := s.Claim(ctx, hold.ID, store.Answer{Choice: store.AnswerConfirm}); !errors.Is(err, context.Canceled) {
		t.Errorf("Claim = %v, want context.Canceled", err)
	}
}

func TestOpenBadgerRefuses(t *testing.T) {
	if _, err := store.OpenBadger("", store.BadgerOptions{}); err == nil {
		t.Error("OpenBadger with no directory succeeded")
	}
	dir := t.TempDir()
	if _, err := store.OpenBadger(dir, store.BadgerOptions{Retention: -time.Hour}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("OpenBadger with a negative retention = %v, want an error naming %q", err, dir)
	}
}

// Badger's own lines reach zap under "badger", and its info lines (one per
// open) are demoted to debug.
func TestBadgerLogger(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	openStore(t, t.TempDir(), store.BadgerOptions{Logger: zap.New(core)})
	if logs.Len() == 0 {
		t.Fatal("no Badger log lines reached zap")
	}
	for _, e := range logs.All() {
		if e.LoggerName != "badger" {
			t.Errorf("line %q from logger %q, want badger", e.Message, e.LoggerName)
		}
		if e.Level == zapcore.InfoLevel {
			t.Errorf("line %q at info level", e.Message)
		}
		if strings.HasSuffix(e.Message, "\n") {
			t.Errorf("line %q ends in a newline", e.Message)
		}
	}
}

func BenchmarkPut(b *testing.B) {
	s := openStore(b, b.TempDir(), store.BadgerOptions{})
	ctx := context.Background()
	stepID := newID(b)
	hold := newHold(newID(b), stepID, 0, time.Now())
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		hold.ID = stepID + strconv.Itoa(i)
		hold.StepID = hold.ID
		if err := s.Put(ctx, []store.Hold{hold}); err != nil {
			b.Fatalf("Put: %v", err)
		}
	}
}

func BenchmarkClaim(b *testing.B) {
	s := openStore(b, b.TempDir(), store.BadgerOptions{})
	ctx := context.Background()
	holds := make([]store.Hold, b.N)
	for i := range holds {
		holds[i] = putStep(b, s, 1, time.Now())[0]
	}
	answer := store.Answer{Choice: store.AnswerConfirm, By: "person-1"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Claim(ctx, holds[i].ID, answer); err != nil {
			b.Fatalf("Claim: %v", err)
		}
	}
}

func TestPutKeepsSettledRefusal(t *testing.T) {
	db, err := store.OpenBadger(t.TempDir(), store.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	step := "stepstepstepstepstepstepst"
	holds := []store.Hold{
		{ID: "aaaaaaaaaaaaaaaaaaaaaaaaaa", StepID: step, State: store.Waiting, Expires: now.Add(time.Hour)},
		{ID: "bbbbbbbbbbbbbbbbbbbbbbbbbb", StepID: step, State: store.Settled, Outcome: "refused: no record", Position: 1, Expires: now.Add(time.Hour)},
	}
	if err := db.Put(context.Background(), holds); err != nil {
		t.Fatal(err)
	}
	c, err := db.Claim(context.Background(), holds[0].ID, store.Answer{Choice: store.AnswerConfirm, By: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Complete {
		t.Error("claiming the only waiting hold of a step with a settled refusal did not complete it")
	}
	bad := []store.Hold{{ID: "cccccccccccccccccccccccccc", StepID: "otherstepotherstepotherste", State: store.Settled, Expires: now.Add(time.Hour)}}
	if err := db.Put(context.Background(), bad); err == nil {
		t.Error("a settled hold without an outcome was accepted")
	}
}
