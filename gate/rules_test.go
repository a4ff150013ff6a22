package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// rulesPolicy is the refund action: amount thresholds, the
// record's state and the person's roles, plus a rule that cannot be
// evaluated (amount 130 reads a field no record has).
const rulesPolicy = `app: Shop
actions:
  refund_order:
    effect: external
    schema:
      type: object
      properties:
        order: {type: integer}
        amount: {type: number}
      required: [order, amount]
    card:
      reason: Refund this order?
      record: APP/orders/{order}
      rows:
        Order: id
    run:
      url: APP/orders/{order}/refund
    reply: Refunded.
    rules:
      - when: args.amount <= 50
        then: allow
      - name: over the limit
        when: args.amount > 10000
        then: deny
        because: Refunds over 10,000 need a ticket; nothing ran.
      - when: args.amount == 130.0 && record.nope == "x"
        then: deny
        because: never read
      - name: shipped needs finance
        when: record.status == "shipped" && !("finance" in person.roles)
        then: ask
        approvers: {roles: [finance]}
        four_eyes: true
        ttl: 2h
`

var fay = Person{Owner: "fay", Tenant: "acme", Roles: []string{"finance"}}

func newRulesRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t, rigOptions{})
	p, err := policies.Parse("policy.yaml", []byte(strings.ReplaceAll(rulesPolicy, "APP", r.app.URL)))
	if err != nil {
		t.Fatal(err)
	}
	r.policy = p
	r.app.SetRecord("/orders/1", `{"id":1,"status":"shipped"}`)
	r.app.SetRecord("/orders/2", `{"id":2,"status":"draft"}`)
	return r
}

func refundCall(order int, amount string) provider.Call {
	args := fmt.Sprintf(`{"order":%d,"amount":%s}`, order, amount)
	return provider.Call{ID: "call_r", Type: "function", Name: "refund_order", Arguments: []byte(args),
		Raw: []byte(`{"id":"call_r","type":"function","function":{"name":"refund_order","arguments":` + jsonString(args) + `}}`)}
}

