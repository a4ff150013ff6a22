package gate

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"
	"golang.org/x/text/language"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/plaintext"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// Who may answer a hold. The owner of the conversation, in its tenant, as
// before; and, for an action whose policy names approvers, anyone signed
// in to the pages in the same tenant who has one of its roles or ids. With
// four_eyes the owner may decline their own call but not confirm it.
// Approvers act within the hold's tenant only: (tenant, owner) stays the
// identity of a conversation, and an approver in another tenant sees
// nothing. The model reads only the outcome, never who answered; the
// release runs as the person who answered (X-Toolgate-Person is the
// approver's id), so the app decides what that person may do.

// rights are what a signed-in person may do with one hold.
type rights struct {
	view     bool // see it on the step's page
	confirm  bool // confirm a card, or submit a form
	decline  bool // decline (and, for a form, close it)
	approver bool // they see it as an approver, not as its owner
}

// rightsOn says what who may do with h, by the policy as it reads now.
func (g *Gate) rightsOn(h store.Hold, who Person) rights {
	if h.Kind == store.KindTicket || h.Answer == "refused" || who.Owner == "" || who.Tenant != h.Tenant {
		return rights{}
	}
	a := g.action(h)
	approvers, fourEyes := askedOf(h, a) // the action's, or the rule's that held the card
	if who.Owner == h.Owner {
		return rights{view: true, confirm: a == nil || !fourEyes, decline: true}
	}
	if h.Kind == store.KindCard && a != nil && a.Card != nil && approvers.Includes(who.Owner, who.Roles) {
		return rights{view: true, confirm: true, decline: true, approver: true}
	}
	return rights{}
}

// answers lists what the viewer may answer on a waiting hold, as the page
// offers it.
func (r rights) answers(kind store.Kind) []string {
	var out []string
	switch {
	case kind == store.KindCard:
		if r.confirm {
			out = append(out, store.AnswerConfirm)
		}
		if r.decline {
			out = append(out, store.AnswerDecline)
		}
	case r.confirm:
		out = []string{store.AnswerSubmit, store.AnswerDecline, store.AnswerLater}
	}
	return out
}

// answerable reads a hold of a step that who may see, with what they may
// do with it.
func (g *Gate) answerable(ctx context.Context, stepID, holdID string, who Person) (store.Hold, rights, error) {
	h, err := g.cfg.Store.Get(ctx, holdID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.Hold{}, rights{}, ErrNotFound
		}
		return store.Hold{}, rights{}, err
	}
	if h.StepID != stepID || h.Answer == "refused" || h.Kind == store.KindTicket {
		return store.Hold{}, rights{}, ErrNotFound
	}
	if h, err = g.answerShared(ctx, h); err != nil {
		return store.Hold{}, rights{}, err
	}
	r := g.rightsOn(h, who)
	if !r.view {
		g.log.Warn("answer refused: neither the owner nor an approver", zap.String("hold_id", h.ID), zap.String("action", h.Action),
			zap.String("answered_by", who.Owner), zap.String("tenant", who.Tenant))
		return store.Hold{}, rights{}, ErrNotOwner
	}
	return h, r, nil
}

// approvalsKey files the steps holding a call approvers may answer, per
// tenant, so an approver's list needs no link. Its entries live as long
// as the step's records; the list takes off those with nothing waiting.
func approvalsKey(tenant string) string {
	return indexKey("appr", Person{Tenant: tenant}, "waiting")
}

// fileApprovals files a step, about to be stored, for the approvers of
// its tenant when one of its waiting holds has any, and on its owner's
// inbox (fileInbox): it names the keys in the holds' Filed, so Put files
// them in the step's own transaction.
func (g *Gate) fileApprovals(holds []store.Hold) {
	g.fileInbox(holds) // inbox.go: and on its owner's own list
	for i := range holds {
		h := &holds[i]
		a := g.action(*h)
		if approvers, _ := askedOf(*h, a); h.State != store.Waiting || a == nil || approvers == nil || primaryOf(*h) != "" {
			continue
		}
		h.Filed = append(h.Filed, approvalsKey(h.Tenant))
		return
	}
}

// WaitingHold is one hold on a person's list of what waits for their
// answer. It holds nothing the model wrote.
type WaitingHold struct {
	Step   string `json:"step"`
	Link   string `json:"link"`
	Hold   string `json:"hold"`
	Action string `json:"action"`
	App    string `json:"app,omitempty"`
	// Owner is whose conversation the call came from.
	Owner string `json:"owner"`
	// Approver says the person answers it as an approver, not as its
	// owner.
	Approver bool `json:"approver"`
	// Sentence is the card's reason (in the person's language where the
	// policy gives it), or a form's message.
	Sentence     string    `json:"sentence"`
	SentenceLang string    `json:"sentence_lang,omitempty"`
	Created      time.Time `json:"created"`
	Expires      time.Time `json:"expires"`
	// Kind is card or form (the inbox; "" on the approvers' list).
	Kind store.Kind `json:"kind,omitempty"`
	// FourEyes says the person may decline it but not confirm it: it
	// is their own call and an approver must confirm it (the inbox).
	FourEyes bool `json:"four_eyes,omitempty"`
}

