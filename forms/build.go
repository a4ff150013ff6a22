package forms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/language"

	"github.com/toolgate/toolgate/plaintext"
	"github.com/toolgate/toolgate/policies"
)

// Length caps, in characters, for what a form shows. A longer text is cut
// and ends with an ellipsis.
const (
	MaxMessage     = 200
	MaxLabel       = plaintext.MaxLabel
	MaxDescription = 300
	MaxChoiceLabel = 100
	// MaxChoices caps a field's choices: more make no usable select.
	MaxChoices = 1000
)

// DefaultMessage is the sentence above a form whose action gives none.
const DefaultMessage = "A few details are needed before this can go ahead."

// Form is what the person is asked: MCP's form-mode elicitation params
// ({mode, message, requestedSchema}) plus hints a standard renderer
// ignores. It is the same for the person's page and for an MCP client.
type Form struct {
	Mode    string `json:"mode"`    // always "form"
	Message string `json:"message"` // plain text, at most MaxMessage characters
	// RequestedSchema is MCP's restricted schema: {"type":"object",
	// "properties":{...},"required":[...]}, the properties in the order of
	// the tool's schema, each a string, number, integer, boolean, single
	// select (enum, or oneOf of const and title) or multi-select (array of
	// items enum, or items anyOf of const and title).
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	// Textarea names the text fields shown as several lines.
	Textarea []string `json:"x-toolgate-textarea,omitempty"`
	// NullWhenEmpty names the fields the tool's schema requires but lets
	// be null: the form leaves them optional, and one left empty is sent
	// as null rather than left out (see Merge).
	NullWhenEmpty []string `json:"x-toolgate-null-when-empty,omitempty"`
}

// Fetched are the choices and defaults the gate read, as the person, from
// the action's ask.choices_from and ask.default_from endpoints (see
// ChoicesFromJSON and DefaultFromJSON). A nil map means none were read.
type Fetched struct {
	Choices  map[string][]policies.Choice
	Defaults map[string]any
}

