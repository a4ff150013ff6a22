package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/forms"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// An action's rules (policies/rules.go) decide a complete, valid call on
// what it does, at hold time, on both fronts (plan is shared by model
// routes, MCP and shadow mode): the first rule that matches decides.
//
//   - allow: the call passes to the app untouched, as a read does;
//   - deny: refused; the model reads the rule's because;
//   - ask: the card, with the rule's approvers, four_eyes and ttl over the
//     action's;
//   - none: the effect decides, as without rules.
//
// The record is read once, as the person, only when a rule reads it; the
// card is then built from the same bytes. An evaluation error refuses the
// call (fail closed): the model reads that the policy could not decide,
// the operator's log names the rule. A call that becomes a form (its
// arguments incomplete) is not decided at hold time: its rules run on the
// final arguments when the person submits (runForm).
//
// The rule that held a card is kept with what the person was shown
// (Hold.Shown's "rule"), with the roles of the person it was decided for:
// the pages read its approvers and four_eyes from there, the audit's held
// event names it, and at confirm time (recheckRules) the rules run again
// against the rebuilt record; a decision that differs now runs nothing.

// What the model reads when an action's rules cannot decide: at hold time
// (after "Toolgate refused <tool>: ") and at confirm time.
const (
	ruleErrorText    = "the gate's policy could not decide on this call; nothing ran."
	outcomeRuleError = "The person confirmed, but the gate's policy could not decide on this call now; nothing ran."
)

// ruling is what an action's rules made of one call.
type ruling struct {
	rule    *policies.Rule // the rule that decided; nil when none matched
	record  []byte         // the record read for the rules; nil when not read
	read    bool           // record holds the record as read
	refusal *refusal       // the rules refused the call (deny, an error, a record that could not be read)
}

// heldRule is what a hold's Shown keeps of the rule that held its card.
type heldRule struct {
	Index int      `json:"index"`
	Label string   `json:"label"`
	Roles []string `json:"roles,omitempty"` // the roles of the person it was decided for
}

// RulePerson is the person variable of a policy's rules and offer_when
// for p.
func RulePerson(p Person) policies.RulePerson { return rulePerson(p) }

// rulePerson is the person variable of p.
func rulePerson(p Person) policies.RulePerson {
	return policies.RulePerson{ID: p.Owner, Tenant: p.Tenant, Roles: p.Roles}
}

// rules runs the action's rules on a complete, valid call (d has no
// refusal and its form passes). The record is read, as the person, when
// the first rule that reads it is reached, and kept for the card.
func (f *Front) rules(ctx context.Context, c provider.Call, d decision) ruling {
	a := d.action
	var out ruling
	var readFailed *refusal
	read := func() ([]byte, error) {
		if f.person.Owner == "" {
			readFailed = &refusal{"no_owner", fmt.Sprintf("Toolgate refused %s: the gate could not tell whose conversation this is; nothing ran.", c.Name)}
			return nil, errors.New("no owner to read the record as")
		}
		body, ref := f.readRecord(ctx, a, d.args)
		if ref != nil {
			readFailed = ref
			return nil, errors.New(ref.reason)
		}
		out.record, out.read = body, true
		return body, nil
	}
	r, err := a.Decide(policies.RuleInput{
		Args: d.args, ReadRecord: read, Person: rulePerson(f.person),
		Tool: c.Name, Protocol: f.protocol, Now: f.g.cfg.Now(),
	})
	if readFailed != nil {
		// Refused as a card whose record cannot be read is.
		return ruling{refusal: readFailed, rule: ruleOf(err)}
	}
	if err != nil {
		f.g.log.Error("policy error: a rule could not be evaluated; call refused", zap.String("action", c.Name),
			zap.String("rule", ruleLabelOf(err)), zap.String("owner", f.person.Owner), zap.String("tenant", f.person.Tenant), zap.Error(err))
		out.refusal = &refusal{"rule_error", fmt.Sprintf("Toolgate refused %s: %s", c.Name, ruleErrorText)}
		out.rule = ruleOf(err)
		return out
	}
	out.rule = r
	if r != nil && r.Then == policies.RuleDeny {
		out.refusal = &refusal{"rule_deny", fmt.Sprintf("Toolgate refused %s: %s", c.Name, r.Because)}
	}
	return out
}

func ruleOf(err error) *policies.Rule {
	var re *policies.RuleError
	if errors.As(err, &re) {
		return re.Rule
	}
	return nil
}

