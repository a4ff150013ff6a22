package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	"golang.org/x/text/language"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/forms"
	"github.com/toolgate/toolgate/plaintext"
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
	// Result is what became of the hold, for the person: read from its
	// state, answer and outcome (see Result).
	Result Result `json:"result"`
	// Localized holds the policy's words in the person's language (View's
	// lang); nil when there are none to show.
	Localized *Localized `json:"localized,omitempty"`
	// Owner is whose conversation the call came from.
	Owner string `json:"owner"`
	// Answers are what the viewer may answer while it waits: confirm and
	// decline for a card (only decline for its owner under four_eyes);
	// submit, decline and later for a form. Empty once answered.
	Answers []string `json:"answers,omitempty"`
	// FourEyes says its owner may not confirm it: an approver must.
	FourEyes bool `json:"four_eyes,omitempty"`
	// DeclineNote says the viewer may decline this waiting card with a
	// note to the assistant (the action's decline_note): post it as note
	// with the decline, at most MaxDeclineNote characters.
	DeclineNote bool `json:"decline_note,omitempty"`
	// Edit is the form of the card's editable arguments (card.editable),
	// opening on the model's values where they are safe to show, while
	// the viewer may confirm it: the confirmation may carry the person's
	// corrections (Gate.Confirm). Nil when there is none.
	Edit *forms.Form `json:"edit,omitempty"`
}

// Localized is what the policy says of a hold in the person's language.
// The card's own Sentence and the Outcome stay as the card was built and
// as the model reads them (the policy's default texts).
type Localized struct {
	// Sentence is the card's reason in the person's language, when the
	// policy gives it per language and the card was built from that
	// reason's default text; for a form no longer shown, its message.
	Sentence     string `json:"sentence,omitempty"`
	SentenceLang string `json:"sentence_lang,omitempty"` // its BCP 47 tag; "" when the policy does not say
	// Reply is the action's reply after a successful run (Result.Kind
	// ResultDone), when the model read the policy's reply: in the
	// person's language when the policy gives it per language.
	Reply     string `json:"reply,omitempty"`
	ReplyLang string `json:"reply_lang,omitempty"` // its BCP 47 tag; "" when the policy does not say
	// Rows are the card's row labels in the person's language, one per
	// row of the card in order ("" where the policy gives a row's label in
	// one language only), when the card was built from the policy's rows
	// as they read now; nil when there is none to show.
	Rows []LocalText `json:"rows,omitempty"`
}

// LocalText is a text of the policy in the person's language.
type LocalText struct {
	Text string `json:"text,omitempty"`
	Lang string `json:"lang,omitempty"` // its BCP 47 tag
}

// StepView is a step's page: the holds one link leads to.
type StepView struct {
	StepID string     `json:"step"`
	App    string     `json:"app,omitempty"`
	Holds  []HoldView `json:"holds"`
	// Approver says the viewer sees the step as an approver: the holds
	// they may answer, of someone else's conversation.
	Approver bool `json:"approver,omitempty"`
	// AssistantWaiting says that the app's streamed answer is waiting for
	// this step's answers: the assistant goes on in the conversation as
	// soon as the person has answered every question (Front.Await).
	AssistantWaiting bool `json:"assistant_waiting,omitempty"`
}

