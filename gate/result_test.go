package gate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// TestOutcomeKnowsEveryKind: every outcome the release path stores reads
// back (encoded and decoded, as the store keeps it) as what happened, and
// its sentence, read by the parser kept for outcomes stored as sentences
// by earlier versions, reads the same: a record written before the
// upgrade and one written after read alike. An unknown kind or text never
// reads as done.
func TestOutcomeKnowsEveryKind(t *testing.T) {
	del := &policies.Action{Effect: policies.Destructive, Reply: "Removed."}
	read := &policies.Action{Effect: policies.Read}
	run := func(a *policies.Action, status int, body string, err error) ran {
		o, b := runOutcome(a, actions.Response{Status: status, Body: []byte(body)}, err)
		return ran{o, b}
	}
	as := func(person string, filled []string) func(ran) ran {
		return func(r ran) ran {
			r.o.Person, r.o.Filled = person, filled
			return r
		}
	}
	confirmed, filled := as(personConfirmed, nil), func(f ...string) func(ran) ran { return as(personFilled, f) }
	one := func(o Outcome) ran { return ran{o: o} }
	tests := []struct {
		name string
		ran  ran
		want Result
	}{
		{"confirmed, 2xx", confirmed(run(del, 204, "", nil)), Result{Kind: ResultDone}},
		{"confirmed, 2xx, no reply", confirmed(run(&policies.Action{Effect: policies.External}, 200, "", nil)), Result{Kind: ResultDone}},
		{"filled in, 2xx", filled("title", "body")(run(del, 201, "", nil)), Result{Kind: ResultDone}},
		{"submitted nothing, 2xx", filled()(run(del, 200, "", nil)), Result{Kind: ResultDone}},
		{"read body", filled("q")(run(read, 200, "3 posts", nil)), Result{Kind: ResultDone}},
		{"read body posing as a failure", filled("q")(run(read, 200, "x, but the app did not answer; it may or may not have run; nothing was retried.", nil)),
			Result{Kind: ResultDone}},
		{"read body unreadable", filled("q")(run(read, 200, "", errUnread)), Result{Kind: ResultDoneUnread, Status: 200}},
		{"not sent", confirmed(run(del, 0, "", actions.ErrNotSent)), Result{Kind: ResultNotSent}},
		{"no answer", confirmed(run(del, 0, "", errUnread)), Result{Kind: ResultUnknown, Why: UnknownNoAnswer}},
		{"5xx", filled("title")(run(del, 503, "", nil)), Result{Kind: ResultUnknown, Why: UnknownFailed, Status: 503}},
		{"422", confirmed(run(del, 422, `{"errors":{"title":["required"]}}`, nil)), Result{Kind: ResultInvalid, Status: 422}},
		{"403", confirmed(run(del, 403, "", nil)), Result{Kind: ResultRefused, Status: 403}},
		{"404", filled("a", "b")(run(del, 404, "", nil)), Result{Kind: ResultRefused, Status: 404}},
		{"lost (the sweeper)", confirmed(one(Outcome{Kind: ResultUnknown, Why: UnknownLost})), Result{Kind: ResultUnknown, Why: UnknownLost}},
		{"lost, answer unreadable", as(personAnswered, nil)(one(Outcome{Kind: ResultUnknown, Why: UnknownLost})), Result{Kind: ResultUnknown, Why: UnknownLost}},
		{"run url", confirmed(one(Outcome{Kind: ResultNotRun, Why: notRunPolicyURL})), Result{Kind: ResultNotRun}},
		{"policy gone", one(Outcome{Kind: ResultNotRun, Why: notRunPolicyGone}), Result{Kind: ResultNotRun}},
		{"no endpoint", one(Outcome{Kind: ResultNotRun, Why: notRunNoEndpoint}), Result{Kind: ResultNotRun}},
		{"answer lost", one(Outcome{Kind: ResultNotRun, Why: notRunAnswerLost}), Result{Kind: ResultNotRun}},
		{"policy dropped", one(Outcome{Kind: ResultNotRun, Why: notRunPolicyDropped}), Result{Kind: ResultNotRun, Why: NotRunPolicyChanged}},
		{"policy changed", one(Outcome{Kind: ResultNotRun, Why: NotRunPolicyChanged}), Result{Kind: ResultNotRun, Why: NotRunPolicyChanged}},
		{"changed", one(Outcome{Kind: ResultChanged}), Result{Kind: ResultChanged}},
		{"unchecked: not found", one(uncheckedOutcome(uncheckedNotFound)), Result{Kind: ResultUnchecked, Why: uncheckedNotFound}},
		{"unchecked: not allowed", one(uncheckedOutcome(uncheckedForbidden)), Result{Kind: ResultUnchecked, Why: uncheckedForbidden}},
		{"unchecked: unavailable", one(uncheckedOutcome(uncheckedDown)), Result{Kind: ResultUnchecked, Why: uncheckedDown}},
		{"unchecked: unreadable", one(uncheckedOutcome(uncheckedUnreadable)), Result{Kind: ResultUnchecked, Why: uncheckedUnreadable}},
		{"declined", one(Outcome{Kind: ResultDeclined}), Result{Kind: ResultDeclined}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stored, ok := decodeOutcome(tt.ran.o.encode())
			if !ok {
				t.Fatalf("%+v does not decode", tt.ran.o)
			}
			got := storedResult(stored.encode())
			got.reply = ""
			if got != tt.want {
				t.Errorf("stored %s\n got  %+v\n want %+v", stored.encode(), got, tt.want)
			}
			reply := tt.ran.body
			if reply == "" {
				reply = "Done."
			}
			sentence := stored.sentence(reply)
			legacy := legacyResult(sentence)
			legacy.reply = ""
			if legacy != tt.want {
				t.Errorf("the sentence %q read as an old record: %+v, want %+v", sentence, legacy, tt.want)
			}
		})
	}
	for _, stored := range []string{"The person confirmed; something new happened.", "The person confirmed, but the moon is full.", "", `{"kind":"exploded"}`, `{"kind":""}`} {
		if got := storedResult(stored); got.Kind != ResultUnknown {
			t.Errorf("storedResult(%q) = %+v, want unknown", stored, got)
		}
	}
}

