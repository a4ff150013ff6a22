package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/wire/jsonedit"
)

// One card per intent. Models and agents repeat a call whose answer they
// have not seen yet, in the same conversation or in another one (a second
// tab, an agent's retry). While a hold waits, the same call again — where
// the very same request would run: the same person (tenant and owner),
// the route's policy (Front.policyKey), the action's version, the wire
// protocol, the tool and its arguments in canonical JSON — does not ask
// the person a second time: it attaches to the waiting hold.
//
// An attachment is a hold of its own, in the step of the response that
// made it: its own call id, its own assistant message, its own link. So a
// conversation's link restores only that conversation's message and call
// ids, and what is done in one conversation (moving on) ends only its own
// holds. What it shares with the first ("primary") hold is the decision:
// its Shown is the primary's card or form, marked with the primary's id
// (withPrimary), and
//
//   - its page shows that card; an answer given on it is the primary's
//     (answerable), so the person answers once, whichever link they open;
//   - when the primary is settled after the person's decision (confirm,
//     decline, submit, later), each attachment still waiting is claimed as
//     followed and settled with the primary's outcome (follow): the action
//     runs once, for the primary, and every attached call reads what came
//     of it under its own call id, in its own conversation;
//   - when the primary ends without a decision — its conversation moved
//     on, an operator withdrew it — its attachments still wait, and answer
//     as one: an answer on any of their links goes to one of them (the
//     stand-in: the first with the person's decision, else the oldest
//     still waiting; answerShared, standIn), and the others follow it as
//     they would the primary (follow). The primary ran nothing and the
//     stand-in runs at most once, so the action still runs at most once.
//     That is why an attachment keeps a whole copy of what the person is
//     shown and its own arguments, rather than a pointer only: it can
//     stand alone.
//
// An attachment expires with its primary. This design costs one Put per
// attachment (the step it is in, as any held call) and no extra write per
// primary; finding the attachments of a primary reads the same intent
// index the lookup reads.
//
// The waiting holds of an intent are found through the store's index
// (Index, Indexed, Unindex), under a key made of the whole identity above
// (intentKey): no index of its own. The lookup is bounded: the newest
// maxIntentSteps steps filed under the key are read, and those where
// nothing of the intent waits any more are taken off. Two equal calls
// held at the very same moment may still both get a card: the lookup and
// the Put are not one operation (a store that made them one would need an
// intent column unique among waiting holds). A call racing the primary's
// answer in the other direction — its conversation moves on as the
// person answers — keeps what it was claimed with first.

// maxIntentSteps bounds the steps read to find a waiting hold of an
// intent.
const maxIntentSteps = 4

// intentKey is the index key of an intent: every part of what decides
// which request would run, length-prefixed so no two identities share a
// digest input.
func intentKey(p Person, policyKey, actionVersion, protocol, action string, canonical []byte) string {
	sum := sha256.New()
	for _, part := range []string{
		policyKey,     // the route's policy
		actionVersion, // the action as that policy declares it
		protocol,      // the wire protocol the call came on
		action,
	} {
		sum.Write([]byte(strconv.Itoa(len(part)) + ":" + part))
	}
	sum.Write(canonical)
	return indexKey("intent", p, hex.EncodeToString(sum.Sum(nil)))
}

// intent is a call's identity for attaching on this front: its index key,
// or "" when its arguments are not JSON (nothing attaches to it).
func (f *Front) intent(action string, args []byte) (key string, canonical []byte) {
	canonical, err := jsonedit.Canonical(args)
	if err != nil || f.person.Owner == "" {
		return "", nil
	}
	return intentKey(f.person, f.policyKey, f.policy.Action(action).Version(), f.protocol, action, canonical), canonical
}

// holdIntent is the index key of a stored hold's intent; "" when it has
// none.
func holdIntent(h store.Hold) string {
	canonical, err := jsonedit.Canonical(h.Arguments)
	if err != nil || h.Owner == "" {
		return ""
	}
	return intentKey(Person{Owner: h.Owner, Tenant: h.Tenant}, h.Policy, h.ActionVersion, h.Protocol, h.Action, canonical)
}

