package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// auditLog reads every chained entry of the rig's store.
func (r *rig) auditLog() []store.AuditRecord {
	r.t.Helper()
	ctx := context.Background()
	if err := r.db.SyncAudit(ctx); err != nil {
		r.t.Fatalf("chaining the audit log: %v", err)
	}
	entries, err := r.db.AuditEntries(ctx, store.AuditQuery{Limit: 1000})
	if err != nil {
		r.t.Fatalf("reading the audit log: %v", err)
	}
	out := make([]store.AuditRecord, len(entries))
	for i, e := range entries {
		if out[i], err = e.Record(); err != nil {
			r.t.Fatal(err)
		}
	}
	return out
}

// eventsOf is the log's events of one hold, as "kind answer by outcome".
func eventsOf(log []store.AuditRecord, holdID string) []store.AuditRecord {
	var out []store.AuditRecord
	for _, e := range log {
		if e.HoldID == holdID {
			out = append(out, e)
		}
	}
	return out
}

func kinds(log []store.AuditRecord) string {
	var k []string
	for _, e := range log {
		k = append(k, string(e.Kind))
	}
	return strings.Join(k, " ")
}

// TestWithdrawSettlesAndAudits: an operator withdraws one waiting hold of
// a step of two: it is settled at once, the model reads the withdrawal,
// the other hold still waits, nothing ran, the person's later confirm of
// the withdrawn hold gets 409, and the audit names the operator.
func TestWithdrawSettlesAndAudits(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	step, _ := r.hold(ana, call(0, 1), call(1, 2))
	holds := r.step(step)
	ctx := context.Background()

	h, err := r.gate.Withdraw(ctx, holds[0].ID, "operator")
	if err != nil {
		t.Fatal(err)
	}
	if h.State != store.Settled || h.Answer != store.AnswerWithdrawn || h.AnsweredBy != "operator" || r.gate.outcomeText(h) != OutcomeWithdrawn {
		t.Errorf("withdrawn hold: state %s answer %q by %q outcome %q", h.State, h.Answer, h.AnsweredBy, h.Outcome)
	}
	wantResults(t, r.restore(ana, step, false), OutcomeWithdrawn, OutcomeWaiting)
	if _, err := r.gate.Answer(ctx, step, holds[0].ID, ana, store.AnswerConfirm); Status(err) != 409 {
		t.Errorf("confirming a withdrawn hold: %v (status %d), want 409", err, Status(err))
	}
	if _, err := r.gate.Withdraw(ctx, holds[0].ID, "operator"); !errors.Is(err, store.ErrAnswered) {
		t.Errorf("withdrawing twice: %v, want ErrAnswered", err)
	}
	if _, err := r.gate.Withdraw(ctx, "AAAAAAAAAAAAAAAAAAAAAAAAAA", "operator"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("withdrawing an unknown hold: %v, want ErrNotFound", err)
	}
	if n := len(r.app.Calls()); n != 0 {
		t.Errorf("%d releases, want none", n)
	}

	log := eventsOf(r.auditLog(), holds[0].ID)
	if got := kinds(log); got != "held answered settled" {
		t.Fatalf("events of the withdrawn hold: %s", got)
	}
	if a := log[1]; a.By != "operator" || a.Answer != store.AnswerWithdrawn || a.Owner != "ana" || a.Tenant != "acme" || a.Action != "delete_post" {
		t.Errorf("answered: %+v", a.Event)
	}
	if s := log[2]; s.Outcome != `{"kind":"withdrawn"}` {
		t.Errorf("settled: %+v", s.Event)
	}
	if got := kinds(eventsOf(r.auditLog(), holds[1].ID)); got != "held" {
		t.Errorf("events of the hold still waiting: %s", got)
	}
}

