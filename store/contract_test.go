package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/store"
)

// The store contract: every behaviour of store.Store that a caller may rely
// on, as one table run against each backend. A backend's test opens a fresh
// store per case (openStoreFunc) and calls runContract; nothing in a case
// knows which backend it drives.

// contractConfig is what a case asks of the store it opens.
type contractConfig struct {
	Now        func() time.Time // the store clock; required
	Retention  time.Duration    // 0: the backend's default
	MaxWaiting int              // 0: no cap
	// AuditRetention is the audit log's retention (0: the default); a
	// backend given one prunes often, so that a case sees it within a
	// bounded wait.
	AuditRetention time.Duration
}

// openStoreFunc opens a fresh, empty store and closes it when the test
// ends (a case may close it first: closing twice is harmless).
type openStoreFunc func(t *testing.T, cfg contractConfig) store.Store

var contract = []struct {
	name string
	run  func(t *testing.T, open openStoreFunc)
}{
	{"RoundTrip", testRoundTrip},
	{"PutRefuses", testPutRefuses},
	{"PutFiles", testPutFiles},
	{"PutKeepsSettledRefusal", testPutKeepsSettledRefusal},
	{"StepMessage", testStepMessage},
	{"NotFound", testNotFound},
	{"OddBytes", testOddBytes},
	{"ClaimRace", testClaimRace},
	{"ClaimStepRace", testClaimStepRace},
	{"ClaimStep", testClaimStep},
	{"Expiry", testExpiry},
	{"BeginRace", testBeginRace},
	{"BeginRefuses", testBeginRefuses},
	{"Settle", testSettle},
	{"SettleRunning", testSettleRunning},
	{"SettleFirstWins", testSettleFirstWins},
	{"SettleReply", testSettleReply},
	{"Unsettled", testUnsettled},
	{"UnsettledPages", testUnsettledPages},
	{"CapRace", testCapRace},
	{"CapCounts", testCapCounts},
	{"CapTenants", testCapTenants},
	{"Index", testIndex},
	{"List", testList},
	{"ListPages", testListPages},
	{"ListCursor", testListCursor},
	{"AuditLifecycle", testAuditLifecycle},
	{"AuditOnlyWhatCommitted", testAuditOnlyWhatCommitted},
	{"AuditRace", testAuditRace},
	{"AuditQuery", testAuditQuery},
	{"AuditAt", testAuditAt},
	{"Secrets", testSecrets},
	{"AuditRetention", testAuditRetention},
	{"Retention", testRetention},
	{"Stats", testStats},
	{"Closed", testClosed},
	{"Context", testContext},
}

func runContract(t *testing.T, open openStoreFunc) {
	for _, c := range contract {
		t.Run(c.name, func(t *testing.T) { c.run(t, open) })
	}
}

// newTestClock is a store clock that moves only when told to. It starts
// years away from the wall clock on purpose: a backend's own expiry
// (Badger's TTL) runs on the wall clock, and the store must not confuse the
// two.
func newTestClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2031, 5, 4, 10, 0, 0, 123456789, time.UTC))
}

// openClocked opens a store on a fresh test clock.
func openClocked(t *testing.T, open openStoreFunc) (store.Store, *testkit.Clock) {
	t.Helper()
	clock := newTestClock()
	return open(t, contractConfig{Now: clock.Now}), clock
}

func newID(tb testing.TB) string {
	tb.Helper()
	id, err := store.NewID()
	if err != nil {
		tb.Fatalf("NewID: %v", err)
	}
	return id
}

// testMessage is the assistant message of newHold's step, with spaces,
// newlines and HTML characters that encoding/json would compact or escape
// if the store let it.
var testMessage = json.RawMessage("{\n  \"role\": \"assistant\",\n  \"content\": \"<b>ok</b> & go\",\n  \"tool_calls\": [ ]\n}")

// newHold returns a waiting hold with every field a Put sets. The raw fields
// carry spaces, newlines and HTML characters too.
func newHold(id, stepID string, position int, created time.Time) store.Hold {
	h := store.Hold{
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
		Message:     testMessage,
		Position:    position,
		Text:        "Waiting for your confirmation: Delete this post?",
		State:       store.Waiting,
		Created:     created,
		Expires:     created.Add(30 * time.Minute),
	}
	// The versions of its policy and action (policies.Policy.Version).
	h.PolicyVersion, h.ActionVersion = "3f2a9c01b7de", "a81c44d09e5f"
	return h
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

// claimed puts a one-hold step and claims it; the hold as stored.
func claimed(t *testing.T, s store.Store, now time.Time) store.Hold {
	t.Helper()
	hold := putStep(t, s, 1, now)[0]
	c, err := s.Claim(context.Background(), hold.ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return c.Hold
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

// race runs f(i) for i in [0, n) on n goroutines released at once, and
// waits for all of them, or fails the test after a minute.
func race(t *testing.T, n int, f func(i int)) {
	t.Helper()
	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%d racing calls did not return within a minute", n)
	}
}
