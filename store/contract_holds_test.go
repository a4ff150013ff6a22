package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// Contract cases: putting, reading, claiming and expiring holds.

func testRoundTrip(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
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

func testPutRefuses(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	now := clock.Now()

	stored := putStep(t, s, 1, now)[0]

	stepID := newID(t)
	a := newHold(newID(t), stepID, 0, now)
	b := newHold(newID(t), stepID, 1, now)
	other := newHold(newID(t), newID(t), 0, now)
	answered := a
	answered.State = store.Answered
	running := a
	running.State = store.Running
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
		{"answered", []store.Hold{answered}, `state "answered"`},
		{"running", []store.Hold{running}, `state "running"`},
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

// A call refused when it was held is kept, settled, beside the waiting
// holds of its step; it does not keep the step from completing.
func testPutKeepsSettledRefusal(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	stepID := newID(t)
	waiting := newHold(newID(t), stepID, 0, clock.Now())
	refused := newHold(newID(t), stepID, 1, clock.Now())
	refused.State, refused.Answer, refused.Outcome = store.Settled, "refused", "refused: no record"
	if err := s.Put(ctx, []store.Hold{waiting, refused}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, err := s.Get(ctx, refused.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	assertHold(t, got, refused)

	c, err := s.Claim(ctx, waiting.ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if !c.Complete {
		t.Error("claiming the only waiting hold of a step with a settled refusal did not complete it")
	}

	bad := newHold(newID(t), newID(t), 0, clock.Now())
	bad.State = store.Settled
	if err := s.Put(ctx, []store.Hold{bad}); err == nil {
		t.Error("a settled hold without an outcome was accepted")
	}
}

// A step has one assistant message: every hold read back carries it, also
// one put without it, and a step whose holds disagree is refused.
func testStepMessage(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	now := clock.Now()

	stepID := newID(t)
	holds := []store.Hold{newHold(newID(t), stepID, 0, now), newHold(newID(t), stepID, 1, now), newHold(newID(t), stepID, 2, now)}
	holds[1].Message = nil
	if err := s.Put(ctx, holds); err != nil {
		t.Fatalf("Put: %v", err)
	}
	step, err := s.Step(ctx, stepID)
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	for _, h := range step {
		if !bytes.Equal(h.Message, testMessage) {
			t.Errorf("Step: hold %d has message %s, want the step's", h.Position, h.Message)
		}
	}
	got, err := s.Get(ctx, holds[1].ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !bytes.Equal(got.Message, testMessage) {
		t.Errorf("Get of the hold put without a message: %s, want the step's", got.Message)
	}
	c, err := s.Claim(ctx, holds[1].ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	begun, err := s.Begin(ctx, holds[1].ID)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	for name, m := range map[string]json.RawMessage{"Claimed.Hold": c.Hold.Message, "Begin": begun.Message} {
		if !bytes.Equal(m, testMessage) {
			t.Errorf("%s: message %s, want the step's", name, m)
		}
	}

	other := []store.Hold{newHold(newID(t), newID(t), 0, now), newHold(newID(t), "", 1, now)}
	other[1].StepID = other[0].StepID
	other[1].Message = json.RawMessage(`{"role":"assistant","content":"another"}`)
	err = s.Put(ctx, other)
	if err == nil || !strings.Contains(err.Error(), "message differs") || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Put of a step with two messages = %v, want a refusal naming the message", err)
	}
	if _, err := s.Get(ctx, other[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a hold of the refused step = %v, want ErrNotFound", err)
	}
}

func testNotFound(t *testing.T, open openStoreFunc) {
	s, _ := openClocked(t, open)
	ctx := context.Background()
	id := newID(t)
	_, getErr := s.Get(ctx, id)
	_, stepErr := s.Step(ctx, id)
	_, claimErr := s.Claim(ctx, id, store.Answer{Choice: store.AnswerConfirm})
	_, beginErr := s.Begin(ctx, id)
	for name, err := range map[string]error{
		"Get":    getErr,
		"Step":   stepErr,
		"Claim":  claimErr,
		"Begin":  beginErr,
		"Settle": s.Settle(ctx, id, "done"),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s = %v, want ErrNotFound", name, err)
		}
	}
}

func testClaimRace(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	hold := putStep(t, s, 1, clock.Now())[0]

	const n = 100
	results := make([]store.Claimed, n)
	errs := make([]error, n)
	race(t, n, func(i int) {
		results[i], errs[i] = s.Claim(ctx, hold.ID, store.Answer{
			Choice: store.AnswerConfirm,
			By:     "person-" + strconv.Itoa(i),
		})
	})

	winner := onlyWinner(t, errs, store.ErrAnswered)
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

// onlyWinner checks that exactly one of errs is nil and every other one is
// lost (errors.Is), and returns the winner's index.
func onlyWinner(t *testing.T, errs []error, lost error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("calls %d and %d both won", winner, i)
			}
			winner = i
		case !errors.Is(err, lost):
			t.Errorf("call %d = %v, want %v", i, err, lost)
		}
	}
	if winner < 0 {
		t.Fatal("no call won")
	}
	return winner
}

// Two holds of one step answered at the same moment: exactly one of the two
// claims must report the step complete, every time.
func testClaimStepRace(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()

	const rounds = 200
	for round := range rounds {
		holds := putStep(t, s, 2, clock.Now())
		var (
			results [2]store.Claimed
			errs    [2]error
		)
		race(t, len(holds), func(i int) {
			results[i], errs[i] = s.Claim(ctx, holds[i].ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"})
		})

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

func testClaimStep(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
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
		if !bytes.Equal(c.Hold.Message, testMessage) {
			t.Errorf("claim %d: Hold.Message = %s, want the step's message", i, c.Hold.Message)
		}
		if len(c.Step) != 3 {
			t.Fatalf("claim %d: Step has %d holds, want 3", i, len(c.Step))
		}
		for pos, h := range c.Step {
			if h.Position != pos {
				t.Errorf("claim %d: Step[%d].Position = %d", i, pos, h.Position)
			}
			if !bytes.Equal(h.Message, testMessage) {
				t.Errorf("claim %d: Step[%d].Message = %s, want the step's message", i, pos, h.Message)
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

func testExpiry(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
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

func testIndex(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	exp := clock.Now().Add(time.Hour)
	for _, step := range []string{"stepa", "stepb", "stepa"} {
		if err := s.Index(ctx, "resp:ana:resp_1", step, exp); err != nil {
			t.Fatalf("Index: %v", err)
		}
		clock.Advance(time.Millisecond) // filing order is the store clock's
	}
	if err := s.Index(ctx, "resp:ana:resp_12", "other", exp); err != nil {
		t.Fatalf("Index: %v", err)
	}
	got, err := s.Indexed(ctx, "resp:ana:resp_1")
	if err != nil {
		t.Fatalf("Indexed: %v", err)
	}
	if len(got) != 2 || got[0] != "stepa" || got[1] != "stepb" {
		t.Errorf("Indexed = %v, want [stepa stepb] (oldest first, once each, no other key's)", got)
	}
	if err := s.Unindex(ctx, "resp:ana:resp_1", "stepa"); err != nil {
		t.Fatalf("Unindex: %v", err)
	}
	if got, err := s.Indexed(ctx, "resp:ana:resp_1"); err != nil || len(got) != 1 || got[0] != "stepb" {
		t.Errorf("after Unindex: %v, %v; want [stepb]", got, err)
	}
	if got, err := s.Indexed(ctx, "nothing"); err != nil || len(got) != 0 {
		t.Errorf("an unknown key gave %v, %v; want nothing", got, err)
	}
	if err := s.Index(ctx, "", "stepa", exp); err == nil {
		t.Error("Index with an empty key succeeded")
	}
}

// testPutFiles: a hold's Filed keys are filed with its step in Put's own
// write, each once per step; a Put the cap refuses files nothing; holds
// read back carry no Filed; a key names only its own steps.
func testPutFiles(t *testing.T, open openStoreFunc) {
	clock := newTestClock()
	s := open(t, contractConfig{Now: clock.Now, MaxWaiting: 1})
	ctx := context.Background()
	step := newID(t)
	a, b := newHold(newID(t), step, 0, clock.Now()), newHold(newID(t), step, 1, clock.Now())
	b.Owner = "other" // another person: the cap counts each on their own
	a.Filed = []string{"inbox:ana", "resp:ana:r1"}
	b.Filed = []string{"resp:ana:r1", "intent:b"}
	if err := s.Put(ctx, []store.Hold{a, b}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	for _, key := range []string{"inbox:ana", "resp:ana:r1", "intent:b"} {
		if got, err := s.Indexed(ctx, key); err != nil || len(got) != 1 || got[0] != step {
			t.Errorf("Indexed(%q) = %v, %v; want [%s], once", key, got, err, step)
		}
	}
	if got, _ := s.Indexed(ctx, "resp:ana:r"); len(got) != 0 {
		t.Errorf("a key that is a prefix of a filed one gave %v", got)
	}
	if h, err := s.Get(ctx, a.ID); err != nil || h.Filed != nil {
		t.Errorf("Get: %v, Filed %v; want none", err, h.Filed)
	}
	refused := newHold(newID(t), newID(t), 0, clock.Now()) // ana's second: over the cap
	refused.Filed = []string{"inbox:ana", "refused:key"}
	if err := s.Put(ctx, []store.Hold{refused}); !errors.Is(err, store.ErrLimit) {
		t.Fatalf("Put over the cap: %v, want ErrLimit", err)
	}
	if got, _ := s.Indexed(ctx, "refused:key"); len(got) != 0 {
		t.Errorf("a refused Put filed its step: %v", got)
	}
	if got, _ := s.Indexed(ctx, "inbox:ana"); len(got) != 1 || got[0] != step {
		t.Errorf("inbox:ana after a refused Put = %v, want [%s]", got, step)
	}
}

// Stats grows with what is stored. The message is random (base64 of
// random bytes): a backend may compress what it keeps (PostgreSQL does,
// above 2 KiB), and 2 MiB of one letter would take a few kilobytes.
func testStats(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	before, err := s.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	big := newHold(newID(t), newID(t), 0, clock.Now())
	noise := make([]byte, 3<<19)
	if _, err := rand.Read(noise); err != nil {
		t.Fatalf("reading random bytes: %v", err)
	}
	big.Message = json.RawMessage(`"` + base64.StdEncoding.EncodeToString(noise) + `"`)
	if err := s.Put(ctx, []store.Hold{big}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	after, err := s.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if after.Bytes-before.Bytes < 1<<20 {
		t.Errorf("Stats.Bytes went from %d to %d after storing a 2 MiB message", before.Bytes, after.Bytes)
	}
}

func testClosed(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
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
	_, beginErr := s.Begin(ctx, hold.ID)
	_, unsettledErr := s.Unsettled(ctx, "", 10)
	_, indexedErr := s.Indexed(ctx, "k")
	_, statsErr := s.Stats(ctx)
	for name, err := range map[string]error{
		"Get":       getErr,
		"Step":      stepErr,
		"Put":       s.Put(ctx, []store.Hold{newHold(newID(t), newID(t), 0, clock.Now())}),
		"Claim":     claimErr,
		"Begin":     beginErr,
		"Settle":    s.Settle(ctx, hold.ID, "done"),
		"Unsettled": unsettledErr,
		"Index":     s.Index(ctx, "k", hold.StepID, hold.Expires),
		"Indexed":   indexedErr,
		"Unindex":   s.Unindex(ctx, "k", hold.StepID),
		"Stats":     statsErr,
	} {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on a closed store = %v, want ErrUnavailable", name, err)
		}
	}
}

func testContext(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	hold := putStep(t, s, 1, clock.Now())[0]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, getErr := s.Get(ctx, hold.ID)
	_, claimErr := s.Claim(ctx, hold.ID, store.Answer{Choice: store.AnswerConfirm})
	_, beginErr := s.Begin(ctx, hold.ID)
	_, unsettledErr := s.Unsettled(ctx, "", 10)
	for name, err := range map[string]error{
		"Get":       getErr,
		"Put":       s.Put(ctx, []store.Hold{newHold(newID(t), newID(t), 0, clock.Now())}),
		"Claim":     claimErr,
		"Begin":     beginErr,
		"Settle":    s.Settle(ctx, hold.ID, "done"),
		"Unsettled": unsettledErr,
	} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s = %v, want context.Canceled", name, err)
		}
	}
}

// Strings from outside the gate (an owner header, a tool call's id, an
// app's reply) may hold any character, NUL included: a hold keeps them
// as given. An id that could never have been made (NUL, invalid UTF-8,
// as a link's path might carry) is simply not found, never an outage.
func testOddBytes(t *testing.T, open openStoreFunc) {
	s, clock := openClocked(t, open)
	ctx := context.Background()
	odd := "a\x00b \u2028 é 🙂 ' \" \\ %s"
	h := newHold(newID(t), newID(t), 0, clock.Now())
	h.Tenant, h.Owner, h.Policy, h.Action, h.Protocol, h.Fingerprint = odd+"t", odd+"o", odd+"p", odd+"a", odd+"pr", odd+"f"
	h.CallID, h.Text, h.Kind = odd+"c", odd+"x", store.Kind(odd+"k")
	if err := s.Put(ctx, []store.Hold{h}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, err := s.Get(ctx, h.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	assertHold(t, got, h)

	c, err := s.Claim(ctx, h.ID, store.Answer{Choice: store.AnswerConfirm, By: odd + "by"})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if c.Hold.AnsweredBy != odd+"by" {
		t.Errorf("AnsweredBy = %q, want %q", c.Hold.AnsweredBy, odd+"by")
	}
	if err := s.Settle(ctx, h.ID, odd+"outcome"); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if err := s.Settle(ctx, h.ID, odd+"outcome"); err != nil {
		t.Errorf("Settle again with the same outcome: %v", err)
	}
	if got, err := s.Get(ctx, h.ID); err != nil || got.Outcome != odd+"outcome" {
		t.Errorf("Outcome = %q, %v; want %q", got.Outcome, err, odd+"outcome")
	}

	for _, id := range []string{"\x00", "abc\x00def", "\xff\xfe", string([]byte{0xc3})} {
		_, getErr := s.Get(ctx, id)
		_, stepErr := s.Step(ctx, id)
		_, claimErr := s.Claim(ctx, id, store.Answer{Choice: store.AnswerConfirm})
		_, beginErr := s.Begin(ctx, id)
		for name, err := range map[string]error{
			"Get": getErr, "Step": stepErr, "Claim": claimErr, "Begin": beginErr, "Settle": s.Settle(ctx, id, "done"),
		} {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s(%q) = %v, want ErrNotFound", name, id, err)
			}
		}
	}
}
