package pages

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/forms"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/store"
)

// render executes the page template for a step as the person whose
// Accept-Language is accept.
func render(t *testing.T, accept string, v gate.StepView, refused *refusedAnswer) string {
	t.Helper()
	tokens := map[string]string{}
	for _, h := range v.Holds {
		tokens[h.ID] = "tok-" + h.ID
	}
	var b strings.Builder
	if err := pageTemplate.Execute(&b, newPage(speak(accept), v, tokens, "", refused, "n0nce")); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var tagRe = regexp.MustCompile(`<[^>]*>`)

// visible is a page's text without tags, spaces collapsed.
func visible(html string) string {
	return strings.Join(strings.Fields(tagRe.ReplaceAllString(html, " ")), " ")
}

func postCard() *cards.Card {
	return &cards.Card{Sentence: "Delete this post? This cannot be undone.", Rows: []cards.Row{
		{Label: "Post", Value: "Spring…", Cut: true},
		{Label: "Status", Value: "draft"},
	}}
}

// TestCutRowIsMarked: a shortened value is shown with a visible mark next
// to it (text, so a screen reader reads it too), both while the card waits
// and after it was answered; a full value is not marked.
func TestCutRowIsMarked(t *testing.T) {
	for _, state := range []store.State{store.Waiting, store.Settled} {
		v := gate.StepView{StepID: "s", Holds: []gate.HoldView{{ID: "h1", Kind: store.KindCard, Card: postCard(), State: state, Result: gate.Result{Kind: gate.ResultDeclined}}}}
		html := render(t, "", v, nil)
		if !strings.Contains(html, `<dd>Spring… <span class="cut" title="The full value is longer than shown here.">shortened</span></dd>`) {
			t.Errorf("%s: the cut row is not marked:\n%s", state, html)
		}
		if !strings.Contains(html, "<dd>draft</dd>") {
			t.Errorf("%s: a full value is marked or missing:\n%s", state, html)
		}
		if de := render(t, "de", v, nil); !strings.Contains(de, `<span class="cut" title="Der vollständige Wert ist länger als hier gezeigt.">gekürzt</span>`) {
			t.Errorf("%s: the German mark is missing:\n%s", state, de)
		}
	}
}

// TestAnsweredPageSaysWhatHappenedFirst: after an answer, the page's
// heading is what happened; the card stays below it with who asked.
func TestAnsweredPageSaysWhatHappenedFirst(t *testing.T) {
	for _, tt := range []struct {
		name   string
		accept string
		h      gate.HoldView
		want   string // the page's text from <main> on, as far as it goes
	}{
		{"done", "en", gate.HoldView{Answer: store.AnswerConfirm, Result: gate.Result{Kind: gate.ResultDone}, Localized: &gate.Localized{Reply: "The post was removed.", ReplyLang: "en"}},
			"Done. The post was removed. Your assistant asked to: Delete this post? This cannot be undone. Post Spring… shortened Status draft"},
		{"done, no reply", "en", gate.HoldView{Answer: store.AnswerConfirm, Result: gate.Result{Kind: gate.ResultDone}},
			"Done. Your assistant asked to: Delete this post?"},
		{"declined", "en", gate.HoldView{Answer: store.AnswerDecline, Result: gate.Result{Kind: gate.ResultDeclined}},
			"Declined. Nothing ran. Your assistant asked to:"},
		{"confirmed over MCP", "en", gate.HoldView{Answer: store.AnswerConfirm, Result: gate.Result{Kind: gate.ResultConfirmedMCP}},
			"Confirmed. It runs once, when your assistant continues. Your assistant asked to:"},
		{"expired", "en", gate.HoldView{State: store.Expired, Result: gate.Result{Kind: gate.ResultExpired}},
			"Expired. Nothing ran. Your assistant asked to:"},
		{"unknown", "en", gate.HoldView{Answer: store.AnswerConfirm, Result: gate.Result{Kind: gate.ResultUnknown, Why: gate.UnknownNoAnswer}},
			"It may or may not have run. The app did not answer. It was not tried again. Your assistant asked to:"},
		{"unknown, failed", "en", gate.HoldView{Answer: store.AnswerConfirm, Result: gate.Result{Kind: gate.ResultUnknown, Why: gate.UnknownFailed, Status: 502}},
			"It may or may not have run. The app failed (HTTP 502). It was not tried again."},
		{"unknown text", "en", gate.HoldView{Answer: store.AnswerConfirm, Result: gate.Result{Kind: gate.ResultUnknown}},
			"It may or may not have run. The gate cannot tell what happened. It was not tried again."},
		{"changed", "en", gate.HoldView{Answer: store.AnswerConfirm, Result: gate.Result{Kind: gate.ResultChanged}},
			"Not run. The record changed while waiting for your answer."},
		{"unchecked", "en", gate.HoldView{Answer: store.AnswerConfirm, Result: gate.Result{Kind: gate.ResultUnchecked, Why: gate.UncheckedNotFound}},
			"Not run. The record could not be checked again: it was not found."},
		{"refused", "en", gate.HoldView{Answer: store.AnswerConfirm, Result: gate.Result{Kind: gate.ResultRefused, Status: 403}},
			"Not run. The app refused it (HTTP 403)."},
		{"policy changed", "en", gate.HoldView{Answer: store.AnswerConfirm, Result: gate.Result{Kind: gate.ResultNotRun, Why: gate.NotRunPolicyChanged}},
			"Not run. The gate's policy for this action changed after you were asked."},
		{"policy changed in German", "de", gate.HoldView{Answer: store.AnswerConfirm, Result: gate.Result{Kind: gate.ResultNotRun, Why: gate.NotRunPolicyChanged}},
			"Nicht ausgeführt. Die Regeln des Gates für diese Aktion wurden geändert, nachdem Sie gefragt wurden."},
		{"pending", "en", gate.HoldView{Answer: store.AnswerConfirm, State: store.Answered, Result: gate.Result{Kind: gate.ResultPending}},
			"Confirmed. It runs once you have answered the other questions here."},
		{"done in German", "de", gate.HoldView{Answer: store.AnswerConfirm, Result: gate.Result{Kind: gate.ResultDone}, Localized: &gate.Localized{Sentence: "Diesen Beitrag löschen?", SentenceLang: "de", Reply: "Der Beitrag wurde gelöscht.", ReplyLang: "de"}},
			"Erledigt. Der Beitrag wurde gelöscht. Ihr Assistent wollte: Diesen Beitrag löschen? Post Spring… gekürzt Status draft"},
		{"declined in Spanish", "es", gate.HoldView{Answer: store.AnswerDecline, Result: gate.Result{Kind: gate.ResultDeclined}},
			"Rechazado. No se ejecutó nada. Tu asistente quería: Delete this post?"},
		{"unknown in French", "fr", gate.HoldView{Answer: store.AnswerConfirm, Result: gate.Result{Kind: gate.ResultUnknown, Why: gate.UnknownLost}},
			"L'action a peut-être été exécutée, peut-être pas. La passerelle s'est arrêtée avant la réponse de l'application."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.h
			h.ID, h.Kind, h.Card = "h1", store.KindCard, postCard()
			if h.State == "" {
				h.State = store.Settled
			}
			html := render(t, tt.accept, gate.StepView{App: "Blog", Holds: []gate.HoldView{h}}, nil)
			main := visible(html[strings.Index(html, "<main>"):])
			if !strings.HasPrefix(main, strings.ReplaceAll(tt.want, "'", "&#39;")) {
				t.Errorf("page reads\n  %s\nwant it to start\n  %s", main, tt.want)
			}
			if !strings.Contains(html, `<h1 class="status"`) {
				t.Errorf("the status is not the page's heading:\n%s", html)
			}
			if strings.Contains(html, "<button") {
				t.Errorf("an answered card shows buttons")
			}
		})
	}
}

