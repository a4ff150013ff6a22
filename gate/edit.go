package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/forms"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/wire/jsonedit"
)

// Correcting a call before confirming it (card.editable, issue 19 §1).
//
// A card whose action names editable fields shows them as a form that
// opens on the model's values where they are safe to show (forms.Edit).
// The confirmation carries the person's values; the gate checks them as a
// form's (forms.Check), merges them over the call, checks the result
// against the tool's schema, rebuilds the card from it, and keeps, sealed
// with the answer until the run, exactly the arguments that run, the
// names of the fields that changed and the fingerprint of the card they
// make. The release sends those arguments, the recheck compares against
// that fingerprint, the audit and the model read the changed fields'
// names, never their values. Editable fields are never ones the record or
// run URL names (policies.Action.PinnedFields): an edit cannot make the
// call about another record.

// ErrNotEditable: a confirmation gave a value for an argument the policy
// does not let the person edit. Nothing runs (409).
var ErrNotEditable = errors.New("the answer changes an argument that is not editable")

// confirmedEdit is what a card hold confirmed with changes keeps, sealed
// in its Values, until it settles (for an MCP hold, in its Reply until
// the client's retry runs it).
type confirmedEdit struct {
	Args    json.RawMessage `json:"args"`    // the arguments that run
	Changed []string        `json:"changed"` // the fields whose value the person changed, in the form's order
	Print   string          `json:"print"`   // the fingerprint of the card built from Args
}

// editForm builds the form of a waiting card's editable fields, for the
// person now; ok is false when the action has none.
func (g *Gate) editForm(ctx context.Context, a *policies.Action, h store.Hold, lang string) (f forms.Form, ok bool, err error) {
	if a == nil || a.Card == nil || len(a.Card.Editable) == 0 {
		return forms.Form{}, false, nil
	}
	f, err = g.buildForm(ctx, a, nil, forms.Edit(a, h.Arguments), lang, Person{Owner: h.Owner, Tenant: h.Tenant})
	return f, err == nil, err
}

// Edits are a confirmation's corrections as posted.
type Edits struct {
	// Form are the form-encoded fields by their own names (the page posts
	// them under a prefix, apart from its own hold, answer, token and
	// EditMarker, and takes it off).
	Form map[string][]string
	// Posted says the page's edit form was posted (it carries
	// EditMarker): Form answers every editable field, and a field it
	// leaves out (an unticked checkbox, an emptied input) is answered so.
	Posted bool
	// JSON is the JSON API's "values", an object answering every editable
	// field as a form would; nil when none was given.
	JSON []byte
}

// EditMarker is the name of the hidden input that marks a page's post as
// the edit form's (Edits.Posted).
const EditMarker = "_edit"

// Confirm takes the person's confirmation of a card, with their
// corrections of its editable fields (see Edits; a field left empty is
// left out of the arguments, as a form's). No values at all confirms the
// call as the model gave it. A value for an
// argument that is not editable is ErrNotEditable; values the form or the
// tool's schema refuse come back as FieldErrors; either way nothing is
// claimed and nothing runs. Otherwise the hold is claimed once, as by
// Answer, with the final arguments sealed until the run.
func (g *Gate) Confirm(ctx context.Context, stepID, holdID string, who Person, lang string, edits Edits) (HoldView, error) {
	return g.confirm(ctx, stepID, holdID, who, lang, edits, true)
}

// ConfirmOnly is Confirm for a caller that shows nothing of the result
// itself (the page's form post, which redirects): see AnswerOnly.
func (g *Gate) ConfirmOnly(ctx context.Context, stepID, holdID string, who Person, lang string, edits Edits) error {
	_, err := g.confirm(ctx, stepID, holdID, who, lang, edits, false)
	return err
}

