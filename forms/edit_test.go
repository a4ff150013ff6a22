package forms

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/policies"
)

// editMailPolicy is an action whose card lets the person correct five
// fields, each with its own rules: a subject with a length and a default,
// a free body, a bounded count, an email address (a format only the form
// checks) and a tone from a list.
const editMailPolicy = `actions:
  send_mail:
    effect: external
    schema:
      type: object
      properties:
        subject: {type: string, maxLength: 10, default: Hi}
        body: {type: string}
        count: {type: integer, maximum: 3}
        reply_to: {type: string, format: email}
        tone: {type: string, enum: [warm, plain]}
      required: [subject, body]
    card:
      reason: Send it?
      editable: [subject, body, count, reply_to, tone]
    run:
      url: http://mail.internal/send
`

// safeMail are values every field takes and a person may see: each opens
// the edit form on the model's value.
var safeMail = map[string]any{"subject": "Hello", "body": "See you at ten.", "count": json.Number("2"), "reply_to": "bo@example.com", "tone": "warm"}

// TestEditOpensOnSafeValuesOnly: the edit form opens each field on the
// model's value only where a person may see it and the field takes it
// (issue 19 §1). For each unsafe class — a control character (C0, C1, a
// newline, a tab), a line or paragraph separator, a direction character
// (embeddings, overrides, isolates, marks), a value the schema refuses (a
// length, a bound, an enum) and one the form's rules refuse (a format) —
// that field opens empty while the other fields open on the model's safe
// values; never on a default. Build opens an unsafe or unfit value empty
// even when a decision hands it one.
func TestEditOpensOnSafeValuesOnly(t *testing.T) {
	p, err := policies.Parse("mail.yaml", []byte(editMailPolicy))
	if err != nil {
		t.Fatal(err)
	}
	a := p.Action("send_mail")
	opens := func(t *testing.T, args map[string]any) (Decision, map[string]any) {
		t.Helper()
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		d := Edit(a, raw)
		if d.Outcome != Ask || !d.Edit || len(d.Fields) != 5 {
			t.Fatalf("decision: %+v", d)
		}
		f, err := Build(a, nil, d, "", Fetched{})
		if err != nil {
			t.Fatal(err)
		}
		shown := map[string]any{}
		for _, fd := range f.Fields() {
			if fd.Value != nil {
				shown[fd.Key] = fd.Value
			}
		}
		return d, shown
	}
	_, shown := opens(t, safeMail)
	for k, v := range safeMail {
		if shown[k] != v {
			t.Errorf("safe values: %s opens on %v, want %v", k, shown[k], v)
		}
	}

	for _, c := range []struct {
		name, field string
		value       any
		// formOnly: only the form's rules refuse it (a format), so the
		// decision may accept it and Build must not open on it.
		formOnly bool
	}{
		{"C0 control", "body", "ring\x07bell", false},
		{"NUL", "subject", "a\x00b", false},
		{"C1 control (NEL)", "body", "next\u0085line", false},
		{"newline", "body", "two\nlines", false},
		{"tab", "subject", "a\tb", false},
		{"DEL", "body", "a\x7fb", false},
		{"line separator U+2028", "body", "one\u2028two", false},
		{"paragraph separator U+2029", "subject", "one\u2029two", false},
		{"right-to-left override U+202E", "body", "Hi\u202egnp.exe", false},
		{"left-to-right embedding U+202A", "subject", "a\u202ab", false},
		{"pop directional formatting U+202C", "body", "a\u202cb", false},
		{"first strong isolate U+2068", "body", "a\u2068b\u2069", false},
		{"right-to-left isolate U+2067", "subject", "\u2067abc", false},
		{"right-to-left mark U+200F", "body", "a\u200fb", false},
		{"left-to-right mark U+200E", "subject", "a\u200eb", false},
		{"Arabic letter mark U+061C", "body", "a\u061cb", false},
		{"zero-width joiner", "subject", "a\u200db", false},
		{"direction character in an address", "reply_to", "bo@example.com\u202e", false},
		{"schema: longer than maxLength", "subject", "far too long a subject", false},
		{"schema: above maximum", "count", json.Number("7"), false},
		{"schema: not an integer", "count", json.Number("1.5"), false},
		{"schema: another type", "count", "two", false},
		{"schema: not in the enum", "tone", "angry", false},
		{"schema: an object", "body", map[string]any{"text": "hi"}, false},
		{"form rules: not an email address", "reply_to", "not an address", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{}
			for k, v := range safeMail {
				args[k] = v
			}
			args[c.field] = c.value
			d, shown := opens(t, args)
			if v, ok := shown[c.field]; ok {
				t.Errorf("%s opens on %q; want empty", c.field, v)
			}
			if v, ok := d.Accepted[c.field]; ok && !c.formOnly {
				t.Errorf("the decision accepts %s = %q", c.field, v)
			}
			for k, v := range safeMail {
				if k != c.field && shown[k] != v {
					t.Errorf("the safe %s opens on %v, want %v", k, shown[k], v)
				}
			}
		})
	}

	// Nothing given: every field opens empty, the subject's schema
	// default included (an edit shows what the model asked for or
	// nothing).
	if _, shown := opens(t, map[string]any{}); len(shown) != 0 {
		t.Errorf("an empty call opens on %v; want every field empty", shown)
	}

	// Build never trusts a decision: an unsafe or unfit value handed to it
	// opens empty.
	d := Decision{Outcome: Ask, Edit: true, Fields: a.Card.Editable, Accepted: map[string]any{
		"subject": "Hi\u2066", "body": "a\u2028b", "count": json.Number("9"), "reply_to": "nope", "tone": "angry"}}
	f, err := Build(a, nil, d, "", Fetched{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range f.Fields() {
		if fd.Value != nil {
			t.Errorf("a decision's unsafe or unfit %s opens on %q", fd.Key, fd.Value)
		}
	}
}
