package gate

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// mailAction lets the person correct the subject and the body of an email
// before confirming it; the account names the run URL.
const mailAction = `  send_mail:
    effect: external
    schema:
      type: object
      properties:
        to: {type: string}
        subject: {type: string, pattern: "^[^!]*$"}
        body: {type: string}
        account: {type: string}
      required: [to, subject, body, account]
    card:
      reason: Send this email?
      rows: {To: args.to, Subject: args.subject}
      editable: [subject, body]
    run:
      url: APP/accounts/{account}/mail
    reply: Sent.
`

func newEditRig(t *testing.T) *rig {
	r := newRig(t, rigOptions{})
	r.swapPolicy(r.parsePolicy("policy.yaml", func(s string) string { return s + strings.ReplaceAll(mailAction, "APP", r.app.URL) }))
	return r
}

func mailCall(args string) provider.Call {
	return provider.Call{ID: "call_mail", Type: "function", Name: "send_mail", Arguments: []byte(args),
		Raw: []byte(`{"id":"call_mail","type":"function","function":{"name":"send_mail","arguments":` + jsonString(args) + `}}`)}
}

const mailArgs = `{"to":"bo@example.com","subject":"Hello","body":"Hi\u202egnp","account":"team"}`

// TestEditView: the card shows the arguments its rows name, and the edit
// form opens on the model's values only where they are safe to show.
func TestEditView(t *testing.T) {
	r := newEditRig(t)
	step, _ := r.hold(ana, mailCall(mailArgs))
	v, err := r.gate.View(context.Background(), step, ana, "")
	if err != nil {
		t.Fatal(err)
	}
	h := v.Holds[0]
	if h.Card == nil || len(h.Card.Rows) != 2 || h.Card.Rows[1].Value != "Hello" {
		t.Fatalf("card: %+v", h.Card)
	}
	if h.Edit == nil {
		t.Fatal("no edit form")
	}
	fields := h.Edit.Fields()
	if len(fields) != 2 || fields[0].Key != "subject" || fields[0].Value != "Hello" || fields[1].Key != "body" || fields[1].Value != nil {
		t.Errorf("edit fields: %+v", fields)
	}
}

// TestEditRunsExactlyTheConfirmedArguments: the release carries the
// edited arguments, the audit names the changed fields (never values), the
// model reads their names.
func TestEditRunsExactlyTheConfirmedArguments(t *testing.T) {
	r := newEditRig(t)
	ctx := context.Background()
	step, _ := r.hold(ana, mailCall(mailArgs))
	hold := r.step(step)[0].ID
	_, err := r.gate.Confirm(ctx, step, hold, ana, "", Edits{Posted: true, Form: url.Values{"subject": {"Hello team"}, "body": {"See you."}}})
	if err != nil {
		t.Fatal(err)
	}
	calls := r.app.Calls()
	if len(calls) != 1 || string(calls[0].Body) != `{"to":"bo@example.com","subject":"Hello team","body":"See you.","account":"team"}` || calls[0].URI != "/accounts/team/mail" {
		t.Fatalf("the app got %+v", calls)
	}
	h := r.step(step)[0]
	if got := r.gate.outcomeText(h); got != "The person confirmed with changes to: subject, body. Sent." {
		t.Errorf("the model reads %q", got)
	}
	if len(h.Values) != 0 {
		t.Error("the person's values are kept after the run")
	}
	var answered *store.AuditRecord
	for _, rec := range r.auditLog() {
		if rec.Kind == store.EventAnswered && rec.HoldID == hold {
			answered = &rec
		}
		b, _ := json.Marshal(rec)
		if strings.Contains(string(b), "Hello team") || strings.Contains(string(b), "See you") {
			t.Errorf("the audit holds the person's value: %s", b)
		}
	}
	if answered == nil || !slices.Equal(answered.Changed, []string{"subject", "body"}) {
		t.Errorf("the answered event: %+v", answered)
	}
}

