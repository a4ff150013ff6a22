package policies

import "go.yaml.in/yaml/v3"

// declineNote reads an action's decline_note key, else the file's: with it
// on, the card's Decline comes with a short note the person may write to
// their assistant. Cards only: a read or write action's form has no such
// note, so an action that asks for one is refused at load; the file's key
// applies to its destructive and external actions.
func (l *loader) declineNote(a *Action, n *yaml.Node, file *Policy) (bool, error) {
	if isNull(n) {
		return file.DeclineNote && a.Effect.NeedsCard(), nil
	}
	on, err := l.boolean(n, "decline_note")
	if err != nil {
		return false, err
	}
	if on && !a.Effect.NeedsCard() {
		return false, l.errf(n, "decline_note", "only destructive and external actions have a card to decline with a note; a %s call's form has none", a.Effect)
	}
	return on, nil
}