// confirm is Confirm; with view false it returns no view of the hold (see
// AnswerOnly).
func (g *Gate) confirm(ctx context.Context, stepID, holdID string, who Person, lang string, edits Edits, view bool) (HoldView, error) {
	form, jsonValues := edits.Form, edits.JSON
	h, r, err := g.answerable(ctx, stepID, holdID, who)
	if err != nil {
		return HoldView{}, err
	}
	if h.Kind != store.KindCard {
		return HoldView{}, ErrChoice
	}
	if !r.confirm {
		g.log.Warn("answer refused: four_eyes, the owner may not confirm their own call", zap.String("hold_id", h.ID), zap.String("action", h.Action),
			zap.String("answered_by", who.Owner), zap.String("tenant", who.Tenant))
		return HoldView{}, ErrFourEyes
	}
	a := g.action(h)
	var editable []string
	if a != nil && a.Card != nil {
		editable = a.Card.Editable
	}
	given, err := editedKeys(a, h.Arguments, form, jsonValues)
	if err != nil {
		return HoldView{}, err
	}
	if bad := slices.IndexFunc(given, func(k string) bool { return !slices.Contains(editable, k) }); bad >= 0 {
		g.log.Warn("answer refused: it changes an argument that is not editable", zap.String("hold_id", h.ID), zap.String("action", h.Action),
			zap.String("field", given[bad]), zap.String("answered_by", who.Owner), zap.String("tenant", who.Tenant))
		return HoldView{}, ErrNotEditable
	}
	if len(given) == 0 && jsonValues == nil && !(edits.Posted && len(editable) > 0) {
		return g.claimAndRelease(ctx, h, who, r, store.AnswerConfirm, nil, view)
	}
	if st := h.StateAt(g.cfg.Now()); st != store.Waiting {
		if st == store.Expired {
			return HoldView{}, store.ErrExpired
		}
		return HoldView{}, store.ErrAnswered
	}
	f, ok, err := g.editForm(ctx, a, h, lang)
	if err != nil || !ok {
		g.log.Error("building the edit form", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.Error(err))
		return HoldView{}, FieldErrors{"": {"the form cannot be built now"}}
	}
	_, args, err := answerArgs(f, h.Arguments, form, jsonValues, a.CheckArguments)
	if err != nil {
		return HoldView{}, err
	}
	changed := changedFields(editable, h.Arguments, args)
	if len(changed) == 0 {
		return g.claimAndRelease(ctx, h, who, r, store.AnswerConfirm, nil, view)
	}
	// The card as the person confirmed it: a card without record shows
	// the arguments, so it is built again from the final ones; a record's
	// card reads no editable field (none is in the record URL, and its
	// rows read the record only).
	print := h.Fingerprint
	if a.Card.Record == nil {
		card, err := cards.Build(a.Card, nil, args)
		if err != nil {
			return HoldView{}, FieldErrors{"": {"the card cannot be built from the answer"}}
		}
		print = card.Fingerprint()
	}
	kept, _ := json.Marshal(confirmedEdit{Args: args, Changed: changed, Print: print})
	sealed, err := g.sealValuesJSON(h.ID, kept)
	if err != nil {
		return HoldView{}, fmt.Errorf("sealing the person's edits: %w", err)
	}
	answered := store.Event{Kind: store.EventAnswered, HoldID: h.ID, By: who.Owner, Answer: store.AnswerConfirm, Changed: changed}
	return g.claimAndRelease(ctx, h, who, r, store.AnswerConfirm, sealed, view, answered)
}

// editedKeys names the arguments a confirmation gives values for: every
// key of the JSON values, and of the form-encoded ones those that name an
// argument (a property of the action's schema, or a key of the call);
// other form keys are the page's own and are not arguments.
func editedKeys(a *policies.Action, args []byte, form map[string][]string, jsonValues []byte) ([]string, error) {
	var keys []string
	if jsonValues != nil {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(jsonValues, &m); err != nil || m == nil {
			return nil, FieldErrors{"": {"must be a JSON object"}}
		}
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys, nil
	}
	var call map[string]json.RawMessage
	_ = json.Unmarshal(args, &call)
	var props []policies.Property
	if a != nil && a.Schema != nil {
		props, _ = a.FormProperties(nil)
	}
	for k := range form {
		_, inCall := call[k]
		if inCall || slices.ContainsFunc(props, func(p policies.Property) bool { return p.Key == k }) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// changedFields names the editable fields whose value differs between the
// call as held and as confirmed (given in one and not the other, or
// another JSON value), in the order of editable.
func changedFields(editable []string, before, after []byte) []string {
	var b, a map[string]json.RawMessage
	_ = json.Unmarshal(before, &b)
	_ = json.Unmarshal(after, &a)
	var out []string
	for _, k := range editable {
		x, inB := b[k]
		y, inA := a[k]
		if inA != inB || inA && !sameJSON(x, y) {
			out = append(out, k)
		}
	}
	return out
}

// sameJSON reports whether two JSON values are the same value.
func sameJSON(x, y json.RawMessage) bool {
	cx, err1 := jsonedit.Canonical(x)
	cy, err2 := jsonedit.Canonical(y)
	if err1 != nil || err2 != nil {
		return bytes.Equal(x, y)
	}
	return bytes.Equal(cx, cy)
}

// editOf reads back the edit a confirmed card hold keeps (sealed in its
// Values, or for a card confirmed over MCP in its Reply); ok is false when
// it was confirmed as the model gave it.
func (g *Gate) editOf(h store.Hold) (e confirmedEdit, ok bool, err error) {
	var plain []byte
	switch {
	case len(h.Values) > 0:
		plain, err = g.unsealValuesJSON(h.ID, h.Values)
	case h.Protocol == ProtocolMCP && len(h.Reply) > 0:
		plain, err = g.unseal(sealReply, h.ID, h.Reply)
	default:
		return e, false, nil
	}
	if err == nil {
		err = json.Unmarshal(plain, &e)
	}
	return e, err == nil, err
}
