package policies

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// askBase is a write action with every form key; the mistakes below break
// it one key at a time.
const askBase = `forbidden_keys: [internal_ref, tenant]
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
        owner: {type: string}
        city: {type: string}
        size: {type: integer}
        pinned: {type: boolean}
        author: {type: object}
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
        status: {published: Published, draft: Draft}
        tags: [{c: See}, {a: Ay}]
        size: [3, 1]
      default: {status: draft, tags: [a], size: 1, pinned: true}
      choices_from: {owner: "http://app.internal/members"}
      default_from: {city: "http://app.internal/me/city"}
    forbidden_keys: [secret_sauce, tenant]
    run: {method: POST, url: http://app.internal/posts}
`

func TestAskLoads(t *testing.T) {
	p := mustLoad(t, "blog.yaml", askBase)
	a := p.Action("draft_post")
	if !a.AskForMissing || !reflect.DeepEqual(a.RequiredForAgents, []string{"publish_on", "status"}) {
		t.Errorf("AskForMissing %v, RequiredForAgents %q", a.AskForMissing, a.RequiredForAgents)
	}
	if !reflect.DeepEqual(a.Titles, map[string]map[string]string{"body": {"en": "Body", "de": "Inhalt"}}) {
		t.Errorf("Titles = %v", a.Titles)
	}
	if !reflect.DeepEqual(a.ForbiddenKeys, []string{"secret_sauce", "tenant", "internal_ref"}) {
		t.Errorf("ForbiddenKeys = %q; want the action's, then the file's, each once", a.ForbiddenKeys)
	}
	k := a.Ask
	if k.Message != "A few details for your post." || !reflect.DeepEqual(k.Confirm, []string{"title"}) || !reflect.DeepEqual(k.Textarea, []string{"body"}) {
		t.Errorf("Ask = %+v", k)
	}
	wantChoices := map[string][]Choice{
		"status": {{Value: "published", Label: "Published"}, {Value: "draft", Label: "Draft"}},
		"tags":   {{Value: "c", Label: "See"}, {Value: "a", Label: "Ay"}},
		"size":   {{Value: json.Number("3"), Label: "3"}, {Value: json.Number("1"), Label: "1"}},
	}
	if !reflect.DeepEqual(k.Choices, wantChoices) {
		t.Errorf("Choices = %#v; want file order %#v", k.Choices, wantChoices)
	}
	wantDefaults := map[string]any{"status": "draft", "tags": []any{"a"}, "size": json.Number("1"), "pinned": true}
	if !reflect.DeepEqual(k.Defaults, wantDefaults) {
		t.Errorf("Defaults = %#v", k.Defaults)
	}
	if k.ChoicesFrom["owner"].String() != "http://app.internal/members" || k.DefaultFrom["city"].String() != "http://app.internal/me/city" {
		t.Errorf("ChoicesFrom %v, DefaultFrom %v", k.ChoicesFrom, k.DefaultFrom)
	}
	if err := a.CheckAsk(nil); err != nil {
		t.Errorf("CheckAsk(nil) = %v", err)
	}
}

// swapAsk returns askBase with old replaced by new, or "" when it lacks old.
func swapAsk(old, new string) string {
	if !strings.Contains(askBase, old) {
		return ""
	}
	return strings.Replace(askBase, old, new, 1)
}

