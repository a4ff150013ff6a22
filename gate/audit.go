package gate

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// The gate's share of the audit log (store/audit.go). Every change of a
// hold goes through audited, which hands the store the event that reports
// it, to append in the same transaction: a hold is never held, answered or
// settled unaudited, and a change that fails leaves no event. The app's
// answer to a card's or a form's release goes with its settled event
// (Gate.settle). What changes no hold (the person opened the page, a call
// refused before anything was stored, an MCP release) is appended on its
// own by Gate.audit: if that fails, the gate logs it and counts it
// (AuditObserver) and goes on; refusing to show a page or to tell the
// model about a refusal would protect nothing.

// AuditObserver is an Observer that also counts audit events that could
// not be appended.
type AuditObserver interface {
	AuditFailed(kind string)
}

// ByGate is who answered, in the audit log, a hold the gate settled
// itself: it expired, or the person moved on.
const ByGate = "toolgate"

// auditTimeout bounds one append made on its own.
const auditTimeout = 5 * time.Second

// audited is the store as the gate uses it: Put, Claim and Settle carry
// the events of the changes they make (held, answered, settled).
type audited struct{ store.Store }

func (a audited) Put(ctx context.Context, holds []store.Hold, events ...store.Event) error {
	events = slices.Clip(events)
	for i := range holds {
		if holds[i].State == store.Waiting {
			events = append(events, heldEvent(&holds[i]))
		}
	}
	return a.Store.Put(ctx, holds, events...)
}

// Claim appends the answered event, unless events hold one for the hold
// already (answeredEvent, made by a caller that knows when the answer
// happened).
func (a audited) Claim(ctx context.Context, id string, ans store.Answer, events ...store.Event) (store.Claimed, error) {
	if !slices.ContainsFunc(events, func(e store.Event) bool { return e.Kind == store.EventAnswered && e.HoldID == id }) {
		events = append(slices.Clip(events), answeredEvent(id, ans))
	}
	return a.Store.Claim(ctx, id, ans, events...)
}

// answeredEvent reports a claim: by the person, an operator, or the gate
// itself (ByGate) when nobody gave the answer.
func answeredEvent(id string, ans store.Answer) store.Event {
	ev := store.Event{Kind: store.EventAnswered, HoldID: id, By: ans.By, Answer: ans.Choice}
	if ev.By == "" {
		ev.By = ByGate
	}
	return ev
}

// Settle's event carries the outcome as stored: structured data that holds
// neither the person's values nor the app's words (a read's reply is
// kept apart, SettleWithReply's reply, and never audited).
func (a audited) Settle(ctx context.Context, id, outcome string, events ...store.Event) error {
	return a.Store.Settle(ctx, id, outcome, append(slices.Clip(events), settledEvent(id, outcome))...)
}

func (a audited) SettleWithReply(ctx context.Context, id, outcome string, reply []byte, events ...store.Event) error {
	return a.Store.SettleWithReply(ctx, id, outcome, reply, append(slices.Clip(events), settledEvent(id, outcome))...)
}

// settledEvent reports a settlement: its outcome's summary (an outcome
// stored as a sentence by an earlier version shows only its kind).
func settledEvent(id, outcome string) store.Event {
	return store.Event{Kind: store.EventSettled, HoldID: id, Outcome: string(OutcomeSummary(&store.Hold{Outcome: outcome}))}
}

// heldEvent reports a new waiting hold: what the person is asked, never
// the call's arguments.
func heldEvent(h *store.Hold) store.Event {
	return store.Event{
		Kind: store.EventHeld, HoldID: h.ID, StepID: h.StepID, Tenant: h.Tenant, Owner: h.Owner,
		Action: h.Action, HoldKind: h.Kind, Protocol: h.Protocol, Policy: h.Policy,
		PolicyVersion: h.PolicyVersion, ActionVersion: h.ActionVersion,
		Shown: ShownSummary(h),
	}
}

