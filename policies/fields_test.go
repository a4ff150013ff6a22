package policies

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestAgentSchema(t *testing.T) {
	a := &Action{RequiredForAgents: []string{"publish_on", "status", "n", "tag", "e"}}
	in := `{"type":"object","properties":{` +
		`"title":{"type":"string"},` +
		`"publish_on":{"type":["string","null"],"format":"date"},` +
		`"status":{"type":"string","nullable":true,"enum":["draft",null]},` +
		`"n":{"anyOf":[{"type":"integer"},{"type":"null"}],"title":"N"},` +
		`"tag":{"type":["string","integer","null"]},` +
		`"e":{"$ref":"#/$defs/E"}},` +
		`"required":["title"],"$defs":{"E":{"type":["string","null"]}}}`
	want := `{"type":"object","properties":{` +
		`"title":{"type":"string"},` +
		`"publish_on":{"type":"string","format":"date"},` +
		`"status":{"type":"string","enum":["draft"]},` +
		`"n":{"anyOf":[{"type":"integer"}],"title":"N"},` +
		`"tag":{"type":["string","integer"]},` +
		`"e":{"$ref":"#/$defs/E"}},` +
		`"required":["title","publish_on","status","n","tag","e"],"$defs":{"E":{"type":["string","null"]}}}`
	if got := string(a.AgentSchema(json.RawMessage(in))); got != want {
		t.Errorf("AgentSchema:\n got %s\nwant %s", got, want)
	}
	// No required list yet: one is added at the end.
	if got := string(a.AgentSchema(json.RawMessage(`{"type":"object","properties":{"status":{"type":"string"}}}`))); got != `{"type":"object","properties":{"status":{"type":"string"}},"required":["publish_on","status","n","tag","e"]}` {
		t.Errorf("AgentSchema without required = %s", got)
	}
	// Without required_for_agents, or on what is not an object, nothing changes.
	for _, s := range []string{in, `[1]`, `not json`, ``} {
		b := &Action{}
		if got := string(b.AgentSchema(json.RawMessage(s))); got != s {
			t.Errorf("AgentSchema without required_for_agents changed %q to %q", s, got)
		}
	}
	if got := string(a.AgentSchema(json.RawMessage(`not json`))); got != `not json` {
		t.Errorf("AgentSchema(not json) = %q", got)
	}
	// Keys with characters JSON escapes survive.
	esc := `{"type":"object","properties":{"a.b\"c":{"type":"string"},"<x>":{"type":"string"}}}`
	c := &Action{RequiredForAgents: []string{"<x>"}}
	if got := string(c.AgentSchema(json.RawMessage(esc))); got != `{"type":"object","properties":{"a.b\"c":{"type":"string"},"<x>":{"type":"string"}},"required":["<x>"]}` {
		t.Errorf("AgentSchema with odd keys = %s", got)
	}
}

// TestRequiredForAgentsChecked: calls are checked against the schema as
// agents are offered it.
func TestRequiredForAgentsChecked(t *testing.T) {
	p := mustLoad(t, "p.yaml", askBase)
	a := p.Action("draft_post")
	const complete = `"title":"T","body":"B","status":"draft"`
	tests := []struct {
		args string
		want []FieldError
	}{
		{`{` + complete + `,"publish_on":"2025-01-02"}`, nil},
		{`{` + complete + `}`, []FieldError{{"publish_on", "required"}}},
		{`{` + complete + `,"publish_on":null}`, []FieldError{{"publish_on", "must be string"}}},
	}
	for _, tt := range tests {
		err := a.CheckArguments([]byte(tt.args))
		var ae *ArgumentError
		if tt.want == nil && err != nil || tt.want != nil && (!errors.As(err, &ae) || !reflect.DeepEqual(ae.Fields, tt.want)) {
			t.Errorf("CheckArguments(%s) = %v; want %v", tt.args, err, tt.want)
		}
	}
}

