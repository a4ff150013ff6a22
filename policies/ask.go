package policies

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/text/language"
)

// Ask shapes the form of an AskForMissing action. Every field it names must
// be one a form can hold; Action.CheckAsk checks that against a schema.
type Ask struct {
	// Message is the one sentence above the form, as plain text without a
	// URL; "" means the gate's default. Longer than 200 characters, it is
	// cut.
	Message string
	// Confirm are fields every form of the action shows for review, opening
	// on the model's value when validation accepted it. They never make a
	// complete call wait.
	Confirm []string
	// Textarea are text fields shown as several lines.
	Textarea []string
	// Choices are a field's choices, in the file's order: one pick for a
	// single value, several for a list. With an enum, every value must be
	// in it; without one, the choices close the form's select.
	Choices map[string][]Choice
	// Defaults are the values fields open on when the model gave none that
	// validation accepted (the file's default key).
	Defaults map[string]any
	// ChoicesFrom are GET endpoints the gate reads as the person, at run
	// time, for a field's choices: a JSON list of {"value": ..., "label":
	// ...}. They may not name fields of the call.
	ChoicesFrom map[string]*Template
	// DefaultFrom are GET endpoints the gate reads as the person for a
	// field's default: {"value": ...}.
	DefaultFrom map[string]*Template
}

// Choice is one pick of a select: the value the field takes (a string or a
// json.Number) and the label the person reads.
type Choice struct {
	Value any
	// Label is the plain label, or the en entry of one given per language.
	Label string
	// Labels is the label per language when the file gives one ({en:
	// Urgent, de: Dringend}); forms show the one matching the person's
	// Accept-Language. Nil for a plain label and for fetched choices.
	Labels Texts
}

// hasChoices reports whether the ask gives field choices, from the file or
// an endpoint. It is safe on a nil *Ask.
func (k *Ask) hasChoices(field string) bool {
	if k == nil {
		return false
	}
	_, ok := k.Choices[field]
	_, from := k.ChoicesFrom[field]
	return ok || from
}

// askNodes are the nodes of an action's form keys, by key path, for the line
// of a mistake found once the schema is read.
type askNodes map[string]*yaml.Node

// askKeys reads an action's ask_for_missing, required_for_agents, titles,
// ask and forbidden_keys into a. fileForbidden is the file's forbidden_keys.
func (l *loader) askKeys(a *Action, f map[string]*yaml.Node, fileForbidden []string) (askNodes, error) {
	nodes := askNodes{}
	for _, k := range [...]string{"ask_for_missing", "required_for_agents", "titles", "ask", "forbidden_keys"} {
		if !isNull(f[k]) {
			nodes[k] = f[k]
		}
	}
	var err error
	if a.AskForMissing, err = l.boolean(f["ask_for_missing"], "ask_for_missing"); err != nil {
		return nil, err
	}
	if a.RequiredForAgents, err = l.strList(f["required_for_agents"], "required_for_agents"); err != nil {
		return nil, err
	}
	if a.Titles, err = l.titles(f["titles"]); err != nil {
		return nil, err
	}
	if !isNull(f["ask"]) {
		if a.Ask, err = l.ask(f["ask"], nodes); err != nil {
			return nil, err
		}
	}
	own, err := l.strList(f["forbidden_keys"], "forbidden_keys")
	if err != nil {
		return nil, err
	}
	for _, k := range slices.Concat(own, fileForbidden) {
		if !slices.Contains(a.ForbiddenKeys, k) {
			a.ForbiddenKeys = append(a.ForbiddenKeys, k)
		}
	}
	if a.Effect.NeedsCard() {
		for _, k := range [...]string{"ask_for_missing", "ask"} {
			if n := nodes[k]; n != nil && !(k == "ask_for_missing" && !a.AskForMissing) {
				return nil, l.errf(n, k, "%s actions never ask: a call that leaves fields out is refused, a complete one shows the card", a.Effect)
			}
		}
	}
	if a.Ask != nil && !a.AskForMissing {
		return nil, l.errf(nodes["ask"], "ask", "needs ask_for_missing: true; without it no form is shown")
	}
	return nodes, nil
}