// TestLanguageIsMarked: the page says its language; a sentence or reply
// in another (the policy gave no text in the person's) says its own.
func TestLanguageIsMarked(t *testing.T) {
	h := gate.HoldView{ID: "h1", Kind: store.KindCard, Card: postCard(), State: store.Settled, Answer: store.AnswerConfirm,
		Result: gate.Result{Kind: gate.ResultDone}, Localized: &gate.Localized{Sentence: "Supprimer ce billet ?", SentenceLang: "fr-CA", Reply: "Removed.", ReplyLang: "en"}}
	html := render(t, "de", gate.StepView{Holds: []gate.HoldView{h}}, nil)
	for _, want := range []string{`<html lang="de">`, `<p class="sentence" lang="fr-CA">Supprimer ce billet ?</p>`, `<span class="detail" lang="en">Removed.</span>`} {
		if !strings.Contains(html, want) {
			t.Errorf("missing %s in\n%s", want, html)
		}
	}
	html = render(t, "fr", gate.StepView{Holds: []gate.HoldView{h}}, nil)
	if !strings.Contains(html, `<p class="sentence">Supprimer ce billet ?</p>`) {
		t.Errorf("a French sentence on a French page carries its own lang:\n%s", html)
	}
}

// TestWaitingCardSaysWhoAsks: the card says the person's assistant asks,
// in the person's language, with the buttons in it.
func TestWaitingCardSaysWhoAsks(t *testing.T) {
	h := gate.HoldView{ID: "h1", Kind: store.KindCard, Card: postCard(), State: store.Waiting, Result: gate.Result{Kind: gate.ResultWaiting},
		Owner: "ana", Answers: []string{store.AnswerConfirm, store.AnswerDecline}}
	for accept, want := range map[string]string{
		"en": "Waiting for your confirmation Your assistant wants to: Delete this post? This cannot be undone. Post Spring… shortened Status draft Decline Confirm",
		"de": "Wartet auf Ihre Bestätigung Ihr Assistent möchte: Delete this post? This cannot be undone. Post Spring… gekürzt Status draft Ablehnen Bestätigen",
		"fr": "En attente de votre confirmation Votre assistant souhaite : Delete this post?", // visible() reads the no-break space as a space
		"es": "Esperando tu confirmación Tu asistente quiere: Delete this post?",
	} {
		html := render(t, accept, gate.StepView{Holds: []gate.HoldView{h}}, nil)
		main := visible(html[strings.Index(html, "<main>"):strings.Index(html, "</main>")])
		if !strings.HasPrefix(main, want) {
			t.Errorf("%s: page reads\n  %s\nwant it to start\n  %s", accept, main, want)
		}
	}
}

