package gate

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/forms"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
)

// decision is what the policy and the call's own arguments make of one
// call, before anything is read, asked or stored: the first half of plan,
// and all of what Explain shows.
type decision struct {
	action  *policies.Action
	schema  json.RawMessage // the tool's schema: the policy's, else the request's
	args    []byte          // the arguments as checked (a custom call's input wrapped)
	form    forms.Decision
	pass    bool     // a complete read or write call: the app runs it
	refusal *refusal // nothing runs; the model reads why
	// askMisfit is the mistake of an ask that does not fit the request's
	// schema, found only now; the gate logs it.
	askMisfit error
}

// decide checks one call against the policy. toolSchema gives a tool's
// schema from the request (nil: none); protocol is the route's.
func decide(p *policies.Policy, c provider.Call, toolSchema func(string) []byte, protocol string) decision {
	refuse := func(reason, format string, args ...any) *refusal {
		return &refusal{reason, fmt.Sprintf("Toolgate refused %s: "+format, append([]any{c.Name}, args...)...)}
	}
	a := p.Action(c.Name)
	if a == nil {
		return decision{refusal: refuse("policy", "the policy does not declare it; nothing ran.")}
	}
	d := decision{action: a, args: c.Arguments, schema: a.Schema}
	if c.Type == "custom" {
		d.args, _ = json.Marshal(map[string]string{"input": string(c.Arguments)})
	}
	if d.schema == nil && toolSchema != nil {
		d.schema = toolSchema(c.Name)
	}
	if jsonedit.DuplicateKey(d.args) {
		// The card would read one value and the app act on another.
		d.refusal = refuse("arguments", "its arguments give a key twice; nothing ran. Call it again with each key once.")
		return d
	}
	d.form = forms.Plan(a, d.schema, d.args)
	switch {
	case d.form.Outcome == forms.Refuse:
		if a.AskForMissing && d.schema != nil {
			// Plan refused the call; the operator must hear of an ask that
			// does not fit the schema the request offered.
			d.askMisfit = a.CheckAsk(d.schema)
		}
		d.refusal = refuse("arguments", "%s. Nothing ran; ask the person in words for what is missing, then call it again.", describeReasons(d.form))
	case d.form.Outcome == forms.Pass && !a.Effect.NeedsCard():
		d.pass = true
	case a.Run.URL == nil && protocol != ProtocolMCP:
		d.refusal = refuse("policy", "the policy gives it no endpoint to run on (only an MCP server runs it); nothing ran.")
	}
	return d
}

// Explanation is what the gate would do with one call on a model route,
// from the policy and the call's arguments alone: nothing is read, asked,
// stored or run. toolgate policy explain prints it.
type Explanation struct {
	// Outcome is "pass" (the app runs it as before; Gated says whether
	// the gate inspected it at all), "card" (held for the
	// person to confirm), "form" (held for the person to fill in) or
	// "refuse" (nothing runs; the model reads Refusal).
	Outcome string
	Gated   bool
	// Refusal is what the model reads, for refuse.
	Refusal string
	// Fields are the form's fields in order, with Reasons the rule each
	// failed ("required", "must be integer"), for form.
	Fields  []string
	Reasons map[string]string
	// Card is the action's card, for card: its reason and rows.
	Card *policies.Card
	// Record is the record's URL as the call names it ("" without a
	// record): read with GET as the person to fill the rows.
	Record string
	// Method and Run are where a confirmed or filled-in call goes; "" for
	// an action only an MCP server runs.
	Method, Run string
	// RunError is why the call's arguments cannot fill the endpoint's URL
	// (the run would fail after the person's answer); "" when they can.
	RunError string
	// TTL is how long the person has to answer; 0 means the gate's
	// default.
	TTL time.Duration

	// Rule is the rule that decided (nil: none matched, or the action has
	// no rules); RuleError why the rules could not decide (the call is
	// refused, or, when NeedsRecord, the record was not given).
	Rule      *policies.Rule
	RuleError string
	// NeedsRecord says a rule reached reads the record, which explain was
	// not given: the running gate reads it as the person.
	NeedsRecord bool
}