// auditEvents are the audit's events of a kind so far.
func (r *rig) auditEvents(kind store.EventKind) []store.AuditRecord {
	r.t.Helper()
	var out []store.AuditRecord
	for _, e := range r.auditLog() {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// TestRulesDecideAtHoldTime: the first matching rule decides; none, and
// the effect does; an evaluation error refuses; the record is read only
// when a rule that reads it is reached.
func TestRulesDecideAtHoldTime(t *testing.T) {
	for _, c := range []struct {
		name      string
		call      provider.Call
		pass      bool
		refusal   string
		waiting   string
		reads     int
		rule      string // in the audit's event
		ttl       time.Duration
		fourEyes  bool
		approvers bool
	}{
		{name: "small refund passes untouched, no record read", call: refundCall(1, "20"), pass: true},
		{name: "huge refund denied with because", call: refundCall(1, "50000"),
			refusal: "Toolgate refused refund_order: Refunds over 10,000 need a ticket; nothing ran.", rule: "rules[1] over the limit"},
		{name: "evaluation error fails closed", call: refundCall(1, "130"),
			refusal: "Toolgate refused refund_order: the gate's policy could not decide on this call; nothing ran.", reads: 1, rule: "rules[2]"},
		{name: "shipped asks finance", call: refundCall(1, "2000"), waiting: "Waiting for an approver's confirmation: Refund this order?",
			reads: 1, rule: "rules[3] shipped needs finance", ttl: 2 * time.Hour, fourEyes: true, approvers: true},
		{name: "draft: the effect's card", call: refundCall(2, "2000"), waiting: "Waiting for your confirmation: Refund this order?", reads: 1, ttl: 30 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRulesRig(t)
			step, v := r.hold(ana, c.call)
			if got := len(r.app.Reads()); got != c.reads {
				t.Errorf("%d record reads, want %d", got, c.reads)
			}
			if len(r.app.Calls()) != 0 {
				t.Fatalf("the app ran something at hold time: %+v", r.app.Calls())
			}
			switch {
			case c.pass:
				if !v.Pass[0] || step != "" || len(v.Refusals) != 0 {
					t.Fatalf("verdict %+v, want the call passed", v)
				}
			case c.refusal != "":
				if v.Pass[0] || len(v.Refusals) != 1 || v.Refusals[0].Content != c.refusal {
					t.Fatalf("verdict %+v, want refused with %q", v, c.refusal)
				}
				ev := r.auditEvents(store.EventRefused)
				if len(ev) != 1 || !strings.Contains(string(ev[0].Shown), c.rule) {
					t.Fatalf("refused events %+v, want one naming %q", ev, c.rule)
				}
			default:
				if !strings.HasPrefix(v.Text, c.waiting) {
					t.Fatalf("waiting text %q, want %q", v.Text, c.waiting)
				}
				h := r.step(step)[0]
				if got := h.Expires.Sub(h.Created); got != c.ttl {
					t.Errorf("ttl %v, want %v", got, c.ttl)
				}
				approvers, fourEyes := askedOf(h, r.policy.Action("refund_order"))
				if fourEyes != c.fourEyes || (approvers != nil) != c.approvers {
					t.Errorf("asked of approvers %v four_eyes %v", approvers, fourEyes)
				}
				if c.rule != "" {
					ev := r.auditEvents(store.EventHeld)
					if len(ev) != 1 || !strings.Contains(string(ev[0].Shown), c.rule) {
						t.Fatalf("held events %+v, want one naming %q", ev, c.rule)
					}
				}
			}
		})
	}
}

// TestRuleApproversAnswer: a card an ask rule held is answered by the
// rule's approvers, under its four_eyes: the owner may only decline, a
// finance person confirms and the call runs as them.
func TestRuleApproversAnswer(t *testing.T) {
	r := newRulesRig(t)
	ctx := context.Background()
	step, _ := r.hold(ana, refundCall(1, "2000"))
	hold := r.step(step)[0].ID
	v, err := r.gate.View(ctx, step, ana, "")
	if err != nil || !v.Holds[0].FourEyes || !slices.Equal(v.Holds[0].Answers, []string{"decline"}) {
		t.Fatalf("ana's view %+v, %v", v, err)
	}
	if _, err := r.gate.Answer(ctx, step, hold, ana, store.AnswerConfirm); Status(err) != 409 {
		t.Fatalf("ana confirming her own: %v", err)
	}
	cy := Person{Owner: "cy", Tenant: "acme", Roles: []string{"editor"}}
	if _, err := r.gate.View(ctx, step, cy, ""); err == nil {
		t.Fatal("someone without the rule's role sees the card")
	}
	if w, _ := r.gate.Waiting(ctx, fay, ""); len(w) != 1 || w[0].Hold != hold {
		t.Fatalf("fay's list %+v", w)
	}
	if _, err := r.gate.Answer(ctx, step, hold, fay, store.AnswerConfirm); err != nil {
		t.Fatalf("fay confirming: %v", err)
	}
	calls := r.app.Calls()
	if len(calls) != 1 || calls[0].Header.Get("X-Toolgate-Person") != "fay" || !strings.HasSuffix(calls[0].URI, "/orders/1/refund") {
		t.Fatalf("runs %+v", calls)
	}
	if got := r.restore(ana, step, false); len(got) != 1 || got[0] != "The person confirmed. Refunded." {
		t.Fatalf("model reads %q", got)
	}
}

// TestRulesRecheckAtConfirm: the record changes between the card and the
// confirmation in a way the card's rows do not show, but a rule reads:
// the rules decide differently now, so nothing runs and the model reads
// that the record changed. The same record lets the call run.
func TestRulesRecheckAtConfirm(t *testing.T) {
	for _, c := range []struct {
		name       string
		order      int
		then       string // the record's status at confirm time
		who        Person
		runs       int
		modelReads string
	}{
		{"unchanged draft runs", 2, "draft", ana, 1, "The person confirmed. Refunded."},
		{"draft now shipped: another rule decides", 2, "shipped", ana, 0, OutcomeChanged},
		{"shipped now draft: no rule decides", 1, "draft", fay, 0, OutcomeChanged},
		{"unchanged shipped runs", 1, "shipped", fay, 1, "The person confirmed. Refunded."},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRulesRig(t)
			ctx := context.Background()
			step, _ := r.hold(ana, refundCall(c.order, "2000"))
			if step == "" {
				t.Fatal("nothing held")
			}
			r.app.SetRecord(fmt.Sprintf("/orders/%d", c.order), fmt.Sprintf(`{"id":%d,"status":%q}`, c.order, c.then))
			if _, err := r.gate.Answer(ctx, step, r.step(step)[0].ID, c.who, store.AnswerConfirm); err != nil {
				t.Fatalf("confirming: %v", err)
			}
			if got := len(r.app.Calls()); got != c.runs {
				t.Fatalf("%d runs, want %d", got, c.runs)
			}
			if got := r.restore(ana, step, false); len(got) != 1 || got[0] != c.modelReads {
				t.Fatalf("model reads %q, want %q", got, c.modelReads)
			}
		})
	}
}

