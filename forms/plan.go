package forms

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode"

	"github.com/toolgate/toolgate/policies"
)

// Outcome is what happens to one read or write call. The zero value is
// Refuse, so a Decision nobody filled in runs nothing.
type Outcome int

const (
	// Refuse sends the call back to the model naming the fields and their
	// rules; nothing runs and nobody is asked.
	Refuse Outcome = iota
	// Pass lets a complete, valid call through untouched (for destructive
	// and external actions: on to the card).
	Pass
	// Ask holds the call for a form: one can hold every field the call
	// left out or got wrong.
	Ask
)

func (o Outcome) String() string {
	switch o {
	case Pass:
		return "pass"
	case Ask:
		return "ask"
	}
	return "refuse"
}

// Decision is Plan's answer for one call. It never holds a value the
// person may not see: Reasons are short rules, and Accepted only what
// validation accepted and is safe to show.
type Decision struct {
	Outcome Outcome
	// Fields: for Ask, the fields the form holds (missing or invalid, plus
	// ask.confirm), in schema order; for Refuse, the fields the refusal
	// names, in schema order, then any the schema does not describe,
	// sorted; nil for Pass.
	Fields []string
	// Reasons are, by field, short value-free rules: "required", "must be
	// integer", "required; reads as a secret", "required; no form can hold
	// an object". The key "" is about the call as a whole ("must be a JSON
	// object", "the tool's schema cannot be used").
	Reasons map[string]string
	// Accepted are, for Ask, the model's values of form fields that
	// validation accepted and that are safe to show (see SafeToShow):
	// strings, json.Numbers, booleans and lists of them.
	Accepted map[string]any
	// Edit says the form corrects a complete call before its card is
	// confirmed (Edit): a field opens on the model's accepted value only,
	// never on a default, and otherwise empty.
	Edit bool
}

// Plan decides what happens to one call of action a. schema is the tool's
// full JSON Schema (raw, from the request's tools or the policy; nil means
// the policy's), args the model's arguments (raw JSON text, maybe invalid).
// It reads nothing but its inputs.
//
//   - A call that is a JSON object valid against the schema as offered to
//     agents (Action.AgentSchema) passes: ask.confirm never makes a
//     complete call wait. Destructive and external calls pass on to their
//     card.
//   - Otherwise a read or write action with ask_for_missing asks, when a
//     form can hold every field the call left out or got wrong (see
//     policies.Action.FormProperties) and the ask configuration fits the
//     schema (Action.CheckAsk; the gate should run that too, to log the
//     mistake).
//   - Everything else is refused, naming every failing field: a call that
//     also misses a field no form can hold or a secret, a call of an action
//     without ask_for_missing, any incomplete destructive or external call,
//     arguments that are not one JSON object, and a schema that cannot be
//     used.
func Plan(a *policies.Action, schema json.RawMessage, args []byte) Decision {
	if a == nil {
		return Decision{Reasons: map[string]string{"": "the action is not declared"}}
	}
	if schema == nil {
		schema = a.Schema
	}
	err := a.CheckArgumentsWith(schema, args)
	if err == nil {
		return Decision{Outcome: Pass}
	}
	var ae *policies.ArgumentError
	if !errors.As(err, &ae) {
		return Decision{Reasons: map[string]string{"": "the tool's schema cannot be used"}}
	}
	reasons := make(map[string]string, len(ae.Fields))
	for _, f := range ae.Fields {
		reasons[f.Field] = f.Rule
	}
	var props []policies.Property
	var propsErr error
	if len(schema) > 0 {
		props, propsErr = a.FormProperties(schema)
	}
	byKey := make(map[string]policies.Property, len(props))
	for _, p := range props {
		byKey[p.Key] = p
	}
	failing := inSchemaOrder(props, reasons)
	refuse := func() Decision {
		named := slices.DeleteFunc(slices.Clone(failing), func(f string) bool { return f == "" })
		return Decision{Fields: named, Reasons: reasons}
	}
	if _, whole := reasons[""]; whole || a.Effect.NeedsCard() || !a.AskForMissing || propsErr != nil {
		return refuse()
	}
	if a.CheckAsk(schema) != nil {
		reasons[""] = "the gate's policy cannot ask for this call"
		return refuse()
	}
	blocked := false
	for _, f := range failing {
		p, ok := byKey[f]
		switch {
		case !ok:
			reasons[f] += "; no form can hold a field the schema does not describe"
			blocked = true
		case p.Unaskable != "":
			reasons[f] += "; " + p.Unaskable
			blocked = true
		}
	}
	if blocked {
		return refuse()
	}
	var confirm []string
	if a.Ask != nil {
		confirm = a.Ask.Confirm
	}
	var fields []string
	for _, p := range props {
		if _, bad := reasons[p.Key]; bad || slices.Contains(confirm, p.Key) {
			fields = append(fields, p.Key)
		}
	}
	d := Decision{Outcome: Ask, Fields: fields, Reasons: reasons}
	given := topLevel(args)
	for _, f := range fields {
		if _, bad := reasons[f]; bad {
			continue
		}
		v, ok := given[f]
		if !ok || v == nil || !SafeToShow(v) {
			continue
		}
		var choices []policies.Choice
		if a.Ask != nil {
			choices = a.Ask.Choices[f]
		}
		if policies.Fits(byKey[f], choices, v) != "" {
			continue
		}
		if d.Accepted == nil {
			d.Accepted = map[string]any{}
		}
		d.Accepted[f] = v
	}
	return d
}

