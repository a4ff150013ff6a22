package policies

import (
	"reflect"
	"strings"
	"testing"
)

// emailPolicy is an external action whose card shows validated arguments
// and lets the person correct two of them.
const emailPolicy = `actions:
  send_email:
    effect: external
    schema:
      type: object
      properties:
        to: {type: string, format: email}
        subject: {type: string, maxLength: 200}
        body: {type: string}
        account: {type: string}
        attachments: {type: array, items: {type: object}}
        api_token: {type: string}
      required: [to, subject, body, account]
    card:
      reason: Send this email?
      rows: {To: args.to, Subject: args.subject}
      editable: [subject, body]
    run:
      url: http://mail.internal/accounts/{account}/send
`

func TestEditableLoads(t *testing.T) {
	p := mustLoad(t, "mail.yaml", emailPolicy)
	c := p.Action("send_email").Card
	if !reflect.DeepEqual(c.Editable, []string{"subject", "body"}) {
		t.Errorf("Editable = %v", c.Editable)
	}
	want := []Row{{Label: "To", Path: "args.to", Arg: "to"}, {Label: "Subject", Path: "args.subject", Arg: "subject"}}
	if !reflect.DeepEqual(c.Rows, want) {
		t.Errorf("Rows = %+v, want %+v", c.Rows, want)
	}
	if got := p.Action("send_email").PinnedFields(); !reflect.DeepEqual(got, map[string]string{"account": "run.url"}) {
		t.Errorf("PinnedFields = %v", got)
	}
	// A rule that reads no editable field leaves them editable, and pins
	// what it reads.
	ruled := mustLoad(t, "mail.yaml", strings.Replace(emailPolicy, "    run:\n", "    rules:\n      - {when: 'args.to.endsWith(\"@example.com\") && has(args.attachments)', then: allow}\n    run:\n", 1))
	if got := ruled.Action("send_email").PinnedFields(); !reflect.DeepEqual(got, map[string]string{"account": "run.url", "to": "rules[0].when", "attachments": "rules[0].when"}) {
		t.Errorf("PinnedFields with a rule = %v", got)
	}
	// The action's version covers what may be edited.
	other := mustLoad(t, "mail.yaml", strings.Replace(emailPolicy, "editable: [subject, body]", "editable: [subject]", 1))
	if p.Action("send_email").Version() == other.Action("send_email").Version() {
		t.Error("changing card.editable keeps the action's version")
	}
	// A field may have any name, even one of the card page's own keys
	// (hold, answer, _edit): the page posts fields under a prefix.
	named := mustLoad(t, "mail.yaml", strings.NewReplacer("        account: {type: string}\n", "        account: {type: string}\n        hold: {type: string}\n        answer: {type: string}\n        _edit: {type: boolean}\n", "editable: [subject, body]", "editable: [hold, answer, _edit]").Replace(emailPolicy))
	if got := named.Action("send_email").Card.Editable; !reflect.DeepEqual(got, []string{"hold", "answer", "_edit"}) {
		t.Errorf("Editable = %v", got)
	}
}

func TestEditableMistakes(t *testing.T) {
	const act = `action "send_email": `
	sw := func(oldNew ...string) string {
		out := emailPolicy
		for i := 0; i < len(oldNew); i += 2 {
			if !strings.Contains(out, oldNew[i]) {
				t.Fatalf("emailPolicy lacks %q", oldNew[i])
			}
			out = strings.Replace(out, oldNew[i], oldNew[i+1], 1)
		}
		return out
	}
	tests := []struct{ name, body, want string }{
		{"unknown field", sw("editable: [subject, body]", "editable: [subject, bcc]"), act + `card.editable: names unknown field "bcc"`},
		{"field in the run url", sw("editable: [subject, body]", "editable: [subject, account]"), act + `card.editable: field "account" is used in run.url`},
		{"field in the record url", sw("      rows: {To: args.to, Subject: args.subject}\n", "      record: http://mail.internal/drafts/{subject}\n"), act + `card.editable: field "subject" is used in card.record`},
		{"object field", sw("editable: [subject, body]", "editable: [attachments]"), act + `card.editable: field "attachments" cannot be edited`},
		{"secret field", sw("editable: [subject, body]", "editable: [api_token]"), act + `card.editable: field "api_token" cannot be edited`},
		{"given twice", sw("editable: [subject, body]", "editable: [subject, subject]"), act + `card.editable: field "subject" given twice`},
		{"no schema", "actions:\n  x:\n    effect: external\n    card: {reason: Go, editable: [a]}\n    run: {url: 'http://x/'}\n", `action "x": card.editable: needs the action's schema`},
		{"args row with a record", sw("      rows: {To: args.to", "      record: http://mail.internal/me\n      rows: {To: args.to"), act + "card.rows.To: a card with card.record shows the record's values only"},
		{"args row of an unknown field", sw("To: args.to", "To: args.cc"), act + `card.rows.To: names unknown field "cc"`},
		{"args row of a nested path", sw("To: args.to", "To: args.to.x"), act + "card.rows.To: args. names one top-level argument"},
		{"args row without schema", "actions:\n  x:\n    effect: external\n    card: {reason: Go, rows: {A: args.a}}\n    run: {url: 'http://x/'}\n", `action "x": card.rows.A: an args row needs the action's schema`},
		{"record row without record", sw("To: args.to", "To: to"), act + "card.rows.To: a row needs card.record, or a path args.<field>"},
		{"field a rule reads", sw("    run:\n", "    rules:\n      - {when: 'args.to.endsWith(\"@example.com\")', then: allow}\n      - {when: 'args.body.size() > 10000', then: deny, because: Too long.}\n    run:\n"), act + `card.editable: field "body" is used in rules[1].when`},
		{"args read whole", sw("    run:\n", "    rules:\n      - {when: '[args][0].to == \"x@example.com\"', then: allow}\n    run:\n"), act + `card.editable: field "subject" is used in rules[0].when`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("mail.yaml", []byte(tt.body))
			if err == nil {
				t.Fatalf("loaded; want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "mail.yaml") {
				t.Errorf("error = %q; want the file and %q", err, tt.want)
			}
		})
	}
}
