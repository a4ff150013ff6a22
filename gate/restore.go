package gate

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// Restore gives back, for a step a request's history links to, the
// original assistant message and a result for each of its held calls. A
// step of another person (another owner, or the same owner id in another
// tenant), or held on another protocol, restores nothing: a link copied
// into someone else's conversation is inert.
func (f *Front) Restore(ctx context.Context, stepID string, userFollows bool) (provider.Restored, bool) {
	g := f.g
	f.Person()
	holds, err := g.cfg.Store.Step(ctx, stepID)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			g.log.Error("reading step for history", zap.String("step_id", stepID), zap.Error(err))
		}
		return provider.Restored{}, false
	}
	if !f.person.owns(holds[0]) || holds[0].Protocol != f.protocol {
		g.log.Warn("link from another conversation ignored", zap.String("step_id", stepID), zap.String("owner", f.person.Owner), zap.String("tenant", f.person.Tenant))
		return provider.Restored{}, false
	}
	if g.settleOpen(ctx, holds, userFollows) {
		if now, err := g.cfg.Store.Step(ctx, stepID); err == nil {
			holds = now
		}
	}
	r := provider.Restored{Message: holds[0].Message}
	for _, h := range holds {
		r.Results = append(r.Results, provider.Result{CallID: h.CallID, Content: g.outcomeFor(h, holds)})
	}
	g.replyRead(ctx, holds) // outcometext.go: a read's reply is given once
	return r, true
}

// RestoreState gives back the steps whose calls the provider keeps in the
// response responseID, or (when responseID is "") in the conversation
// conversationID and whose results were not yet given back: a Responses
// API request that continues from them carries no link.
func (f *Front) RestoreState(ctx context.Context, responseID, conversationID string, userFollows bool) []provider.Restored {
	f.Person()
	key := responseKey(f.person, responseID)
	conv := false
	if key == "" {
		key, conv = conversationKey(f.person, conversationID), true
	}
	if key == "" || f.person.Owner == "" {
		return nil
	}
	steps, err := f.g.cfg.Store.Indexed(ctx, key)
	if err != nil {
		f.g.log.Error("reading steps of a stored response", zap.Error(err))
		return nil
	}
	var out []provider.Restored
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

// settleOpen settles what the model's request settles: a waiting hold past
// its TTL, and (when the person wrote on) one still waiting. When that
// completes the step, the step's answered holds are released now and the
// request waits for them, so the model reads what ran. It reports whether
// it changed anything.
func (g *Gate) settleOpen(ctx context.Context, holds []store.Hold, userFollows bool) bool {
	now := g.cfg.Now()
	changed := false
	for _, h := range holds {
		switch st := h.StateAt(now); {
		case h.State == store.Answered && h.Answer == store.AnswerFollowed:
			// An attached call whose primary's outcome did not reach it
			// when it was recorded: it reads it now.
			if out, ok := g.followedOutcome(ctx, h); ok {
				g.settle(ctx, h, out)
				changed = true
			}
		case g.followIfDecided(ctx, h):
			// An attached call whose card the person answered: it reads
			// that answer, whatever its own conversation did since.
			changed = true
		case st == store.Expired:
			changed = g.settleUnanswered(ctx, h, store.AnswerTimedOut) || changed
		case st == store.Waiting && userFollows:
			changed = g.settleUnanswered(ctx, h, store.AnswerMovedOn) || changed
		}
	}
	return changed
}

// settleUnanswered claims a hold for the gate itself, so a late press of
// the person's button loses (409). If that completes the step, the step is
// released (its other holds were answered: they run now) and this one is
// settled with it; otherwise it is settled at once. If the person won the
// race, their answer stands. It reports whether the hold is no longer
// waiting (claimed here or by someone else); false when the store failed.
func (g *Gate) settleUnanswered(ctx context.Context, h store.Hold, choice string) bool {
	if g.followIfDecided(ctx, h) {
		return true // an attached call whose card the person answered reads that answer
	}
	ans := store.Answer{Choice: choice, AllowExpired: true}
	ev := answeredEvent(h.ID, ans)
	if choice == store.AnswerTimedOut {
		ev.At = h.Expires // when it happened, not when a request or the sweeper noticed
	}
	claimed, err := g.cfg.Store.Claim(ctx, h.ID, ans, ev)
	if err != nil {
		if !errors.Is(err, store.ErrAnswered) {
			g.log.Error("settling unanswered hold", zap.String("hold_id", h.ID), zap.Error(err))
		}
		return errors.Is(err, store.ErrAnswered)
	}
	g.cfg.Observer.Decided(h.Action, choice)
	if claimed.Complete {
		wait(ctx, g.releaseStep(ctx, claimed.Step))
		return true
	}
	g.settle(ctx, claimed.Hold, unansweredOutcome(claimed.Hold))
	return true
}

// outcomeFor is what the model reads of a hold of step as stored now.
func (g *Gate) outcomeFor(h store.Hold, step []store.Hold) string {
	switch h.StateAt(g.cfg.Now()) {
	case store.Settled:
		return g.outcomeText(h) // outcometext.go
	case store.Running:
		return OutcomeRunning
	case store.Answered:
		switch {
		case h.Answer == store.AnswerFollowed:
			return OutcomeRunning // settled with its card's outcome as soon as that has one
		case h.Answer != store.AnswerConfirm && h.Answer != store.AnswerSubmit:
			return unansweredOutcome(h).sentence("") // settled with this text when the step is released
		case complete(step):
			return OutcomeRunning
		}
		return OutcomeAnswered
	case store.Expired:
		return OutcomeExpired
	}
	return OutcomeWaiting // still waiting: the store refused the settlement
}

// complete reports whether every hold of a step has been answered.
func complete(step []store.Hold) bool {
	for _, h := range step {
		if h.State == store.Waiting {
			return false
		}
	}
	return true
}