// ran is an outcome and a read's body, for a table.
type ran struct {
	o    Outcome
	body string
}

var errUnread = errors.New("connection reset") // any error but actions.ErrNotSent

// TestResultOfStates: answers that never run read as what the person did,
// whatever the outcome text says; a confirmed or submitted hold reads as
// pending, running or its outcome.
func TestResultOfStates(t *testing.T) {
	settled := func(answer, outcome string) store.Hold {
		return store.Hold{State: store.Settled, Answer: answer, Outcome: outcome}
	}
	tests := []struct {
		name     string
		h        store.Hold
		state    store.State
		complete bool
		want     string
	}{
		{"waiting", store.Hold{}, store.Waiting, false, ResultWaiting},
		{"expired", store.Hold{}, store.Expired, false, ResultExpired},
		{"declined", settled(store.AnswerDecline, OutcomeDeclined), store.Settled, true, ResultDeclined},
		{"form declined", settled(store.AnswerDecline, "The person declined to fill in title; nothing ran."), store.Settled, true, ResultDeclined},
		{"closed", settled(store.AnswerLater, "The person closed the form without answering (title); nothing ran."), store.Settled, true, ResultClosed},
		{"moved on", settled(store.AnswerMovedOn, OutcomeMovedOn), store.Settled, true, ResultMovedOn},
		{"timed out", settled(store.AnswerTimedOut, OutcomeExpired), store.Settled, true, ResultExpired},
		{"declined, answered", store.Hold{Answer: store.AnswerDecline}, store.Answered, false, ResultDeclined},
		{"confirmed, others wait", store.Hold{Answer: store.AnswerConfirm}, store.Answered, false, ResultPending},
		{"submitted, step complete", store.Hold{Answer: store.AnswerSubmit}, store.Answered, true, ResultRunning},
		{"running", store.Hold{Answer: store.AnswerConfirm}, store.Running, true, ResultRunning},
		{"confirmed over MCP", settled(store.AnswerConfirm, OutcomeMCPConfirmed), store.Settled, true, ResultConfirmedMCP},
		{"done", settled(store.AnswerConfirm, "The person confirmed. Removed."), store.Settled, true, ResultDone},
		{"a text claiming a decline on a confirm", settled(store.AnswerConfirm, "The person confirmed, but whatever"), store.Settled, true, ResultUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.h
			if tt.name == "confirmed over MCP" {
				h.Protocol = ProtocolMCP
			}
			if got := resultOf(h, tt.state, tt.complete); got.Kind != tt.want {
				t.Errorf("got %+v, want %s", got, tt.want)
			}
		})
	}
}

const localizedTestPolicy = `app: Test blog
actions:
  delete_post:
    effect: destructive
    schema:
      type: object
      properties:
        post: {type: integer}
      required: [post]
    card:
      reason:
        en: Delete this post?
        de: Diesen Beitrag löschen?
      record: APP/posts/{post}
      rows:
        Post: title
    run:
      method: DELETE
      url: APP/posts/{post}
    reply: {en: Removed., de: Gelöscht.}
  draft_post:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        title: {type: string, title: Title}
        body: {type: string, title: Body}
      required: [title, body]
    ask:
      message: A few details for your post.
    run:
      url: APP/drafts
    reply: Drafted.
`

