package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/forms"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// HoldView is one hold as the person's page shows it. It holds nothing
// the model wrote: the card was built from the policy and the record.
type HoldView struct {
	ID      string      `json:"id"`
	Action  string      `json:"action"`
	Kind    store.Kind  `json:"kind"`
	Card    *cards.Card `json:"card,omitempty"`
	Form    *forms.Form `json:"form,omitempty"` // MCP's form-elicitation params, built for the person now
	State   store.State `json:"state"`
	Answer  string      `json:"answer,omitempty"`
	Outcome string      `json:"outcome,omitempty"`
	Expires time.Time   `json:"expires"`
}

// StepView is a step's page: the holds one link leads to.
type StepView struct {
	StepID string     `json:"step"`
	App    string     `json:"app,omitempty"`
	Holds  []HoldView `json:"holds"`
}

// View returns the step for the person answering it, forms built in their
// language (lang is an Accept-Language value). Only the owner may see it:
// anyone else gets ErrNotOwner.
func (g *Gate) View(ctx context.Context, stepID, person, lang string) (StepView, error) {
	holds, err := g.cfg.Store.Step(ctx, stepID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return StepView{}, ErrNotFound
		}
		return StepView{}, err
	}
	if holds[0].Kind == store.KindTicket {
		return StepView{}, ErrNotFound // the record behind an MCP requestState, not a page
	}
	if person == "" || holds[0].Owner != person {
		return StepView{}, ErrNotOwner
	}
	v := StepView{StepID: stepID}
	if p := g.cfg.Policy(holds[0].Policy); p != nil {
		v.App = p.App
	}
	now := g.cfg.Now()
	for _, h := range holds {
		if h.Answer == "refused" {
			continue // refused at hold time: nothing to answer
		}
		hv, err := g.holdView(ctx, h, now, lang)
		if err != nil {
			return StepView{}, err
		}
		v.Holds = append(v.Holds, hv)
	}
	return v, nil
}

// holdView is one hold for the page. A waiting form is built now; one that
// cannot be built shows no form (and cannot be submitted).
func (g *Gate) holdView(ctx context.Context, h store.Hold, now time.Time, lang string) (HoldView, error) {
	hv := HoldView{ID: h.ID, Action: h.Action, Kind: h.Kind, State: h.StateAt(now), Answer: h.Answer, Outcome: h.Outcome, Expires: h.Expires}
	switch h.Kind {
	case store.KindCard:
		hv.Card = new(cards.Card)
		if err := json.Unmarshal(h.Shown, hv.Card); err != nil {
			return HoldView{}, fmt.Errorf("reading card of hold %s: %w", h.ID, err)
		}
	case store.KindForm:
		if hv.State != store.Waiting {
			break // a form is shown only while it waits
		}
		f, _, err := g.formOf(ctx, h, lang)
		if err != nil {
			g.log.Error("building form", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.Error(err))
			break
		}
		hv.Form = &f
	}
	return hv, nil
}

// Answer records the person's answer to one hold of a step — confirm or
// decline for a card, decline or later for a form (a form's submit is
// Submit) — and, when it is the step's last answer, releases the step. Any
// answer other than the first valid one from the owner within the TTL runs
// nothing and returns an error that Status maps to 409.
func (g *Gate) Answer(ctx context.Context, stepID, holdID, person, choice string) (HoldView, error) {
	h, err := g.ownHold(ctx, stepID, holdID, person)
	if err != nil {
		return HoldView{}, err
	}
	switch {
	case h.Kind == store.KindCard && (choice == store.AnswerConfirm || choice == store.AnswerDecline):
	case h.Kind == store.KindForm && (choice == store.AnswerDecline || choice == store.AnswerLater):
	default:
		return HoldView{}, ErrChoice
	}
	return g.claimAndRelease(ctx, h, person, choice, nil)
}