func ruleLabelOf(err error) string { return ruleOf(err).Label() }

// readRecord reads a card's record as the person, for the rules and the
// card. Any failure is a refusal.
func (f *Front) readRecord(ctx context.Context, a *policies.Action, args []byte) ([]byte, *refusal) {
	refuse := func(reason, format string, v ...any) ([]byte, *refusal) {
		return nil, &refusal{reason, fmt.Sprintf("Toolgate refused %s: "+format, append([]any{a.Name}, v...)...)}
	}
	u, err := a.Card.Record.Expand(args)
	if err != nil {
		f.g.log.Error("policy error: expanding record url", zap.String("action", a.Name), zap.Error(err))
		return refuse("policy", "the gate's policy cannot name its record; nothing ran.")
	}
	resp, err := f.g.cfg.Actions.Fetch(ctx, u, f.person.caller())
	switch {
	case err != nil:
		f.g.log.Error("reading record", zap.String("action", a.Name), zap.Error(err))
		return refuse("record", "the record could not be read; nothing ran.")
	case resp.Status == 403:
		return refuse("forbidden", "the person may not do this; nothing ran.")
	case resp.Status == 404 || resp.Status == 410:
		return refuse("not_found", "the record was not found; nothing ran.")
	case resp.Status < 200 || resp.Status > 299:
		return refuse("record", "the record could not be read (HTTP %d); nothing ran.", resp.Status)
	}
	return resp.Body, nil
}

// ruled says whether a call's rules are to run now: a complete, valid
// call of an action with rules.
func ruled(d decision) bool {
	return d.refusal == nil && d.action.HasRules() && d.form.Outcome == forms.Pass
}