// ShownSummary is what the audit log and the admin API tell of what a
// hold shows: a card as the person sees it (its sentence and rows, built
// from the record), or a form's message and the names of its fields
// (never the values the model gave, even those the form would show).
func ShownSummary(h *store.Hold) json.RawMessage {
	if len(h.Shown) == 0 {
		return nil
	}
	if h.Kind == store.KindCard {
		return h.Shown
	}
	s, err := readShown(h.Shown)
	if err != nil {
		return nil
	}
	b, _ := json.Marshal(struct {
		Message string   `json:"message,omitempty"`
		Fields  []string `json:"fields"`
	}{s.Message, s.Fields})
	return b
}

// audit appends events that change no hold, on its own (see above).
func (g *Gate) audit(events ...store.Event) {
	if len(events) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
	defer cancel()
	if err := g.cfg.Store.Audit(ctx, events...); err != nil {
		g.log.Error("appending to the audit log", zap.String("event", string(events[0].Kind)), zap.Int("events", len(events)), zap.Error(err))
		if o, ok := g.cfg.Observer.(AuditObserver); ok {
			o.AuditFailed(string(events[0].Kind))
		}
	}
}

// refusedEvent reports a call refused on this front: nothing was asked,
// nothing ran. text is what the model reads.
func (f *Front) refusedEvent(action, reason, text string) store.Event {
	return store.Event{
		Kind: store.EventRefused, Tenant: f.person.Tenant, Owner: f.person.Owner, Action: action,
		Policy: f.policyKey, PolicyVersion: f.policy.Version(), ActionVersion: f.policy.Action(action).Version(),
		Protocol: f.protocol, Reason: reason, Detail: text,
	}
}

// ruleRefusedEvent is refusedEvent for a planned call, naming the rule
// that refused it, if one did.
func (f *Front) ruleRefusedEvent(action string, p plan) store.Event {
	ev := f.refusedEvent(action, p.refusal.reason, p.refusal.text)
	ev.Shown = ruleShown(p.rule)
	return ev
}

// shadowedEvent is the audit's record of a call of an action in shadow
// mode: what enforce mode would have done with it (p is its plan).
func (f *Front) shadowedEvent(action string, p plan) store.Event {
	ev := store.Event{
		Kind: store.EventShadowed, Tenant: f.person.Tenant, Owner: f.person.Owner, Action: action,
		Policy: f.policyKey, PolicyVersion: f.policy.Version(), ActionVersion: f.policy.Action(action).Version(),
		Protocol: f.protocol,
	}
	switch {
	case p.refusal != nil:
		ev.Reason, ev.Detail, ev.Shown = p.refusal.reason, p.refusal.text, ruleShown(p.rule)
	case p.pass:
		ev.Reason, ev.Shown = "rule_allow", ruleShown(p.rule) // only a rule's pass is audited
	default:
		ev.HoldKind, ev.Shown = p.kind, ShownSummary(&store.Hold{Kind: p.kind, Shown: p.shown})
	}
	return ev
}

// endpoint is an action's method and URL as the policy writes them, for
// the audit: the template (never the call's values), without any user
// information or query.
func endpoint(a *policies.Action) string {
	if a.Run.URL == nil {
		return ""
	}
	u := a.Run.URL.String()
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	if scheme, rest, ok := strings.Cut(u, "://"); ok {
		if at := strings.IndexByte(rest, '@'); at >= 0 && at < strings.IndexByte(rest+"/", '/') {
			u = scheme + "://" + rest[at+1:]
		}
	}
	return a.Run.Method + " " + u
}

// releasedEvent reports what came of sending a call: the endpoint's
// status, or why there was none, and how long it took.
func releasedEvent(h store.Hold, a *policies.Action, resp actions.Response, err error, took time.Duration) store.Event {
	ev := store.Event{Kind: store.EventReleased, HoldID: h.ID, Endpoint: endpoint(a), Status: resp.Status,
		DurationMS: float64(took.Microseconds()) / 1000}
	switch {
	case resp.Status != 0:
	case errors.Is(err, actions.ErrNotSent):
		ev.Reason = "not sent"
	default:
		ev.Reason = "no answer"
	}
	return ev
}

// withAnswer is ev with another answer.
func withAnswer(ev store.Event, answer string) store.Event {
	ev.Answer = answer
	return ev
}