// TestRulesEvaluationErrorAtConfirm: a rule that evaluated at hold time
// but fails at confirm time (the record lost a field a rule reads) runs
// nothing.
func TestRulesEvaluationErrorAtConfirm(t *testing.T) {
	r := newRulesRig(t)
	ctx := context.Background()
	step, _ := r.hold(ana, refundCall(2, "2000"))
	r.app.SetRecord("/orders/2", `{"id":2}`)
	if _, err := r.gate.Answer(ctx, step, r.step(step)[0].ID, ana, store.AnswerConfirm); err != nil {
		t.Fatalf("confirming: %v", err)
	}
	if n := len(r.app.Calls()); n != 0 {
		t.Fatalf("%d runs after a rule failed", n)
	}
	if got := r.restore(ana, step, false); len(got) != 1 || got[0] != outcomeRuleError {
		t.Fatalf("model reads %q", got)
	}
}

// formRulesPolicy: a write action asked for with a form, whose rules
// deny what the person might fill in, and offered to editors only.
const formRulesPolicy = `app: Blog
actions:
  draft_post:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        title: {type: string}
        body: {type: string}
      required: [title, body]
    run:
      url: APP/drafts
    reply: Drafted.
    offer_when: '"editor" in person.roles'
    rules:
      - when: args.title == "forbidden"
        then: deny
        because: That title is not allowed; nothing ran.
`

var anaEditor = Person{Owner: "ana", Tenant: "acme", Roles: []string{"editor"}}

func newFormRulesRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t, rigOptions{})
	p, err := policies.Parse("policy.yaml", []byte(strings.ReplaceAll(formRulesPolicy, "APP", r.app.URL)))
	if err != nil {
		t.Fatal(err)
	}
	r.policy = p
	return r
}

func draftCall(args string) provider.Call {
	return provider.Call{ID: "call_d", Type: "function", Name: "draft_post", Arguments: []byte(args),
		Raw: []byte(`{"id":"call_d","type":"function","function":{"name":"draft_post","arguments":` + jsonString(args) + `}}`)}
}