// ownHold reads a hold of a step for its owner.
func (g *Gate) ownHold(ctx context.Context, stepID, holdID, person string) (store.Hold, error) {
	h, err := g.cfg.Store.Get(ctx, holdID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.Hold{}, ErrNotFound
		}
		return store.Hold{}, err
	}
	if h.StepID != stepID || h.Answer == "refused" || h.Kind == store.KindTicket {
		return store.Hold{}, ErrNotFound
	}
	if person == "" || h.Owner != person {
		g.log.Warn("answer refused: not the owner", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("answered_by", person))
		return store.Hold{}, ErrNotOwner
	}
	return h, nil
}

// claimAndRelease claims a hold once for the person's answer and, when it
// completes the step, releases the step.
func (g *Gate) claimAndRelease(ctx context.Context, h store.Hold, person, choice string, values json.RawMessage) (HoldView, error) {
	claimed, err := g.cfg.Store.Claim(ctx, h.ID, store.Answer{Choice: choice, By: person, Values: values})
	if err != nil {
		g.log.Info("answer refused", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("answered_by", person), zap.String("answer", choice), zap.Error(err))
		return HoldView{}, err
	}
	g.cfg.Observer.Decided(h.Action, choice)
	g.log.Info("hold answered", zap.String("hold_id", h.ID), zap.String("step_id", h.StepID), zap.String("action", h.Action),
		zap.String("answered_by", person), zap.String("answer", choice), shownField(h))
	if claimed.Complete {
		g.release(ctx, claimed.Step)
	}
	cur, err := g.cfg.Store.Get(ctx, h.ID)
	if err != nil {
		return HoldView{}, err
	}
	return g.holdView(ctx, cur, g.cfg.Now(), "")
}

// release runs the confirmed holds of a complete step and settles every
// answered one. Each confirmed card is built again first: a record that
// reads differently now runs nothing.
func (g *Gate) release(ctx context.Context, step []store.Hold) {
	for _, h := range step {
		if h.State != store.Answered {
			continue
		}
		var outcome string
		switch {
		case h.Answer == store.AnswerConfirm && h.Protocol == ProtocolMCP:
			// The MCP client's retry runs it (Front.MCP), not the page.
			outcome = OutcomeMCPConfirmed
		case h.Answer == store.AnswerConfirm:
			outcome = g.run(ctx, h)
		case h.Answer == store.AnswerSubmit:
			outcome = g.runForm(ctx, h)
		case h.Kind == store.KindForm:
			outcome = formDeclined(h)
		default:
			outcome = OutcomeDeclined
		}
		if err := g.cfg.Store.Settle(ctx, h.ID, outcome); err != nil {
			g.log.Error("settling hold", zap.String("hold_id", h.ID), zap.Error(err))
			continue
		}
		g.log.Info("hold settled", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("answered_by", h.AnsweredBy), zap.String("outcome", outcome))
	}
}

// run rebuilds the card, compares it, and releases the call as the person.
func (g *Gate) run(ctx context.Context, h store.Hold) string {
	var a *policies.Action
	if p := g.cfg.Policy(h.Policy); p != nil {
		a = p.Action(h.Action)
	}
	if a == nil || a.Card == nil {
		g.log.Error("policy no longer declares the held action", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("policy", h.Policy))
		g.cfg.Observer.Decided(h.Action, "policy_gone")
		return "The gate's policy no longer allows this action; nothing ran."
	}
	if out := g.recheck(ctx, h, a); out != "" {
		return out
	}
	if a.Run.URL == nil {
		return "The gate's policy gives the action no endpoint; nothing ran."
	}
	return g.release1(ctx, h, a, h.Arguments).After(PersonConfirmed)
}

// sameCard reports whether a confirmed hold's card reads as the person saw
// it (recheck finds nothing).
func (g *Gate) sameCard(ctx context.Context, h store.Hold, a *policies.Action) bool {
	return g.recheck(ctx, h, a) == ""
}

