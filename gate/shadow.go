package gate

import (
	"bytes"
	"context"
	"encoding/json"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// Shadow rollout: the calls of an action in mode shadow (its own, or the
// policy file's) pass to the app untouched, at once, and the gate works
// out on the side what enforce mode would have done with them: the card it
// would have shown (built from the record, read as the person, as usual),
// the form it would have asked, or why it would have refused. That is
// logged and counted, never stored as a hold and never shown to anyone.
// The work runs after the call has passed, detached from the request and
// bounded by the action timeout, so a slow record does not slow the app.

// ShadowObserver is an Observer that also counts what shadow mode would
// have done: would is "card", "form" or "refuse" (a call enforce mode
// would pass is not counted). The gate calls it when its Observer has it.
type ShadowObserver interface {
	Shadowed(action, would string)
}

// The shadow verdicts, as ShadowObserver's would label and the logs say
// them.
const (
	WouldCard   = "card"
	WouldForm   = "form"
	WouldRefuse = "refuse"
)

// holdShadowed passes the calls of shadow actions, watching them, and
// hands the others to Hold; ok is false when no call is in shadow (the
// caller goes on as usual).
func (f *Front) holdShadowed(ctx context.Context, calls []provider.Call, message []byte, kept provider.Kept) (provider.Verdict, bool) {
	var enforced, watched []provider.Call
	var at []int // where each enforced call sits among calls
	for i, c := range calls {
		if f.policy.Action(c.Name).Shadow() {
			watched = append(watched, c)
		} else {
			enforced = append(enforced, c)
			at = append(at, i)
		}
	}
	if len(watched) == 0 {
		return provider.Verdict{}, false
	}
	f.watch(watched)
	v := provider.Verdict{Pass: make([]bool, len(calls))}
	for i := range v.Pass {
		v.Pass[i] = true
	}
	if len(enforced) > 0 {
		ev := f.Hold(ctx, enforced, message, kept)
		for j, i := range at {
			v.Pass[i] = j < len(ev.Pass) && ev.Pass[j]
		}
		v.Text, v.Step, v.Refusals = ev.Text, ev.Step, ev.Refusals
	}
	return v, true
}

// watch works out, in the background, what enforce mode would have done
// with calls of shadow actions. What it reads of the request (the tools'
// schemas, the calls' bytes) is copied first: the request may be gone
// when it runs.
func (f *Front) watch(calls []provider.Call) {
	g := f.g
	person := f.Person()
	schemas := map[string][]byte{}
	copied := make([]provider.Call, len(calls))
	for i, c := range calls {
		c.Arguments, c.Raw = bytes.Clone(c.Arguments), nil
		copied[i] = c
		if f.toolSchema != nil {
			if _, ok := schemas[c.Name]; !ok {
				schemas[c.Name] = bytes.Clone(f.toolSchema(c.Name))
			}
		}
	}
	if !g.track.add() {
		return // the gate is stopping: nothing more is worked out
	}
	shadow := &Front{g: g, policy: f.policy, policyKey: f.policyKey, protocol: f.protocol,
		who: func() Person { return person }, toolSchema: func(name string) []byte { return schemas[name] }}
	shadow.Person() // known already: plan reads it
	go func() {
		defer g.track.done()
		ctx, cancel := context.WithTimeout(g.life, 2*g.cfg.ActionTimeout)
		defer cancel()
		would := 0
		for _, c := range copied {
			if shadow.watchOne(ctx, c, would) {
				would++
			}
		}
	}()
}

// watchOne logs and counts what enforce mode would have done with one
// call; it reports whether the call would have waited for the person.
// This is where an audit trail records a shadow decision.
func (f *Front) watchOne(ctx context.Context, c provider.Call, waiting int) bool {
	g := f.g
	p := f.plan(ctx, c, waiting)
	fields := []zap.Field{zap.String("action", c.Name), zap.String("owner", f.person.Owner), zap.String("tenant", f.person.Tenant), zap.String("policy", f.policyKey)}
	var would string
	switch {
	case p.pass && p.rule != nil:
		// A rule's allow is a decision of the policy: logged and audited.
		g.log.Info("shadow: call would pass, allowed by a rule", append(fields, zap.String("rule", p.rule.Label()))...)
		g.audit(f.shadowedEvent(c.Name, p))
		return false
	case p.pass:
		g.log.Debug("shadow: call would pass", fields...)
		return false
	case p.refusal != nil:
		would = WouldRefuse
		g.log.Info("shadow: call would be refused", append(fields, zap.String("reason", p.refusal.reason), zap.String("rule", p.rule.Label()), zap.String("why", p.refusal.text))...)
	case p.kind == store.KindForm:
		would = WouldForm
		s, _ := readShown(p.shown)
		g.log.Info("shadow: call would wait for a form", append(fields, zap.Strings("form_fields", s.Fields), zap.String("message", s.Message))...)
	default:
		would = WouldCard
		g.log.Info("shadow: call would wait for confirmation", append(fields, zap.Any("card", json.RawMessage(p.shown)))...)
	}
	if o, ok := g.cfg.Observer.(ShadowObserver); ok {
		o.Shadowed(c.Name, would)
	}
	g.audit(f.shadowedEvent(c.Name, p))
	return would != WouldRefuse
}

// Watcher is the Holder that reads a copy of the response for the calls
// of actions in shadow mode (the app gets the response from the Front,
// which does not inspect them); nil when the policy puts no action in
// shadow mode. Its verdicts pass every call: whatever it is given is
// written nowhere.
func (f *Front) Watcher() provider.Holder {
	if !f.policy.HasShadow() {
		return nil
	}
	return watcher{f}
}

// watcher is Front.Watcher's Holder.
type watcher struct{ f *Front }

func (w watcher) Gated(name string) bool { return w.f.policy.Action(name).Shadow() }

func (w watcher) Hold(_ context.Context, calls []provider.Call, _ []byte, _ provider.Kept) provider.Verdict {
	var watched []provider.Call
	for _, c := range calls {
		if w.Gated(c.Name) {
			watched = append(watched, c)
		}
	}
	if len(watched) > 0 {
		w.f.watch(watched)
	}
	v := provider.Verdict{Pass: make([]bool, len(calls))}
	for i := range v.Pass {
		v.Pass[i] = true
	}
	return v
}