// Edit is the decision of the form that lets the person correct a card's
// editable arguments (card.editable) before confirming: every editable
// field, opening on the model's value where it is safe to show (SafeToShow:
// no control, line-separator, direction or private-use character) and the
// field takes it (the schema's rules as a form checks them); every other
// field opens empty. args are the call's arguments as held.
func Edit(a *policies.Action, args []byte) Decision {
	if a == nil || a.Card == nil || len(a.Card.Editable) == 0 {
		return Decision{}
	}
	d := Decision{Outcome: Ask, Fields: slices.Clone(a.Card.Editable), Edit: true}
	props, err := a.FormProperties(nil)
	if err != nil {
		return d
	}
	given := topLevel(args)
	for _, p := range props {
		if !slices.Contains(d.Fields, p.Key) {
			continue
		}
		v, ok := given[p.Key]
		if !ok || v == nil || !SafeToShow(v) {
			continue
		}
		var choices []policies.Choice
		if a.Ask != nil {
			choices = a.Ask.Choices[p.Key]
		}
		if policies.Fits(p, choices, v) != "" {
			continue
		}
		if d.Accepted == nil {
			d.Accepted = map[string]any{}
		}
		d.Accepted[p.Key] = v
	}
	return d
}

// inSchemaOrder returns the keys of reasons in the order of props, then the
// keys props do not hold, sorted ("" first).
func inSchemaOrder(props []policies.Property, reasons map[string]string) []string {
	out := make([]string, 0, len(reasons))
	known := make(map[string]bool, len(props))
	for _, p := range props {
		known[p.Key] = true
		if _, ok := reasons[p.Key]; ok {
			out = append(out, p.Key)
		}
	}
	var rest []string
	for f := range reasons {
		if !known[f] {
			rest = append(rest, f)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// topLevel decodes the top-level values of a JSON object (numbers as
// json.Number); nil when args is not one.
func topLevel(args []byte) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// SafeToShow reports whether a model's value may open a form: no string in
// it (or in its list) holds a control character (Cc, tabs and newlines
// included), a format character (Cf: the direction marks, embeddings,
// overrides and isolates U+200E, U+200F, U+061C, U+202A–U+202E,
// U+2066–U+2069, zero-width characters, the soft hyphen and the tag
// characters), a line or paragraph separator (U+2028, U+2029) or a private
// use character: any of them can make a text read otherwise than it runs.
// Numbers and booleans are safe; objects are not.
func SafeToShow(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.IndexFunc(x, func(r rune) bool {
			return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co)
		}) < 0
	case json.Number, bool:
		return true
	case []any:
		for _, e := range x {
			if !SafeToShow(e) {
				return false
			}
		}
		return true
	}
	return false
}

// Secret reports whether a field reads as a secret by its key, title or
// description, in any spelling (api_key, apiKey, APIKey, api-key, "API
// key"), singular or plural, or whose key is one of forbidden. No form asks
// for such a field: the call is refused instead, naming it.
//
// The words are policies.ReadsAsSecret's: password, passcode, secret, token,
// API key, access key, PIN, OTP, verification code, backup code, recovery
// phrase, card number, CVV, IBAN and their kin. The check reads words, not
// meaning, so a field it catches by mistake is renamed: pin_to_top (reads as
// a PIN: call it pinned) and max_tokens (reads as a token: call it
// max_length) are known false positives. Words that merely contain a secret
// word are not caught: tokenizer_mode, pinned, secretary, passport.
func Secret(key, title, description string, forbidden []string) bool {
	return policies.ReadsAsSecret(key, title, description, forbidden)
}
