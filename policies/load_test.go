package policies

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const validYAML = `# The blog's actions.
app: Blog
actions:
  delete_post:
    effect: destructive
    description: Removes a post for good.
    schema:
      type: object
      properties:
        post: {type: integer, minimum: 1}
        notify: {type: boolean}
      required: [post]
      additionalProperties: false
    card:
      reason: Delete this post? This cannot be undone.
      record: http://blog.internal/posts/{post}
      rows:
        Title: title
        Status: status
        Author: author.name
        Comments: comments.#
    run:
      method: DELETE
      url: http://blog.internal/posts/{post}?notify={notify}
      headers:
        X-Blog-Source: toolgate
    reply: Removed.
    ttl: 30m
  send_newsletter:
    effect: external
    card:
      reason: Send the newsletter to every subscriber?
      record: {url: "https://blog.internal/newsletter", method: GET}
      rows:
        Subject: subject
    run:
      url: https://blog.internal/newsletter/send
  search_posts:
    effect: read
    run:
      method: get
      url: http://blog.internal/search?q={q}
`

const validJSON = `{
	"app": "Blog",
	"actions": {
		"delete_post": {
			"effect": "destructive",
			"description": "Removes a post for good.",
			"schema": {
				"type": "object",
				"properties": {
					"post": {"type": "integer", "minimum": 1},
					"notify": {"type": "boolean"}
				},
				"required": ["post"],
				"additionalProperties": false
			},
			"card": {
				"reason": "Delete this post? This cannot be undone.",
				"record": "http://blog.internal/posts/{post}",
				"rows": {"Title": "title", "Status": "status", "Author": "author.name", "Comments": "comments.#"}
			},
			"run": {
				"method": "DELETE",
				"url": "http://blog.internal/posts/{post}?notify={notify}",
				"headers": {"X-Blog-Source": "toolgate"}
			},
			"reply": "Removed.",
			"ttl": 1800
		},
		"send_newsletter": {
			"effect": "external",
			"card": {
				"reason": "Send the newsletter to every subscriber?",
				"record": {"url": "https://blog.internal/newsletter", "method": "GET"},
				"rows": {"Subject": "subject"}
			},
			"run": {"url": "https://blog.internal/newsletter/send"}
		},
		"search_posts": {
			"effect": "read",
			"run": {"method": "get", "url": "http://blog.internal/search?q={q}"}
		}
	}
}
`

