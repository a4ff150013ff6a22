package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/toolgate/toolgate/internal/testkit"
)

// editPolicy adds an external action whose card shows validated arguments
// and lets the person correct the subject and the body (issue 19 §1). The
// account names the run URL, so it is not editable.
const editPolicy = `  send_mail:
    effect: external
    schema:
      type: object
      properties:
        to: {type: string, title: To}
        subject: {type: string, title: Subject, pattern: "^[^!]*$", maxLength: 120}
        body: {type: string, title: Body}
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

// mailCall's body holds a direction override: it is not shown, so its
// input opens empty; the subject opens on the model's value.
var mailCall = call{"call_mail", "send_mail", `{"to":"bo@example.com","subject":"Hello","body":"Hi\u202egnp.exe","account":"team"}`, false}

func newEditEnv(t *testing.T) *env {
	return newEnv(t, envOptions{policy: policyYAML + editPolicy})
}

// TestEditRunsTheEditedArgumentsOnce: the person corrects the subject and
// fills the body the page did not show, with JavaScript and without it, in
// English and in German; the app receives exactly those arguments once,
// and the model reads which fields changed, never their values.
func TestEditRunsTheEditedArgumentsOnce(t *testing.T) {
	for _, tc := range []struct {
		name, lang, legend, confirm string
		script                      bool
	}{
		{"script", "", "You may correct these before you confirm.", "Confirm", true},
		{"no script, German", "de-DE,de;q=0.9", "Sie können dies vor dem Bestätigen korrigieren.", "Bestätigen", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEditEnv(t)
			dir := artifacts(t)
			l, msg := e.hold(t, "ana", mailCall)
			b := browserWith(t, ana, browserOptions{lang: tc.lang, timeout: 3 * time.Minute})
			if !tc.script {
				if _, err := chromedp.Call(b, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
					t.Fatal(err)
				}
			}
			if err := chromedp.Do(b, chromedp.Navigate(l), chromedp.WaitVisible(chromedp.CSS(`form.edit button.confirm`))); err != nil {
				t.Fatal(err)
			}
			if got := squash(text(t, b, `dl`)); got != "To bo@example.com Subject Hello" {
				t.Errorf("rows read %q", got)
			}
			if got := squash(text(t, b, `form.edit legend`)); got != tc.legend {
				t.Errorf("legend = %q", got)
			}
			if got := squash(text(t, b, `form.edit button.confirm`)); got != tc.confirm {
				t.Errorf("confirm button = %q", got)
			}
			subject, err := chromedp.Run(b, chromedp.Value(chromedp.CSS(`#f-subject`)))
			if err != nil {
				t.Fatal(err)
			}
			body, err := chromedp.Run(b, chromedp.Value(chromedp.CSS(`#f-body`)))
			if err != nil {
				t.Fatal(err)
			}
			if subject != "Hello" || body != "" {
				t.Errorf("inputs open on subject %q, body %q; want Hello and empty (the body holds a direction character)", subject, body)
			}
			if n, _ := chromedp.Run(b, chromedp.Evaluate[int](`document.querySelectorAll('button.confirm').length`)); n != 1 {
				t.Errorf("%d Confirm buttons; want the edit form's only", n)
			}
			if tc.script {
				axeSource(t)
				audit(t, b, dir, "edit")
			} else {
				shot(t, b, dir, "edit-de")
			}
			if _, err := chromedp.Run(b, chromedp.Evaluate[bool](`document.getElementById('f-subject').value = ''; true`)); err != nil {
				t.Fatal(err)
			}
			err = chromedp.Do(b,
				chromedp.SendKeys(chromedp.CSS(`#f-subject`), "Hello team"),
				chromedp.SendKeys(chromedp.CSS(`#f-body`), "See you at ten."),
				chromedp.Click(chromedp.CSS(`form.edit button.confirm`)),
				chromedp.WaitVisible(chromedp.CSS(`h1.status`)),
			)
			if err != nil {
				t.Fatal(err)
			}
			calls := e.app.Calls()
			if len(calls) != 1 {
				t.Fatalf("the action ran %d times", len(calls))
			}
			var got map[string]any
			if err := json.Unmarshal(calls[0].Body, &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"to": "bo@example.com", "subject": "Hello team", "body": "See you at ten.", "account": "team"}
			if !reflect.DeepEqual(got, want) || calls[0].URI != "/accounts/team/mail" || calls[0].SignatureErr != nil {
				t.Errorf("the app got %s %s (signature %v), want %v", calls[0].URI, calls[0].Body, calls[0].SignatureErr, want)
			}
			res := toolResult(e.next(t, "ana", msg, "ok"), "call_mail")
			if res != "The person confirmed with changes to: subject, body. Sent." {
				t.Errorf("the model reads %q", res)
			}
			if tc.script {
				audit(t, b, dir, "edit-done")
			} else {
				shot(t, b, dir, "edit-done-de")
			}
			// Reloading posts nothing again.
			if err := chromedp.Do(b, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`h1.status`))); err != nil {
				t.Fatal(err)
			}
			if n := len(e.app.Calls()); n != 1 {
				t.Errorf("the action ran %d times after a reload", n)
			}
		})
	}
}

