package gate

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/store"
)

// sweepPage is how many open holds one Unsettled call lists.
const sweepPage = 500

// Sweep finds what a crash, a stop or a store outage left open and ends
// it with an honest outcome, never running anything twice. It is run once
// at start-up and then periodically (the toolgate app's sweep_interval).
// For each step with an answer in it:
//
//   - Running, begun longer ago than the action timeout plus SweepGrace:
//     the release was cut (a crash mid-run). Settled as unknown ("it may
//     or may not have run; nothing was retried"), never sent again.
//   - Waiting past its TTL, beside answered holds: claimed as timed out,
//     so the step completes and its answered holds are released.
//   - Answered, in a complete step whose last answer is older than a
//     release takes: the release never began (a crash between the answer
//     and the send). Released now, through Begin (so never twice) and
//     with the card's re-check.
//   - An MCP ticket redeemed but not settled: settled as used.
//
// Steps where nobody answered are left alone: their holds read as expired
// on their own, and the model's next request settles them. Sweep waits for
// the releases it starts, or for ctx.
//
// afterOpen says the store was just opened by this process and is shared
// with no other (embedded Badger, whose directory lock is exclusive): no
// release can be in flight, so Running holds were cut and Answered ones
// never began, and both are ended now instead of after the time a
// release may take. A shared backend's sweeps pass false.
func (g *Gate) Sweep(ctx context.Context, afterOpen bool) error {
	steps, err := g.openSteps(ctx)
	if err != nil {
		return err
	}
	for _, id := range steps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		g.sweepStep(ctx, id, afterOpen)
	}
	return nil
}

// openSteps lists the steps with a hold answered or running, in the order
// the store lists their holds.
func (g *Gate) openSteps(ctx context.Context) ([]string, error) {
	var steps []string
	seen := map[string]bool{}
	after := ""
	for {
		page, err := g.cfg.Store.Unsettled(ctx, after, sweepPage)
		if err != nil {
			return nil, err
		}
		for _, h := range page {
			if (h.State == store.Answered || h.State == store.Running) && !seen[h.StepID] {
				seen[h.StepID] = true
				steps = append(steps, h.StepID)
			}
		}
		if len(page) < sweepPage {
			return steps, nil
		}
		after = page[len(page)-1].ID
	}
}

// sweepStep ends what is left open in one step (see Sweep).
func (g *Gate) sweepStep(ctx context.Context, stepID string, afterOpen bool) {
	holds, err := g.cfg.Store.Step(ctx, stepID)
	if err != nil {
		g.log.Error("sweeping step", zap.String("step_id", stepID), zap.Error(err))
		return
	}
	now := g.cfg.Now()
	stale := func(since time.Time, takes time.Duration) bool { return afterOpen || now.After(since.Add(takes)) }
	for _, h := range holds {
		if h.State == store.Running && stale(h.StartedAt, g.cfg.ActionTimeout+g.cfg.SweepGrace) {
			g.log.Warn("sweeper: release cut before its outcome was recorded", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.Time("started", h.StartedAt))
			g.cfg.Observer.Decided(h.Action, "lost")
			g.settle(ctx, h, g.withPerson(h, Outcome{Kind: ResultUnknown, Why: UnknownLost}))
		}
	}
	expired := false
	for _, h := range holds {
		if h.StateAt(now) == store.Expired {
			// The claim that completes the step releases it.
			expired = g.settleUnanswered(ctx, h, store.AnswerTimedOut) || expired
		}
	}
	if expired {
		return // released with the last claim, or still waiting for others
	}
	if !complete(holds) || !stale(lastAnswer(holds), g.releaseTakes(len(holds))) {
		return
	}
	for _, h := range holds {
		if h.State == store.Answered {
			g.log.Warn("sweeper: releasing an answered step that never ran", zap.String("step_id", stepID))
			wait(ctx, g.releaseStep(ctx, holds))
			return
		}
	}
}

// lastAnswer is when the last hold of a step was answered.
func lastAnswer(step []store.Hold) time.Time {
	var t time.Time
	for _, h := range step {
		if h.AnsweredAt.After(t) {
			t = h.AnsweredAt
		}
	}
	return t
}

// releaseTakes bounds how long the live release of a step of n holds may
// take (a record read and a send each, one after the other), plus the
// sweeper's grace: a step answered longer ago than this is not being
// released by anyone.
func (g *Gate) releaseTakes(n int) time.Duration {
	return time.Duration(2*n)*g.cfg.ActionTimeout + g.cfg.SweepGrace
}
