package gate

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/store"
)

// ErrNotWithdrawable: the hold is an MCP ticket (the client's retry
// redeems it, no person answers it) or a call refused when it was held.
var ErrNotWithdrawable = errors.New("not a hold a person answers")

// Withdraw ends a waiting hold for an operator (the admin API): it is
// claimed as withdrawn by by, in the same single-winner claim a person's
// answer takes (so a person who answers at the same moment either wins and
// their answer stands, or gets 409), and settled at once with
// OutcomeWithdrawn, which the model reads on its next request. When that
// completes its step, the step's other answered holds are released as
// they would have been by the last answer. It returns the hold as now
// stored.
//
// Errors: store.ErrNotFound, store.ErrAnswered (no longer waiting),
// store.ErrExpired (its TTL passed: it already reads as expired),
// ErrNotWithdrawable, or the store's.
func (g *Gate) Withdraw(ctx context.Context, holdID, by string) (store.Hold, error) {
	h, err := g.cfg.Store.Get(ctx, holdID)
	if err != nil {
		return store.Hold{}, err
	}
	if h.Kind == store.KindTicket || h.Answer == "refused" {
		return store.Hold{}, ErrNotWithdrawable
	}
	claimed, err := g.cfg.Store.Claim(ctx, h.ID, store.Answer{Choice: store.AnswerWithdrawn, By: by})
	if err != nil {
		g.log.Info("withdrawal refused", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("by", by), zap.Error(err))
		return store.Hold{}, err
	}
	g.cfg.Observer.Decided(h.Action, store.AnswerWithdrawn)
	g.log.Info("hold withdrawn by an operator", zap.String("hold_id", h.ID), zap.String("step_id", h.StepID),
		zap.String("action", h.Action), zap.String("owner", h.Owner), zap.String("tenant", h.Tenant), zap.String("by", by))
	if claimed.Complete {
		wait(ctx, g.releaseStep(ctx, claimed.Step))
	} else {
		g.settle(ctx, claimed.Hold, Outcome{Kind: outcomeWithdrawn})
	}
	return g.cfg.Store.Get(ctx, h.ID)
}