// TestEditRefusedBySchema: a subject the tool's schema refuses (its
// pattern, which no input can express) comes back under its field, with
// and without JavaScript; nothing runs, and the card still waits.
func TestEditRefusedBySchema(t *testing.T) {
	for _, tc := range []struct {
		name, lang, notice string
		script             bool
	}{
		{"script", "", "Please fix the fields marked below. Nothing ran.", true},
		{"no script", "", "Please fix the fields marked below. Nothing ran.", false},
		{"no script, German", "de-DE,de;q=0.9", "Bitte korrigieren Sie die markierten Felder. Es wurde nichts ausgeführt.", false},
		{"script, German", "de", "Bitte korrigieren Sie die markierten Felder. Es wurde nichts ausgeführt.", true},
	} {
		script := tc.script
		t.Run(tc.name, func(t *testing.T) {
			e := newEditEnv(t)
			dir := artifacts(t)
			l, _ := e.hold(t, "ana", mailCall)
			b := browserWith(t, ana, browserOptions{lang: tc.lang, timeout: 3 * time.Minute})
			if !script {
				if _, err := chromedp.Call(b, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
					t.Fatal(err)
				}
			}
			err := chromedp.Do(b,
				chromedp.Navigate(l),
				chromedp.WaitVisible(chromedp.CSS(`form.edit`)),
				chromedp.SendKeys(chromedp.CSS(`#f-subject`), "!"),
				chromedp.SendKeys(chromedp.CSS(`#f-body`), "Body."),
				chromedp.Click(chromedp.CSS(`form.edit button.confirm`)),
				chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
			)
			if err != nil {
				t.Fatal(err)
			}
			if got := text(t, b, `p.notice`); got != tc.notice {
				t.Errorf("notice = %q, want %q", got, tc.notice)
			}
			if got := text(t, b, `#err-subject`); got == "" || strings.Contains(got, "Hello!") {
				t.Errorf("the subject's error = %q", got)
			}
			if inv, _ := chromedp.Run(b, chromedp.Evaluate[string](`document.getElementById('f-subject').getAttribute('aria-invalid')`)); inv != "true" {
				t.Errorf("the subject is not marked invalid (%q)", inv)
			}
			if err := chromedp.Do(b, chromedp.WaitVisible(chromedp.CSS(`form.edit button.confirm`))); err != nil {
				t.Fatal(err)
			}
			if script {
				axeSource(t)
				audit(t, b, dir, "edit-errors")
			} else {
				shot(t, b, dir, "edit-errors")
			}
			if n := len(e.app.Calls()); n != 0 {
				t.Fatalf("a refused edit ran %d times", n)
			}
			if _, _, s := e.view(ana, l); s.Holds[0].State != "waiting" {
				t.Errorf("after a refused edit the card is %s", s.Holds[0].State)
			}
		})
	}
}