// writePolicy writes a policy file into a fresh directory and returns its path.
func writePolicy(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustLoad(t *testing.T, name, body string) *Policy {
	t.Helper()
	p, err := Load(writePolicy(t, name, body))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

func TestLoadValid(t *testing.T) {
	p := mustLoad(t, "blog.yaml", validYAML)
	if p.App != "Blog" || len(p.Actions) != 3 {
		t.Fatalf("App = %q, %d actions; want Blog, 3", p.App, len(p.Actions))
	}
	del := p.Action("delete_post")
	if del == nil {
		t.Fatal(`Action("delete_post") = nil`)
	}
	wantRows := []Row{{Label: "Title", Path: "title"}, {Label: "Status", Path: "status"}, {Label: "Author", Path: "author.name"}, {Label: "Comments", Path: "comments.#"}}
	if !reflect.DeepEqual(del.Card.Rows, wantRows) {
		t.Errorf("rows = %v; want file order %v", del.Card.Rows, wantRows)
	}
	if del.TTL != 30*time.Minute {
		t.Errorf("TTL = %v; want 30m", del.TTL)
	}
	if del.Run.Method != "DELETE" || del.Run.URL.String() != "http://blog.internal/posts/{post}?notify={notify}" {
		t.Errorf("run = %s %s", del.Run.Method, del.Run.URL)
	}
	if got := del.Run.Headers["X-Blog-Source"]; got != "toolgate" {
		t.Errorf("header X-Blog-Source = %q", got)
	}
	wantSchema := `{"type":"object","properties":{"post":{"type":"integer","minimum":1},"notify":{"type":"boolean"}},"required":["post"],"additionalProperties":false}`
	if string(del.Schema) != wantSchema {
		t.Errorf("schema = %s\nwant %s (file key order kept)", del.Schema, wantSchema)
	}
	if !del.Effect.NeedsCard() || p.Action("search_posts").Effect.NeedsCard() {
		t.Error("NeedsCard: want true for destructive, false for read")
	}
	news := p.Action("send_newsletter")
	if news.Run.Method != "POST" || news.Card.Record.String() != "https://blog.internal/newsletter" {
		t.Errorf("send_newsletter: method %q, record %v; want POST and the record URL", news.Run.Method, news.Card.Record)
	}
	if news.TTL != 0 || news.Schema != nil {
		t.Errorf("send_newsletter: TTL %v, schema %s; want 0 and nil", news.TTL, news.Schema)
	}
	if s := p.Action("search_posts"); s.Run.Method != "GET" || s.Card != nil {
		t.Errorf("search_posts: method %q, card %v; want GET and no card", s.Run.Method, s.Card)
	}
	if p.Action("nope") != nil {
		t.Error(`Action("nope") != nil`)
	}
	var nilPolicy *Policy
	if nilPolicy.Action("delete_post") != nil {
		t.Error("nil policy: Action != nil")
	}
	if len(p.Digest()) != 64 {
		t.Errorf("Digest = %q; want 64 hex digits", p.Digest())
	}
}

func TestYAMLAndJSONLoadEqual(t *testing.T) {
	y := mustLoad(t, "blog.yaml", validYAML)
	j := mustLoad(t, "blog.json", validJSON)
	if y.Digest() == j.Digest() {
		t.Error("different files have the same digest")
	}
	for _, p := range []*Policy{y, j} {
		p.File, p.digest = "", ""
		for _, a := range p.Actions {
			if (a.schema == nil) != (a.Schema == nil) {
				t.Errorf("%s: compiled schema and Schema disagree", a.Name)
			}
			a.schema = nil
		}
	}
	if !reflect.DeepEqual(y, j) {
		t.Errorf("YAML and JSON differ:\n%+v\n%+v", y.Actions["delete_post"], j.Actions["delete_post"])
	}
}

func TestDigestStable(t *testing.T) {
	a, err := Parse("a.yaml", []byte(validYAML))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse("b.yaml", []byte(validYAML))
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest() != b.Digest() {
		t.Error("same bytes, different digests")
	}
}

func TestTTL(t *testing.T) {
	tests := []struct {
		ttl  string
		want time.Duration
	}{
		{"30m", 30 * time.Minute},
		{"1800", 30 * time.Minute},
		{`"1800"`, 30 * time.Minute},
		{"0", 0},
		{"24h", 24 * time.Hour},
		{"86400", 24 * time.Hour},
		{"1h30m", 90 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.ttl, func(t *testing.T) {
			p := mustLoad(t, "p.yaml", "actions:\n  a:\n    effect: write\n    run: {url: 'http://x/'}\n    ttl: "+tt.ttl+"\n")
			if got := p.Action("a").TTL; got != tt.want {
				t.Errorf("TTL = %v; want %v", got, tt.want)
			}
		})
	}
}

// base is a valid action for the mistakes below to break one key at a time.
const base = `actions:
  delete_post:
    effect: destructive
    schema:
      type: object
      properties:
        post: {type: integer}
        tags: {type: array}
      required: [post]
    card:
      reason: Delete?
      record: http://blog.internal/posts/{post}
      rows: {Post: title}
    run:
      method: DELETE
      url: http://blog.internal/posts/{post}
`

func TestBaseLoads(t *testing.T) {
	mustLoad(t, "blog.yaml", base)
}

// swap returns base with old replaced by new, or "" when base lacks old.
func swap(old, new string) string {
	if !strings.Contains(base, old) {
		return ""
	}
	return strings.Replace(base, old, new, 1)
}

const cardBlock = "    card:\n      reason: Delete?\n      record: http://blog.internal/posts/{post}\n      rows: {Post: title}\n"

func TestMistakes(t *testing.T) {
	const act = `action "delete_post": `
	tests := []struct {
		name, body string
		want       string // the message after "policy FILE: "
	}{
		{"unknown top-level key", swap("actions:", "colour: red\nactions:"), "colour: unknown key; known keys are app, actions"},
		{"unknown key in action", swap("    effect: destructive", "    effect: destructive\n    colour: red"), act + "colour: unknown key"},
		{"unknown key in card", swap("      reason: Delete?", "      reason: Delete?\n      colour: red"), act + "card.colour: unknown key"},
		{"misspelt key in card", swap("      reason: Delete?", "      reasn: Delete?"), act + "card.reasn: unknown key (did you mean reason?); known keys are reason, record, rows, editable"},
		{"misspelt key in action, in capitals", swap("    effect: destructive", "    effect: destructive\n    TTL: 5m"), act + "TTL: unknown key (did you mean ttl?); known keys are"},
		{"unknown key in run", swap("      method: DELETE", "      method: DELETE\n      timeout: 5s"), act + "run.timeout: unknown key"},
		{"unknown key in record", swap("      record: http://blog.internal/posts/{post}", "      record: {url: 'http://blog.internal/posts/{post}', cache: 5}"), act + "card.record.cache: unknown key"},
		{"row without record", swap("      record: http://blog.internal/posts/{post}\n", ""), act + "card.rows.Post: a row needs card.record, or a path args.<field>"},
		{"run.url unknown field", swap("      url: http://blog.internal/posts/{post}\n", "      url: http://blog.internal/posts/{postid}\n"), act + `run.url: names unknown field "postid"`},
		{"record unknown field", swap("record: http://blog.internal/posts/{post}", "record: http://blog.internal/posts/{id}"), act + `card.record: names unknown field "id"`},
		{"array field in url", swap("      url: http://blog.internal/posts/{post}\n", "      url: http://blog.internal/posts/{tags}\n"), act + `run.url: field "tags" is an array`},
		{"record method POST", swap("      record: http://blog.internal/posts/{post}", "      record: {url: 'http://blog.internal/posts/{post}', method: POST}"), act + "card.record: the record is read with GET only"},
		{"record without url", swap("      record: http://blog.internal/posts/{post}", "      record: {method: GET}"), act + "card.record.url: required"},
		{"destructive without card", swap(cardBlock, ""), act + "card: required: destructive actions wait"},
		{"external without card", strings.Replace(swap(cardBlock, ""), "effect: destructive", "effect: external", 1), act + "card: required: external actions wait"},
		{"card on a write", swap("    effect: destructive", "    effect: write"), act + "card: only destructive and external actions have a card"},
		{"card without reason", swap("      reason: Delete?\n", ""), act + "card.reason: required"},
		{"unknown effect", swap("effect: destructive", "effect: remove"), act + `effect: unknown effect "remove"`},
		{"no effect", swap("    effect: destructive\n", ""), act + "effect: required"},
		{"bad ttl", base + "    ttl: soon\n", act + `ttl: "soon" is not a duration`},
		{"negative ttl", base + "    ttl: -5m\n", act + `ttl: "-5m" is out of range`},
		{"ttl over a day", base + "    ttl: 25h\n", act + `ttl: "25h" is out of range`},
		{"ttl seconds over a day", base + "    ttl: 86401\n", act + `ttl: "86401" is out of range`},
		{"ttl under a second", base + "    ttl: 10ms\n", act + `ttl: "10ms" is out of range`},
		{"host placeholder", swap("url: http://blog.internal/posts/{post}\n", "url: http://{post}.internal/posts\n"), act + "run.url: the scheme and host may not name fields"},
		{"port placeholder", swap("record: http://blog.internal/posts/{post}", "record: http://blog.internal:{post}/x"), act + "card.record: the scheme and host may not name fields"},
		{"scheme placeholder", swap("url: http://blog.internal/posts/{post}\n", "url: '{post}://blog.internal/'\n"), act + "run.url: the scheme and host may not name fields"},
		{"unbalanced brace", swap("url: http://blog.internal/posts/{post}\n", "url: http://blog.internal/posts/{post\n"), act + `run.url: "{" at offset 27 is not closed`},
		{"stray closing brace", swap("url: http://blog.internal/posts/{post}\n", "url: http://blog.internal/posts/post}\n"), act + `run.url: "}" at offset 31 closes no field`},
		{"relative url", swap("url: http://blog.internal/posts/{post}\n", "url: /posts/{post}\n"), act + "run.url: the scheme and host may not name fields"},
		{"not http", swap("url: http://blog.internal/posts/{post}\n", "url: ftp://blog.internal/posts/{post}\n"), act + "run.url: must be an absolute http or https URL"},
		{"mcp confirm not a boolean", swap("    run:\n", "    mcp: {confirm: yes please}\n    run:\n"), act + "mcp.confirm"},
		{"mcp unknown key", swap("    run:\n", "    mcp: {confirm: true, form: true}\n    run:\n"), act + "mcp.form: unknown key"},
		{"no url", swap("      url: http://blog.internal/posts/{post}\n", ""), act + "run.url: required"},
		{"bad method", swap("method: DELETE", "method: TRACE"), act + `run.method: unsupported method "TRACE"`},
		{"forbidden header", swap("      method: DELETE", "      method: DELETE\n      headers: {Idempotency-Key: x}"), act + "run.headers.Idempotency-Key: is set by the gate"},
		{"forbidden toolgate header", swap("      method: DELETE", "      method: DELETE\n      headers: {x-toolgate-person: x}"), act + "run.headers.x-toolgate-person: is set by the gate"},
		{"forbidden host header", swap("      method: DELETE", "      method: DELETE\n      headers: {host: x}"), act + "run.headers.host: is set by the gate"},
		{"header twice", swap("      method: DELETE", "      method: DELETE\n      headers: {X-A: x, x-a: y}"), act + "run.headers.x-a: given twice"},
		{"bad header name", swap("      method: DELETE", "      method: DELETE\n      headers: {'X A': x}"), act + `run.headers: "X A" is not a valid header name`},
		{"schema does not compile", swap("        post: {type: integer}", "        post: {type: integr}"), act + "schema.properties.post.type: value must be one of"},
		{"schema bad pattern", swap("        post: {type: integer}", "        post: {type: string, pattern: '(?<=a)b'}"), act + "schema.properties.post.pattern: '(?<=a)b' is not valid regex"},
		{"schema refers outside", swap("        post: {type: integer}", "        post: {$ref: 'file:///etc/passwd'}"), act + "schema: does not compile: failing loading \"file:///etc/passwd\": file:///etc/passwd is outside the policy file"},
		{"schema not an object", swap("      type: object\n", "      type: array\n"), act + "schema: must describe the arguments object"},
		{"schema key twice", swap("      required: [post]\n", "      required: [post]\n      required: [post]\n"), act + "schema.required: given twice"},
		{"schema infinite number", swap("        post: {type: integer}", "        post: {type: integer, maximum: .inf}"), act + `schema.properties.post.maximum: ".inf" is not a number JSON can hold`},
		{"action twice", base + "  delete_post:\n    effect: read\n    run: {url: 'http://x/'}\n", `actions.delete_post: given twice (lines 2 and 17)`},
		{"key twice in card", swap("      reason: Delete?\n", "      reason: Delete?\n      reason: Really?\n"), act + "card.reason: given twice"},
		{"merge key", swap("    effect: destructive\n", "    effect: destructive\n    <<: {reply: x}\n"), act + "merge keys (<<) are not supported"},
		{"action not a mapping", "actions:\n  delete_post: destructive\n", act + "must be a mapping"},
		{"tool name with space", swap("  delete_post:", "  delete post:"), `action "delete post": a tool name may not hold spaces`},
		{"rows not a mapping", swap("rows: {Post: title}", "rows: [title]"), act + "card.rows: must be a mapping"},
		{"row without path", swap("rows: {Post: title}", "rows: {Post: ''}"), act + "card.rows.Post: needs the gjson path"},
		{"reason not a string", swap("reason: Delete?", "reason: [Delete]"), act + "card.reason: must be a string"},
		{"malformed YAML", swap("      method: DELETE\n", "      method: [DELETE\n"), "yaml: line 14: did not find expected ',' or ']'"},
		{"two documents", base + "---\nactions: {}\n", "the file holds more than one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			if body == "" {
				t.Fatal("test broken: its edit does not apply to base")
			}
			path := writePolicy(t, "blog.yaml", body)
			_, err := Load(path)
			if err == nil {
				t.Fatalf("Load succeeded; want error containing %q\nfile:\n%s", tt.want, body)
			}
			want := "policy " + path + ": " + tt.want
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error:\n%v\nwant prefix:\n%s", err, want)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.File != path {
				t.Errorf("error %T does not carry the file", err)
			}
			checkMessage(t, err)
		})
	}
}