// withRule adds the rule that held a card, and the roles it was decided
// for, to the card's shown JSON.
func withRule(shown []byte, r *policies.Rule, roles []string) []byte {
	if r == nil {
		return shown
	}
	b, _ := json.Marshal(heldRule{Index: r.Index, Label: r.Label(), Roles: roles})
	rest := bytes.TrimSpace(shown)
	if len(rest) < 2 || rest[len(rest)-1] != '}' {
		return shown
	}
	out := append([]byte{}, rest[:len(rest)-1]...)
	if len(rest) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"rule":`...)
	out = append(out, b...)
	return append(out, '}')
}

// ruleShown is the audit's note of the rule that refused a call.
func ruleShown(r *policies.Rule) json.RawMessage {
	if r == nil {
		return nil
	}
	b, _ := json.Marshal(struct {
		Rule heldRule `json:"rule"`
	}{heldRule{Index: r.Index, Label: r.Label()}})
	return b
}

// heldRuleOf reads the rule a hold's card was held under; ok is false for
// a card no rule held.
func heldRuleOf(h store.Hold) (heldRule, bool) {
	if h.Kind != store.KindCard || !bytes.Contains(h.Shown, []byte(`"rule":`)) {
		return heldRule{}, false
	}
	var s struct {
		Rule *heldRule `json:"rule"`
	}
	if err := json.Unmarshal(h.Shown, &s); err != nil || s.Rule == nil {
		return heldRule{}, false
	}
	return *s.Rule, true
}

// askedOf returns the approvers and four_eyes a hold's card answers to:
// the rule's that held it where it gives them, else the action's (as the
// policy reads now). A card held under a rule the policy no longer has
// at that place keeps the action's; its run is stopped by the policy
// version check anyway.
func askedOf(h store.Hold, a *policies.Action) (*policies.Approvers, bool) {
	if a == nil {
		return nil, false
	}
	approvers, fourEyes := a.Approvers, a.FourEyes
	if hr, ok := heldRuleOf(h); ok && hr.Index >= 0 && hr.Index < len(a.Rules) {
		r := a.Rules[hr.Index]
		if r.Then == policies.RuleAsk {
			approvers, fourEyes = ruleAsked(a, r)
		}
	}
	return approvers, fourEyes
}

// ruleAsked is the approvers and four_eyes an ask rule gives a card.
func ruleAsked(a *policies.Action, r *policies.Rule) (*policies.Approvers, bool) {
	approvers, fourEyes := a.Approvers, a.FourEyes
	if r != nil && r.Then == policies.RuleAsk {
		if r.Approvers != nil {
			approvers = r.Approvers
		}
		if r.FourEyes != nil {
			fourEyes = *r.FourEyes
		}
	}
	return approvers, fourEyes
}

// recheckRules runs a confirmed card's rules again against the record as
// rebuilt now (record; nil when none was read), for the person the call
// was decided for. It returns no outcome (Kind "") when the decision is
// the one the card was held under; else ResultChanged (the record, or the
// time, made another rule decide: nothing runs, and the person and the
// model read that the record changed), or, for an evaluation error, a
// refusal of its own.
func (g *Gate) recheckRules(h store.Hold, a *policies.Action, args, record []byte) Outcome {
	if !a.HasRules() {
		return Outcome{}
	}
	hr, wasRuled := heldRuleOf(h)
	if a.RulesUseRecord() && record == nil {
		g.log.Error("rules need the record and none was read", zap.String("hold_id", h.ID), zap.String("action", h.Action))
		return uncheckedOutcome(uncheckedUnreadable)
	}
	r, err := a.Decide(policies.RuleInput{
		Args: args, Record: record,
		Person: policies.RulePerson{ID: h.Owner, Tenant: h.Tenant, Roles: hr.Roles},
		Tool:   h.Action, Protocol: h.Protocol, Now: g.cfg.Now(),
	})
	if err != nil {
		g.cfg.Observer.Decided(h.Action, "rule_error")
		g.log.Error("policy error: a rule could not be evaluated at confirm time; nothing runs", zap.String("hold_id", h.ID),
			zap.String("action", h.Action), zap.String("rule", ruleLabelOf(err)), zap.Error(err))
		return Outcome{Kind: ResultNotRun, Why: notRunRuleError}
	}
	if r == nil && !wasRuled || r != nil && wasRuled && r.Index == hr.Index {
		return Outcome{}
	}
	now := "none"
	if r != nil {
		now = r.Label()
	}
	g.cfg.Observer.Decided(h.Action, "changed")
	g.log.Info("rules decide differently at confirm time; nothing runs", zap.String("hold_id", h.ID), zap.String("action", h.Action),
		zap.String("held_under", hr.Label), zap.String("now", now))
	return Outcome{Kind: ResultChanged}
}

// filledRules runs a form's rules on the arguments as the person filled
// them in, before they run (the call was not decided at hold time: its
// arguments were incomplete). roles are those of the person it was asked
// of. It returns why the call is refused (what the model reads after
// "Toolgate refused <tool>: "), "" when the call may run
// (allowed, or no rule matched: the form was the effect's answer).
func (g *Gate) filledRules(h store.Hold, a *policies.Action, args []byte, roles []string) string {
	if !a.HasRules() {
		return ""
	}
	r, err := a.Decide(policies.RuleInput{
		Args: args, Person: policies.RulePerson{ID: h.Owner, Tenant: h.Tenant, Roles: roles},
		Tool: h.Action, Protocol: h.Protocol, Now: g.cfg.Now(),
	})
	switch {
	case err != nil:
		g.cfg.Observer.Decided(h.Action, "rule_error")
		g.log.Error("policy error: a rule could not be evaluated on a filled-in form; nothing runs", zap.String("hold_id", h.ID),
			zap.String("action", h.Action), zap.String("rule", ruleLabelOf(err)), zap.Error(err))
		return ruleErrorText
	case r != nil && r.Then == policies.RuleDeny:
		g.cfg.Observer.Decided(h.Action, "rule_deny")
		g.log.Info("a rule denies the filled-in form; nothing runs", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("rule", r.Label()))
		return r.Because
	}
	return ""
}

// formRoles are the roles a form keeps for its action's rules: none
// without rules.
func formRoles(a *policies.Action, p Person) []string {
	if !a.HasRules() {
		return nil
	}
	return p.Roles
}

// offered refuses a call of an action whose offer_when does not offer it
// to this person: a model can name a tool it was not offered. An
// evaluation error refuses too (fail closed). nil: it may be called.
func (f *Front) offered(a *policies.Action) *refusal {
	if !a.HasOfferWhen() {
		return nil
	}
	ok, err := a.Offers(rulePerson(f.person))
	if err != nil {
		f.g.log.Error("policy error: offer_when could not be evaluated; call refused", zap.String("action", a.Name), zap.Error(err))
	}
	if ok {
		return nil
	}
	return &refusal{"not_offered", fmt.Sprintf("Toolgate refused %s: it is not offered to this person; nothing ran.", a.Name)}
}
