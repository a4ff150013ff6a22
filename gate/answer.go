package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// HoldView is one hold as the person's page shows it. It holds nothing
// the model wrote: the card was built from the policy and the record.
type HoldView struct {
	ID      string      `json:"id"`
	Action  string      `json:"action"`
	Kind    store.Kind  `json:"kind"`
	Card    cards.Card  `json:"card"`
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

// View returns the step for the person answering it. Only the owner may
// see it: anyone else gets ErrNotOwner.
func (g *Gate) View(ctx context.Context, stepID, person string) (StepView, error) {
	holds, err := g.cfg.Store.Step(ctx, stepID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return StepView{}, ErrNotFound
		}
		return StepView{}, err
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
		hv := HoldView{ID: h.ID, Action: h.Action, Kind: h.Kind, State: h.StateAt(now), Answer: h.Answer, Outcome: h.Outcome, Expires: h.Expires}
		if err := json.Unmarshal(h.Shown, &hv.Card); err != nil {
			return StepView{}, fmt.Errorf("reading card of hold %s: %w", h.ID, err)
		}
		v.Holds = append(v.Holds, hv)
	}
	return v, nil
}

// Answer records the person's answer to one hold of a step and, when it is
// the step's last answer, releases the step. Any answer other than the
// first valid one from the owner within the TTL runs nothing and returns
// an error that Status maps to 409.
func (g *Gate) Answer(ctx context.Context, stepID, holdID, person, choice string) (HoldView, error) {
	if choice != store.AnswerConfirm && choice != store.AnswerDecline {
		return HoldView{}, ErrChoice
	}
	h, err := g.cfg.Store.Get(ctx, holdID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return HoldView{}, ErrNotFound
		}
		return HoldView{}, err
	}
	if h.StepID != stepID {
		return HoldView{}, ErrNotFound
	}
	if person == "" || h.Owner != person {
		g.log.Warn("answer refused: not the owner", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("answered_by", person))
		return HoldView{}, ErrNotOwner
	}
	claimed, err := g.cfg.Store.Claim(ctx, holdID, store.Answer{Choice: choice, By: person})
	if err != nil {
		g.log.Info("answer refused", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("answered_by", person), zap.String("answer", choice), zap.Error(err))
		return HoldView{}, err
	}
	g.cfg.Observer.Decided(h.Action, choice)
	g.log.Info("hold answered", zap.String("hold_id", h.ID), zap.String("step_id", h.StepID), zap.String("action", h.Action),
		zap.String("answered_by", person), zap.String("answer", choice), zap.Any("card", json.RawMessage(h.Shown)))
	if claimed.Complete {
		g.release(ctx, claimed.Step)
	}
	cur, err := g.cfg.Store.Get(ctx, holdID)
	if err != nil {
		return HoldView{}, err
	}
	hv := HoldView{ID: cur.ID, Action: cur.Action, Kind: cur.Kind, State: cur.State, Answer: cur.Answer, Outcome: cur.Outcome, Expires: cur.Expires}
	_ = json.Unmarshal(cur.Shown, &hv.Card)
	return hv, nil
}

// release runs the confirmed holds of a complete step and settles every
// answered one. Each confirmed card is built again first: a record that
// reads differently now runs nothing.
func (g *Gate) release(ctx context.Context, step []store.Hold) {
	for _, h := range step {
		if h.State != store.Answered {
			continue
		}
		outcome := OutcomeDeclined
		if h.Answer == store.AnswerConfirm {
			outcome = g.run(ctx, h)
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
	who := actions.Caller{Person: h.AnsweredBy, Tenant: h.Tenant}
	var record []byte
	if a.Card.Record != nil {
		u, err := a.Card.Record.Expand(h.Arguments)
		if err != nil {
			return OutcomeChanged
		}
		resp, err := g.cfg.Actions.Fetch(ctx, u, who)
		if err != nil || resp.Status < 200 || resp.Status > 299 {
			g.cfg.Observer.Decided(h.Action, "changed")
			return OutcomeChanged
		}
		record = resp.Body
	}
	card, err := cards.Build(a.Card, record)
	if err != nil || card.Fingerprint() != h.Fingerprint {
		g.cfg.Observer.Decided(h.Action, "changed")
		g.log.Info("card changed while waiting", zap.String("hold_id", h.ID), zap.String("action", h.Action))
		return OutcomeChanged
	}
	u, err := a.Run.URL.Expand(h.Arguments)
	if err != nil {
		g.log.Error("policy error: expanding run url", zap.String("action", h.Action), zap.Error(err))
		return "The gate's policy cannot name the action's endpoint; nothing ran."
	}
	start := g.cfg.Now()
	resp, err := g.cfg.Actions.Run(ctx, a.Run.Method, u, a.Run.Headers, h.Arguments, who, h.ID)
	g.cfg.Observer.Ran(h.Action, resp.Status, g.cfg.Now().Sub(start))
	if err != nil {
		g.log.Error("running action", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.Error(err))
	}
	return runOutcome(a, resp, err)
}

// ruleWord is what a 422 body may say of a field and still reach the
// model: a rule's name and short parameters ("required", "max:200"), never
// a sentence, which could carry the person's value.
var ruleWord = regexp.MustCompile(`^[a-z_]{1,30}(:[A-Za-z0-9_,.\-]{1,40})?$`)

// runOutcome maps the endpoint's answer to what the model reads
// (DESIGN.md, "Releasing the call").
func runOutcome(a *policies.Action, resp actions.Response, err error) string {
	switch {
	case err != nil:
		return "The person confirmed, but the action failed: it did not answer in time. It may not have run."
	case resp.Status >= 200 && resp.Status <= 299:
		if a.Effect == policies.Read && len(resp.Body) > 0 {
			return "The person confirmed. " + cards.Clean(string(resp.Body), 4000)
		}
		reply := a.Reply
		if reply == "" {
			reply = "Done."
		}
		return "The person confirmed. " + reply
	case resp.Status == 422:
		return "The person confirmed, but the app refused the arguments" + refusedFields(resp.Body) + "; nothing ran."
	case resp.Status == 403 || resp.Status == 404:
		return fmt.Sprintf("The person confirmed, but the app refused the action (HTTP %d); nothing ran.", resp.Status)
	case resp.Status >= 500:
		return fmt.Sprintf("The person confirmed, but the action failed (HTTP %d).", resp.Status)
	default:
		return fmt.Sprintf("The person confirmed, but the app refused the action (HTTP %d); nothing ran.", resp.Status)
	}
}

// refusedFields reads {"errors": {"field": ["rule", ...]}} and names the
// fields with the rules that are rule words.
func refusedFields(body []byte) string {
	if !gjson.ValidBytes(body) {
		return ""
	}
	var parts []string
	gjson.GetBytes(body, "errors").ForEach(func(k, v gjson.Result) bool {
		field := cards.Clean(k.String(), 60)
		var rules []string
		v.ForEach(func(_, r gjson.Result) bool {
			if ruleWord.MatchString(r.String()) {
				rules = append(rules, r.String())
			}
			return true
		})
		if len(rules) > 0 {
			field += " (" + strings.Join(rules, ", ") + ")"
		}
		parts = append(parts, field)
		return len(parts) < 20
	})
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return ": " + strings.Join(parts, "; ")
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