// checkMessage holds errors to the project's style: lower-case start, one
// line, no final period.
func checkMessage(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.HasSuffix(msg, ".") || !strings.HasPrefix(msg, "policy ") {
		t.Errorf("message not in house style: %q", msg)
	}
}

func TestEmptyFiles(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"empty", "", "the file is empty"},
		{"comments only", "# nothing yet\n", "the file is empty"},
		{"null document", "---\n", "the file is empty"},
		{"no actions key", "app: Blog\n", "actions: the file declares no actions"},
		{"empty actions", "app: Blog\nactions: {}\n", "actions: the file declares no actions"},
		{"null actions", "actions:\n", "actions: the file declares no actions"},
		{"not a mapping", "- a\n- b\n", "the file must be a mapping"},
		{"actions not a mapping", "actions: [a]\n", "actions: must be a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writePolicy(t, "p.yaml", tt.body)
			_, err := Load(path)
			want := "policy " + path + ": " + tt.want
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("err = %v; want prefix %q", err, want)
			}
			checkMessage(t, err)
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.yaml")
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), "policy "+path+": ") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v; want a policy error naming the file and wrapping ErrNotExist", err)
	}
}

func TestErrorLine(t *testing.T) {
	_, err := Parse("p.yaml", []byte(strings.Replace(base, "      reason: Delete?", "      reason: Delete?\n      colour: red", 1)))
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v; want *Error", err)
	}
	if pe.Line != 12 || pe.Action != "delete_post" || pe.Key != "card.colour" {
		t.Errorf("Error = line %d, action %q, key %q; want 12, delete_post, card.colour", pe.Line, pe.Action, pe.Key)
	}
}