// TestRulesRunOnTheFilledInForm: a call that became a form is decided on
// what the person filled in; a deny runs nothing, whatever was left out.
func TestRulesRunOnTheFilledInForm(t *testing.T) {
	for _, c := range []struct {
		title      string
		runs       int
		modelReads string
	}{
		{"fine", 1, "The person filled in: title. Drafted."},
		{"forbidden", 0, "The person filled in the form, but Toolgate refused draft_post: That title is not allowed; nothing ran."},
	} {
		t.Run(c.title, func(t *testing.T) {
			r := newFormRulesRig(t)
			ctx := context.Background()
			step, v := r.hold(anaEditor, draftCall(`{"body":"b"}`))
			if step == "" {
				t.Fatalf("no form: %+v", v)
			}
			if _, err := r.gate.Submit(ctx, step, r.step(step)[0].ID, anaEditor, "", nil, []byte(`{"title":"`+c.title+`"}`), false); err != nil {
				t.Fatalf("submitting: %v", err)
			}
			if got := len(r.app.Calls()); got != c.runs {
				t.Fatalf("%d runs, want %d", got, c.runs)
			}
			if got := r.restore(anaEditor, step, false); len(got) != 1 || got[0] != c.modelReads {
				t.Fatalf("model reads %q, want %q", got, c.modelReads)
			}
		})
	}
}

// TestOfferWhenAtCallTime: a model can name a tool it was not offered;
// the call is refused for a person offer_when does not offer it to, on
// both fronts, and a complete call of an editor passes.
func TestOfferWhenAtCallTime(t *testing.T) {
	r := newFormRulesRig(t)
	const want = "Toolgate refused draft_post: it is not offered to this person; nothing ran."
	_, v := r.hold(ana, draftCall(`{"title":"t","body":"b"}`))
	if v.Pass[0] || len(v.Refusals) != 1 || v.Refusals[0].Content != want {
		t.Fatalf("model front: %+v", v)
	}
	_, v = r.hold(anaEditor, draftCall(`{"title":"t","body":"b"}`))
	if !v.Pass[0] {
		t.Fatalf("the editor's call: %+v", v)
	}
	mv := r.mcpFront(ana).MCP(context.Background(), MCPCall{Name: "draft_post", Arguments: []byte(`{"title":"t","body":"b"}`), Modern: true, Elicit: modernForm})
	if !strings.Contains(string(mv.Result), want) {
		t.Fatalf("mcp front: %s", mv.Result)
	}
	mv = r.mcpFront(anaEditor).MCP(context.Background(), MCPCall{Name: "draft_post", Arguments: []byte(`{"title":"t","body":"b"}`), Modern: true, Elicit: modernForm})
	if mv.Result != nil {
		t.Fatalf("mcp front, the editor's call: %s", mv.Result)
	}
	if n := len(r.app.Calls()); n != 0 {
		t.Fatalf("the gate ran %d calls itself", n)
	}
}

// TestRulesOnTheMCPFront: the same rules decide an MCP call, before the
// client is asked anything: allow passes to the server even for a client
// that cannot open a card, deny is a tool error with because.
func TestRulesOnTheMCPFront(t *testing.T) {
	r := newRulesRig(t)
	ctx := context.Background()
	old := MCPCall{Name: "refund_order", Arguments: []byte(`{"order":1,"amount":20}`)} // no URL mode
	if v := r.mcpFront(ana).MCP(ctx, old); v.Result != nil || v.Rewritten {
		t.Fatalf("allowed call: %+v", v)
	}
	old.Arguments = []byte(`{"order":1,"amount":50000}`)
	v := r.mcpFront(ana).MCP(ctx, old)
	if !strings.Contains(string(v.Result), "Refunds over 10,000 need a ticket; nothing ran.") {
		t.Fatalf("denied call: %s", v.Result)
	}
	old.Arguments = []byte(`{"order":1,"amount":130}`)
	v = r.mcpFront(ana).MCP(ctx, old)
	if !strings.Contains(string(v.Result), "could not decide on this call") {
		t.Fatalf("call whose rule fails: %s", v.Result)
	}
	if n := len(r.app.Calls()); n != 0 {
		t.Fatalf("the gate ran %d calls", n)
	}
}