// View returns the step for the person answering it, forms built in their
// language (lang is an Accept-Language value). The owner, in the step's
// tenant, sees every hold; an approver (see rightsOn) sees the holds they
// may answer. Anyone else gets ErrNotOwner.
func (g *Gate) View(ctx context.Context, stepID string, who Person, lang string) (StepView, error) {
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
	owner := who.owns(holds[0])
	seen := make([]rights, len(holds))
	for i, h := range holds {
		holds[i] = g.shared(ctx, h) // an attached call reads as its card's answer (intent.go)
		seen[i] = g.rightsOn(h, who)
	}
	v := StepView{StepID: stepID, Approver: !owner}
	if !owner && !slices.ContainsFunc(seen, func(r rights) bool { return r.view }) {
		return StepView{}, ErrNotOwner
	}
	if p := g.cfg.Policy(holds[0].Policy); p != nil {
		v.App = p.App
	}
	now := g.cfg.Now()
	if settled, _ := stepEnd(holds, now); !settled {
		v.AssistantWaiting = g.awaited(ctx, stepID)
	}
	complete := true
	for _, h := range holds {
		if h.Answer != "refused" && h.StateAt(now) == store.Waiting {
			complete = false
		}
	}
	var shown []store.Event
	for i, h := range holds {
		if h.Answer == "refused" || !seen[i].view {
			continue // refused at hold time: nothing to answer; or not theirs to see
		}
		hv, err := g.holdView(ctx, h, now, lang, complete, seen[i])
		if err != nil {
			return StepView{}, err
		}
		v.Holds = append(v.Holds, hv)
		if hv.State == store.Waiting {
			shown = append(shown, store.Event{Kind: store.EventShown, HoldID: h.ID, By: who.Owner})
		}
	}
	g.audit(shown...)
	return v, nil
}

// holdView is one hold for the page. A waiting form is built now; one that
// cannot be built shows no form (and cannot be submitted). complete says no
// hold of the step still waits; r is what the viewer may do with it.
func (g *Gate) holdView(ctx context.Context, h store.Hold, now time.Time, lang string, complete bool, r rights) (HoldView, error) {
	hv := HoldView{ID: h.ID, Action: h.Action, Kind: h.Kind, State: h.StateAt(now), Answer: h.Answer, Outcome: g.pageOutcome(h), Expires: h.Expires, Owner: h.Owner}
	hv.Result = resultOf(h, hv.State, complete)
	if hv.State == store.Waiting {
		hv.Answers = r.answers(h.Kind)
	}
	prefs, _, _ := language.ParseAcceptLanguage(lang)
	a := g.action(h)
	_, fourEyes := askedOf(h, a)
	hv.FourEyes = a != nil && fourEyes
	hv.DeclineNote = h.Kind == store.KindCard && hv.State == store.Waiting && r.decline && a != nil && a.DeclineNote
	var loc Localized
	switch h.Kind {
	case store.KindCard:
		hv.Card = new(cards.Card)
		if err := json.Unmarshal(h.Shown, hv.Card); err != nil {
			return HoldView{}, fmt.Errorf("reading card of hold %s: %w", h.ID, err)
		}
		loc.Sentence, loc.SentenceLang = localReason(a, hv.Card.Sentence, prefs)
		loc.Rows = localRows(a, hv.Card.Rows, prefs)
		if hv.State == store.Waiting && r.confirm {
			f, ok, err := g.editForm(ctx, a, h, lang)
			if err != nil {
				g.log.Error("building the edit form", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.Error(err))
			}
			if ok {
				hv.Edit = &f
			}
		}
	case store.KindForm:
		if hv.State != store.Waiting {
			// A form is shown only while it waits; its sentence stays.
			if s, err := readShown(h.Shown); err == nil {
				loc.Sentence = plaintext.Clean(s.Message, plaintext.MaxSentence)
			}
			break
		}
		f, _, err := g.formOf(ctx, h, lang)
		if err != nil {
			g.log.Error("building form", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.Error(err))
			break
		}
		hv.Form = &f
	}
	// The reply, only when it is what the model read (a read's body is
	// not shown: it is the app's answer to the model).
	if hv.Result.Kind == ResultDone && a != nil && a.Reply != "" && (hv.Result.reply == replyPolicy || hv.Result.reply == "legacy:"+a.Reply) {
		loc.Reply = plaintext.Clean(a.Reply, plaintext.MaxSentence)
		if a.Replies != nil {
			text, tag := a.Replies.In(prefs)
			loc.Reply, loc.ReplyLang = plaintext.Clean(text, plaintext.MaxSentence), tag
		}
	}
	if loc.Sentence != "" || loc.Reply != "" || loc.Rows != nil {
		hv.Localized = &loc
	}
	return hv, nil
}

