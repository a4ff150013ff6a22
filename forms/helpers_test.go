package forms

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policies"
)

// load parses a policy file and returns its action name.
func load(t testing.TB, name, body string) *policies.Action {
	t.Helper()
	p, err := policies.Parse("forms.yaml", []byte(body))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	a := p.Action(name)
	if a == nil {
		t.Fatalf("no action %q", name)
	}
	return a
}

// oneField returns a write action asking for missing fields whose schema
// holds the property f (JSON) as required, with ask (YAML lines under ask:,
// indented six spaces; "" for none) and more action keys (indented four).
func oneField(t *testing.T, prop, ask, more string) *policies.Action {
	t.Helper()
	var b strings.Builder
	b.WriteString("actions:\n  a:\n    effect: write\n    ask_for_missing: true\n")
	b.WriteString(`    schema: {"type":"object","properties":{"f":` + prop + `},"required":["f"]}` + "\n")
	if ask != "" {
		b.WriteString("    ask:\n" + ask)
	}
	b.WriteString(more)
	b.WriteString("    run: {url: 'http://app.internal/a'}\n")
	return load(t, "a", b.String())
}

// draftPolicy is the example action.
const draftPolicy = `forbidden_keys: [internal_ref]
actions:
  draft_post:
    effect: write
    ask_for_missing: true
    required_for_agents: [publish_on, status]
    schema:
      type: object
      properties:
        title: {type: string, title: Title, minLength: 1, maxLength: 120}
        body: {type: string, maxLength: 5000}
        status: {type: string, enum: [draft, published]}
        publish_on: {type: [string, "null"], format: date}
        tags: {type: array, items: {type: string, enum: [a, b, c]}, maxItems: 2}
        author: {type: object, properties: {name: {type: string}}}
        api_key: {type: string}
        internal_ref: {type: string}
      required: [title, body, status]
    titles:
      body: {en: Body, de: Inhalt}
    ask:
      message: A few details for your post.
      confirm: [title]
      textarea: [body]
      choices:
        status: {draft: Draft, published: Published}
      default: {status: draft}
    run: {method: POST, url: http://app.internal/posts}
  plain_write:
    effect: write
    schema:
      type: object
      properties:
        title: {type: string}
      required: [title]
    run: {url: http://app.internal/plain}
  delete_post:
    effect: destructive
    schema:
      type: object
      properties:
        post: {type: integer}
      required: [post]
    card: {reason: 'Delete this post?'}
    run: {method: DELETE, url: 'http://app.internal/posts/{post}'}
  free:
    effect: write
    ask_for_missing: true
    run: {url: http://app.internal/free}
`
