package pages

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/policies"
)

// TestLabelsInThePersonsLanguage: a card's row labels and a form's choice
// labels given per language are shown in German to a German reader, and in
// the policy's default to others, while the card, built and fingerprinted
// from the default labels, is the one the same policy without
// translations builds.
func TestLabelsInThePersonsLanguage(t *testing.T) {
	s := newSite(t)
	localized := strings.NewReplacer(
		"        Post: title\n", "        Post:\n          path: title\n          label: {en: Post, de: Beitrag}\n",
		"      required: [title, body]\n", "        tone: {type: string}\n      required: [title, body, tone]\n    ask:\n      choices:\n        tone:\n          calm: {en: Calm, de: Ruhig}\n          loud: Loud\n",
	).Replace(strings.ReplaceAll(policyYAML, "APP", s.app.URL))
	p, err := policies.Parse("policy.yaml", []byte(localized))
	if err != nil {
		t.Fatal(err)
	}
	if p.Action("delete_post").Card.Rows[0].Labels == nil || p.Action("draft_post").Ask == nil {
		t.Fatalf("test broken: the policy gives no translations:\n%s", localized)
	}
	plain := s.policy
	s.policy = p

	// The page shows one question at a time: the card, and the form in a
	// step of its own.
	card, holds := s.hold(ana, 7)
	form, _ := s.hold(ana, 0)
	page := func(link, accept string) string {
		t.Helper()
		r := s.do("GET", link, ana, map[string]string{"Accept-Language": accept}, "")
		if r.status != 200 {
			t.Fatalf("GET %s: %d\n%s", link, r.status, r.body)
		}
		return r.body
	}
	de := page(card, "de-DE,de;q=0.9") + page(form, "de-DE,de;q=0.9")
	for _, want := range []string{`<html lang="de">`, `<dt>Beitrag</dt><dd>Spring meetup</dd>`, `>Ruhig</option>`, `>Loud</option>`} {
		if !strings.Contains(de, want) {
			t.Errorf("the German pages lack %s:\n%s", want, de)
		}
	}
	en := page(card, "en") + page(form, "en")
	for _, want := range []string{`<dt>Post</dt><dd>Spring meetup</dd>`, `>Calm</option>`} {
		if !strings.Contains(en, want) {
			t.Errorf("the English pages lack %s:\n%s", want, en)
		}
	}
	if strings.Contains(en, "Beitrag") || strings.Contains(en, "Ruhig") {
		t.Errorf("the English pages show German labels:\n%s", en)
	}
	// A French reader (not given) reads the default.
	if fr := page(card, "fr"); !strings.Contains(fr, `<dt>Post</dt>`) {
		t.Errorf("the French page's row label:\n%s", fr)
	}

	// The card and its fingerprint are those of the untranslated policy.
	want, err := cards.Build(plain.Action("delete_post").Card, []byte(`{"title":"Spring meetup"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if holds[0].Fingerprint != want.Fingerprint() {
		t.Errorf("translating a row's label changed the card's fingerprint")
	}
	if holds[0].ActionVersion != plain.Action("delete_post").Version() {
		t.Errorf("translating a row's label changed the action's version")
	}
}