// Listing bounds: an approver's list reads at most maxListSteps steps of
// their tenant and shows at most maxListed holds, oldest first.
const (
	maxListSteps = 1000
	maxListed    = 200
)

// Waiting lists the holds waiting for who's answer in their tenant, of the
// actions that have approvers: those they may answer as an approver, and
// their own where the owner may confirm (not under four_eyes). lang is an
// Accept-Language value. A step with nothing waiting any more is taken off
// the list as it is read.
func (g *Gate) Waiting(ctx context.Context, who Person, lang string) ([]WaitingHold, error) {
	if who.Owner == "" {
		return nil, nil
	}
	key := approvalsKey(who.Tenant)
	steps, err := g.cfg.Store.Indexed(ctx, key)
	if err != nil {
		return nil, err
	}
	if len(steps) > maxListSteps {
		steps = steps[:maxListSteps]
	}
	prefs, _, _ := language.ParseAcceptLanguage(lang)
	out := []WaitingHold{}
	for _, id := range steps {
		holds, err := g.cfg.Store.Step(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			g.unlist(ctx, key, id)
			continue
		}
		if err != nil {
			return nil, err
		}
		now := g.cfg.Now()
		open := false
		for _, h := range holds {
			if h.StateAt(now) != store.Waiting || h.Answer == "refused" {
				continue
			}
			open = true
			r := g.rightsOn(h, who)
			if !r.confirm || len(out) >= maxListed {
				continue
			}
			out = append(out, g.waitingHold(h, r, prefs))
		}
		if !open {
			g.unlist(ctx, key, id)
		}
	}
	return out, nil
}

func (g *Gate) unlist(ctx context.Context, key, stepID string) {
	if err := g.cfg.Store.Unindex(ctx, key, stepID); err != nil {
		g.log.Warn("taking a step off its approvers' list", zap.String("step_id", stepID), zap.Error(err))
	}
}

// waitingHold is one line of the list.
func (g *Gate) waitingHold(h store.Hold, r rights, prefs []language.Tag) WaitingHold {
	w := WaitingHold{Step: h.StepID, Link: g.Link(h.StepID), Hold: h.ID, Action: h.Action, Owner: h.Owner,
		Approver: r.approver, Created: h.Created, Expires: h.Expires}
	if p := g.cfg.Policy(h.Policy); p != nil {
		w.App = p.App
	}
	a := g.action(h)
	switch h.Kind {
	case store.KindCard:
		var c cards.Card
		_ = json.Unmarshal(h.Shown, &c) // a card that cannot be read shows no sentence
		w.Sentence = c.Sentence
		if s, tag := localReason(a, c.Sentence, prefs); s != "" {
			w.Sentence, w.SentenceLang = s, tag
		}
	case store.KindForm:
		if s, err := readShown(h.Shown); err == nil {
			w.Sentence = plaintext.Clean(s.Message, plaintext.MaxSentence)
		}
	}
	return w
}

// localReason is a card's reason in the person's language, only as a
// translation of the very sentence the card was built with; "" when there
// is none other than it.
func localReason(a *policies.Action, sentence string, prefs []language.Tag) (string, string) {
	if a == nil || a.Card == nil || a.Card.Reasons == nil || sentence != plaintext.Clean(a.Card.Reason, plaintext.MaxSentence) {
		return "", ""
	}
	text, tag := a.Card.Reasons.In(prefs)
	if s := plaintext.Clean(text, plaintext.MaxSentence); s != "" && s != sentence {
		return s, tag
	}
	return "", ""
}

// localRows returns the labels of a card's rows in the person's language
// (see Localized.Rows), or nil. Only a card whose rows carry the labels
// the policy's rows give now, in the same order, is shown translated: the
// person must read the labels of the card they confirm, not of another.
func localRows(a *policies.Action, rows []cards.Row, prefs []language.Tag) []LocalText {
	if a == nil || a.Card == nil || len(rows) != min(len(a.Card.Rows), cards.MaxRows) {
		return nil
	}
	var out []LocalText
	for i, r := range rows {
		pr := a.Card.Rows[i]
		if r.Label != plaintext.Clean(pr.Label, plaintext.MaxLabel) {
			return nil
		}
		if pr.Labels == nil {
			continue
		}
		text, tag := pr.Labels.In(prefs)
		if s := plaintext.Clean(text, plaintext.MaxLabel); s != "" && s != r.Label {
			if out == nil {
				out = make([]LocalText, len(rows))
			}
			out[i] = LocalText{Text: s, Lang: tag}
		}
	}
	return out
}

// confirmedByRightPerson checks, again where a confirmed card is redeemed
// (an MCP client's retry), that its confirmation came from someone the
// policy, as it reads now, lets confirm it: the owner, unless four_eyes;
// else one of its approvers (the pages checked their roles when they
// answered; an action whose approvers were taken away since runs nothing).
func confirmedByRightPerson(h store.Hold, a *policies.Action) bool {
	approvers, fourEyes := askedOf(h, a)
	if h.AnsweredBy == h.Owner {
		return a != nil && !fourEyes
	}
	return h.AnsweredBy != "" && a != nil && approvers != nil
}
