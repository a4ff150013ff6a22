package forms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/toolgate/toolgate/policies"
)

// Field is one field of a form, as an HTML renderer draws it. Fields are
// read back from the form's requestedSchema, so a renderer and Check see
// exactly what an MCP client sees.
type Field struct {
	Key         string
	Label       string // plain text; the page escapes it
	Description string // plain text; "" when none
	// Kind is the control: text, textarea, email, url, date, datetime,
	// number, integer, checkbox, select or multiselect (policies.Kind*).
	Kind string
	// Type is the JSON type of the value, or of each item of a
	// multiselect: string, integer, number or boolean.
	Type string
	// Required says the person must answer. A checkbox and a multiselect
	// always answer (false, []), so a renderer must not put HTML's
	// required on them: on a checkbox it would force a tick.
	Required bool
	// Bounds, for the browser's own checks and for Check: nil or "" when
	// none. Lengths count characters.
	MinLength, MaxLength *int
	Minimum, Maximum     json.Number
	MinItems, MaxItems   *int
	// Choices are a select's or multiselect's picks, in order.
	Choices []policies.Choice
	// Value is what the field opens on (a string, json.Number, bool, or a
	// multiselect's []any); nil when it opens empty. fmt.Sprint gives the
	// text a form control holds for a string or number.
	Value any

	titled bool // the choices carry titles (oneOf/anyOf), not bare enum values
	null   bool // left empty, it answers null (Form.NullWhenEmpty)
}

// Fields returns the form's fields in order, for a renderer; nil when the
// form cannot be read (Check then refuses every answer).
func (f Form) Fields() []Field {
	fields, err := f.fields()
	if err != nil {
		return nil
	}
	return fields
}

// propJSON is one property of a requestedSchema as Build writes it.
type propJSON struct {
	Type        string      `json:"type"`
	Title       string      `json:"title"`
	Description string      `json:"description"`
	Format      string      `json:"format"`
	MinLength   *int        `json:"minLength"`
	MaxLength   *int        `json:"maxLength"`
	Minimum     json.Number `json:"minimum"`
	Maximum     json.Number `json:"maximum"`
	MinItems    *int        `json:"minItems"`
	MaxItems    *int        `json:"maxItems"`
	Enum        []any       `json:"enum"`
	OneOf       []titled    `json:"oneOf"`
	Items       *struct {
		Type  string   `json:"type"`
		Enum  []any    `json:"enum"`
		AnyOf []titled `json:"anyOf"`
	} `json:"items"`
	Default any `json:"default"`
}

type titled struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

// fields reads the form's requestedSchema, keeping the properties' order.
func (f Form) fields() ([]Field, error) {
	var rs struct {
		Type       string          `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(f.RequestedSchema, &rs); err != nil || rs.Type != "object" {
		return nil, errors.New("the requested schema is not an object schema")
	}
	dec := json.NewDecoder(bytes.NewReader(rs.Properties))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("the requested schema has no properties")
	}
	var out []Field
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := kt.(string)
		var p propJSON
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("field %q: %w", key, err)
		}
		if slices.ContainsFunc(out, func(o Field) bool { return o.Key == key }) {
			return nil, fmt.Errorf("field %q given twice", key)
		}
		fd, err := p.field(key, f)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", key, err)
		}
		fd.Required = slices.Contains(rs.Required, key)
		out = append(out, fd)
	}
	if len(out) == 0 {
		return nil, errors.New("the form holds no field")
	}
	return out, nil
}

// field turns a property back into a Field.
func (p propJSON) field(key string, f Form) (Field, error) {
	fd := Field{
		Key: key, Label: p.Title, Description: p.Description, Type: p.Type,
		MinLength: p.MinLength, MaxLength: p.MaxLength, Minimum: p.Minimum, Maximum: p.Maximum,
		MinItems: p.MinItems, MaxItems: p.MaxItems, Value: p.Default,
		null: slices.Contains(f.NullWhenEmpty, key),
	}
	switch {
	case p.Type == "array":
		if p.Items == nil {
			return fd, errors.New("a list without items")
		}
		fd.Kind, fd.Type = policies.KindMultiselect, p.Items.Type
		if p.Items.AnyOf != nil {
			fd.Choices, fd.titled = fromTitled(p.Items.AnyOf), true
		} else {
			fd.Choices = fromEnum(p.Items.Enum)
		}
		if fd.Type == "" {
			fd.Type = "string"
		}
	case p.OneOf != nil:
		fd.Kind, fd.Choices, fd.titled = policies.KindSelect, fromTitled(p.OneOf), true
	case p.Enum != nil:
		fd.Kind, fd.Choices = policies.KindSelect, fromEnum(p.Enum)
	case p.Type == "boolean":
		fd.Kind = policies.KindCheckbox
	case p.Type == "integer":
		fd.Kind = policies.KindInteger
	case p.Type == "number":
		fd.Kind = policies.KindNumber
	case p.Type == "string":
		switch p.Format {
		case "email":
			fd.Kind = policies.KindEmail
		case "uri":
			fd.Kind = policies.KindURL
		case "date":
			fd.Kind = policies.KindDate
		case "date-time":
			fd.Kind = policies.KindDateTime
		default:
			fd.Kind = policies.KindText
			if slices.Contains(f.Textarea, key) {
				fd.Kind = policies.KindTextarea
			}
		}
	default:
		return fd, fmt.Errorf("no form control holds type %q", p.Type)
	}
	switch fd.Type {
	case "string", "integer", "number", "boolean":
	default:
		return fd, fmt.Errorf("no form control holds type %q", fd.Type)
	}
	if (fd.Kind == policies.KindSelect || fd.Kind == policies.KindMultiselect) && len(fd.Choices) == 0 {
		return fd, errors.New("a choice without choices")
	}
	return fd, nil
}

func fromTitled(list []titled) []policies.Choice {
	out := make([]policies.Choice, len(list))
	for i, t := range list {
		out[i] = policies.Choice{Value: t.Const, Label: t.Title}
	}
	return out
}

func fromEnum(list []any) []policies.Choice {
	out := make([]policies.Choice, len(list))
	for i, v := range list {
		out[i] = policies.Choice{Value: v, Label: choiceLabel("", v)}
	}
	return out
}

// valueString is the text a form control holds for a string or number.
func valueString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return fmt.Sprint(v)
}
