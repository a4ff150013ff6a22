package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// Front is the gate as one model request sees it: the policy of the route,
// the person the conversation belongs to, and the wire protocol. It
// implements interceptor.Holder and interceptor.Restorer. Make one per
// request with Gate.Front.
type Front struct {
	g         *Gate
	policy    *policies.Policy
	policyKey string
	protocol  string
	who       func() Person
	once      sync.Once
	person    Person
}

// Front returns the gate for one model request. who tells whose
// conversation it is; it is called at most once, and only when a gated
// call or a link appears, so a request that needs no identity parses
// nothing to find one.
func (g *Gate) Front(p *policies.Policy, policyKey string, who func() Person, protocol string) *Front {
	return &Front{g: g, policy: p, policyKey: policyKey, who: who, protocol: protocol}
}

// Person is whose conversation this is ("" Owner when nobody could tell).
func (f *Front) Person() Person {
	f.once.Do(func() { f.person = f.who() })
	return f.person
}

var (
	_ interceptor.Holder   = (*Front)(nil)
	_ interceptor.Restorer = (*Front)(nil)
)

// Gated reports whether the policy holds calls of this tool for a person.
// Read and write actions pass until forms exist for them.
func (f *Front) Gated(name string) bool {
	a := f.policy.Action(name)
	return a != nil && a.Effect.NeedsCard()
}

// refusal is why one call cannot be held; Text is what the model reads.
type refusal struct {
	reason string // metric label: a fixed word
	text   string
}

func (r *refusal) Error() string { return r.text }

// Hold builds a card for each call, stores the holds of the step and
// returns the waiting text with the link. A call that cannot be held
// properly is refused (fail closed): it is taken out all the same and the
// text says why, so the app never runs it.
func (f *Front) Hold(ctx context.Context, calls []interceptor.Call, message []byte) string {
	g := f.g
	now := g.cfg.Now()
	f.Person()
	stepID, err := store.NewID()
	if err != nil {
		return f.refuseAll(calls, "store", "the gate could not make a link")
	}
	var holds []store.Hold
	var waiting []cards.Card
	var refused []string
	for i, c := range calls {
		h := store.Hold{
			StepID: stepID, Owner: f.person.Owner, Tenant: f.person.Tenant,
			Policy: f.policyKey, Action: c.Name, Kind: store.KindCard, Protocol: f.protocol,
			CallID: c.ID, Call: c.Raw, Message: message, Position: c.Position,
			State: store.Waiting, Created: now,
		}
		if h.ID, err = store.NewID(); err != nil {
			return f.refuseAll(calls, "store", "the gate could not make a link")
		}
		card, args, ref := f.card(ctx, c, i)
		a := f.policy.Action(c.Name)
		ttl := g.cfg.TTL
		if a != nil && a.TTL > 0 {
			ttl = a.TTL
		}
		h.Expires = now.Add(ttl)
		if ref != nil {
			// Kept, settled, so the restored history pairs this call with
			// its result too.
			h.State, h.Answer, h.Outcome = store.Settled, "refused", ref.text
			g.cfg.Observer.Refused(c.Name, ref.reason)
			g.log.Warn("call refused", zap.String("action", c.Name), zap.String("owner", f.person.Owner), zap.String("reason", ref.reason), zap.String("why", ref.text))
			refused = append(refused, ref.text)
		} else {
			h.Arguments = args
			h.Shown, _ = json.Marshal(card)
			h.Fingerprint = card.Fingerprint()
			waiting = append(waiting, card)
		}
		holds = append(holds, h)
	}
	if len(waiting) == 0 {
		return strings.Join(refused, " ")
	}
	if err := g.cfg.Store.Put(ctx, holds); err != nil {
		g.log.Error("storing holds", zap.Error(err), zap.String("owner", f.person.Owner))
		return f.refuseAll(calls, "store", "the gate could not store the confirmation")
	}
	for _, h := range holds {
		if h.State == store.Waiting {
			g.cfg.Observer.Held(h.Action)
			g.log.Info("call held",
				zap.String("hold_id", h.ID), zap.String("step_id", h.StepID), zap.String("action", h.Action),
				zap.String("owner", h.Owner), zap.String("tenant", h.Tenant), zap.Time("expires", h.Expires),
				zap.Any("card", json.RawMessage(h.Shown)))
		}
	}
	return waitingText(waiting, g.Link(stepID), refused)
}

