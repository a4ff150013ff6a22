package gate

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// The release path: from a complete step (every hold answered) to every
// answered hold settled. Its invariants, which hold whatever fails:
//
//  1. An action is sent only by the caller that won store.Begin for its
//     hold, so at most once across goroutines, sweeps and restarts; the
//     actions client never repeats a request (actions.Client.Run).
//  2. Begin comes after the card's re-check and right before the send: a
//     Running hold is one whose request may have reached the app; an
//     Answered one never left.
//  3. Every Begin is followed by a Settle with what came of it, on a
//     context of its own (the run's may have run out). A hold a crash
//     leaves Running is settled as unknown by the sweeper, never run
//     again; one left Answered in a complete step is released by it,
//     through Begin.
//  4. A release runs detached from whoever started it (a person's page
//     request, a model request, the sweeper): closing the browser tab does
//     not cut it. Each request to the app is bounded by the actions
//     client's timeout; the gate's Stop waits for releases in flight and
//     only then cancels them.

// settleTimeout bounds one Settle with its retries.
const settleTimeout = 10 * time.Second

// releaseStep releases the answered holds of a complete step in Position
// order, detached from ctx's cancellation (its values are kept). The
// returned channel is closed when it is done. When the gate is stopping,
// nothing starts: the holds stay Answered for the sweeper.
func (g *Gate) releaseStep(ctx context.Context, step []store.Hold) <-chan struct{} {
	done := make(chan struct{})
	if !g.track.add() {
		g.log.Warn("gate stopping: release left for the sweeper", zap.String("step_id", step[0].StepID))
		close(done)
		return done
	}
	go func() {
		defer close(done)
		defer g.track.done()
		rctx, cancel := g.detached(ctx)
		defer cancel()
		for _, h := range step {
			if rctx.Err() != nil {
				return // the gate stopped: what is left stays Answered for the sweeper
			}
			if h.State == store.Answered {
				g.releaseHold(rctx, h)
			}
		}
	}()
	return done
}

// wait waits for done or for ctx, whichever comes first.
func wait(ctx context.Context, done <-chan struct{}) {
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// detached is ctx without its cancellation, cancelled instead when the
// gate stops.
func (g *Gate) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(g.life, cancel)
	return c, func() { stop(); cancel() }
}

// releaseHold brings one answered hold to Settled: it runs the call when
// the answer asks for it and records the outcome, with the audit's record
// of the app's answer (one durable write for both). When another caller
// won Begin, or the store failed before the send, it leaves the hold
// alone.
func (g *Gate) releaseHold(ctx context.Context, h store.Hold) {
	var outcome Outcome
	var reply string
	var released []store.Event
	ok := true
	moved := g.policyMoved(h) // gate/policyversion.go
	switch {
	case h.Kind == store.KindTicket:
		outcome = Outcome{Kind: outcomeUsed}
	case h.Answer == store.AnswerFollowed:
		// An attached call: its card's primary ran (or not), never this.
		outcome, ok = g.followedOutcome(ctx, h)
	case moved.Kind != "":
		outcome = moved
	case h.Answer == store.AnswerConfirm && h.Protocol == ProtocolMCP:
		// The MCP client's retry runs it (Front.MCP), not the page: the
		// person's corrections are kept sealed for it (edit.go).
		outcome, reply = g.mcpConfirmed(h)
	case h.Answer == store.AnswerConfirm:
		outcome, reply, released, ok = g.runCard(ctx, h)
	case h.Answer == store.AnswerSubmit:
		outcome, reply, released, ok = g.runForm(ctx, h)
	default:
		outcome = unansweredOutcome(h)
		if note := g.declinedNote(h); note != "" && outcome.Kind == ResultDeclined {
			outcome.Note, reply = noteGiven, note // note.go: the model reads it once
		}
	}
	if ok {
		g.settleWithReply(ctx, h, outcome, reply, released...)
	}
}

// mcpConfirmed is the outcome of a card confirmed on the page for an
// MCP client, and what it keeps for the client's retry: the person's
// corrections, sealed as the hold's reply (settleWithReply seals it; the
// retry reads it with editOf and drops it once used).
func (g *Gate) mcpConfirmed(h store.Hold) (Outcome, string) {
	e, ok, err := g.editOf(h)
	if err != nil {
		g.log.Error("reading the person's edits", zap.String("hold_id", h.ID), zap.Error(err))
		return Outcome{Kind: ResultNotRun, Why: notRunAnswerLost}, ""
	}
	if !ok {
		return Outcome{Kind: ResultConfirmedMCP}, ""
	}
	kept, _ := json.Marshal(e)
	return Outcome{Kind: ResultConfirmedMCP, Changed: e.Changed}, string(kept)
}