func TestAliasesAndSchemaSize(t *testing.T) {
	// Aliases are followed, so shared pieces work.
	ok := `actions:
  a:
    effect: write
    schema: &s {type: object, properties: {id: {type: string}}}
    run: &r {url: 'http://x/{id}'}
  b:
    effect: write
    schema: *s
    run: *r
`
	p := mustLoad(t, "p.yaml", ok)
	if string(p.Action("b").Schema) != string(p.Action("a").Schema) {
		t.Error("aliased schema differs")
	}
	// A "billion laughs" schema fails instead of eating memory.
	var b strings.Builder
	b.WriteString("actions:\n  a:\n    effect: write\n    run: {url: 'http://x/'}\n    schema:\n      type: object\n")
	b.WriteString("      l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		prev := "*l" + string(rune('0'+i-1))
		b.WriteString("      l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [" + strings.Repeat(prev+", ", 9) + prev + "]\n")
	}
	_, err := Parse("p.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("err = %v; want a too-large error", err)
	}
}

// An action without run loads (an MCP server runs it); mcp.confirm is read
// and refused on an action that has no card.
func TestMCPKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "p.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p, err := Load(write("actions:\n  wipe:\n    effect: destructive\n    card: {reason: \"Wipe it?\"}\n    mcp: {confirm: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := p.Action("wipe")
	if !a.MCP.Confirm || a.Run.URL != nil {
		t.Fatalf("wipe: MCP %+v, run URL %v; want confirm and no run", a.MCP, a.Run.URL)
	}
	_, err = Load(write("actions:\n  look:\n    effect: read\n    mcp: {confirm: true}\n"))
	if err == nil || !strings.Contains(err.Error(), `action "look": mcp.confirm: only destructive and external`) {
		t.Fatalf("confirm on a read action: %v", err)
	}
}