// attach finds the waiting primary hold of the same intent as a call
// about to be held whose card reads as this call's would now (print, the
// fingerprint of the card just built); ok is false when there is none (the
// call gets its own card). key and canonical are the call's f.intent.
func (f *Front) attach(ctx context.Context, action, key string, canonical []byte, print string) (primary store.Hold, ok bool) {
	g := f.g
	if key == "" {
		return store.Hold{}, false
	}
	steps, err := g.cfg.Store.Indexed(ctx, key)
	if err != nil {
		g.log.Warn("finding a waiting hold of the same call", zap.String("action", action), zap.Error(err))
		return store.Hold{}, false
	}
	now := g.cfg.Now()
	for i, n := len(steps)-1, 0; i >= 0 && n < maxIntentSteps; i, n = i-1, n+1 {
		holds, err := g.cfg.Store.Step(ctx, steps[i])
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			g.log.Warn("finding a waiting hold of the same call", zap.String("step_id", steps[i]), zap.Error(err))
			return store.Hold{}, false
		}
		waits := false // something of this intent still waits in this step
		for _, h := range holds {
			following := h.State == store.Answered && h.Answer == store.AnswerFollowed
			// A stand-in (the attachment that took its group's answer when
			// the card ended without one) stays findable, settled or not:
			// the rest of its group reads its decision through this index
			// (standIn). Unindexed, the group's other calls ended as moved on
			// or timed out although the person had answered
			// (TestReleaseModel, seed 17254178427504573961).
			standsIn := h.Kind != store.KindTicket && decides(h.Answer) && primaryOf(h) != ""
			if h.Action != action || !f.person.owns(h) || h.StateAt(now) != store.Waiting && !following && !standsIn || h.Kind == store.KindTicket {
				continue
			}
			if c, err := jsonedit.Canonical(h.Arguments); err != nil || string(c) != string(canonical) {
				continue
			}
			waits = true
			if h.State != store.Waiting {
				continue // an attachment waiting for its primary's outcome, or a stand-in: follow and standIn find it here
			}
			if id := primaryOf(h); id != "" {
				// An attachment: the card it shares, if that still waits.
				p, err := g.cfg.Store.Get(ctx, id)
				if err != nil || !f.person.owns(p) || p.StateAt(now) != store.Waiting {
					continue
				}
				h = p
			}
			if h.Fingerprint != print {
				// Its card reads otherwise now (the record changed since):
				// not this call's card. Another may be (steps filed at the
				// same instant come in no set order).
				continue
			}
			return h, true
		}
		if !waits {
			// Nothing of this intent waits there any more (for the
			// person, or for its primary's outcome).
			if err := g.cfg.Store.Unindex(ctx, key, steps[i]); err != nil {
				g.log.Warn("unindexing an answered intent", zap.String("step_id", steps[i]), zap.Error(err))
			}
		}
	}
	return store.Hold{}, false
}

// fileIntents files a new step's waiting holds under their intents
// (intents[i] is holds[i]'s f.intent key, made when it was planned): a
// primary so that repeats find it, an attachment so that its primary's
// settlement finds it (follow). It names the keys in the holds' Filed, so
// Put files them with the step.
func (f *Front) fileIntents(holds []store.Hold, intents []string) {
	for i := range holds {
		if holds[i].State == store.Waiting && intents[i] != "" {
			holds[i].Filed = append(holds[i].Filed, intents[i])
		}
	}
}

// primaryMark opens the Shown of an attachment: withPrimary puts the
// primary's id first, so a hold with its own card is told apart by a
// prefix compare, with no JSON work.
const primaryMark = `{"primary":`

// withPrimary is shown (a card or a form's decision, a JSON object)
// marked as the primary hold's: the parts that read it as a card or a
// form ignore the extra member.
func withPrimary(shown json.RawMessage, primaryID string) json.RawMessage {
	id, _ := json.Marshal(primaryID)
	rest := bytes.TrimSpace(shown)
	out := append([]byte(primaryMark), id...)
	if len(rest) > 2 && rest[0] == '{' {
		out = append(append(out, ','), rest[1:]...)
	} else {
		out = append(out, '}')
	}
	return out
}

// primaryOf is the id of the hold whose card h shares; "" for a hold with
// its own.
func primaryOf(h store.Hold) string {
	if h.Kind == store.KindTicket || !bytes.HasPrefix(h.Shown, []byte(primaryMark)) {
		return ""
	}
	var s struct {
		Primary string `json:"primary"`
	}
	if err := json.Unmarshal(h.Shown, &s); err != nil {
		return ""
	}
	return s.Primary
}

