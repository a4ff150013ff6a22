package policies

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// PinnedFields returns the arguments that decide what an action's call is
// about, each with the key that uses it: the fields named by the card's
// record URL ("card.record"), the run URL ("run.url") and the rules
// ("rules[i].when": the fields a rule reads; all the card's editable ones
// when a rule reads args as a whole). Run headers are static (they name
// no field) and so pin none. The person may not edit a pinned field
// (card.editable): an edit could make the confirmed call about another
// record, send it elsewhere, or dodge the rule that chose its outcome.
// Any rule may be the one that decides a call, so each rule's fields are
// pinned, not only those of the rule that held it.
//
// A field used in several places is reported at the first of them, in the
// order above.
func (a *Action) PinnedFields() map[string]string {
	pinned := map[string]string{}
	pinField := func(f, key string) {
		if _, ok := pinned[f]; !ok {
			pinned[f] = key
		}
	}
	pin := func(t *Template, key string) {
		if t == nil {
			return
		}
		for _, f := range t.Fields() {
			pinField(f, key)
		}
	}
	if a.Card != nil {
		pin(a.Card.Record, "card.record")
	}
	pin(a.Run.URL, "run.url")
	for _, r := range a.Rules {
		key := fmt.Sprintf("rules[%d].when", r.Index)
		for _, f := range r.ArgsRead {
			pinField(f, key)
		}
		if r.ArgsAll && a.Card != nil {
			for _, f := range a.Card.Editable {
				pinField(f, key)
			}
		}
	}
	return pinned
}

// checkEditable checks card.editable once the whole action is read (the
// form properties depend on its forbidden keys): every field is a property
// of the schema that a form can hold, and none is pinned (PinnedFields).
// Any name will do: the page posts fields under a prefix of their own
// (pages.FieldPrefix), so none is taken for the page's own keys.
// n is the card's node, for the error's line.
func (l *loader) checkEditable(a *Action, n *yaml.Node) error {
	if a.Card == nil || len(a.Card.Editable) == 0 {
		return nil
	}
	at := n
	if f, err := l.fields(n, "card", cardKeys...); err == nil && f["editable"] != nil {
		at = f["editable"]
	}
	if a.Schema == nil {
		return l.errf(at, "card.editable", "needs the action's schema: edits are validated against it")
	}
	props, err := a.FormProperties(nil)
	if err != nil {
		return l.errf(at, "card.editable", "%w", err)
	}
	pinned := a.PinnedFields()
	for _, field := range a.Card.Editable {
		i := slices.IndexFunc(props, func(p Property) bool { return p.Key == field })
		if i < 0 {
			return l.errf(at, "card.editable", "names unknown field %q", field)
		}
		if where, ok := pinned[field]; ok {
			return l.errf(at, "card.editable", "field %q is used in %s, so an edit could make the call about another record, send it elsewhere or dodge a rule; it cannot be editable", field, where)
		}
		if props[i].Kind == "" {
			return l.errf(at, "card.editable", "field %q cannot be edited: %s", field, props[i].Unaskable)
		}
	}
	return nil
}