// TestAuditKeepsNoValues: a form's held event names its fields, never the
// values the model gave, and the submitted values appear nowhere in the
// log; the card's held event carries the card as shown and the policy's
// version.
func TestAuditKeepsNoValues(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	ctx := context.Background()

	step, _ := r.hold(ana, interceptorCallTitled(0, "Model's secret title"))
	form := r.step(step)[0]
	if _, err := r.gate.Submit(ctx, step, form.ID, ana, "", nil, []byte(`{"title":"Person's title","body":"Person's body"}`), false); err != nil {
		t.Fatalf("submit: %v", err)
	}
	cardStep, _ := r.hold(ana, call(0, 1))
	card := r.step(cardStep)[0]

	log := r.auditLog()
	raw, _ := json.Marshal(log)
	for _, v := range []string{"Model's secret title", "Person's title", "Person's body"} {
		if strings.Contains(string(raw), v) {
			t.Errorf("the audit log holds the value %q", v)
		}
	}
	held := eventsOf(log, form.ID)
	if len(held) == 0 || held[0].Kind != store.EventHeld {
		t.Fatalf("form events: %s", kinds(held))
	}
	var shown struct{ Fields []string }
	if err := json.Unmarshal(held[0].Shown, &shown); err != nil || !slices.Contains(shown.Fields, "body") {
		t.Errorf("form held shown = %s (%v), want its field names", held[0].Shown, err)
	}
	if got := kinds(held); got != "held answered released settled" {
		t.Errorf("form events: %s", got)
	}
	c := eventsOf(log, card.ID)
	if len(c) != 1 || !strings.Contains(string(c[0].Shown), `"One"`) {
		t.Errorf("card held event: %+v", c)
	}
	if c[0].PolicyVersion == "" || c[0].PolicyVersion != r.policy.Version() || c[0].ActionVersion != r.policy.Action("delete_post").Version() {
		t.Errorf("versions %q %q, want %q %q", c[0].PolicyVersion, c[0].ActionVersion, r.policy.Version(), r.policy.Action("delete_post").Version())
	}
}

// interceptorCallTitled is a draft_post call that gives a title and
// leaves out the body.
func interceptorCallTitled(i int, title string) provider.Call {
	c := call(i, 0)
	args := `{"title":` + jsonString(title) + `}`
	c.Arguments = []byte(args)
	c.Raw = []byte(`{"id":"` + c.ID + `","type":"function","function":{"name":"draft_post","arguments":` + jsonString(args) + `}}`)
	return c
}

// TestAuditRefusals: a call refused beside a held one is audited in the
// step's transaction, one refused on its own by itself; each names the
// action, the person, the reason, what the model read and the policy's
// version.
func TestAuditRefusals(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	_, v := r.hold(ana, call(0, 1), call(1, 99)) // no record for post 99
	if len(v.Refusals) != 1 {
		t.Fatalf("refusals: %+v", v.Refusals)
	}
	_, v2 := r.hold(ana, call(0, 98))
	if len(v2.Refusals) != 1 {
		t.Fatalf("refusals: %+v", v2.Refusals)
	}
	var refused []store.AuditRecord
	for _, e := range r.auditLog() {
		if e.Kind == store.EventRefused {
			refused = append(refused, e)
		}
	}
	if len(refused) != 2 {
		t.Fatalf("refused events: %+v", refused)
	}
	for i, want := range []string{v.Refusals[0].Content, v2.Refusals[0].Content} {
		e := refused[i]
		if e.Action != "delete_post" || e.Owner != "ana" || e.Tenant != "acme" || e.Reason != "not_found" || e.Detail != want ||
			e.PolicyVersion != r.policy.Version() || e.ActionVersion != r.policy.Action("delete_post").Version() || e.Policy != "policy.yaml" || e.HoldID != "" || e.Protocol != "openai-chat" {
			t.Errorf("refused event %d: %+v, want detail %q", i, e.Event, want)
		}
	}
}

// auditDown is a store whose audit log alone fails.
type auditDown struct{ store.Store }

func (auditDown) Audit(context.Context, ...store.Event) error { return store.ErrUnavailable }

// TestAuditFailureBlocksNothing: with appending on its own failing, the
// person still sees the page and the model still reads the refusal; each
// lost event is counted by kind.
func TestAuditFailureBlocksNothing(t *testing.T) {
	r := newRig(t, rigOptions{wrap: func(s store.Store) store.Store { return auditDown{s} }})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	step, _ := r.hold(ana, call(0, 1))
	if _, err := r.gate.View(context.Background(), step, ana, ""); err != nil {
		t.Fatalf("view with the audit log down: %v", err)
	}
	if _, v := r.hold(ana, call(0, 99)); len(v.Refusals) != 1 {
		t.Fatalf("refusal with the audit log down: %+v", v)
	}
	r.events.mu.Lock()
	got := fmt.Sprint(r.events.auditFailed)
	r.events.mu.Unlock()
	if got != "map[refused:1 shown:1]" {
		t.Errorf("audit failures counted: %s", got)
	}
}