// Build makes the form for decision d (Outcome Ask) of a call of action a,
// whose tool's full JSON Schema is schema (nil means the policy's), for a
// person whose Accept-Language header is acceptLanguage.
//
// The form holds d.Fields in schema order. A field is labelled with its
// title in the person's locale (the action's titles matched against
// acceptLanguage), else the schema's title, else its key as a headline
// (due_on and dueOn read "Due On"). It opens on the model's value when d
// accepted it, else the fetched default, else the action's default, else
// the schema's default, each only when the field would take it and it is
// safe to show. A field is required when the schema offered to agents
// requires it (or validation said it is required) and it is not nullable.
// Choices come from the fetched ones for a choices_from field (those the
// field's enum refuses are dropped), else ask.choices, else the enum.
//
// It fails when d is not an Ask, names a field no form can hold, when the
// ask configuration does not fit the schema, or when a choices_from field's
// choices were not fetched or none of them fits: the call must then be
// refused, never passed.
func Build(a *policies.Action, schema json.RawMessage, d Decision, acceptLanguage string, fetched Fetched) (Form, error) {
	if a == nil || d.Outcome != Ask || len(d.Fields) == 0 {
		return Form{}, errors.New("building a form: the decision asks for nothing")
	}
	if schema == nil {
		schema = a.Schema
	}
	if err := a.CheckAsk(schema); err != nil {
		return Form{}, fmt.Errorf("building a form: %w", err)
	}
	props, err := a.FormProperties(schema)
	if err != nil {
		return Form{}, fmt.Errorf("building a form: %w", err)
	}
	want := make(map[string]bool, len(d.Fields))
	for _, f := range d.Fields {
		want[f] = true
	}
	prefs, _, _ := language.ParseAcceptLanguage(acceptLanguage)
	ask := a.Ask
	if ask == nil {
		ask = &policies.Ask{}
	}
	var fields []Field
	for _, p := range props {
		if !want[p.Key] {
			continue
		}
		delete(want, p.Key)
		if p.Kind == "" {
			return Form{}, fmt.Errorf("building a form: field %q: %s", p.Key, p.Unaskable)
		}
		fd := Field{
			Key:         p.Key,
			Label:       label(a, p, prefs),
			Description: plaintext.Clean(p.Description, MaxDescription),
			Kind:        p.Kind,
			Type:        p.Type,
			Required:    !p.Nullable && (p.Required || strings.HasPrefix(d.Reasons[p.Key], "required")),
			null:        p.Nullable && p.Required,
		}
		switch p.Kind {
		case policies.KindText, policies.KindTextarea, policies.KindEmail, policies.KindURL, policies.KindDate, policies.KindDateTime:
			fd.MinLength, fd.MaxLength = p.MinLength, p.MaxLength
		case policies.KindNumber, policies.KindInteger:
			fd.Minimum, fd.Maximum = p.Minimum, p.Maximum
		case policies.KindMultiselect:
			fd.MinItems, fd.MaxItems = p.MinItems, p.MaxItems
		}
		if fd.Choices, fd.titled, err = choicesFor(ask, p, fetched, prefs); err != nil {
			return Form{}, fmt.Errorf("building a form: field %q: %w", p.Key, err)
		}
		fd.Value = openingValue(fd, p, ask, d, fetched)
		fields = append(fields, fd)
	}
	if len(want) > 0 {
		return Form{}, fmt.Errorf("building a form: field %q is not one of the schema's properties", slices.Sorted(maps.Keys(want))[0])
	}
	f := Form{Mode: "form", Message: plaintext.Clean(ask.Message, MaxMessage), RequestedSchema: requestedSchema(fields)}
	if f.Message == "" {
		f.Message = DefaultMessage
	}
	for _, fd := range fields {
		if fd.Kind == policies.KindTextarea {
			f.Textarea = append(f.Textarea, fd.Key)
		}
		if fd.null {
			f.NullWhenEmpty = append(f.NullWhenEmpty, fd.Key)
		}
	}
	return f, nil
}

// choicesFor returns a field's choices, labelled in the language of prefs
// where the policy gives a label per language, and whether they carry
// titles (from the action) rather than being the enum's bare values.
func choicesFor(ask *policies.Ask, p policies.Property, fetched Fetched, prefs []language.Tag) ([]policies.Choice, bool, error) {
	if _, from := ask.ChoicesFrom[p.Key]; from {
		list, ok := fetched.Choices[p.Key]
		if !ok {
			return nil, false, errors.New("its choices were not fetched")
		}
		var out []policies.Choice
		for _, c := range list {
			v := asType(c.Value, p.Type)
			if !SafeToShow(v) || policies.Fits(enumOnly(p), nil, v) != "" ||
				slices.ContainsFunc(out, func(o policies.Choice) bool { return policies.SameValue(o.Value, v) }) {
				continue
			}
			out = append(out, policies.Choice{Value: v, Label: choiceLabel(c.Label, v)})
			if len(out) == MaxChoices {
				break
			}
		}
		if len(out) == 0 {
			return nil, false, errors.New("none of its fetched choices fits the field")
		}
		return out, true, nil
	}
	if list, ok := ask.Choices[p.Key]; ok {
		out := make([]policies.Choice, len(list))
		for i, c := range list {
			label := c.Label
			if text, _ := c.Labels.In(prefs); text != "" {
				label = text
			}
			out[i] = policies.Choice{Value: c.Value, Label: choiceLabel(label, c.Value)}
		}
		return out, true, nil
	}
	if p.Enum == nil {
		return nil, false, nil
	}
	out := make([]policies.Choice, len(p.Enum))
	for i, v := range p.Enum {
		out[i] = policies.Choice{Value: v, Label: choiceLabel("", v)}
	}
	return out, false, nil
}