// TestEditForgedField: a confirmation that gives a value for an argument
// the policy does not let the person edit — the account, which names the
// run URL — is refused with 409, from the page (a field added to its form
// with JavaScript, or an input renamed without it, in German) and from the
// form post and the JSON API; nothing runs and the card still waits. The
// refusal's page passes axe, light and dark, wide and at 320 px.
func TestEditForgedField(t *testing.T) {
	for _, tc := range []struct {
		name, lang, page string
		script           bool
	}{
		{"script", "", "Not accepted This answer changes something that cannot be changed here. Nothing ran. Show the question", true},
		{"no script, German", "de-DE,de;q=0.9", "Nicht angenommen Diese Antwort ändert etwas, das hier nicht geändert werden kann. Es wurde nichts ausgeführt. Zur Frage", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEditEnv(t)
			dir := artifacts(t)
			l, _ := e.hold(t, "ana", mailCall)
			b := browserWith(t, ana, browserOptions{lang: tc.lang, timeout: 3 * time.Minute})
			if !tc.script {
				noScript(t, b)
			}
			// The body opens empty (the model's holds a direction
			// character) and is required: the person fills it.
			err := chromedp.Do(b, chromedp.Navigate(l), chromedp.WaitVisible(chromedp.CSS(`form.edit`)), chromedp.SendKeys(chromedp.CSS(`#f-body`), "Body."))
			if err != nil {
				t.Fatal(err)
			}
			if tc.script {
				if _, err := chromedp.Run(b, chromedp.Evaluate[bool](`(function () {
				var i = document.createElement('input'); i.type = 'hidden'; i.name = 'f.account'; i.value = 'other';
				document.querySelector('form.edit').appendChild(i); return true; })()`)); err != nil {
					t.Fatal(err)
				}
			} else {
				// Without scripts: the DevTools protocol renames the
				// body's input, which then posts the account.
				if err := chromedp.Do(b, chromedp.SetAttributeValue(chromedp.CSS(`#f-body`), "name", "f.account")); err != nil {
					t.Fatal(err)
				}
			}
			if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`form.edit button.confirm`)), chromedp.WaitVisible(chromedp.CSS(`main a`))); err != nil {
				t.Fatal(err)
			}
			if got := squash(text(t, b, `main`)); got != tc.page {
				t.Errorf("the forged edit's page reads %q, want %q", got, tc.page)
			}
			if tc.script {
				axeSource(t)
				audit(t, b, dir, "edit-forged")
			} else {
				shot(t, b, dir, "edit-forged-de")
			}
			if n := len(e.app.Calls()); n != 0 {
				t.Fatalf("a forged edit ran %d times", n)
			}
			_, _, s := e.view(ana, l)
			if s.Holds[0].State != "waiting" {
				t.Errorf("after a forged edit the card is %s", s.Holds[0].State)
			}
			if !tc.script {
				return
			}
			h := s.Holds[0]
			u, _ := url.Parse(l)
			origin := map[string]string{"Origin": u.Scheme + "://" + u.Host}
			st, _ := e.post(ana, l, url.Values{"hold": {h.ID}, "token": {s.Tokens[h.ID]}, "answer": {"confirm"}, "_edit": {"1"}, "subject": {"Hello"}, "body": {"x"}, "to": {"eve@example.com"}}, origin)
			if st != http.StatusConflict {
				t.Errorf("a form changing the recipient: %d, want 409", st)
			}
			body, _ := json.Marshal(map[string]any{"hold": h.ID, "token": s.Tokens[h.ID], "answer": "confirm", "values": map[string]any{"subject": "Hi", "body": "x", "account": "other"}})
			if st := jsonPost(t, ana, l, body); st != http.StatusConflict {
				t.Errorf("JSON values changing the account: %d, want 409", st)
			}
			if n := len(e.app.Calls()); n != 0 {
				t.Fatalf("a forged edit ran %d times", n)
			}
			if _, _, s := e.view(ana, l); s.Holds[0].State != "waiting" {
				t.Errorf("after forged edits the card is %s", s.Holds[0].State)
			}
			// The JSON API's own edit goes through, once.
			body, _ = json.Marshal(map[string]any{"hold": h.ID, "token": s.Tokens[h.ID], "answer": "confirm", "values": map[string]any{"subject": "Hi", "body": "x"}})
			if st := jsonPost(t, ana, l, body); st != http.StatusOK {
				t.Fatalf("the JSON edit: %d", st)
			}
			if calls := e.app.Calls(); len(calls) != 1 || string(calls[0].Body) != `{"to":"bo@example.com","subject":"Hi","body":"x","account":"team"}` {
				t.Errorf("the app got %v", calls)
			}
		})
	}
}