func TestCheckArgumentsWith(t *testing.T) {
	p := mustLoad(t, "p.yaml", "actions:\n  a:\n    effect: write\n    required_for_agents: [n]\n    run: {url: 'http://x/'}\n")
	a := p.Action("a")
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":["integer","null"]}}}`)
	for i := 0; i < 2; i++ { // the second time from the cache
		if err := a.CheckArgumentsWith(schema, []byte(`{"q":"x","n":1}`)); err != nil {
			t.Errorf("valid call: %v", err)
		}
		var ae *ArgumentError
		err := a.CheckArgumentsWith(schema, []byte(`{"q":"x","n":null}`))
		if !errors.As(err, &ae) || !reflect.DeepEqual(ae.Fields, []FieldError{{"n", "must be integer"}}) {
			t.Errorf("null for a field required for agents: %v", err)
		}
	}
	if n := len(a.cache.m); n != 1 {
		t.Errorf("cache holds %d schemas; want 1", n)
	}
	for i := 0; i < 2*maxCachedSchemas; i++ {
		s := json.RawMessage(`{"type":"object","title":"` + string(rune('a'+i)) + `"}`)
		if err := a.CheckArgumentsWith(s, []byte(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(a.cache.m); n > maxCachedSchemas {
		t.Errorf("cache grew to %d schemas; cap %d", n, maxCachedSchemas)
	}
	for _, bad := range []string{`{"type":"array"}`, `{"type":"object","properties":{"a":{"type":"nope"}}}`, `{"type":"object","properties":{"a":{"$ref":"http://evil.example/s.json"}}}`, `nope`} {
		if err := a.CheckArgumentsWith(json.RawMessage(bad), []byte(`{}`)); !errors.Is(err, ErrSchema) {
			t.Errorf("CheckArgumentsWith(%s) = %v; want ErrSchema", bad, err)
		}
	}
	// nil and the policy's own schema use the one compiled at load.
	if err := a.CheckArgumentsWith(nil, []byte(`{"any":"thing"}`)); err != nil {
		t.Errorf("no schema: %v", err)
	}
	// An Action built by hand has no cache and still works.
	b := &Action{Name: "b"}
	if err := b.CheckArgumentsWith(schema, []byte(`{"q":1}`)); err == nil {
		t.Error("hand-built action: invalid call passed")
	}
}

func TestFormProperties(t *testing.T) {
	p := mustLoad(t, "p.yaml", `forbidden_keys: [tenant_id]
actions:
  a:
    effect: write
    ask_for_missing: true
    required_for_agents: [maybe]
    schema:
      type: object
      $defs:
        Status: {type: string, enum: [draft, published], title: Status}
        Tag: {enum: [x, y]}
      properties:
        title: {type: string, title: Title, description: The title., minLength: 1, maxLength: 120, default: Untitled}
        body: {type: string}
        status: {$ref: '#/$defs/Status', description: Where it stands.}
        wrapped: {allOf: [{$ref: '#/$defs/Status'}], title: Wrapped}
        maybe: {anyOf: [{type: integer, minimum: 1}, {type: 'null'}]}
        count: {type: number, maximum: 9.5}
        flag: {type: boolean}
        mail: {type: string, format: email}
        tags: {type: array, items: {$ref: '#/$defs/Tag'}, minItems: 1}
        free: {type: array, items: {type: string}}
        picked: {type: array, items: {type: string}}
        level: {const: 3}
        obj: {type: object}
        blob: {type: string, contentEncoding: base64}
        token_count: {type: integer}
        tenant_id: {type: string}
        loop: {$ref: '#/properties/loop'}
        opt: {type: [string, 'null']}
      required: [title, status]
    ask:
      textarea: [body]
      choices: {picked: {p: P, q: Q}}
    run: {url: 'http://x/'}
`)
	props, err := p.Action("a").FormProperties(nil)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		key, kind, typ, unaskable string
		required, nullable        bool
	}
	want := []row{
		{"title", KindText, "string", "", true, false},
		{"body", KindTextarea, "string", "", false, false},
		{"status", KindSelect, "string", "", true, false},
		{"wrapped", KindSelect, "string", "", false, false},
		{"maybe", KindInteger, "integer", "", true, false},
		{"count", KindNumber, "number", "", false, false},
		{"flag", KindCheckbox, "boolean", "", false, false},
		{"mail", KindEmail, "string", "", false, false},
		{"tags", KindMultiselect, "string", "", false, false},
		{"free", "", "string", "no form can hold a free list", false, false},
		{"picked", KindMultiselect, "string", "", false, false},
		{"level", KindSelect, "integer", "", false, false},
		{"obj", "", "", "no form can hold an object", false, false},
		{"blob", "", "", "no form can hold a file", false, false},
		{"token_count", "", "integer", "reads as a secret", false, false},
		{"tenant_id", "", "string", "reads as a secret", false, false},
		{"loop", "", "", "no form can read its schema", false, false},
		{"opt", KindText, "string", "", false, true},
	}
	var got []row
	for _, p := range props {
		got = append(got, row{p.Key, p.Kind, p.Type, p.Unaskable, p.Required, p.Nullable})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FormProperties:\n got %v\nwant %v", got, want)
	}
	title, status, maybe, tags := props[0], props[2], props[4], props[8]
	if *title.MinLength != 1 || *title.MaxLength != 120 || title.Default != "Untitled" || !title.HasDefault || title.Title != "Title" || title.Description != "The title." {
		t.Errorf("title = %+v", title)
	}
	if status.Title != "Status" || status.Description != "Where it stands." || !reflect.DeepEqual(status.Enum, []any{"draft", "published"}) {
		t.Errorf("status = %+v; want the $ref's enum and title, the description beside it", status)
	}
	if maybe.Minimum != "1" {
		t.Errorf("maybe = %+v", maybe)
	}
	if !reflect.DeepEqual(tags.Enum, []any{"x", "y"}) || *tags.MinItems != 1 {
		t.Errorf("tags = %+v", tags)
	}
	// A $ref out of the schema (only a request's schema can hold one: the
	// loader refuses it) is never followed.
	far, err := (&Action{}).FormProperties(json.RawMessage(`{"type":"object","properties":{"far":{"$ref":"other.json#/x"},"anchor":{"$ref":"#x"}}}`))
	if err != nil || far[0].Unaskable != "no form can read its schema" || far[1].Unaskable != "no form can read its schema" {
		t.Errorf("FormProperties with outside refs = %+v, %v", far, err)
	}
	if _, err := (&Action{}).FormProperties(nil); err == nil {
		t.Error("FormProperties without a schema: no error")
	}
}

// TestReadsAsSecretWords pins the word splitting the secret check reads.
func TestReadsAsSecretWords(t *testing.T) {
	for in, want := range map[string][]string{
		"apiKey": {"api", "key"}, "APIKey": {"api", "key"}, "api-key": {"api", "key"}, "API key": {"api", "key"},
		"cvv2": {"cvv", "2"}, "2faCode": {"2", "fa", "code"}, "userIDs": {"user", "ids"}, "APIKeys": {"api", "keys"}, "": nil,
		"Contraseña": {"contraseña"},
	} {
		if got := splitWords(in); !reflect.DeepEqual(got, want) {
			t.Errorf("splitWords(%q) = %q; want %q", in, got, want)
		}
	}
}