// enumOnly is p as a select that checks only type and enum, for fetched
// choices.
func enumOnly(p policies.Property) policies.Property {
	p.Kind = policies.KindSelect
	return p
}

// asType converts a fetched value to the field's type where that reads
// naturally: a number for a string field becomes its text, a string
// holding a number for a number field becomes the number.
func asType(v any, t string) any {
	switch x := v.(type) {
	case json.Number:
		if t == "string" {
			return x.String()
		}
	case string:
		if t == "integer" || t == "number" {
			if n, ok := parseNumber(x); ok {
				return n
			}
		}
	}
	return v
}

func choiceLabel(label string, v any) string {
	if l := plaintext.Clean(label, MaxChoiceLabel); l != "" {
		return l
	}
	return plaintext.Clean(valueString(v), MaxChoiceLabel)
}

// openingValue picks what a field opens on: the model's accepted value,
// the fetched default, the action's default, the schema's default; the
// first the field would take and that is safe to show.
func openingValue(fd Field, p policies.Property, ask *policies.Ask, d Decision, fetched Fetched) any {
	var candidates []any
	if v, ok := d.Accepted[p.Key]; ok {
		candidates = append(candidates, v)
	}
	if d.Edit {
		ask, fetched, p.HasDefault = &policies.Ask{}, Fetched{}, false // an edit opens on the model's value or empty
	}
	if _, from := ask.DefaultFrom[p.Key]; from {
		if v, ok := fetched.Defaults[p.Key]; ok {
			if list, ok := v.([]any); ok && p.Kind == policies.KindMultiselect {
				conv := make([]any, len(list))
				for i, e := range list {
					conv[i] = asType(e, p.Type)
				}
				v = conv
			} else {
				v = asType(v, p.Type)
			}
			candidates = append(candidates, v)
		}
	}
	if v, ok := ask.Defaults[p.Key]; ok {
		candidates = append(candidates, v)
	}
	if p.HasDefault {
		candidates = append(candidates, p.Default)
	}
	for _, v := range candidates {
		if v != nil && SafeToShow(v) && len(checkValue(fd, v)) == 0 {
			return v
		}
	}
	return nil
}

// label is a field's label for a person whose language preferences are
// prefs.
func label(a *policies.Action, p policies.Property, prefs []language.Tag) string {
	if byLocale := a.Titles[p.Key]; len(byLocale) > 0 && len(prefs) > 0 {
		locales := slices.Sorted(maps.Keys(byLocale))
		tags := make([]language.Tag, 0, len(locales))
		keep := locales[:0:0]
		for _, l := range locales {
			if t, err := language.Parse(l); err == nil {
				tags = append(tags, t)
				keep = append(keep, l)
			}
		}
		if len(tags) > 0 {
			_, i, conf := language.NewMatcher(tags).Match(prefs...)
			if conf != language.No {
				if s := plaintext.Clean(byLocale[keep[i]], MaxLabel); s != "" {
					return s
				}
			}
		}
	}
	if s := plaintext.Clean(p.Title, MaxLabel); s != "" {
		return s
	}
	return plaintext.Clean(Headline(p.Key), MaxLabel)
}

// Headline writes a field key as a label: words split at separators and
// case changes, each starting with a capital (due_on and dueOn read "Due
// On", api-key "Api Key", userID "User ID", userIDs "User IDs").
func Headline(key string) string {
	var words []string
	var cur []rune
	runes := []rune(key)
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = nil
		}
	}
	for i, r := range runes {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if len(cur) > 0 {
			prev := cur[len(cur)-1]
			if unicode.IsLower(prev) && unicode.IsUpper(r) ||
				unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(runes) && unicode.IsLower(runes[i+1]) &&
					!(runes[i+1] == 's' && (i+2 == len(runes) || !unicode.IsLetter(runes[i+2]))) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	for i, w := range words {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		words[i] = string(r)
	}
	if len(words) == 0 {
		return key
	}
	return strings.Join(words, " ")
}

// requestedSchema writes the MCP restricted schema of fields by hand, so
// the properties keep their order.
func requestedSchema(fields []Field) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	var required []string
	for i, fd := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(&b, fd.Key)
		b.WriteByte(':')
		writeProperty(&b, fd)
		if fd.Required {
			required = append(required, fd.Key)
		}
	}
	b.WriteString(`},"required":`)
	if required == nil {
		required = []string{}
	}
	writeJSON(&b, required)
	b.WriteByte('}')
	return b.Bytes()
}