// ExplainInput is what explain may be told besides the call: the record
// the rules read, the person and the protocol. Never form values.
type ExplainInput struct {
	Record   []byte // JSON; nil: not given
	Person   policies.RulePerson
	Protocol string
	Now      time.Time
}

// Explain says what the gate would do with a call of tool with arguments
// args (JSON text) on a model route, using the gate's own decision: the
// same checks as a held call, up to where the gate would read the record
// or a form's choices. It needs no store, no endpoint and no person.
func Explain(p *policies.Policy, tool string, args []byte) Explanation {
	return ExplainWith(p, tool, args, ExplainInput{})
}

// ExplainWith is Explain with the action's rules run on in: the record
// they read (when given), the person and the protocol.
func ExplainWith(p *policies.Policy, tool string, args []byte, in ExplainInput) Explanation {
	if p.Action(tool) == nil {
		// Front.Gated: calls of undeclared tools are not the gate's business.
		return Explanation{Outcome: "pass"}
	}
	d := decide(p, provider.Call{Name: tool, Arguments: args}, nil, in.Protocol)
	if a := d.action; a.HasOfferWhen() {
		if ok, _ := a.Offers(in.Person); !ok {
			return Explanation{Outcome: "refuse", Gated: true, Refusal: fmt.Sprintf("Toolgate refused %s: it is not offered to this person; nothing ran.", tool)}
		}
	}
	var rule *policies.Rule
	var ruleErr string
	needsRecord := false
	if ruled(d) {
		r, err := d.action.Decide(policies.RuleInput{Args: d.args, Record: in.Record, Person: in.Person, Tool: tool, Protocol: in.Protocol, Now: in.Now})
		switch {
		case err != nil && in.Record == nil && ruleOf(err) != nil && ruleOf(err).UsesRecord:
			rule, ruleErr, needsRecord = ruleOf(err), err.Error(), true
		case err != nil:
			return Explanation{Outcome: "refuse", Gated: true, Rule: ruleOf(err), RuleError: err.Error(),
				Refusal: fmt.Sprintf("Toolgate refused %s: %s", tool, ruleErrorText)}
		case r != nil && r.Then == policies.RuleDeny:
			return Explanation{Outcome: "refuse", Gated: true, Rule: r, Refusal: fmt.Sprintf("Toolgate refused %s: %s", tool, r.Because)}
		case r != nil && r.Then == policies.RuleAllow:
			return Explanation{Outcome: "pass", Gated: true, Rule: r}
		default:
			rule = r
		}
	}
	switch {
	case d.refusal != nil:
		return Explanation{Outcome: "refuse", Gated: true, Refusal: d.refusal.text}
	case d.pass && !needsRecord:
		return Explanation{Outcome: "pass", Gated: true}
	}
	a := d.action
	e := Explanation{Gated: true, TTL: a.TTL, Method: a.Run.Method, Rule: rule, RuleError: ruleErr, NeedsRecord: needsRecord}
	if rule != nil && rule.Then == policies.RuleAsk && rule.TTL > 0 {
		e.TTL = rule.TTL
	}
	var err error
	if a.Run.URL != nil {
		// A URL the arguments cannot fill fails at the run, after the
		// person's answer: said here, since the gate holds the call anyway.
		if e.Run, err = a.Run.URL.Expand(d.args); err != nil {
			e.RunError = err.Error()
		}
	}
	if d.form.Outcome == forms.Ask {
		e.Outcome, e.Fields, e.Reasons = "form", d.form.Fields, d.form.Reasons
		return e
	}
	e.Outcome, e.Card = "card", a.Card
	if a.Card != nil && a.Card.Record != nil {
		if e.Record, err = a.Card.Record.Expand(d.args); err != nil {
			return Explanation{Outcome: "refuse", Gated: true, Refusal: fmt.Sprintf("Toolgate refused %s: the gate's policy cannot name its record; nothing ran.", tool)}
		}
	}
	return e
}