// jsonPost posts a JSON answer to a page as p and returns the status.
func jsonPost(t *testing.T, p person, link string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest("POST", link, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(p.name, p.password)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestEditRacesASecondAnswer: the person's edited confirmation in the
// browser races a decline of the same card from a second tab; exactly one
// wins, the other gets 409 (or the page that says so), and what ran agrees
// with the winner (the edited arguments once, or nothing). Rounds with and
// without JavaScript, in English and German, the decline sent off before
// the click or while the confirmed call is at the app; the page the
// browser ends on passes axe, light and dark, wide and at 320 px.
func TestEditRacesASecondAnswer(t *testing.T) {
	for round, tc := range []struct {
		lang, done, refused string
		script              bool
	}{
		{"", "Done.", "Not accepted", true},
		{"", "Done.", "Not accepted", false},
		{"de", "Erledigt.", "Nicht angenommen", false},
		{"de", "Erledigt.", "Nicht angenommen", true},
	} {
		e := newEditEnv(t)
		dir := artifacts(t)
		l, _ := e.hold(t, "ana", mailCall)
		_, _, s := e.view(ana, l)
		h := s.Holds[0]
		b := browserWith(t, ana, browserOptions{lang: tc.lang, timeout: 3 * time.Minute})
		if !tc.script {
			noScript(t, b)
		}
		err := chromedp.Do(b,
			chromedp.Navigate(l),
			chromedp.WaitVisible(chromedp.CSS(`form.edit`)),
			chromedp.SendKeys(chromedp.CSS(`#f-body`), "Edited."),
		)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var declined int
		decline := func() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				declined, _ = e.answer(ana, l, h.ID, s.Tokens[h.ID], "decline", nil)
			}()
		}
		// Even rounds send the decline off before the click (it wins:
		// the edit's checks make the browser's post the slower to claim,
		// even when the decline leaves as the browser sends its post).
		// Odd rounds send it while the edited call is at the app (the
		// confirmation has won; the decline must lose, and nothing runs
		// twice).
		posted := make(chan struct{})
		if round%2 == 0 {
			decline()
			close(posted)
		} else {
			var once sync.Once
			e.app.Script(func(string) (testkit.Behaviour, int) {
				once.Do(func() { decline(); close(posted) })
				return testkit.Respond, http.StatusOK
			})
		}
		// The answer's page has no edit form, whoever won.
		if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`form.edit button.confirm`)), chromedp.WaitNotPresent(chromedp.CSS(`form.edit`)), chromedp.WaitVisible(chromedp.CSS(`h1`))); err != nil {
			t.Fatal(err)
		}
		<-posted
		wg.Wait()
		page := squash(text(t, b, `main`))
		calls := e.app.Calls()
		_, _, after := e.view(ana, l)
		switch after.Holds[0].Answer {
		case "confirm":
			if declined != http.StatusConflict || len(calls) != 1 || !strings.Contains(string(calls[0].Body), `"body":"Edited."`) || !strings.HasPrefix(page, tc.done) {
				t.Errorf("round %d: confirm won, but decline got %d, the app ran %d times, page %q", round, declined, len(calls), page)
			}
		case "decline":
			if declined != http.StatusSeeOther || len(calls) != 0 || !strings.HasPrefix(page, tc.refused) {
				t.Errorf("round %d: decline won (%d), but the app ran %d times, page %q", round, declined, len(calls), page)
			}
		default:
			t.Errorf("round %d: the card was answered %q", round, after.Holds[0].Answer)
		}
		t.Logf("round %d (script %v, lang %q): %s won", round, tc.script, tc.lang, after.Holds[0].Answer)
		if tc.script {
			axeSource(t)
			audit(t, b, dir, fmt.Sprintf("race-%d-%s", round, after.Holds[0].Answer))
		}
	}
}
