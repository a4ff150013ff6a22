package policies

import (
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Mode says whether the gate acts on an action's calls or only watches
// them.
type Mode string

// The modes an action (or the whole file) may declare in its mode key.
const (
	// Enforce holds, asks and refuses calls as the action says. The
	// default.
	Enforce Mode = "enforce"
	// Shadow lets every call pass to the app untouched, and logs and
	// counts what Enforce would have done with it (the card it would have
	// shown, the form it would have asked, why it would have refused), so
	// a new policy can be rolled out in shadow first.
	Shadow Mode = "shadow"
)

// Notify is where the gate sends notices about an action's holds: one when
// a call is held (with the link, so a platform can pass it to Slack,
// e-mail or a push service), one when the hold is settled.
type Notify struct {
	// URL is the absolute http or https URL notices are POSTed to. It may
	// not name fields: nothing of the model's call chooses where a notice
	// goes.
	URL string
	// Headers are static headers sent with every notice, keyed by their
	// canonical name. They may not set the headers the gate owns
	// (X-Toolgate-*, Idempotency-Key, Host, Content-Length,
	// Transfer-Encoding).
	Headers map[string]string
}

// Approvers name who, besides the owner of the conversation, may answer
// the card of an action: anyone signed in to the pages, in the hold's
// tenant, who has one of Roles or whose id is one of IDs.
type Approvers struct {
	Roles []string // role names, as the pages' roles placeholder gives them
	IDs   []string // person ids, as the pages' answerer placeholder gives them
}

// Includes reports whether the signed-in person id, with roles, is one of
// the approvers. Names are compared exactly (case matters).
func (a *Approvers) Includes(id string, roles []string) bool {
	if a == nil || id == "" {
		return false
	}
	if slices.Contains(a.IDs, id) {
		return true
	}
	for _, r := range roles {
		if slices.Contains(a.Roles, r) {
			return true
		}
	}
	return false
}

// Shadow reports whether the action's calls are only watched (mode:
// shadow, on the action or the file).
func (a *Action) Shadow() bool { return a != nil && a.Mode == Shadow }

// mode reads a mode key; absent or null gives def.
func (l *loader) mode(n *yaml.Node, key string, def Mode) (Mode, error) {
	s, err := l.str(n, key)
	if err != nil {
		return "", err
	}
	switch m := Mode(s); m {
	case "":
		return def, nil
	case Enforce, Shadow:
		return m, nil
	}
	return "", l.errf(n, key, "unknown mode %q; want enforce or shadow", s)
}

// notify reads a notify key: {url, headers}. Absent or null gives def (an
// action takes the file's); at an action, false gives nil: no notices for
// it, whatever the file says.
func (l *loader) notify(n *yaml.Node, def *Notify, atAction bool) (*Notify, error) {
	if isNull(n) {
		return def, nil
	}
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		if atAction && n.Value == "false" {
			return nil, nil
		}
		if atAction {
			return nil, l.errf(n, "notify", "want {url: ...}, or false to send no notices for this action")
		}
		return nil, l.errf(n, "notify", "want {url: ...}")
	}
	f, err := l.fields(n, "notify", notifyKeys...)
	if err != nil {
		return nil, err
	}
	if isNull(f["url"]) {
		return nil, l.errf(n, "notify.url", "required")
	}
	s, err := l.str(f["url"], "notify.url")
	if err != nil {
		return nil, err
	}
	t, err := ParseTemplate(s)
	if err != nil {
		return nil, l.errf(f["url"], "notify.url", "%w", err)
	}
	if len(t.fields) > 0 {
		return nil, l.errf(f["url"], "notify.url", "may not name fields: a notice goes where the policy says, whatever the call")
	}
	out := &Notify{URL: t.String()}
	if !isNull(f["headers"]) {
		if out.Headers, err = l.headers(f["headers"], "notify.headers"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// approvers reads an action's approvers key: {roles: [...], ids: [...]}.
// Only an action with a card has approvers: a form's values are the
// owner's to give.
func (l *loader) approvers(a *Action, n *yaml.Node) (*Approvers, error) {
	if isNull(n) {
		return nil, nil
	}
	if !a.Effect.NeedsCard() {
		return nil, l.errf(n, "approvers", "only destructive and external actions have approvers; a %s call's form is for its owner", a.Effect)
	}
	f, err := l.fields(n, "approvers", approversKeys...)
	if err != nil {
		return nil, err
	}
	out := &Approvers{}
	if out.Roles, err = l.names(f["roles"], "approvers.roles", "role"); err != nil {
		return nil, err
	}
	if out.IDs, err = l.names(f["ids"], "approvers.ids", "id"); err != nil {
		return nil, err
	}
	if len(out.Roles) == 0 && len(out.IDs) == 0 {
		return nil, l.errf(n, "approvers", "names nobody; give roles, ids or both")
	}
	return out, nil
}

// names reads a list of role names or person ids, each once. A role may
// hold no space or comma: the pages read a person's roles as one list
// split at commas and spaces.
func (l *loader) names(n *yaml.Node, key, what string) ([]string, error) {
	if isNull(n) {
		return nil, nil
	}
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		return nil, l.errf(n, key, "must be a list of %ss", what)
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		c = deref(c)
		if c.Kind != yaml.ScalarNode || c.ShortTag() == "!!null" || c.Value == "" {
			return nil, l.errf(c, key, "must be a list of %ss", what)
		}
		v := c.Value
		if strings.IndexFunc(v, unicode.IsControl) >= 0 || strings.TrimSpace(v) != v {
			return nil, l.errf(c, key, "%s %q holds a control character or surrounding space", what, v)
		}
		if what == "role" && strings.ContainsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			return nil, l.errf(c, key, "role %q holds a comma or a space; the pages split a person's roles at those", v)
		}
		if slices.Contains(out, v) {
			return nil, l.errf(c, key, "%s %q given twice", what, v)
		}
		out = append(out, v)
	}
	return out, nil
}

// fourEyes reads an action's four_eyes key: with it on, the owner may not
// confirm their own call, so someone among the approvers must.
func (l *loader) fourEyes(a *Action, n *yaml.Node) (bool, error) {
	on, err := l.boolean(n, "four_eyes")
	if err != nil || !on {
		return false, err
	}
	if a.Approvers == nil {
		return false, l.errf(n, "four_eyes", "needs approvers: with four_eyes on the owner may not confirm, so someone else must be named")
	}
	return true, nil
}

// operate reads the keys of an action that say how the gate is operated:
// mode, notify and decline_note (each the file's when not given),
// approvers and four_eyes.
func (l *loader) operate(a *Action, f map[string]*yaml.Node, file *Policy) error {
	var err error
	if a.Mode, err = l.mode(f["mode"], "mode", file.Mode); err != nil {
		return err
	}
	if a.Notify, err = l.notify(f["notify"], file.Notify, true); err != nil {
		return err
	}
	if a.Approvers, err = l.approvers(a, f["approvers"]); err != nil {
		return err
	}
	if a.FourEyes, err = l.fourEyes(a, f["four_eyes"]); err != nil {
		return err
	}
	a.DeclineNote, err = l.declineNote(a, f["decline_note"], file)
	return err
}