// writeProperty writes one field's property: type, title, description,
// then the keywords of its kind, then default.
func writeProperty(b *bytes.Buffer, fd Field) {
	kw := func(key string, v any) {
		b.WriteString(`,"` + key + `":`)
		writeJSON(b, v)
	}
	typ := fd.Type
	if fd.Kind == policies.KindMultiselect {
		typ = "array"
	}
	b.WriteString(`{"type":`)
	writeJSON(b, typ)
	kw("title", fd.Label)
	if fd.Description != "" {
		kw("description", fd.Description)
	}
	if f := formatOf(fd.Kind); f != "" {
		kw("format", f)
	}
	if fd.MinLength != nil {
		kw("minLength", *fd.MinLength)
	}
	if fd.MaxLength != nil {
		kw("maxLength", *fd.MaxLength)
	}
	if fd.Minimum != "" {
		kw("minimum", fd.Minimum)
	}
	if fd.Maximum != "" {
		kw("maximum", fd.Maximum)
	}
	if fd.MinItems != nil {
		kw("minItems", *fd.MinItems)
	}
	if fd.MaxItems != nil {
		kw("maxItems", *fd.MaxItems)
	}
	switch {
	case fd.Kind == policies.KindMultiselect && fd.titled:
		b.WriteString(`,"items":{`)
		if fd.Type != "string" {
			b.WriteString(`"type":`)
			writeJSON(b, fd.Type)
			b.WriteByte(',')
		}
		b.WriteString(`"anyOf":`)
		writeTitled(b, fd.Choices)
		b.WriteByte('}')
	case fd.Kind == policies.KindMultiselect:
		b.WriteString(`,"items":{"type":`)
		writeJSON(b, fd.Type)
		b.WriteString(`,"enum":`)
		writeValues(b, fd.Choices)
		b.WriteByte('}')
	case fd.Kind == policies.KindSelect && fd.titled:
		b.WriteString(`,"oneOf":`)
		writeTitled(b, fd.Choices)
	case fd.Kind == policies.KindSelect:
		b.WriteString(`,"enum":`)
		writeValues(b, fd.Choices)
	}
	if fd.Value != nil {
		kw("default", fd.Value)
	}
	b.WriteByte('}')
}

func writeTitled(b *bytes.Buffer, choices []policies.Choice) {
	b.WriteByte('[')
	for i, c := range choices {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"const":`)
		writeJSON(b, c.Value)
		b.WriteString(`,"title":`)
		writeJSON(b, c.Label)
		b.WriteByte('}')
	}
	b.WriteByte(']')
}

func writeValues(b *bytes.Buffer, choices []policies.Choice) {
	b.WriteByte('[')
	for i, c := range choices {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(b, c.Value)
	}
	b.WriteByte(']')
}

// writeJSON writes v as compact JSON, leaving <, > and & readable (the
// page escapes what it shows).
func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.WriteString("null\n") // only an invalid json.Number; Build never makes one
	}
	b.Truncate(b.Len() - 1)
}

// formatOf is the MCP format of a text kind ("" for the others).
func formatOf(kind string) string {
	switch kind {
	case policies.KindEmail:
		return "email"
	case policies.KindURL:
		return "uri"
	case policies.KindDate:
		return "date"
	case policies.KindDateTime:
		return "date-time"
	}
	return ""
}
