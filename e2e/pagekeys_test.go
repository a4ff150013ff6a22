package e2e

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/toolgate/toolgate/internal/testkit"
)

// fileTicket is a form whose fields have the names of the page's own
// post keys (answer, hold, _edit, decline_note): the names come from the
// action's schema, which no load-time check may refuse for a form.
const fileTicket = `
  file_ticket:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        subject: {type: string, title: Subject}
        answer: {type: string, title: Answer}
        hold: {type: string, title: Hold}
        _edit: {type: string, title: Edit}
        decline_note: {type: string, title: Note}
      required: [subject, answer, hold, _edit, decline_note]
    run:
      url: APP/tickets
`

// TestFormFieldsNamedLikeThePagesKeys: a form asks for fields named
// answer, hold, _edit and decline_note; the person fills them in, with
// and without JavaScript, and the action's endpoint receives exactly
// those values (none dropped, none read as the page's own answer).
func TestFormFieldsNamedLikeThePagesKeys(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(fmt.Sprintf("js=%v", js), func(t *testing.T) {
			e := newEnv(t, envOptions{policy: policyYAML + fileTicket})
			l, _ := e.hold(t, "ana", call{"call_ticket", "file_ticket", `{}`, false})
			if l == "" {
				t.Fatal("no form")
			}
			b := browser(t, ana)
			if !js {
				if _, err := chromedp.Call(b, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
					t.Fatal(err)
				}
			}
			want := map[string]any{"subject": "Printer", "answer": "forty-two", "hold": "keep it", "_edit": "edited", "decline_note": "a note"}
			actions := []chromedp.Action[chromedp.Void]{chromedp.Navigate(l), chromedp.WaitVisible(chromedp.CSS(`form.answer`))}
			for _, k := range []string{"subject", "answer", "hold", "_edit", "decline_note"} {
				actions = append(actions, chromedp.SendKeys(chromedp.CSS(`#f-`+k), want[k].(string)))
			}
			actions = append(actions, chromedp.Click(chromedp.CSS(`button.submit`)))
			if err := chromedp.Do(b, actions...); err != nil {
				t.Fatal(err)
			}
			waitFor(t, b, `document.querySelector('.status') !== null || document.querySelector('.error') !== null || document.querySelector('form.answer') === null`)
			calls := e.app.Calls()
			if len(calls) != 1 {
				t.Fatalf("the action ran %d times; page says %q", len(calls), text(t, b, `main`))
			}
			var got map[string]any
			if err := json.Unmarshal(calls[0].Body, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the endpoint received %v, want %v", got, want)
			}
		})
	}
}

// TestJSONFormFieldsNamedLikeThePagesKeys: the JSON API carries a form's
// values under "values", beside the page's own keys: a field named answer
// or hold reaches the endpoint as given.
func TestJSONFormFieldsNamedLikeThePagesKeys(t *testing.T) {
	e := newEnv(t, envOptions{policy: policyYAML + fileTicket})
	l, _ := e.hold(t, "ana", call{"call_ticket", "file_ticket", `{}`, false})
	_, _, s := e.view(ana, l)
	want := map[string]any{"subject": "Printer", "answer": "forty-two", "hold": "keep it", "_edit": "edited", "decline_note": "a note"}
	body, _ := json.Marshal(map[string]any{"hold": s.Holds[0].ID, "token": s.Tokens[s.Holds[0].ID], "answer": "submit", "values": want})
	if st := jsonPost(t, ana, l, body); st != 200 {
		t.Fatalf("JSON answer: %d", st)
	}
	calls := e.app.Calls()
	if len(calls) != 1 {
		t.Fatalf("the action ran %d times", len(calls))
	}
	var got map[string]any
	if err := json.Unmarshal(calls[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the endpoint received %v, want %v", got, want)
	}
}

// TestFormFieldNamedTokenIsASecret: a field named token is never asked
// (it reads as a secret): the call is refused naming it, so it never
// reaches the page.
func TestFormFieldNamedTokenIsASecret(t *testing.T) {
	e := newEnv(t, envOptions{policy: policyYAML + strings.ReplaceAll(fileTicket, "_edit", "token")})
	e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", call{"call_ticket", "file_ticket", `{}`, false})}, testkit.Reply{Body: textCompletion("Which token?")})
	if _, err := e.client("ana").Chat.Completions.New(ctx, userAsks("file a ticket")); err != nil {
		t.Fatal(err)
	}
	reqs := e.provider.Requests()
	if res := toolResult(reqs[len(reqs)-1], "call_ticket"); !strings.Contains(res, "token (required; reads as a secret)") {
		t.Errorf("the model read %q", res)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Errorf("the action ran %d times", n)
	}
}