// decides reports whether an answer is the person's decision on a card or
// form, which its attachments share. The others end one conversation's
// hold only: moved on, timed out, withdrawn by an operator (and the
// gate's own: followed, used).
func decides(answer string) bool {
	switch answer {
	case store.AnswerConfirm, store.AnswerDecline, store.AnswerSubmit, store.AnswerLater:
		return true
	}
	return false
}

// follow settles the attachments of a primary that was just settled with
// outcome after the person's decision: each reads that outcome.
//
// An attachment answered on its own, after its primary ended without a
// decision (answerShared sent the answer to it), stands for the primary:
// the other attachments of that primary take its outcome the same way.
func (g *Gate) follow(ctx context.Context, p store.Hold) {
	if p.Kind == store.KindTicket || !decides(p.Answer) {
		return
	}
	group := p.ID
	if id := primaryOf(p); id != "" {
		group = id
	}
	for _, h := range g.attached(ctx, p, group) {
		if h.ID != p.ID {
			g.followPrimary(ctx, h, p)
		}
	}
}

// attached lists the holds attached to the primary with id group, found
// through the intent index of h (a hold of that intent), in the order
// they were filed.
func (g *Gate) attached(ctx context.Context, h store.Hold, group string) []store.Hold {
	key := holdIntent(h)
	if key == "" {
		return nil
	}
	steps, err := g.cfg.Store.Indexed(ctx, key)
	if err != nil {
		g.log.Error("finding the calls attached to a hold; they settle when read", zap.String("hold_id", h.ID), zap.Error(err))
		return nil
	}
	var out []store.Hold
	for _, s := range steps {
		holds, err := g.cfg.Store.Step(ctx, s)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				g.log.Error("finding the calls attached to a hold; they settle when read", zap.String("step_id", s), zap.Error(err))
			}
			continue
		}
		for _, a := range holds {
			if primaryOf(a) == group {
				out = append(out, a)
			}
		}
	}
	return out
}

// standIn is the attachment that takes the answers for the attachments of
// primary p, which ended without the person's decision (moved on,
// withdrawn): the first of them that has the person's decision, else the
// oldest still waiting. One hold takes the group's answer, so racing
// answers on two of their links are one claim, and the action runs at
// most once for the whole group. ok is false when there is none.
func (g *Gate) standIn(ctx context.Context, h, p store.Hold) (store.Hold, bool) {
	now := g.cfg.Now()
	var oldest store.Hold
	found := false
	for _, a := range g.attached(ctx, h, p.ID) {
		if a.Owner != h.Owner || a.Tenant != h.Tenant {
			continue
		}
		if decides(a.Answer) {
			return a, true
		}
		if a.StateAt(now) != store.Waiting {
			continue
		}
		if !found || a.Created.Before(oldest.Created) || a.Created.Equal(oldest.Created) && a.ID < oldest.ID {
			oldest, found = a, true
		}
	}
	return oldest, found
}

// followPrimary gives an attachment its primary's decision: a waiting one
// is claimed as followed (which releases its step when that completes
// it), and settled with the primary's outcome once the primary has one. It
// reports whether the attachment no longer waits.
func (g *Gate) followPrimary(ctx context.Context, h, p store.Hold) bool {
	switch h.State {
	case store.Waiting:
		claimed, err := g.cfg.Store.Claim(ctx, h.ID, store.Answer{Choice: store.AnswerFollowed, By: p.AnsweredBy, AllowExpired: true})
		if err != nil {
			if !errors.Is(err, store.ErrAnswered) {
				g.log.Error("settling an attached call", zap.String("hold_id", h.ID), zap.Error(err))
			}
			return errors.Is(err, store.ErrAnswered)
		}
		g.log.Info("attached call follows its card's answer", zap.String("hold_id", h.ID), zap.String("primary", p.ID), zap.String("answer", p.Answer))
		if claimed.Complete {
			wait(ctx, g.releaseStep(ctx, claimed.Step)) // releaseHold settles it with p's outcome
			return true
		}
		h = claimed.Hold
	case store.Answered:
		if h.Answer != store.AnswerFollowed {
			return true
		}
	default:
		return true
	}
	if p.State == store.Settled {
		g.settle(ctx, h, followedFrom(p))
	}
	return true
}

// followIfDecided gives a waiting attachment its primary's decision when
// the person has made it (the primary's settlement did not reach it: the
// process stopped in between, say). It reports whether it changed it.
func (g *Gate) followIfDecided(ctx context.Context, h store.Hold) bool {
	p, ok := g.decider(ctx, h)
	if !ok {
		return false
	}
	return g.followPrimary(ctx, h, p)
}