// checkAskAtLoad runs CheckAsk against the action's own schema, placing a
// mistake at its line.
func (l *loader) checkAskAtLoad(a *Action, nodes askNodes) error {
	e := a.checkAsk(a.Schema)
	if e == nil {
		return nil
	}
	e.File = l.file
	for k := e.Key; k != ""; {
		if n := nodes[k]; n != nil {
			e.Line = n.Line
			break
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return e
}

// ask reads an action's ask key.
func (l *loader) ask(n *yaml.Node, nodes askNodes) (*Ask, error) {
	f, err := l.fields(n, "ask", askKeyNames...)
	if err != nil {
		return nil, err
	}
	for k, v := range f {
		nodes["ask."+k] = v
	}
	k := &Ask{}
	if k.Message, err = l.str(f["message"], "ask.message"); err != nil {
		return nil, err
	}
	if hasURL(k.Message) {
		return nil, l.errf(f["message"], "ask.message", "may not hold a URL: the person reads it as the app's")
	}
	if k.Confirm, err = l.strList(f["confirm"], "ask.confirm"); err != nil {
		return nil, err
	}
	if k.Textarea, err = l.strList(f["textarea"], "ask.textarea"); err != nil {
		return nil, err
	}
	if cn := f["choices"]; !isNull(cn) {
		pairs, err := l.pairs(cn, "ask.choices")
		if err != nil {
			return nil, err
		}
		k.Choices = make(map[string][]Choice, len(pairs))
		for _, kv := range pairs {
			nodes["ask.choices."+kv.key.Value] = kv.value
			if k.Choices[kv.key.Value], err = l.choices(kv.value, "ask.choices."+kv.key.Value); err != nil {
				return nil, err
			}
		}
	}
	if dn := f["default"]; !isNull(dn) {
		pairs, err := l.pairs(dn, "ask.default")
		if err != nil {
			return nil, err
		}
		k.Defaults = make(map[string]any, len(pairs))
		for _, kv := range pairs {
			key := "ask.default." + kv.key.Value
			nodes[key] = kv.value
			if k.Defaults[kv.key.Value], err = l.defaultValue(kv.value, key); err != nil {
				return nil, err
			}
		}
	}
	if k.ChoicesFrom, err = l.fromURLs(f["choices_from"], "ask.choices_from", nodes); err != nil {
		return nil, err
	}
	if k.DefaultFrom, err = l.fromURLs(f["default_from"], "ask.default_from", nodes); err != nil {
		return nil, err
	}
	return k, nil
}

// choices reads one field's choices, in order: a mapping of value to
// label, a sequence of one-key mappings, or a sequence of values (each its
// own label).
func (l *loader) choices(n *yaml.Node, key string) ([]Choice, error) {
	var pairs []kv
	switch n.Kind {
	case yaml.MappingNode:
		var err error
		if pairs, err = l.pairs(n, key); err != nil {
			return nil, err
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			item = deref(item)
			switch {
			case item.Kind == yaml.ScalarNode:
				pairs = append(pairs, kv{item, nil})
			case item.Kind == yaml.MappingNode && len(item.Content) == 2:
				ps, err := l.pairs(item, key)
				if err != nil {
					return nil, err
				}
				pairs = append(pairs, ps...)
			default:
				return nil, l.errf(item, key, "each choice is a value or a one-key mapping of value to label")
			}
		}
	default:
		return nil, l.errf(n, key, "must be a mapping of value to label, or a list")
	}
	if len(pairs) == 0 {
		return nil, l.errf(n, key, "needs at least one choice")
	}
	out := make([]Choice, 0, len(pairs))
	for _, p := range pairs {
		v, err := l.choiceValue(p.key, key)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(c Choice) bool { return sameValue(c.Value, v) }) {
			return nil, l.errf(p.key, key, "choice %s given twice", valueText(v))
		}
		label, labels, err := l.localized(p.value, key+"."+valueText(v))
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(label) == "" {
			label = fmt.Sprint(v) // a string or json.Number: its text
		}
		for _, text := range append([]string{label}, slices.Collect(maps.Values(labels))...) {
			if hasURL(text) {
				return nil, l.errf(p.value, key, "the label of choice %s may not hold a URL", valueText(v))
			}
		}
		out = append(out, Choice{Value: v, Label: label, Labels: labels})
	}
	return out, nil
}

// choiceValue reads a choice's value: a string or a number, by its YAML tag
// (quote a number a string field takes: "1").
func (l *loader) choiceValue(n *yaml.Node, key string) (any, error) {
	switch n.ShortTag() {
	case "!!str":
		return n.Value, nil
	case "!!int", "!!float":
		num, err := jsonNumber(n)
		if err != nil {
			return nil, l.errf(n, key, "%w", err)
		}
		return json.Number(num), nil
	}
	return nil, l.errf(n, key, "a choice is a string or a number, not %s", n.Value)
}

// defaultValue reads a default: a string, number, boolean or list of them.
func (l *loader) defaultValue(n *yaml.Node, key string) (any, error) {
	if isNull(n) {
		return nil, l.errf(n, key, "a default may not be null; leave the key out")
	}
	w := &jsonWriter{l: l}
	if err := w.value(n, key, 0); err != nil {
		return nil, err
	}
	v, err := decodeOrdered(w.buf.Bytes())
	if err != nil || !plainValue(v) {
		return nil, l.errf(n, key, "a default is a string, number, boolean or list of strings or numbers")
	}
	return v, nil
}

// plainValue reports whether v is what a form field holds: a string,
// number or boolean, or a list of strings and numbers.
func plainValue(v any) bool {
	switch x := v.(type) {
	case string, json.Number, bool:
		return true
	case []any:
		for _, e := range x {
			switch e.(type) {
			case string, json.Number:
			default:
				return false
			}
		}
		return true
	}
	return false
}

// fromURLs reads choices_from or default_from: field → GET URL. The URL may
// not name fields: it is read as the person to build the form, and the
// call's arguments are the model's words.
func (l *loader) fromURLs(n *yaml.Node, key string, nodes askNodes) (map[string]*Template, error) {
	if isNull(n) {
		return nil, nil
	}
	pairs, err := l.pairs(n, key)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Template, len(pairs))
	for _, kv := range pairs {
		k := key + "." + kv.key.Value
		nodes[k] = kv.value
		s, err := l.str(kv.value, k)
		if err != nil {
			return nil, err
		}
		t, err := ParseTemplate(s)
		if err != nil {
			return nil, l.errf(kv.value, k, "%w", err)
		}
		if len(t.fields) > 0 {
			return nil, l.errf(kv.value, k, "may not name fields: it is read as the person, never from the call")
		}
		out[kv.key.Value] = t
	}
	return out, nil
}