// newRulesLogRig is newRulesRig with the gate's logs kept and the policy
// edited by edit (nil: as it is).
func newRulesLogRig(t *testing.T, edit func(string) string) (*rig, *observer.ObservedLogs) {
	t.Helper()
	r := newRulesRig(t)
	if edit != nil {
		p, err := policies.Parse("policy.yaml", []byte(edit(strings.ReplaceAll(rulesPolicy, "APP", r.app.URL))))
		if err != nil {
			t.Fatal(err)
		}
		r.policy = p
	}
	core, logs := observer.New(zapcore.InfoLevel)
	r.gate.Stop(5 * time.Second)
	r.gate = New(Config{Store: r.db, Actions: r.actions, Pages: "http://gate.test/toolgate", Policy: r.policyOf,
		Observer: r.events, Secret: []byte(testSecret), Now: r.clock.Now, ActionTimeout: r.timeout, Logger: zap.New(core)})
	return r, logs
}

// TestRulesEvaluationErrorFailsClosed: a rule that cannot be evaluated at
// hold time (amount 130 reaches a rule reading a field the record lacks)
// refuses the call on both fronts: nothing runs, nothing is held, the
// model reads that the policy could not decide, and the operator's log
// names the action and the rule's index.
func TestRulesEvaluationErrorFailsClosed(t *testing.T) {
	r, logs := newRulesLogRig(t, nil)
	const want = "Toolgate refused refund_order: the gate's policy could not decide on this call; nothing ran."
	step, v := r.hold(ana, refundCall(1, "130"))
	if step != "" || len(v.Pass) != 1 || v.Pass[0] || len(v.Refusals) != 1 || v.Refusals[0].Content != want {
		t.Fatalf("model front: step %q, verdict %+v; want refused with %q", step, v, want)
	}
	mv := r.mcpFront(ana).MCP(context.Background(), MCPCall{Name: "refund_order", Arguments: []byte(`{"order":1,"amount":130}`), Modern: true, Elicit: modernURL})
	if !strings.Contains(string(mv.Result), want[len("Toolgate refused refund_order: "):]) || !strings.Contains(string(mv.Result), `"isError":true`) {
		t.Fatalf("mcp front: %s", mv.Result)
	}
	if n := len(r.app.Calls()); n != 0 {
		t.Fatalf("%d runs after a rule failed", n)
	}
	if page, err := r.db.List(context.Background(), store.HoldFilter{}, "", 10); err != nil || len(page.Holds) != 0 {
		t.Fatalf("holds %+v, %v; want none", page.Holds, err)
	}
	seen := logs.FilterMessage("policy error: a rule could not be evaluated; call refused").All()
	if len(seen) != 2 {
		t.Fatalf("error logs %+v, want one per front", logs.All())
	}
	for _, e := range seen {
		m := e.ContextMap()
		if e.Level != zapcore.ErrorLevel || m["action"] != "refund_order" || !strings.HasPrefix(m["rule"].(string), "rules[2] ") ||
			!strings.Contains(fmt.Sprint(m["error"]), "nope") || m["owner"] != "ana" {
			t.Errorf("logged %s %v", e.Level, m)
		}
	}
	if ev := r.auditEvents(store.EventRefused); len(ev) != 2 || ev[0].Reason != "rule_error" || !strings.Contains(string(ev[0].Shown), `"index":2`) {
		t.Fatalf("refused events %+v", ev)
	}
}