// card checks one call and builds its card from the record, read as the
// person. Any failure is a refusal.
func (f *Front) card(ctx context.Context, c interceptor.Call, i int) (cards.Card, []byte, *refusal) {
	if i >= MaxHeld {
		return cards.Card{}, nil, &refusal{"too_many", fmt.Sprintf("Toolgate refused %s: at most %d calls can wait for the person at once; nothing ran.", c.Name, MaxHeld)}
	}
	if f.person.Owner == "" {
		return cards.Card{}, nil, &refusal{"no_owner", fmt.Sprintf("Toolgate refused %s: the gate could not tell whose conversation this is; nothing ran.", c.Name)}
	}
	a := f.policy.Action(c.Name)
	if a == nil || a.Card == nil {
		return cards.Card{}, nil, &refusal{"policy", fmt.Sprintf("Toolgate refused %s: the policy gives it no card; nothing ran.", c.Name)}
	}
	args := c.Arguments
	if c.Type == "custom" {
		args, _ = json.Marshal(map[string]string{"input": string(c.Arguments)})
	}
	if err := a.CheckArguments(args); err != nil {
		var ae *policies.ArgumentError
		if errors.As(err, &ae) {
			return cards.Card{}, nil, &refusal{"arguments", fmt.Sprintf("Toolgate refused %s: %s. Nothing ran.", c.Name, describeFields(ae))}
		}
		return cards.Card{}, nil, &refusal{"arguments", fmt.Sprintf("Toolgate refused %s: its arguments are not a JSON object. Nothing ran.", c.Name)}
	}
	var record []byte
	if a.Card.Record != nil {
		u, err := a.Card.Record.Expand(args)
		if err != nil {
			f.g.log.Error("policy error: expanding record url", zap.String("action", c.Name), zap.Error(err))
			return cards.Card{}, nil, &refusal{"policy", fmt.Sprintf("Toolgate refused %s: the gate's policy cannot name its record; nothing ran.", c.Name)}
		}
		resp, err := f.g.cfg.Actions.Fetch(ctx, u, f.person.caller())
		switch {
		case err != nil:
			f.g.log.Error("reading record", zap.String("action", c.Name), zap.Error(err))
			return cards.Card{}, nil, &refusal{"record", fmt.Sprintf("Toolgate refused %s: the record could not be read; nothing ran.", c.Name)}
		case resp.Status == 403:
			return cards.Card{}, nil, &refusal{"forbidden", fmt.Sprintf("Toolgate refused %s: the person may not do this; nothing ran.", c.Name)}
		case resp.Status == 404 || resp.Status == 410:
			return cards.Card{}, nil, &refusal{"not_found", fmt.Sprintf("Toolgate refused %s: the record was not found; nothing ran.", c.Name)}
		case resp.Status < 200 || resp.Status > 299:
			return cards.Card{}, nil, &refusal{"record", fmt.Sprintf("Toolgate refused %s: the record could not be read (HTTP %d); nothing ran.", c.Name, resp.Status)}
		}
		record = resp.Body
	}
	card, err := cards.Build(a.Card, record)
	if err != nil {
		return cards.Card{}, nil, &refusal{"record", fmt.Sprintf("Toolgate refused %s: the record is not JSON; nothing ran.", c.Name)}
	}
	return card, args, nil
}

func (f *Front) refuseAll(calls []interceptor.Call, reason, why string) string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Name
		f.g.cfg.Observer.Refused(c.Name, reason)
	}
	return fmt.Sprintf("Toolgate refused %s: %s; nothing ran.", strings.Join(names, ", "), why)
}

// waitingText is what the app shows in place of the held calls.
func waitingText(waiting []cards.Card, link string, refused []string) string {
	var b strings.Builder
	b.WriteString("Waiting for your confirmation: ")
	for i, c := range waiting {
		if i > 0 {
			b.WriteString(" / ")
		}
		b.WriteString(c.Sentence)
	}
	b.WriteString(" Answer here: ")
	b.WriteString(link)
	for _, r := range refused {
		b.WriteString("\n\n")
		b.WriteString(r)
	}
	return b.String()
}

// describeFields names the fields and their rules, never their values.
func describeFields(e *policies.ArgumentError) string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + " (" + f.Rule + ")"
	}
	return "fields " + strings.Join(parts, ", ")
}