// titles reads an action's titles: field → locale → title.
func (l *loader) titles(n *yaml.Node) (map[string]map[string]string, error) {
	if isNull(n) {
		return nil, nil
	}
	fields, err := l.pairs(n, "titles")
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]string, len(fields))
	for _, f := range fields {
		key := "titles." + f.key.Value
		locales, err := l.pairs(f.value, key)
		if err != nil {
			return nil, err
		}
		byLocale := make(map[string]string, len(locales))
		for _, loc := range locales {
			if _, err := language.Parse(loc.key.Value); err != nil {
				return nil, l.errf(loc.key, key, "%q is not a BCP 47 language tag", loc.key.Value)
			}
			title, err := l.str(loc.value, key+"."+loc.key.Value)
			if err != nil {
				return nil, err
			}
			if strings.TrimSpace(title) == "" {
				return nil, l.errf(loc.value, key+"."+loc.key.Value, "a title may not be empty")
			}
			if hasURL(title) {
				return nil, l.errf(loc.value, key+"."+loc.key.Value, "may not hold a URL")
			}
			byLocale[loc.key.Value] = title
		}
		out[f.key.Value] = byLocale
	}
	return out, nil
}

// boolean reads true or false; absent or null is false.
func (l *loader) boolean(n *yaml.Node, key string) (bool, error) {
	if isNull(n) {
		return false, nil
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		return false, l.errf(n, key, "must be true or false")
	}
	return b, nil
}