// decider is the hold whose decision the waiting attachment h shares, once
// the person has made it: its primary, or when the primary ended without a
// decision, the stand-in that took the group's answer (answerShared). The
// stand-in settles only when its own step completes, so until then its
// group learns of the decision here, not from its settlement: without
// this, a conversation that moved on in between ended its attachment as
// moved on although the person had answered the card (TestReleaseModel,
// seed 3015117318891431990). ok is false while no decision is made.
func (g *Gate) decider(ctx context.Context, h store.Hold) (store.Hold, bool) {
	id := primaryOf(h)
	if id == "" || h.State != store.Waiting {
		return store.Hold{}, false
	}
	p, err := g.cfg.Store.Get(ctx, id)
	if err != nil || p.State == store.Waiting {
		return store.Hold{}, false
	}
	if !decides(p.Answer) {
		in, found := g.standIn(ctx, h, p)
		if !found || in.ID == h.ID || !decides(in.Answer) {
			return store.Hold{}, false
		}
		p = in
	}
	return p, true
}

// followedOutcome is what an attachment claimed as followed reads: its
// primary's outcome; ok is false while the primary has none yet (the
// primary's settlement settles it then).
func (g *Gate) followedOutcome(ctx context.Context, h store.Hold) (outcome Outcome, ok bool) {
	p, err := g.cfg.Store.Get(ctx, primaryOf(h))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Outcome{Kind: outcomeSharedLost}, true
	case err != nil || p.State != store.Settled:
		return Outcome{}, false
	case !decides(p.Answer):
		// It followed the stand-in that took the group's answer.
		in, found := g.standIn(ctx, h, p)
		if !found || !decides(in.Answer) {
			return Outcome{Kind: outcomeSharedLost}, true
		}
		if in.State != store.Settled {
			return Outcome{}, false
		}
		p = in
	}
	return followedFrom(p), true
}

// followedFrom is the outcome an attachment reads of its settled primary:
// the primary's own, but a read's reply stays the primary's (sealed under
// its id, read by its conversation), and an outcome an earlier version
// stored as a sentence is told as lost rather than copied.
func followedFrom(p store.Hold) Outcome {
	o, ok := decodeOutcome(p.Outcome)
	if !ok {
		return Outcome{Kind: outcomeSharedLost}
	}
	if o.Reply == replyApp {
		o.Reply = replyElsewhere
	}
	if o.Note != "" {
		o.Note = noteElsewhere // note.go: the note went to the card's conversation
	}
	return o
}

// shared is an attachment as the person's page shows it: while it waits
// and its primary has the person's decision, it reads as the primary.
func (g *Gate) shared(ctx context.Context, h store.Hold) store.Hold {
	p, ok := g.decider(ctx, h)
	if !ok {
		return h
	}
	h.State, h.Answer, h.AnsweredBy, h.AnsweredAt, h.Outcome = p.State, p.Answer, p.AnsweredBy, p.AnsweredAt, p.Outcome
	return h
}

// shownSay is what a waiting text says of a hold: its card's sentence, or
// its form's message.
func shownSay(h store.Hold) string {
	if h.Kind == store.KindForm {
		s, _ := readShown(h.Shown)
		return s.Message
	}
	var c cards.Card
	_ = json.Unmarshal(h.Shown, &c)
	return c.Sentence
}

// answerShared is the hold an answer given on h is for: h's primary while
// that waits (the person answers the card once, on whichever link); h
// itself when it has its own card, or when the primary ended without the
// person's decision. Once the person decided on the primary, an answer on
// an attachment is one answer too many: store.ErrAnswered.
func (g *Gate) answerShared(ctx context.Context, h store.Hold) (store.Hold, error) {
	id := primaryOf(h)
	if id == "" || h.State != store.Waiting {
		return h, nil
	}
	p, err := g.cfg.Store.Get(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return h, nil
	case err != nil:
		return store.Hold{}, err
	case p.Owner != h.Owner || p.Tenant != h.Tenant:
		return h, nil
	case p.StateAt(g.cfg.Now()) == store.Waiting:
		return p, nil
	case decides(p.Answer):
		return store.Hold{}, store.ErrAnswered
	}
	// The primary ended without a decision: its attachments answer as one.
	in, found := g.standIn(ctx, h, p)
	switch {
	case !found:
		return h, nil
	case in.State != store.Waiting:
		return store.Hold{}, store.ErrAnswered
	}
	return in, nil
}
