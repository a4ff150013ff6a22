package policies

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/text/language"
)

const localizedPolicy = `actions:
  delete_post:
    effect: destructive
    card:
      reason:
        en: Delete this post? This cannot be undone.
        de: Diesen Beitrag löschen? Das kann nicht rückgängig gemacht werden.
        fr-CA: Supprimer ce billet?
    run:
      method: DELETE
      url: http://blog.internal/posts
    reply: {en: The post was removed., de: Der Beitrag wurde gelöscht.}
  send_email:
    effect: external
    card:
      reason: Send this email now?
    run: {url: http://mail.internal/send}
    reply: Sent.
`

// TestLocalizedTexts: reason and reply take a plain string or one text per
// language; the en entry is what the card is built from and the model
// reads, the others are for the person's page.
func TestLocalizedTexts(t *testing.T) {
	p, err := Parse("blog.yaml", []byte(localizedPolicy))
	if err != nil {
		t.Fatal(err)
	}
	del := p.Action("delete_post")
	if del.Card.Reason != "Delete this post? This cannot be undone." || del.Reply != "The post was removed." {
		t.Errorf("defaults: reason %q, reply %q", del.Card.Reason, del.Reply)
	}
	if len(del.Card.Reasons) != 3 || del.Card.Reasons["fr-CA"] != "Supprimer ce billet?" || len(del.Replies) != 2 {
		t.Errorf("per language: %v, %v", del.Card.Reasons, del.Replies)
	}
	mail := p.Action("send_email")
	if mail.Card.Reason != "Send this email now?" || mail.Card.Reasons != nil || mail.Reply != "Sent." || mail.Replies != nil {
		t.Errorf("plain strings: %+v %q %v", mail.Card, mail.Reply, mail.Replies)
	}

	for _, tt := range []struct{ accept, wantTag string }{
		{"de-CH,de;q=0.9,en;q=0.5", "de"},
		{"de", "de"},
		{"fr-FR,fr;q=0.9", "fr-CA"}, // the nearest French the file gives
		{"es", "en"},                // not listed: the default
		{"", "en"},
		{"en-GB", "en"},
		{"es;q=0.9,de;q=0.8", "de"},
		{"*", "en"},
	} {
		prefs, _, _ := language.ParseAcceptLanguage(tt.accept)
		text, tag := del.Card.Reasons.In(prefs)
		if tag != tt.wantTag || text != del.Card.Reasons[tt.wantTag] {
			t.Errorf("Accept-Language %q: got %q (%s), want the %s text", tt.accept, text, tag, tt.wantTag)
		}
	}
	if text, tag := mail.Card.Reasons.In(nil); text != "" || tag != "" {
		t.Errorf("nil texts give %q %q", text, tag)
	}
}

func TestLocalizedMistakes(t *testing.T) {
	const act = `action "delete_post": `
	swap := func(old, new string) string {
		if !strings.Contains(localizedPolicy, old) {
			return ""
		}
		return strings.Replace(localizedPolicy, old, new, 1)
	}
	for _, tt := range []struct{ name, body, want string }{
		{"no en", swap("        en: Delete this post? This cannot be undone.\n", ""), act + "card.reason: needs an en entry"},
		{"reply without en", swap("reply: {en: The post was removed., de:", "reply: {es: Eliminado., de:"), act + "reply: needs an en entry"},
		{"bad tag", swap("        fr-CA:", "        french:"), act + `card.reason: "french" is not a BCP 47 language tag`},
		{"empty entry", swap("        fr-CA: Supprimer ce billet?", "        fr-CA: ' '"), act + "card.reason.fr-CA: may not be empty"},
		{"entry not a string", swap("        fr-CA: Supprimer ce billet?", "        fr-CA: [Supprimer]"), act + "card.reason.fr-CA: must be a string"},
		{"English twice", swap("        fr-CA:", "        EN:"), act + "card.reason.EN: English is given twice"},
		{"language twice", swap("        fr-CA:", "        de:"), act + "card.reason.de: given twice"},
		{"a list", swap("reply: {en: The post was removed., de: Der Beitrag wurde gelöscht.}", "reply: [Removed.]"), act + "reply: must be a string, or one per language"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.body == "" {
				t.Fatal("test broken: its edit does not apply")
			}
			_, err := Parse("blog.yaml", []byte(tt.body))
			if err == nil {
				t.Fatalf("Parse succeeded; want %q", tt.want)
			}
			if want := "policy blog.yaml: " + tt.want; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error:\n%v\nwant prefix:\n%s", err, want)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Line == 0 {
				t.Errorf("error %T carries no line", err)
			}
			checkMessage(t, err)
		})
	}
}

