package gate

import (
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// A hold records the versions of its policy and of its action
// (stampVersions). A policy may be reloaded while a person is still
// looking at a card or a form; what they answer was asked under the old
// one. Before a confirmed or submitted hold runs, the gate reads the
// policy as it is now: under the same version, or with the action's own
// version unchanged (only other actions, or its words, were edited), it
// goes on. An action that is gone, or whose effect, card, endpoint,
// schema or forms changed, runs nothing: the gate does not judge whether
// the change made it looser or stricter, and the person's answer was to
// a question the policy no longer asks. The person's page and the model
// both read that the policy changed.

// What the model reads when a hold's policy changed before it ran.
const (
	outcomePolicyDropped = "The gate's policy was changed after the person was asked and no longer declares this action; nothing ran."
	outcomePolicyChanged = "The gate's policy for this action was changed after the person was asked; nothing ran. Call it again to ask the person under the current policy."
)

// stampVersions records in h the versions of p and of h's action in it.
func stampVersions(h *store.Hold, p *policies.Policy) {
	h.PolicyVersion = p.Version()
	h.ActionVersion = p.Action(h.Action).Version()
}

// policyMoved returns the outcome of an answered hold that may not run
// because its policy changed since it was made; none (Kind "") when it
// may go on: an answer that runs nothing, the same policy version, an
// unchanged action, or a hold made before versions were recorded.
func (g *Gate) policyMoved(h store.Hold) Outcome {
	if h.Kind == store.KindTicket || h.Answer != store.AnswerConfirm && h.Answer != store.AnswerSubmit {
		return Outcome{}
	}
	return g.versionsMoved(h)
}

// versionsMoved is policyMoved's comparison on its own: the outcome when
// the action h was made under is gone from h's policy as it reads now, or
// changed since; none when it may go on (the same policy
// version, an unchanged action, or no versions recorded). The MCP front
// asks it of the ticket behind a requestState, whose answer comes with
// the client's retry rather than on the hold (mcp.go).
func (g *Gate) versionsMoved(h store.Hold) Outcome {
	if h.PolicyVersion == "" {
		return Outcome{}
	}
	p := g.cfg.Policy(h.Policy)
	if p != nil && p.Version() == h.PolicyVersion {
		return Outcome{}
	}
	a := p.Action(h.Action)
	out := Outcome{Kind: ResultNotRun}
	switch {
	case a == nil:
		out.Why = notRunPolicyDropped
	case a.Version() != h.ActionVersion:
		out.Why = NotRunPolicyChanged
	default:
		return Outcome{}
	}
	g.cfg.Observer.Decided(h.Action, "policy_changed")
	g.log.Warn("policy changed since the hold was made; nothing runs",
		zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("policy", h.Policy),
		zap.String("held_under", h.PolicyVersion), zap.String("current", p.Version()), zap.Bool("action_gone", a == nil))
	return out
}