// strList reads a list of field names, each once; absent or null is nil.
func (l *loader) strList(n *yaml.Node, key string) ([]string, error) {
	if isNull(n) {
		return nil, nil
	}
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		return nil, l.errf(n, key, "must be a list of field names")
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		c = deref(c)
		if c.Kind != yaml.ScalarNode || strings.TrimSpace(c.Value) == "" {
			return nil, l.errf(c, key, "must be a list of field names")
		}
		if slices.Contains(out, c.Value) {
			return nil, l.errf(c, key, "field %q given twice", c.Value)
		}
		out = append(out, c.Value)
	}
	return out, nil
}

// hasURL reports text that looks like it holds a link. MCP: servers should
// not put URLs in forms; a link in the app's words would read as the app's.
func hasURL(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "://") || strings.Contains(s, "www.")
}

// CheckAsk checks the action's form configuration against schema, a tool's
// full JSON Schema (nil means the policy's): required_for_agents and titles
// must name properties, and every field ask names must be one a form can
// hold (see FormProperties); textarea must name text fields; choices must be
// of the field's type and inside its enum; defaults must fit their fields.
// The loader runs it when the policy gives a schema; the gate runs it when
// the schema comes from the request's tools, and refuses the call when it
// fails. The error is an *Error naming the action, the key and the field
// (its File is "" at run time).
func (a *Action) CheckAsk(schema json.RawMessage) error {
	if e := a.checkAsk(schema); e != nil {
		return e
	}
	return nil
}