func TestAskMistakes(t *testing.T) {
	const act = `action "draft_post": `
	tests := []struct {
		name, body string
		want       string // the message after "policy FILE: "
	}{
		{"ask_for_missing on a destructive action", swap("    effect: destructive", "    effect: destructive\n    ask_for_missing: true"),
			`action "delete_post": ask_for_missing: destructive actions never ask`},
		{"ask on an external action", swap("    effect: destructive", "    effect: external\n    ask: {confirm: [post]}"),
			`action "delete_post": ask: external actions never ask`},
		{"ask without ask_for_missing", swapAsk("    ask_for_missing: true\n", ""), act + "ask: needs ask_for_missing: true"},
		{"ask_for_missing not a boolean", swapAsk("ask_for_missing: true", "ask_for_missing: yes please"), act + "ask_for_missing: must be true or false"},
		{"unknown ask key", swapAsk("      confirm: [title]", "      confirm: [title]\n      colour: red"), act + "ask.colour: unknown key"},
		{"confirm names a field the schema lacks", swapAsk("confirm: [title]", "confirm: [titel]"), act + `ask.confirm: field "titel": is not one the schema offers to agents`},
		{"confirm an object", swapAsk("confirm: [title]", "confirm: [title, author]"), act + `ask.confirm: field "author": no form can hold an object`},
		{"confirm a secret", swapAsk("confirm: [title]", "confirm: [api_key]"), act + `ask.confirm: field "api_key": reads as a secret`},
		{"confirm a forbidden key of the file", swapAsk("confirm: [title]", "confirm: [internal_ref]"), act + `ask.confirm: field "internal_ref": reads as a secret`},
		{"confirm a free list", strings.Replace(swapAsk("        owner: {type: string}", "        owner: {type: string}\n        more: {type: array}"), "confirm: [title]", "confirm: [title, more]", 1),
			act + `ask.confirm: field "more": no form can hold a free list`},
		{"textarea on an integer", swapAsk("textarea: [body]", "textarea: [size]"), act + `ask.textarea: field "size": textarea is for text; the field is a select`},
		{"textarea on a boolean", swapAsk("textarea: [body]", "textarea: [pinned]"), act + `ask.textarea: field "pinned": textarea is for text; the field is a checkbox`},
		{"textarea on an enum", swapAsk("textarea: [body]", "textarea: [status]"), act + `ask.textarea: field "status": textarea is for text; the field is a select`},
		{"textarea on a date", swapAsk("textarea: [body]", "textarea: [publish_on]"), act + `ask.textarea: field "publish_on": textarea is for text; the field is a date`},
		{"choice outside the enum", swapAsk("{published: Published, draft: Draft}", "{published: Published, archived: Archived}"), act + `ask.choices.status: field "status": choice "archived" is outside the field's enum`},
		{"list choice outside the items' enum", swapAsk("[{c: See}, {a: Ay}]", "[{c: See}, {z: Zed}]"), act + `ask.choices.tags: field "tags": choice "z" is outside the field's enum`},
		{"number choice for a string field", swapAsk("{published: Published, draft: Draft}", "{1: One}"), act + `ask.choices.status: field "status": choice 1 is not of the field's type string`},
		{"string choice for an integer field", swapAsk("size: [3, 1]", "size: [three]"), act + `ask.choices.size: field "size": choice "three" is not of the field's type integer`},
		{"choices on a boolean", swapAsk("size: [3, 1]", "size: [3, 1]\n        pinned: [yes]"), act + `ask.choices.pinned: field "pinned": choices are for text, numbers and lists; the field is a checkbox`},
		{"choices on an unknown field", swapAsk("size: [3, 1]", "size: [3, 1]\n        colour: [red]"), act + `ask.choices.colour: field "colour": is not one the schema offers to agents`},
		{"choice given twice", swapAsk("size: [3, 1]", "size: [3, 1, 3]"), act + "ask.choices.size: choice 3 given twice"},
		{"empty choices", swapAsk("size: [3, 1]", "size: []"), act + "ask.choices.size: needs at least one choice"},
		{"choices and choices_from", swapAsk(`choices_from: {owner: "http://app.internal/members"}`, `choices_from: {status: "http://app.internal/members"}`), act + `ask.choices_from.status: field "status": has ask.choices too`},
		{"choices_from not http", swapAsk(`"http://app.internal/members"`, `"ftp://app.internal/members"`), act + "ask.choices_from.owner: must be an absolute http or https URL"},
		{"choices_from names a field", swapAsk(`"http://app.internal/members"`, `"http://app.internal/members?q={title}"`), act + "ask.choices_from.owner: may not name fields"},
		{"default_from names a field", swapAsk(`"http://app.internal/me/city"`, `"http://app.internal/{owner}/city"`), act + "ask.default_from.city: may not name fields"},
		{"default_from relative", swapAsk(`"http://app.internal/me/city"`, `"/me/city"`), act + "ask.default_from.city: must be an absolute http or https URL"},
		{"default_from on an object", swapAsk(`default_from: {city: "http://app.internal/me/city"}`, `default_from: {author: "http://app.internal/me"}`), act + `ask.default_from.author: field "author": no form can hold an object`},
		{"default and default_from", swapAsk(`default_from: {city: "http://app.internal/me/city"}`, `default_from: {status: "http://app.internal/me/city"}`), act + `ask.default.status: field "status": has ask.default_from too`},
		{"default outside the choices", swapAsk("default: {status: draft,", "default: {status: archived,"), act + `ask.default.status: field "status": the default does not fit the field: must be one of the choices`},
		{"default too long", swapAsk("default: {status: draft,", "default: {title: '',"), act + `ask.default.title: field "title": the default does not fit the field: at least 1 characters`},
		{"default of the wrong type", swapAsk("pinned: true}", "pinned: 'yes'}"), act + `ask.default.pinned: field "pinned": the default does not fit the field: must be true or false`},
		{"default list too long", swapAsk("tags: [a], size", "tags: [a, c, c], size"), act + `ask.default.tags: field "tags": the default does not fit the field: items must be unique`},
		{"default null", swapAsk("pinned: true}", "pinned: null}"), act + "ask.default.pinned: a default may not be null"},
		{"default an object", swapAsk("pinned: true}", "pinned: {a: 1}}"), act + "ask.default.pinned: a default is a string, number, boolean or list"},
		{"message with a URL", swapAsk("message: A few details for your post.", "message: See https://evil.example/x"), act + "ask.message: may not hold a URL"},
		{"required_for_agents names an unknown field", swapAsk("required_for_agents: [publish_on, status]", "required_for_agents: [publish_on, statsu]"), act + `required_for_agents: field "statsu": is not one of the schema's properties`},
		{"required_for_agents twice", swapAsk("required_for_agents: [publish_on, status]", "required_for_agents: [status, status]"), act + `required_for_agents: field "status" given twice`},
		{"required_for_agents not a list", swapAsk("required_for_agents: [publish_on, status]", "required_for_agents: status"), act + "required_for_agents: must be a list of field names"},
		{"titles names an unknown field", swapAsk("      body: {en: Body, de: Inhalt}", "      bdy: {en: Body}"), act + `titles: field "bdy": is not one of the schema's properties`},
		{"titles with a bad locale", swapAsk("{en: Body, de: Inhalt}", "{en: Body, not_a_locale!: Inhalt}"), act + `titles.body: "not_a_locale!" is not a BCP 47 language tag`},
		{"empty title", swapAsk("{en: Body, de: Inhalt}", "{en: Body, de: ''}"), act + "titles.body.de: a title may not be empty"},
		{"forbidden_keys not a list", swapAsk("forbidden_keys: [secret_sauce, tenant]", "forbidden_keys: tenant"), act + "forbidden_keys: must be a list of field names"},
		{"file forbidden_keys not a list", swapAsk("forbidden_keys: [internal_ref, tenant]", "forbidden_keys: {a: b}"), "forbidden_keys: must be a list of field names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.body == "" {
				t.Fatal("test broken: its edit does not apply")
			}
			path := writePolicy(t, "blog.yaml", tt.body)
			_, err := Load(path)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load succeeded; want error containing %q", tt.want)
			}
			want := "policy " + path + ": " + tt.want
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error:\n%v\nwant prefix:\n%s", err, want)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.File != path || pe.Line == 0 {
				t.Errorf("error %#v does not carry the file and line", err)
			}
			checkMessage(t, err)
		})
	}
}

