package gate

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/store"
)

// Restore gives back, for a step a request's history links to, the
// original assistant message and a result for each of its held calls. A
// step of another owner, or held on another protocol, restores nothing: a
// link copied into someone else's conversation is inert.
func (f *Front) Restore(ctx context.Context, stepID string, userFollows bool) (interceptor.Restored, bool) {
	g := f.g
	f.Person()
	holds, err := g.cfg.Store.Step(ctx, stepID)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			g.log.Error("reading step for history", zap.String("step_id", stepID), zap.Error(err))
		}
		return interceptor.Restored{}, false
	}
	if holds[0].Owner != f.person.Owner || f.person.Owner == "" || holds[0].Protocol != f.protocol {
		g.log.Warn("link from another conversation ignored", zap.String("step_id", stepID), zap.String("owner", f.person.Owner))
		return interceptor.Restored{}, false
	}
	r := interceptor.Restored{Message: holds[0].Message}
	for _, h := range holds {
		r.Results = append(r.Results, interceptor.Result{CallID: h.CallID, Content: g.outcomeFor(ctx, h, userFollows)})
	}
	return r, true
}

// RestoreState gives back the steps whose calls the provider keeps in the
// response responseID, or (when responseID is "") in the conversation
// conversationID and whose results were not yet given back: a Responses
// API request that continues from them carries no link.
func (f *Front) RestoreState(ctx context.Context, responseID, conversationID string, userFollows bool) []interceptor.Restored {
	f.Person()
	key := responseKey(f.person.Owner, responseID)
	conv := false
	if key == "" {
		key, conv = conversationKey(f.person.Owner, conversationID), true
	}
	if key == "" || f.person.Owner == "" {
		return nil
	}
	steps, err := f.g.cfg.Store.Indexed(ctx, key)
	if err != nil {
		f.g.log.Error("reading steps of a stored response", zap.Error(err))
		return nil
	}
	var out []interceptor.Restored
	for _, step := range steps {
		r, ok := f.Restore(ctx, step, userFollows)
		if !ok {
			continue
		}
		out = append(out, r)
		if conv {
			// Given back once: the conversation keeps the results now.
			if err := f.g.cfg.Store.Unindex(ctx, key, step); err != nil {
				f.g.log.Error("unindexing step", zap.String("step_id", step), zap.Error(err))
			}
		}
	}
	return out
}

// outcomeFor settles what can be settled now (an expired hold; a waiting
// one the person moved on from) and returns what the model reads.
func (g *Gate) outcomeFor(ctx context.Context, h store.Hold, userFollows bool) string {
	switch h.StateAt(g.cfg.Now()) {
	case store.Settled:
		return h.Outcome
	case store.Answered:
		return OutcomeRunning
	case store.Expired:
		return g.settleUnanswered(ctx, h, store.AnswerTimedOut, OutcomeExpired)
	case store.Waiting:
		if !userFollows {
			return OutcomeWaiting
		}
		return g.settleUnanswered(ctx, h, store.AnswerMovedOn, OutcomeMovedOn)
	}
	return OutcomeWaiting
}

// settleUnanswered claims a hold for the gate itself, so a late press of
// the person's button loses (409), and records the outcome. If the person
// won the race, their outcome stands.
func (g *Gate) settleUnanswered(ctx context.Context, h store.Hold, choice, outcome string) string {
	_, err := g.cfg.Store.Claim(ctx, h.ID, store.Answer{Choice: choice, AllowExpired: true})
	if err != nil {
		if cur, gerr := g.cfg.Store.Get(ctx, h.ID); gerr == nil && cur.State == store.Settled {
			return cur.Outcome
		}
		if errors.Is(err, store.ErrAnswered) {
			return OutcomeRunning
		}
		g.log.Error("settling unanswered hold", zap.String("hold_id", h.ID), zap.Error(err))
		return outcome
	}
	if err := g.cfg.Store.Settle(ctx, h.ID, outcome); err != nil {
		g.log.Error("settling unanswered hold", zap.String("hold_id", h.ID), zap.Error(err))
	}
	g.cfg.Observer.Decided(h.Action, choice)
	g.log.Info("hold settled", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("owner", h.Owner), zap.String("answer", choice))
	return outcome
}