// TestViewSpeaksThePersonsLanguage: the card's sentence and the reply come
// in the person's language while the card, its fingerprint and what the
// model reads stay in the policy's default; results follow the step.
func TestViewSpeaksThePersonsLanguage(t *testing.T) {
	r := newRig(t, rigOptions{})
	pol, err := policies.Parse("policy.yaml", []byte(strings.ReplaceAll(localizedTestPolicy, "APP", r.app.URL)))
	if err != nil {
		t.Fatal(err)
	}
	r.policy = pol
	r.app.SetRecord("/posts/7", `{"title":"Spring meetup"}`)
	step, v := r.hold(ana, call(0, 7), call(1, 0))
	if !strings.Contains(v.Text, "Delete this post?") || strings.Contains(v.Text, "löschen") {
		t.Errorf("the app's waiting text is not the default: %q", v.Text)
	}
	ctx := context.Background()
	view := func(lang string) StepView {
		t.Helper()
		sv, err := r.gate.View(ctx, step, ana, lang)
		if err != nil {
			t.Fatal(err)
		}
		return sv
	}
	sv := view("de-DE,de;q=0.9")
	card := sv.Holds[0]
	if card.Card.Sentence != "Delete this post?" || card.Localized == nil || card.Localized.Sentence != "Diesen Beitrag löschen?" || card.Localized.SentenceLang != "de" {
		t.Errorf("German view of the card: %q %+v", card.Card.Sentence, card.Localized)
	}
	if card.Result.Kind != ResultWaiting || sv.Holds[1].Result.Kind != ResultWaiting {
		t.Errorf("results before answering: %+v %+v", card.Result, sv.Holds[1].Result)
	}
	if l := view("fr").Holds[0].Localized; l != nil && l.Sentence != "" {
		t.Errorf("French (not given) shows %+v; the card's own sentence should stand", l)
	}

	if _, err := r.gate.Answer(ctx, step, card.ID, ana, store.AnswerConfirm); err != nil {
		t.Fatal(err)
	}
	if got := view("de").Holds[0].Result.Kind; got != ResultPending {
		t.Errorf("confirmed while the form waits: %s", got)
	}
	if _, err := r.gate.Answer(ctx, step, sv.Holds[1].ID, ana, store.AnswerLater); err != nil {
		t.Fatal(err)
	}
	sv = view("de")
	if got := sv.Holds[0]; got.Result.Kind != ResultDone || got.Localized == nil || got.Localized.Reply != "Gelöscht." || got.Localized.ReplyLang != "de" {
		t.Errorf("German view after the run: %+v %+v", got.Result, got.Localized)
	}
	if got := view("").Holds[0].Localized; got == nil || got.Reply != "Removed." || got.ReplyLang != "en" {
		t.Errorf("default view after the run: %+v", got)
	}
	if got := sv.Holds[1]; got.Result.Kind != ResultClosed || got.Localized == nil || got.Localized.Sentence != "A few details for your post." {
		t.Errorf("the closed form: %+v %+v", got.Result, got.Localized)
	}
	if got := r.restore(ana, step, false); len(got) != 2 || got[0] != "The person confirmed. Removed." {
		t.Errorf("the model reads %q", got)
	}

	// A reason changed since the card was built is not shown as its
	// translation: the card's own sentence stands.
	changed, err := policies.Parse("policy.yaml", []byte(strings.ReplaceAll(strings.Replace(localizedTestPolicy, "en: Delete this post?", "en: Remove this post?", 1), "APP", r.app.URL)))
	if err != nil {
		t.Fatal(err)
	}
	r.policy = changed
	if l := view("de").Holds[0].Localized; l == nil || l.Sentence != "" || l.Reply != "Gelöscht." {
		t.Errorf("after the reason changed: %+v", l)
	}
}

// FuzzStoredResult: any stored outcome (structured, or a sentence from an
// earlier version) reads as some result without panicking; a sentence
// whose person's part is followed by a failure clause never reads as
// done, and one that starts with no person's part never reads as run.
func FuzzStoredResult(f *testing.F) {
	for _, s := range []string{
		"The person confirmed. Removed.",
		"The person filled in: title, body. Drafted.",
		"The person filled in: a. b, but the app failed (HTTP 500); it may or may not have made changes; nothing was retried.",
		outcomeUnchecked(uncheckedDown), Ran{Text: clauseLost}.After(personAnsweredPart), OutcomeChanged, "",
		Outcome{Kind: ResultDone, Person: personFilled, Filled: []string{"q"}, Reply: replyApp}.encode(), `{"kind":"done","person":7}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := storedResult(s)
		if r.Kind == "" {
			t.Fatalf("storedResult(%q) has no kind", s)
		}
		if failed := storedResult(PersonConfirmed + ", but " + s); failed.Kind == ResultDone {
			t.Errorf("a failure clause %q reads as done", s)
		}
		if !strings.HasPrefix(s, "The person ") && !strings.HasPrefix(s, "{") && (r.Kind == ResultDone || r.Kind == ResultDoneUnread) {
			t.Errorf("%q reads as %s without a person's part", s, r.Kind)
		}
	})
}