// TestCheckAskAtRunTime: an action without a schema loads; its form keys
// are checked against the schema the request's tools give.
func TestCheckAskAtRunTime(t *testing.T) {
	p := mustLoad(t, "p.yaml", `actions:
  search:
    effect: read
    ask_for_missing: true
    required_for_agents: [q]
    ask:
      confirm: [q]
      choices: {sort: {new: Newest, top: Top}}
    run: {url: 'http://app.internal/search'}
`)
	a := p.Action("search")
	good := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"sort":{"type":"string","enum":["new","top","old"]}}}`)
	if err := a.CheckAsk(good); err != nil {
		t.Errorf("CheckAsk(good) = %v", err)
	}
	tests := []struct {
		schema string
		want   string
	}{
		{`{"type":"object","properties":{"q":{"type":"object"},"sort":{"type":"string"}}}`, `policy: action "search": ask.confirm: field "q": no form can hold an object`},
		{`{"type":"object","properties":{"q":{"type":"string"},"sort":{"type":"string","enum":["new"]}}}`, `policy: action "search": ask.choices.sort: field "sort": choice "top" is outside the field's enum`},
		{`{"type":"object","properties":{"sort":{"type":"string"}}}`, `policy: action "search": required_for_agents: field "q": is not one of the schema's properties`},
		{`{"type":"array"}`, `policy: action "search": schema: the schema must describe the arguments object (type: object)`},
		{`not json`, `policy: action "search": schema: the schema is not JSON`},
	}
	for _, tt := range tests {
		err := a.CheckAsk(json.RawMessage(tt.schema))
		var pe *Error
		if err == nil || err.Error() != tt.want || !errors.As(err, &pe) || pe.Action != "search" {
			t.Errorf("CheckAsk(%s) = %v; want %q", tt.schema, err, tt.want)
		}
	}
	if err := a.CheckAsk(nil); err == nil {
		t.Error("CheckAsk(nil) without a schema = nil; want an error")
	}
}