// TestRulesInShadowMode: for an action in shadow mode each rule's
// decision (allow, deny, ask, and an evaluation error) is worked out,
// logged and audited naming the rule, and nothing is held or refused for
// real: every call passes untouched, the app's endpoint gets nothing from
// the gate, the store keeps no hold.
func TestRulesInShadowMode(t *testing.T) {
	r, logs := newRulesLogRig(t, func(s string) string {
		return strings.Replace(s, "    reply: Refunded.\n", "    reply: Refunded.\n    mode: shadow\n", 1)
	})
	calls := []provider.Call{refundCall(1, "20"), refundCall(1, "50000"), refundCall(1, "2000"), refundCall(1, "130")}
	for i := range calls {
		calls[i].Position = i
	}
	v := r.front(ana).Hold(context.Background(), calls, []byte(`{}`), provider.Kept{})
	if len(v.Pass) != 4 || !v.Pass[0] || !v.Pass[1] || !v.Pass[2] || !v.Pass[3] || v.Text != "" || v.Step != "" || len(v.Refusals) != 0 {
		t.Fatalf("verdict %+v, want every call passed", v)
	}
	mv := r.mcpFront(ana).MCP(context.Background(), MCPCall{Name: "refund_order", Arguments: []byte(`{"order":1,"amount":50000}`), Modern: true, Elicit: modernURL})
	if mv.Result != nil || mv.Rewritten {
		t.Fatalf("mcp front refused or rewrote a shadow call: %+v", mv)
	}
	settleShadow(t, r)
	if n := len(r.app.Calls()); n != 0 {
		t.Fatalf("%d runs", n)
	}
	if page, err := r.db.List(context.Background(), store.HoldFilter{}, "", 10); err != nil || len(page.Holds) != 0 {
		t.Fatalf("holds %+v, %v; want none", page.Holds, err)
	}
	// The log: what enforce mode would have done, naming the rule.
	rule := func(msg string) []string {
		var out []string
		for _, e := range logs.FilterMessage(msg).All() {
			m := e.ContextMap()
			if m["action"] != "refund_order" || m["owner"] != "ana" {
				t.Errorf("%s: logged %v", msg, m)
			}
			if s, ok := m["rule"].(string); ok {
				out = append(out, s+" "+fmt.Sprint(m["reason"]))
			} else {
				out = append(out, string(mustJSON(t, m["card"])))
			}
		}
		slices.Sort(out)
		return out
	}
	if got := rule("shadow: call would pass, allowed by a rule"); len(got) != 1 || !strings.HasPrefix(got[0], "rules[0] ") {
		t.Errorf("allow logged %q", got)
	}
	if got := rule("shadow: call would be refused"); len(got) != 3 || !strings.HasPrefix(got[0], "rules[1] over the limit rule_deny") ||
		!strings.HasPrefix(got[1], "rules[1] over the limit rule_deny") || !strings.HasPrefix(got[2], "rules[2] ") || !strings.HasSuffix(got[2], " rule_error") {
		t.Errorf("refusals logged %q", got)
	}
	if got := rule("shadow: call would wait for confirmation"); len(got) != 1 || !strings.Contains(got[0], `"label":"rules[3] shipped needs finance"`) {
		t.Errorf("card logged %q", got)
	}
	if len(logs.FilterMessage("policy error: a rule could not be evaluated; call refused").All()) != 1 {
		t.Errorf("the evaluation error is not logged as one: %+v", logs.All())
	}
	// The audit: one shadowed event per call, each naming its rule; no
	// held or refused event.
	log := r.auditLog()
	if kinds(log) != "shadowed shadowed shadowed shadowed shadowed" {
		t.Fatalf("audit: %s", kinds(log))
	}
	var audited []string
	for _, e := range log {
		var s struct {
			Rule *heldRule `json:"rule"`
		}
		if err := json.Unmarshal(e.Shown, &s); err != nil || s.Rule == nil || e.Action != "refund_order" || e.HoldID != "" {
			t.Fatalf("audited %+v (shown %s): no rule", e.Event, e.Shown)
		}
		audited = append(audited, fmt.Sprintf("%d %s %s", s.Rule.Index, e.Reason, e.HoldKind))
	}
	slices.Sort(audited)
	if want := []string{"0 rule_allow ", "1 rule_deny ", "1 rule_deny ", "2 rule_error ", "3  card"}; !slices.Equal(audited, want) {
		t.Errorf("audited %q, want %q", audited, want)
	}
}