// unansweredOutcome is the outcome of a hold answered without a run.
func unansweredOutcome(h store.Hold) Outcome {
	switch {
	case h.Answer == store.AnswerMovedOn:
		return Outcome{Kind: ResultMovedOn}
	case h.Answer == store.AnswerTimedOut:
		return Outcome{Kind: ResultExpired}
	case h.Answer == store.AnswerWithdrawn:
		return Outcome{Kind: outcomeWithdrawn}
	case h.Kind == store.KindForm:
		return formDeclined(h)
	}
	return Outcome{Kind: ResultDeclined}
}

// runCard rebuilds a confirmed card, compares it, and releases the call as
// the person. reply, released and ok are as for send.
func (g *Gate) runCard(ctx context.Context, h store.Hold) (outcome Outcome, reply string, released []store.Event, ok bool) {
	a := g.action(h)
	if a == nil || a.Card == nil {
		g.log.Error("policy no longer declares the held action", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("policy", h.Policy))
		g.cfg.Observer.Decided(h.Action, "policy_gone")
		return Outcome{Kind: ResultNotRun, Why: notRunPolicyGone}, "", nil, true
	}
	args, print := h.Arguments, h.Fingerprint
	e, edited, err := g.editOf(h)
	if err != nil {
		g.log.Error("reading the person's edits", zap.String("hold_id", h.ID), zap.Error(err))
		return Outcome{Kind: ResultNotRun, Why: notRunAnswerLost}, "", nil, true
	}
	if edited {
		args, print = e.Args, e.Print // exactly what the person confirmed
	}
	if out := g.recheckWith(ctx, h, a, args, print); out.Kind != "" {
		out.Changed = e.Changed
		return out, "", nil, true
	}
	if a.Run.URL == nil {
		return Outcome{Kind: ResultNotRun, Why: notRunNoEndpoint}, "", nil, true
	}
	outcome, reply, released, ok = g.send(ctx, h, a, args)
	outcome.Person, outcome.Changed = personConfirmed, e.Changed
	return outcome, reply, released, ok
}

// action is the policy's action of a hold as the policy reads now, or nil.
func (g *Gate) action(h store.Hold) *policies.Action {
	if p := g.cfg.Policy(h.Policy); p != nil {
		return p.Action(h.Action)
	}
	return nil
}

// recheckWith builds a confirmed hold's card again from the record, read as
// the person who answered. It returns no outcome (Kind "") when it is the
// card they confirmed, else the outcome: the record changed (a card that
// reads differently), or could not be checked (not found, not allowed,
// unavailable, unreadable), which is not a change.
//
// args are the arguments that are to run and print the fingerprint of the
// card the person confirmed: the hold's own, or after corrections the
// card built from them (edit.go).
func (g *Gate) recheckWith(ctx context.Context, h store.Hold, a *policies.Action, args []byte, print string) Outcome {
	if a == nil || a.Card == nil {
		return uncheckedOutcome(uncheckedUnreadable)
	}
	var record []byte
	if a.Card.Record != nil {
		body, why := g.readRecord(ctx, h, a.Card.Record, args)
		if why != "" {
			g.cfg.Observer.Decided(h.Action, "unchecked")
			g.log.Info("card could not be checked", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("why", why))
			return uncheckedOutcome(why)
		}
		record = body
	}
	card, err := cards.Build(a.Card, record, args)
	if err != nil {
		g.cfg.Observer.Decided(h.Action, "unchecked")
		return uncheckedOutcome(uncheckedUnreadable)
	}
	if card.Fingerprint() != print {
		g.cfg.Observer.Decided(h.Action, "changed")
		g.log.Info("card changed while waiting", zap.String("hold_id", h.ID), zap.String("action", h.Action))
		return Outcome{Kind: ResultChanged}
	}
	// The rules again, on the record as read now: a decision that differs
	// from the one the card was held under runs nothing (rules.go).
	return g.recheckRules(h, a, args, record)
}

