package forms

import (
	"testing"

	"github.com/toolgate/toolgate/policies"
)

// TestEditOpensOnSafeValuesOnly: the edit decision accepts the model's
// values a person may see and the field takes; a value with a direction
// character, or one the schema refuses, opens empty — never on a default.
func TestEditOpensOnSafeValuesOnly(t *testing.T) {
	p, err := policies.Parse("mail.yaml", []byte(`actions:
  send_mail:
    effect: external
    schema:
      type: object
      properties:
        subject: {type: string, maxLength: 10, default: Hi}
        body: {type: string}
        count: {type: integer, maximum: 3}
      required: [subject, body]
    card:
      reason: Send it?
      editable: [subject, body, count]
    run:
      url: http://mail.internal/send
`))
	if err != nil {
		t.Fatal(err)
	}
	a := p.Action("send_mail")
	d := Edit(a, []byte(`{"subject":"Hello","body":"Hi\u202egnp","count":7}`))
	if d.Outcome != Ask || !d.Edit || len(d.Fields) != 3 {
		t.Fatalf("decision: %+v", d)
	}
	if d.Accepted["subject"] != "Hello" {
		t.Errorf("subject opens on %v", d.Accepted["subject"])
	}
	for _, f := range []string{"body", "count"} {
		if v, ok := d.Accepted[f]; ok {
			t.Errorf("%s opens on %q; want empty", f, v)
		}
	}
	f, err := Build(a, nil, Edit(a, []byte(`{"subject":"far too long a subject","body":"x"}`)), "", Fetched{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range f.Fields() {
		if fd.Key == "subject" && fd.Value != nil {
			t.Errorf("a subject the field refuses opens on %v (the schema's default must not stand in)", fd.Value)
		}
	}
}