// labelsPolicy gives a card's row labels and a form's choice labels per
// language; plainLabels is the same policy with only the en texts.
const labelsPolicy = `actions:
  delete_post:
    effect: destructive
    schema:
      type: object
      properties:
        post: {type: integer}
    card:
      reason: Delete this post?
      record: http://blog.internal/posts/{post}
      rows:
        Post: {path: title, label: {en: Post, de: Beitrag}}
        Status: status
    run: {method: DELETE, url: 'http://blog.internal/posts/{post}'}
  draft_post:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        status: {type: string}
    ask:
      choices:
        status:
          draft: {en: Draft, de: Entwurf}
          live: Live
    run: {url: http://blog.internal/drafts}
`

var plainLabels = strings.NewReplacer("{path: title, label: {en: Post, de: Beitrag}}", "title", "{en: Draft, de: Entwurf}", "Draft").Replace(labelsPolicy)

// TestLocalizedLabels: a row's label and a choice's label take one text
// per language like reason; the en text is the label the card is built,
// fingerprinted and versioned from, so translating labels changes neither
// the action's version nor its cards.
func TestLocalizedLabels(t *testing.T) {
	p, err := Parse("blog.yaml", []byte(labelsPolicy))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Parse("blog.yaml", []byte(plainLabels))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateYAML(t, compiledFileSchema(t), []byte(labelsPolicy)); err != nil {
		t.Errorf("the policy file's JSON Schema refuses labels per language: %v", err)
	}
	rows := p.Action("delete_post").Card.Rows
	if len(rows) != 2 || rows[0].Label != "Post" || rows[0].Path != "title" || rows[0].Labels["de"] != "Beitrag" || rows[1].Labels != nil {
		t.Errorf("rows: %+v", rows)
	}
	choices := p.Action("draft_post").Ask.Choices["status"]
	if len(choices) != 2 || choices[0].Label != "Draft" || choices[0].Labels["de"] != "Entwurf" || choices[1].Labels != nil {
		t.Errorf("choices: %+v", choices)
	}
	for _, name := range []string{"delete_post", "draft_post"} {
		if got, want := p.Action(name).Version(), plain.Action(name).Version(); got != want {
			t.Errorf("%s: translating labels changed the action's version: %s, want %s", name, got, want)
		}
	}

	for _, tt := range []struct{ name, from, to, want string }{
		{"a row label without en", "label: {en: Post, de: Beitrag}", "label: {de: Beitrag}", `card.rows.Post.label: needs an en entry`},
		{"a row label in a tag that is not one", "de: Beitrag", "deutsch!: Beitrag", `card.rows.Post.label: "deutsch!" is not a BCP 47 language tag`},
		{"a row without a path", "{path: title, label: {en: Post, de: Beitrag}}", "{label: {en: Post, de: Beitrag}}", `card.rows.Post: needs the gjson path`},
		{"a misspelt row key", "{path: title,", "{paht: title,", `card.rows.Post.paht: unknown key (did you mean path?)`},
		{"a choice label without en", "{en: Draft, de: Entwurf}", "{de: Entwurf}", `ask.choices.status."draft": needs an en entry`},
		{"a choice label with a URL", "de: Entwurf}", "de: see https://evil.example}", `ask.choices.status: the label of choice "draft" may not hold a URL`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := strings.Replace(labelsPolicy, tt.from, tt.to, 1)
			if body == labelsPolicy {
				t.Fatal("test broken: nothing replaced")
			}
			_, err := Parse("blog.yaml", []byte(body))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