// readRecord reads the record of a confirmed card as the person who
// answered; why is "" or the reason it could not be read.
func (g *Gate) readRecord(ctx context.Context, h store.Hold, record *policies.Template, args []byte) (body []byte, why string) {
	u, err := record.Expand(args)
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

// send releases one call: it wins Begin first, so that it alone sends it.
// ok is false when it did not (another caller won, the store failed, the
// gate is stopping): nothing was sent and nothing is to be recorded.
// released is the audit's record of the app's answer, for settle to
// append with the outcome. The outcome's person part is the caller's;
// reply is a read's body (runOutcome).
func (g *Gate) send(ctx context.Context, h store.Hold, a *policies.Action, args []byte) (outcome Outcome, reply string, released []store.Event, ok bool) {
	u, err := a.Run.URL.Expand(args)
	if err != nil {
		g.log.Error("policy error: expanding run url", zap.String("action", h.Action), zap.Error(err))
		return Outcome{Kind: ResultNotRun, Why: notRunPolicyURL}, "", nil, true
	}
	if ctx.Err() != nil {
		return Outcome{}, "", nil, false
	}
	if _, err := g.cfg.Store.Begin(ctx, h.ID); err != nil {
		if !errors.Is(err, store.ErrAnswered) {
			g.log.Error("beginning release; left for the sweeper", zap.String("hold_id", h.ID), zap.Error(err))
		}
		return Outcome{}, "", nil, false
	}
	who := actions.Caller{Person: h.AnsweredBy, Tenant: h.Tenant}
	start := g.cfg.Now()
	resp, err := g.cfg.Actions.Run(ctx, a.Run.Method, u, a.Run.Headers, args, who, h.ID)
	g.cfg.Observer.Ran(h.Action, resp.Status, g.cfg.Now().Sub(start))
	released = []store.Event{releasedEvent(h, a, resp, err, g.cfg.Now().Sub(start))}
	if err != nil {
		g.log.Error("running action", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.Error(err))
	}
	outcome, reply = runOutcome(a, resp, err)
	return outcome, reply, released, true
}

// settle records a hold's outcome, on a context of its own (the release's
// may have run out), retrying a store outage briefly, and appends events
// (a release's) in the same transaction. If another outcome was recorded
// first, that one stands. If it cannot be recorded, the sweeper settles
// the hold later (as unknown when it had begun), and events are appended
// on their own: the audit keeps what the app answered whatever became of
// the outcome.
func (g *Gate) settle(ctx context.Context, h store.Hold, o Outcome, events ...store.Event) {
	g.settleWithReply(ctx, h, o, "", events...)
}

// settleWithReply is settle that keeps reply, a read's body the model is
// to read, sealed with the outcome (seal.go); it is dropped once the model
// has read it (Gate.replyRead).
func (g *Gate) settleWithReply(ctx context.Context, h store.Hold, o Outcome, reply string, events ...store.Event) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	outcome := o.encode()
	var sealed []byte
	if reply != "" {
		var err error
		if sealed, err = g.seal(sealReply, h.ID, []byte(reply)); err != nil {
			// The model reads replyGone: the body is not kept unsealed.
			g.log.Error("sealing a read's reply", zap.String("hold_id", h.ID), zap.Error(err))
		}
	}
	backoff := 50 * time.Millisecond
	for {
		var err error
		if sealed != nil {
			err = g.cfg.Store.SettleWithReply(ctx, h.ID, outcome, sealed, events...)
		} else {
			err = g.cfg.Store.Settle(ctx, h.ID, outcome, events...)
		}
		if err != nil && !errors.Is(err, store.ErrUnavailable) {
			g.audit(events...) // not settled by this call: nothing was appended
		}
		switch {
		case err == nil:
			g.log.Info("hold settled", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("answer", h.Answer),
				zap.String("answered_by", h.AnsweredBy), zap.String("outcome", outcome))
			g.wake.notify(h.StepID) // a stream waiting for the step reads it again
			g.notifySettled(h, outcome)
			h.State, h.Outcome = store.Settled, outcome
			g.follow(ctx, h) // the calls attached to its card read the same (intent.go)
			return
		case errors.Is(err, store.ErrAnswered):
			g.log.Info("hold already settled", zap.String("hold_id", h.ID), zap.String("action", h.Action))
			return
		case !errors.Is(err, store.ErrUnavailable):
			g.log.Error("settling hold", zap.String("hold_id", h.ID), zap.Error(err))
			return
		}
		select {
		case <-ctx.Done():
			g.log.Error("settling hold: store unavailable; left for the sweeper", zap.String("hold_id", h.ID), zap.Error(err))
			g.audit(events...)
			return
		case <-g.life.Done():
			g.log.Error("settling hold: the gate stopped; left for the sweeper", zap.String("hold_id", h.ID), zap.Error(err))
			g.audit(events...)
			return
		case <-time.After(backoff):
			backoff *= 2
		}
	}
}