// recheck builds a confirmed hold's card again from the record, read as
// the person who answered. It returns "" when it is the card they
// confirmed, else what the model reads: the record changed (a card that
// reads differently), or could not be checked (not found, not allowed,
// unavailable, unreadable), which is not a change.
func (g *Gate) recheck(ctx context.Context, h store.Hold, a *policies.Action) string {
	if a == nil || a.Card == nil {
		return outcomeUnchecked(uncheckedUnreadable)
	}
	var record []byte
	if a.Card.Record != nil {
		body, why := g.readRecord(ctx, h, a.Card.Record)
		if why != "" {
			g.cfg.Observer.Decided(h.Action, "unchecked")
			g.log.Info("card could not be checked", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("why", why))
			return outcomeUnchecked(why)
		}
		record = body
	}
	card, err := cards.Build(a.Card, record)
	if err != nil {
		g.cfg.Observer.Decided(h.Action, "unchecked")
		return outcomeUnchecked(uncheckedUnreadable)
	}
	if card.Fingerprint() != h.Fingerprint {
		g.cfg.Observer.Decided(h.Action, "changed")
		g.log.Info("card changed while waiting", zap.String("hold_id", h.ID), zap.String("action", h.Action))
		return OutcomeChanged
	}
	return ""
}

// readRecord reads the record of a confirmed card as the person who
// answered; why is "" or the reason it could not be read.
func (g *Gate) readRecord(ctx context.Context, h store.Hold, record *policies.Template) (body []byte, why string) {
	u, err := record.Expand(h.Arguments)
	if err != nil {
		g.log.Error("policy error: expanding record url", zap.String("action", h.Action), zap.Error(err))
		return nil, uncheckedDown
	}
	resp, err := g.cfg.Actions.Fetch(ctx, u, actions.Caller{Person: h.AnsweredBy, Tenant: h.Tenant})
	switch {
	case err != nil:
		g.log.Warn("reading record", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.Error(err))
		return nil, uncheckedDown
	case resp.Status == 404 || resp.Status == 410:
		return nil, uncheckedNotFound
	case resp.Status == 401 || resp.Status == 403:
		return nil, uncheckedForbidden
	case resp.Status < 200 || resp.Status > 299:
		return nil, uncheckedDown
	}
	return resp.Body, ""
}

// release1 sends one call to the action's endpoint as the person who
// answered, with the final arguments, and says what came of it.
func (g *Gate) release1(ctx context.Context, h store.Hold, a *policies.Action, args []byte) Ran {
	who := actions.Caller{Person: h.AnsweredBy, Tenant: h.Tenant}
	u, err := a.Run.URL.Expand(args)
	if err != nil {
		g.log.Error("policy error: expanding run url", zap.String("action", h.Action), zap.Error(err))
		return Ran{Text: "the gate's policy cannot name the action's endpoint; nothing ran."}
	}
	start := g.cfg.Now()
	resp, err := g.cfg.Actions.Run(ctx, a.Run.Method, u, a.Run.Headers, args, who, h.ID)
	g.cfg.Observer.Ran(h.Action, resp.Status, g.cfg.Now().Sub(start))
	if err != nil {
		g.log.Error("running action", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.Error(err))
	}
	return runOutcome(a, resp, err)
}

// Status maps an answer-path error to the HTTP status the person's page
// returns: every refused answer is a 409 that ran nothing, a store outage
// 503.
func Status(err error) int {
	switch {
	case err == nil:
		return 200
	case errors.Is(err, ErrNotFound), errors.Is(err, store.ErrNotFound):
		return 404
	case errors.Is(err, ErrChoice):
		return 400
	case errors.Is(err, ErrNotOwner), errors.Is(err, ErrBadToken), errors.Is(err, store.ErrAnswered), errors.Is(err, store.ErrExpired):
		return 409
	case errors.Is(err, store.ErrUnavailable):
		return 503
	}
	return 500
}