// TestAuditMCPForm: an MCP form's life — the ticket held with the
// form's field names, redeemed by the client's retry, answered by the
// person, the call going on to the server — is audited without the
// model's or the person's values.
func TestAuditMCPForm(t *testing.T) {
	p, err := policies.Parse("p.yaml", []byte("actions:\n  draft_post:\n    effect: write\n    ask_for_missing: true\n    schema:\n      type: object\n      properties:\n        title: {type: string}\n        body: {type: string}\n      required: [title, body]\n"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenBadger("", store.BadgerOptions{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := New(Config{Store: st, Secret: []byte("0123456789abcdef0123"), Policy: func(string) *policies.Policy { return p }})
	who := func() Person { return Person{Owner: "ana", Tenant: "acme"} }
	call := MCPCall{Name: "draft_post", Arguments: []byte(`{"title":"Model's title"}`), Modern: true, Elicit: interceptor.ElicitModes{Form: true}}
	v := g.MCPFront(p, "p.yaml", who, time.Minute, 0).MCP(context.Background(), call)
	call.State = gjson.GetBytes(v.Result, "requestState").String()
	call.Responses = map[string][]byte{MCPFormKey: []byte(`{"action":"accept","content":{"body":"Person's body"}}`)}
	if v = g.MCPFront(p, "p.yaml", who, time.Minute, 0).MCP(context.Background(), call); !v.Rewritten {
		t.Fatalf("the answered call does not go on: %s", v.Result)
	}
	if err := st.SyncAudit(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, err := st.AuditEntries(context.Background(), store.AuditQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if strings.Contains(string(e.Body), "Model's title") || strings.Contains(string(e.Body), "Person's body") {
			t.Errorf("entry %d holds a value: %s", e.Seq, e.Body)
		}
		r, _ := e.Record()
		got = append(got, fmt.Sprintf("%s %s %s %s %s/%s %s%s", r.Kind, r.HoldKind, r.Protocol, r.Answer, r.Tenant, r.By, r.Endpoint, r.Outcome))
		if r.Kind == store.EventHeld && !strings.Contains(string(r.Shown), `"fields":["body"]`) {
			t.Errorf("held shown %s, want the form's field names", r.Shown)
		}
	}
	want := []string{
		"held ticket mcp  acme/ ",
		"answered ticket mcp used acme/ana ",
		"settled ticket mcp  acme/ {\"kind\":\"used\"}", // the ticket is redeemed
		"answered ticket mcp submit acme/ana ",
		"released ticket mcp  acme/ mcp tools/call draft_post",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestWithdrawRacesTheAnswer: 100 concurrent withdrawals and
// confirmations of one hold: exactly one wins; the call runs once if a
// confirmation won and never if a withdrawal did, and the audit records
// one answer.
func TestWithdrawRacesTheAnswer(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	step, _ := r.hold(ana, call(0, 1))
	id := r.step(step)[0].ID
	ctx := context.Background()
	type result struct {
		withdraw bool
		err      error
	}
	results := make(chan result, 100)
	start := make(chan struct{})
	for i := range 100 {
		go func() {
			<-start
			if i%2 == 0 {
				_, err := r.gate.Withdraw(ctx, id, "admin")
				results <- result{true, err}
				return
			}
			_, err := r.gate.Answer(ctx, step, id, ana, store.AnswerConfirm)
			results <- result{false, err}
		}()
	}
	close(start)
	var won []result
	for range 100 {
		select {
		case res := <-results:
			if res.err == nil {
				won = append(won, res)
			} else if Status(res.err) != 409 {
				t.Errorf("a losing answer: %v (status %d), want 409", res.err, Status(res.err))
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the answers did not all return")
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d answers won", len(won))
	}
	wantRuns, wantEvents := 1, "held answered released settled"
	if won[0].withdraw {
		wantRuns, wantEvents = 0, "held answered settled"
	}
	if n := r.runs(id); n != wantRuns {
		t.Errorf("the call ran %d times after a %+v win", n, won[0])
	}
	if got := kinds(eventsOf(r.auditLog(), id)); got != wantEvents {
		t.Errorf("events after a %+v win: %s, want %s", won[0], got, wantEvents)
	}
}

// TestReleasedGoesWithSettled: a confirmed card's release appends what
// the app answered in the settling transaction, so it is kept even when
// appending on its own fails; when the outcome cannot be recorded
// (another stood first), it is appended on its own, once.
func TestReleasedGoesWithSettled(t *testing.T) {
	for _, c := range []struct {
		name string
		wrap func(store.Store) store.Store
		want string // the hold's events
	}{
		{"audit on its own down", func(s store.Store) store.Store { return auditDown{s} }, "held answered released settled"},
		{"another outcome stood", func(s store.Store) store.Store { return settledBefore{s} }, "held answered released"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, rigOptions{wrap: c.wrap})
			r.app.SetRecord("/posts/1", `{"title":"One"}`)
			step, _ := r.hold(ana, call(0, 1))
			h := r.step(step)[0]
			if _, err := r.gate.Answer(context.Background(), step, h.ID, ana, store.AnswerConfirm); err != nil {
				t.Fatal(err)
			}
			if n := len(r.app.Calls()); n != 1 {
				t.Fatalf("%d releases, want one", n)
			}
			log := eventsOf(r.auditLog(), h.ID)
			if got := kinds(log); got != c.want {
				t.Fatalf("events: %s, want %s", got, c.want)
			}
			for _, e := range log {
				if e.Kind == store.EventReleased && (e.Status != 200 || !strings.Contains(e.Endpoint, "/posts/")) {
					t.Errorf("released: %+v", e.Event)
				}
			}
		})
	}
}

// settledBefore is a store where another outcome is recorded just before
// each of the gate's settlements of a released hold (as the sweeper
// could).
type settledBefore struct{ store.Store }

func (s settledBefore) Settle(ctx context.Context, id, outcome string, events ...store.Event) error {
	if slices.ContainsFunc(events, func(e store.Event) bool { return e.Kind == store.EventReleased }) {
		if err := s.Store.Settle(ctx, id, "another outcome"); err != nil {
			return err
		}
	}
	return s.Store.Settle(ctx, id, outcome, events...)
}

// TestAuditExpiredAnswer (issue 15 §5): a hold nobody answered in time is
// claimed for the gate when a later request notices it, long after its
// TTL. Its answered event names who answered (the gate itself, not an
// empty by) and carries the time the hold expired, not the time the
// later request came; a hold the person moved on from is answered by the
// gate too, at the time it happened.
func TestAuditExpiredAnswer(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	expired, _ := r.hold(ana, call(0, 1))
	expires := r.step(expired)[0].Expires
	r.clock.Advance(3 * DefaultTTL)
	noticed := r.clock.Now()
	wantResults(t, r.restore(ana, expired, false), OutcomeExpired)
	movedOn, _ := r.hold(ana, call(0, 2))
	wantResults(t, r.restore(ana, movedOn, true), OutcomeMovedOn)

	log := r.auditLog()
	for _, c := range []struct {
		step, answer string
		at           time.Time
	}{
		{expired, store.AnswerTimedOut, expires},
		{movedOn, store.AnswerMovedOn, noticed},
	} {
		ev := eventsOf(log, r.step(c.step)[0].ID)
		if got := kinds(ev); got != "held answered settled" {
			t.Fatalf("events of the %s hold: %s", c.answer, got)
		}
		a := ev[1]
		if a.Answer != c.answer || a.By != ByGate || !a.Time.Equal(c.at) {
			t.Errorf("%s: answered by %q at %s, want by %q at %s", c.answer, a.By, a.Time, ByGate, c.at)
		}
	}
	if rep, err := store.VerifyAudit(context.Background(), r.db); err != nil || rep.Broken != nil {
		t.Errorf("VerifyAudit: %v %v", err, rep.Err())
	}
}