// Answer records the person's answer to one hold of a step — confirm or
// decline for a card, decline or later for a form (a form's submit is
// Submit) — and, when it is the step's last answer, releases the step. Any
// answer other than the first valid one from the owner or an approver
// (see rightsOn) within the TTL runs nothing and returns an error that
// Status maps to 409.
func (g *Gate) Answer(ctx context.Context, stepID, holdID string, who Person, choice string) (HoldView, error) {
	return g.answer(ctx, stepID, holdID, who, choice, true)
}

// AnswerOnly is Answer for a caller that shows nothing of the result
// itself (the page's form post, which redirects to the step's page, which
// reads the step again): it neither reads the hold again after the
// release nor builds its view. Everything else is Answer's.
func (g *Gate) AnswerOnly(ctx context.Context, stepID, holdID string, who Person, choice string) error {
	_, err := g.answer(ctx, stepID, holdID, who, choice, false)
	return err
}

func (g *Gate) answer(ctx context.Context, stepID, holdID string, who Person, choice string, view bool) (HoldView, error) {
	if choice == store.AnswerConfirm {
		return g.confirm(ctx, stepID, holdID, who, "", Edits{}, view) // as the model gave it
	}
	h, r, err := g.answerable(ctx, stepID, holdID, who)
	if err != nil {
		return HoldView{}, err
	}
	switch {
	case h.Kind == store.KindCard && choice == store.AnswerDecline:
	case h.Kind == store.KindForm && (choice == store.AnswerDecline || choice == store.AnswerLater):
	default:
		return HoldView{}, ErrChoice
	}
	return g.claimAndRelease(ctx, h, who, r, choice, nil, view)
}

// claimAndRelease claims a hold once for the person's answer and, when it
// completes the step, releases the step. With view, it returns the hold
// as it is then. events are appended with the claim (an answered event
// made by the caller stands for the one audited would make).
func (g *Gate) claimAndRelease(ctx context.Context, h store.Hold, who Person, r rights, choice string, values json.RawMessage, view bool, events ...store.Event) (HoldView, error) {
	person := who.Owner
	claimed, err := g.cfg.Store.Claim(ctx, h.ID, store.Answer{Choice: choice, By: person, Values: values}, events...)
	if err != nil {
		g.log.Info("answer refused", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.String("answered_by", person), zap.String("answer", choice), zap.Error(err))
		return HoldView{}, err
	}
	g.cfg.Observer.Decided(h.Action, choice)
	g.log.Info("hold answered", zap.String("hold_id", h.ID), zap.String("step_id", h.StepID), zap.String("action", h.Action),
		zap.String("answered_by", person), zap.Bool("approver", r.approver), zap.String("owner", h.Owner), zap.String("tenant", h.Tenant),
		zap.String("answer", choice), shownField(h))
	if claimed.Complete {
		// The release goes on if the person's request ends (a closed
		// tab); the page waits for it while the request lasts.
		wait(ctx, g.releaseStep(ctx, claimed.Step))
	}
	if !view {
		return HoldView{}, nil
	}
	cur, err := g.cfg.Store.Get(ctx, h.ID)
	if err != nil {
		return HoldView{}, err
	}
	return g.holdView(ctx, cur, g.cfg.Now(), "", claimed.Complete, r)
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
	case errors.Is(err, ErrNotOwner), errors.Is(err, ErrFourEyes), errors.Is(err, ErrNotEditable), errors.Is(err, ErrBadToken), errors.Is(err, store.ErrAnswered), errors.Is(err, store.ErrExpired):
		return 409
	case errors.Is(err, store.ErrUnavailable):
		return 503
	}
	return 500
}
