package pages

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/store"
)

// TestApproverCardSaysWhose: an approver's card names whose conversation
// it came from, in the person's language, the owner id as text (cleaned
// and escaped), with both buttons.
func TestApproverCardSaysWhose(t *testing.T) {
	h := gate.HoldView{ID: "h1", Kind: store.KindCard, Card: postCard(), State: store.Waiting, Result: gate.Result{Kind: gate.ResultWaiting},
		Owner: "ana", Answers: []string{store.AnswerConfirm, store.AnswerDecline}}
	for accept, want := range map[string]string{
		"en": "Waiting for your confirmation ana's assistant wants to: Delete this post? This cannot be undone. Post Spring… shortened Status draft Decline Confirm",
		"de": "Wartet auf Ihre Bestätigung Der Assistent von ana möchte: Delete this post?",
		"fr": "En attente de votre confirmation L'assistant de ana souhaite : Delete this post?",
		"es": "Esperando tu confirmación El asistente de ana quiere: Delete this post?",
	} {
		html := render(t, accept, gate.StepView{Approver: true, Holds: []gate.HoldView{h}}, nil)
		main := visible(html[strings.Index(html, "<main>"):strings.Index(html, "</main>")])
		if !strings.HasPrefix(main, strings.ReplaceAll(want, "'", "&#39;")) {
			t.Errorf("%s: page reads\n  %s\nwant it to start\n  %s", accept, main, want)
		}
	}
	evil := gate.HoldView{ID: "h1", Kind: store.KindCard, Card: postCard(), State: store.Settled, Answer: store.AnswerConfirm,
		Result: gate.Result{Kind: gate.ResultDone}, Owner: "<img src=x onerror=alert(1)>\u202e\n"}
	html := render(t, "en", gate.StepView{Approver: true, Holds: []gate.HoldView{evil}}, nil)
	if strings.Contains(html, "<img") || strings.Contains(html, "\u202e") {
		t.Errorf("the owner id reached the page as markup or with a direction mark:\n%s", html)
	}
	if !strings.Contains(html, "&lt;img src=x onerror=alert(1)&gt;&#39;s assistant asked to:") {
		t.Errorf("an answered card does not say whose it was:\n%s", html)
	}
}

// TestFourEyesOwnerPage: under four_eyes the owner's waiting card says it
// waits for someone else and offers Decline only.
func TestFourEyesOwnerPage(t *testing.T) {
	h := gate.HoldView{ID: "h1", Kind: store.KindCard, Card: postCard(), State: store.Waiting, Result: gate.Result{Kind: gate.ResultWaiting},
		Owner: "ana", FourEyes: true, Answers: []string{store.AnswerDecline}}
	html := render(t, "en", gate.StepView{Holds: []gate.HoldView{h}}, nil)
	main := visible(html[strings.Index(html, "<main>"):strings.Index(html, "</main>")])
	want := "Waiting for an approver Someone else must confirm this. You can decline it. Your assistant wants to: Delete this post? This cannot be undone. Post Spring… shortened Status draft Decline"
	if main != want {
		t.Errorf("page reads\n  %s\nwant\n  %s", main, want)
	}
	if strings.Contains(html, `value="confirm"`) || !strings.Contains(html, `<title>Waiting for an approver</title>`) {
		t.Errorf("the owner is offered Confirm, or the title is wrong:\n%s", html)
	}
}

// TestListPage: each entry links to its step's page by path, says whose
// conversation it came from, and escapes what it shows; an empty list
// says so.
func TestListPage(t *testing.T) {
	render := func(pg listPage) string {
		var b strings.Builder
		if err := listTemplate.Execute(&b, pg); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	html := render(listPage{Lang: "en", W: &english, Entries: []listEntry{
		{Asker: "<b>ana</b>'s assistant wants to:", Sentence: "Delete <this>?", Href: "/toolgate/h/abc", App: "Blog",
			Created: "2026-12-02T12:00:00Z", Expires: "2026-12-02T12:30:00Z", Waited: "Waiting for 5 min", Left: "expires in 25 min"},
	}, Older: "/toolgate/?after=x"})
	for _, want := range []string{
		`<h1>Waiting for your answer</h1>`,
		`<p class="asker">&lt;b&gt;ana&lt;/b&gt;&#39;s assistant wants to:</p>`,
		`<a href="/toolgate/h/abc">Delete &lt;this&gt;?</a>`,
		`<p class="muted app">Blog</p>`,
		`<time datetime="2026-12-02T12:00:00Z">Waiting for 5 min</time> · <time datetime="2026-12-02T12:30:00Z">expires in 25 min</time>`,
		`<a href="/toolgate/?after=x" rel="next">Older questions</a>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("missing %s in\n%s", want, html)
		}
	}
	if empty := render(listPage{Lang: "de", W: &german}); !strings.Contains(empty, "<p>Nichts wartet auf Ihre Antwort.</p>") || strings.Contains(empty, "<ul") {
		t.Errorf("empty list:\n%s", empty)
	}
}

func TestListPath(t *testing.T) {
	for pagesURL, paths := range map[string]map[string]bool{
		"https://gate.example.com/toolgate": {"/toolgate/": true, "/toolgate": true, "/toolgate/h/": false, "/": false, "/toolgate/x/": false, "/toolgatex/": false},
		"https://gate.example.com":          {"/": true, "": true, "/toolgate/": false},
	} {
		p := &Pages{Gate: gate.New(gate.Config{Pages: pagesURL})}
		for path, want := range paths {
			if got := p.isListPath(path); got != want {
				t.Errorf("pages %s: isListPath(%q) = %v, want %v", pagesURL, path, got, want)
			}
		}
	}
}