// TestEverythingIsEscaped: what the record and the policy hold is text,
// never markup, in every place the page shows it.
func TestEverythingIsEscaped(t *testing.T) {
	evil := `<img src=x onerror=alert(1)>"'`
	card := &cards.Card{Sentence: evil, Rows: []cards.Row{{Label: evil, Value: evil}}}
	h := gate.HoldView{ID: "h1", Kind: store.KindCard, Card: card, State: store.Settled, Answer: store.AnswerConfirm,
		Result: gate.Result{Kind: gate.ResultDone}, Localized: &gate.Localized{Reply: evil, ReplyLang: `de" onclick="x`}}
	html := render(t, "en", gate.StepView{App: evil, Holds: []gate.HoldView{h}}, nil)
	if strings.Contains(html, "<img") || strings.Contains(html, `" onclick="x`) {
		t.Errorf("markup from the record or policy reached the page:\n%s", html)
	}
}

// TestFormErrorsAreSaidInThePersonsLanguage: a form sent back with errors
// (without JavaScript) marks the fields invalid, ties the errors to them
// and says them in the person's language.
func TestFormErrorsAreSaidInThePersonsLanguage(t *testing.T) {
	f := forms.Form{Message: "A few details for your post.", RequestedSchema: []byte(`{"type":"object","properties":{"title":{"type":"string","title":"Title","maxLength":5},"when day":{"type":"string","format":"date"}},"required":["title"]}`)}
	h := gate.HoldView{ID: "h1", Kind: store.KindForm, Form: &f, State: store.Waiting, Result: gate.Result{Kind: gate.ResultWaiting}}
	refused := &refusedAnswer{hold: "h1", errs: gate.FieldErrors{"title": {"at most 5 characters"}, "when day": {"must be a valid date"}}, values: url.Values{"title": {"Too long"}}}
	html := render(t, "de-DE", gate.StepView{Holds: []gate.HoldView{h}}, refused)
	for _, want := range []string{
		`<input type="text" name="f.title" id="f-title" value="Too long" required maxlength="5" aria-describedby="err-title" aria-invalid="true">`,
		`<div class="errors" id="err-title" data-for="title" aria-live="polite"><p class="error">Verwenden Sie höchstens 5 Zeichen.</p></div>`,
		// A key that cannot be an id gets its position instead.
		`id="f-1"`,
		`<p class="error">Geben Sie ein gültiges Datum ein, z. B. 2026-12-01.</p>`,
		`<button type="submit" name="answer" value="submit" class="submit">Absenden</button>`,
		`Ihr Assistent fragt:`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("missing %s in\n%s", want, html)
		}
	}
}