func (a *Action) checkAsk(schema json.RawMessage) *Error {
	if len(a.RequiredForAgents) == 0 && len(a.Titles) == 0 && a.Ask == nil {
		return nil
	}
	fail := func(key, field, format string, args ...any) *Error {
		return &Error{Action: a.Name, Key: key, Err: fmt.Errorf("field %q: "+format, append([]any{field}, args...)...)}
	}
	props, err := a.FormProperties(schema)
	if err != nil {
		return &Error{Action: a.Name, Key: "schema", Err: err}
	}
	byKey := make(map[string]Property, len(props))
	for _, p := range props {
		byKey[p.Key] = p
	}
	for _, f := range a.RequiredForAgents {
		if _, ok := byKey[f]; !ok {
			return fail("required_for_agents", f, "is not one of the schema's properties")
		}
	}
	for _, f := range slices.Sorted(maps.Keys(a.Titles)) {
		if _, ok := byKey[f]; !ok {
			return fail("titles", f, "is not one of the schema's properties")
		}
	}
	k := a.Ask
	if k == nil {
		return nil
	}
	// offered returns the field's property when a form can hold it.
	offered := func(key, f string) (Property, *Error) {
		p, ok := byKey[f]
		if !ok {
			return p, fail(key, f, "is not one the schema offers to agents")
		}
		if p.Unaskable != "" {
			return p, fail(key, f, "%s", p.Unaskable)
		}
		return p, nil
	}
	for _, f := range k.Confirm {
		if _, e := offered("ask.confirm", f); e != nil {
			return e
		}
	}
	for _, f := range k.Textarea {
		p, e := offered("ask.textarea", f)
		if e != nil {
			return e
		}
		if p.Kind != KindTextarea {
			return fail("ask.textarea", f, "textarea is for text; the field is a %s", p.Kind)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(k.Choices)) {
		key := "ask.choices." + f
		p, e := offered(key, f)
		if e != nil {
			return e
		}
		if p.Kind != KindSelect && p.Kind != KindMultiselect {
			return fail(key, f, "choices are for text, numbers and lists; the field is a %s", p.Kind)
		}
		for _, c := range k.Choices[f] {
			if !ofType(c.Value, p.Type) {
				return fail(key, f, "choice %s is not of the field's type %s (quote a number a string field takes)", valueText(c.Value), p.Type)
			}
			if p.Enum != nil && !slices.ContainsFunc(p.Enum, func(e any) bool { return sameValue(e, c.Value) }) {
				return fail(key, f, "choice %s is outside the field's enum", valueText(c.Value))
			}
		}
	}
	for _, f := range slices.Sorted(maps.Keys(k.ChoicesFrom)) {
		key := "ask.choices_from." + f
		p, e := offered(key, f)
		if e != nil {
			return e
		}
		if p.Kind != KindSelect && p.Kind != KindMultiselect {
			return fail(key, f, "choices are for text, numbers and lists; the field is a %s", p.Kind)
		}
		if _, both := k.Choices[f]; both {
			return fail(key, f, "has ask.choices too; give one of them")
		}
	}
	for _, f := range slices.Sorted(maps.Keys(k.Defaults)) {
		key := "ask.default." + f
		p, e := offered(key, f)
		if e != nil {
			return e
		}
		if _, both := k.DefaultFrom[f]; both {
			return fail(key, f, "has ask.default_from too; give one of them")
		}
		if rule := Fits(p, k.Choices[f], k.Defaults[f]); rule != "" {
			return fail(key, f, "the default does not fit the field: %s", rule)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(k.DefaultFrom)) {
		if _, e := offered("ask.default_from."+f, f); e != nil {
			return e
		}
	}
	return nil
}

// Fits checks a value a form field would open on or take (a default, a
// fetched default, an accepted model value) against the property and the
// field's choices (nil when it has none): the shape its Kind holds, the
// enum and choices, lengths, bounds and counts. It returns a short,
// value-free rule ("must be one of the choices", "at most 120 characters"),
// or "" when the value fits. Formats are not checked here.
func Fits(p Property, choices []Choice, v any) string {
	allowed := func(x any) bool {
		if p.Enum != nil && !slices.ContainsFunc(p.Enum, func(e any) bool { return sameValue(e, x) }) {
			return false
		}
		return choices == nil || slices.ContainsFunc(choices, func(c Choice) bool { return sameValue(c.Value, x) })
	}
	switch p.Kind {
	case "":
		return p.Unaskable
	case KindCheckbox:
		if _, ok := v.(bool); !ok {
			return "must be true or false"
		}
		return ""
	case KindMultiselect:
		list, ok := v.([]any)
		if !ok {
			return "must be a list"
		}
		for i, x := range list {
			if !ofType(x, p.Type) || !allowed(x) {
				return "must be one of the choices"
			}
			if slices.ContainsFunc(list[:i], func(y any) bool { return sameValue(x, y) }) {
				return "items must be unique"
			}
		}
		if p.MinItems != nil && len(list) < *p.MinItems {
			return fmt.Sprintf("at least %d items", *p.MinItems)
		}
		if p.MaxItems != nil && len(list) > *p.MaxItems {
			return fmt.Sprintf("at most %d items", *p.MaxItems)
		}
		return ""
	}
	if !ofType(v, p.Type) {
		return "must be " + p.Type
	}
	if p.Kind == KindSelect {
		if !allowed(v) {
			return "must be one of the choices"
		}
		return ""
	}
	switch x := v.(type) {
	case string:
		n := len([]rune(x))
		if p.MinLength != nil && n < *p.MinLength {
			return fmt.Sprintf("at least %d characters", *p.MinLength)
		}
		if p.MaxLength != nil && n > *p.MaxLength {
			return fmt.Sprintf("at most %d characters", *p.MaxLength)
		}
	case json.Number:
		r, _ := ratOf(x)
		if m, ok := ratOf(p.Minimum); ok && r.Cmp(m) < 0 {
			return "minimum " + p.Minimum.String()
		}
		if m, ok := ratOf(p.Maximum); ok && r.Cmp(m) > 0 {
			return "maximum " + p.Maximum.String()
		}
	}
	return ""
}

// sameValue compares two JSON values as JSON Schema's enum does: numbers
// by value (1 and 1.0 are the same), strings and booleans exactly.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		rx, okx := ratOf(x)
		ry, oky := ratOf(y)
		return okx && oky && rx.Cmp(ry) == 0
	case string, bool:
		return a == b
	}
	return false
}

// SameValue reports whether a and b are the same choice value: numbers
// (json.Number) by value, strings exactly.
func SameValue(a, b any) bool { return sameValue(a, b) }

// valueText writes a choice value from the policy for an error message.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case json.Number:
		return x.String()
	}
	return fmt.Sprint(v)
}