// TestEditRefusals: an edit the schema refuses comes back by field; one
// that changes an argument that is not editable is 409; neither claims the
// hold nor runs anything.
func TestEditRefusals(t *testing.T) {
	r := newEditRig(t)
	ctx := context.Background()
	step, _ := r.hold(ana, mailCall(mailArgs))
	hold := r.step(step)[0].ID
	_, err := r.gate.Confirm(ctx, step, hold, ana, "", Edits{Posted: true, Form: url.Values{"subject": {"Hi!"}, "body": {"x"}}})
	var fe FieldErrors
	if !errors.As(err, &fe) || len(fe["subject"]) == 0 {
		t.Errorf("a subject the schema refuses: %v", err)
	}
	for _, e := range []Edits{
		{Posted: true, Form: url.Values{"subject": {"Hi"}, "body": {"x"}, "account": {"other"}}},
		{Form: url.Values{"to": {"eve@example.com"}}},
		{JSON: []byte(`{"subject":"Hi","body":"x","to":"eve@example.com"}`)},
	} {
		if _, err := r.gate.Confirm(ctx, step, hold, ana, "", e); !errors.Is(err, ErrNotEditable) || Status(err) != 409 {
			t.Errorf("edits %+v: %v (status %d), want 409", e, err, Status(err))
		}
	}
	if h := r.step(step)[0]; h.State != store.Waiting || len(r.app.Calls()) != 0 {
		t.Fatalf("a refused edit changed the hold (%s) or ran (%d)", h.State, len(r.app.Calls()))
	}
}

// TestEditOverMCP: a card confirmed on the page with a correction, for an
// MCP client (URL mode): the client's retry goes on with exactly the
// corrected arguments, once, and the tool's result first says which fields
// the person changed.
func TestEditOverMCP(t *testing.T) {
	r := newRig(t, rigOptions{})
	p, err := policies.Parse("policy.yaml", []byte(strings.Replace(withNote(t, strings.ReplaceAll(testPolicy, "APP", r.app.URL)), "    effect: destructive\n", "    effect: destructive\n    mcp: {confirm: true}\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	r.policy = p
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	state, step := r.askMCPConfirm(ana)
	// The URL the client is given leads to the card's page, which shows
	// the edit form as for any other card (and in its JSON view).
	view, err := r.gate.View(context.Background(), step, ana, "")
	if err != nil {
		t.Fatal(err)
	}
	if e := view.Holds[0].Edit; e == nil || len(e.Fields()) != 1 || e.Fields()[0].Key != "note" || e.Fields()[0].Value != nil {
		t.Fatalf("the MCP card's page offers no edit of the note: %+v", view.Holds[0].Edit)
	}
	page, _ := json.Marshal(view)
	if !gjson.GetBytes(page, "holds.0.edit.requestedSchema.properties.note").Exists() {
		t.Errorf("the JSON view holds no edit form: %s", page)
	}
	if _, err := r.gate.Confirm(context.Background(), step, r.step(step)[0].ID, ana, "", Edits{JSON: []byte(`{"note":"typo fixed"}`)}); err != nil {
		t.Fatal(err)
	}
	v := r.retryMCPConfirm(ana, state)
	if !v.Rewritten || string(v.Arguments) != `{"post":1,"note":"typo fixed"}` || v.Relay == nil {
		t.Fatalf("the retry: %+v (%s)", v, v.Result)
	}
	out := r.mcpFront(ana).WrapMCP(context.Background(), v.Relay, []byte(`{"content":[{"type":"text","text":"Deleted."}]}`))
	if got := gjson.GetBytes(out, "content.0.text").String(); got != "The person confirmed with changes to: note." || gjson.GetBytes(out, "content.1.text").String() != "Deleted." {
		t.Errorf("the tool's result: %s", out)
	}
	if strings.Contains(string(out), "typo fixed") {
		t.Error("the model reads the person's value")
	}
	if h := r.step(step)[0]; len(h.Reply) != 0 {
		t.Error("the person's edits are kept after the retry used them")
	}
}
