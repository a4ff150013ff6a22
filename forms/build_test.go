package forms

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policies"
)

// ask builds the form for a call with no arguments.
func askEmpty(t testing.TB, a *policies.Action) Form {
	t.Helper()
	d := Plan(a, nil, []byte(`{}`))
	if d.Outcome != Ask {
		t.Fatalf("Plan = %+v; want Ask", d)
	}
	f, err := Build(a, nil, d, "", Fetched{})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return f
}

// TestBuildSchemaTable: the requestedSchema for every row of the seed's
// table of what a form holds.
func TestBuildSchemaTable(t *testing.T) {
	tests := []struct {
		name, prop, ask string
		want            string // the property f
		optional        bool   // f is not in required
	}{
		{"string with lengths", `{"type":"string","minLength":1,"maxLength":120}`, "",
			`{"type":"string","title":"F","minLength":1,"maxLength":120}`, false},
		{"title and description", `{"type":"string","title":"Due date","description":"When it is due."}`, "",
			`{"type":"string","title":"Due date","description":"When it is due."}`, false},
		{"email", `{"type":"string","format":"email"}`, "",
			`{"type":"string","title":"F","format":"email"}`, false},
		{"uri", `{"type":"string","format":"uri"}`, "",
			`{"type":"string","title":"F","format":"uri"}`, false},
		{"url reads as uri", `{"type":"string","format":"url"}`, "",
			`{"type":"string","title":"F","format":"uri"}`, false},
		{"date", `{"type":"string","format":"date"}`, "",
			`{"type":"string","title":"F","format":"date"}`, false},
		{"date-time", `{"type":"string","format":"date-time"}`, "",
			`{"type":"string","title":"F","format":"date-time"}`, false},
		{"other formats and pattern are the action's", `{"type":"string","format":"uuid","pattern":"^[a-f0-9-]+$"}`, "",
			`{"type":"string","title":"F"}`, false},
		{"textarea", `{"type":"string","maxLength":5000}`, "      textarea: [f]\n",
			`{"type":"string","title":"F","maxLength":5000}`, false},
		{"string enum: one choice", `{"type":"string","enum":["draft","published"]}`, "",
			`{"type":"string","title":"F","enum":["draft","published"]}`, false},
		{"enum without type", `{"enum":["draft","published"]}`, "",
			`{"type":"string","title":"F","enum":["draft","published"]}`, false},
		{"string with choices: titled", `{"type":"string"}`, "      choices:\n        f: {zeta: Zeta, alpha: Alpha}\n",
			`{"type":"string","title":"F","oneOf":[{"const":"zeta","title":"Zeta"},{"const":"alpha","title":"Alpha"}]}`, false},
		{"enum with a subset of choices, in the choices' order", `{"type":"string","enum":["a","b","c"]}`, "      choices:\n        f: [{c: See}, {a: Ay}]\n",
			`{"type":"string","title":"F","oneOf":[{"const":"c","title":"See"},{"const":"a","title":"Ay"}]}`, false},
		{"integer with bounds", `{"type":"integer","minimum":1,"maximum":10}`, "",
			`{"type":"integer","title":"F","minimum":1,"maximum":10}`, false},
		{"number with bounds", `{"type":"number","minimum":0.5,"maximum":99.5}`, "",
			`{"type":"number","title":"F","minimum":0.5,"maximum":99.5}`, false},
		{"integer enum: one choice", `{"type":"integer","enum":[1,2,3]}`, "",
			`{"type":"integer","title":"F","enum":[1,2,3]}`, false},
		{"integer with choices", `{"type":"integer"}`, "      choices:\n        f: {1: One, 2: Two}\n",
			`{"type":"integer","title":"F","oneOf":[{"const":1,"title":"One"},{"const":2,"title":"Two"}]}`, false},
		{"boolean: checkbox", `{"type":"boolean"}`, "",
			`{"type":"boolean","title":"F"}`, false},
		{"list of enum strings: several choices", `{"type":"array","items":{"type":"string","enum":["a","b","c"]},"minItems":1,"maxItems":2}`, "",
			`{"type":"array","title":"F","minItems":1,"maxItems":2,"items":{"type":"string","enum":["a","b","c"]}}`, false},
		{"list with choices", `{"type":"array","items":{"type":"string"},"maxItems":2}`, "      choices:\n        f: {x: Ex, y: Why}\n",
			`{"type":"array","title":"F","maxItems":2,"items":{"anyOf":[{"const":"x","title":"Ex"},{"const":"y","title":"Why"}]}}`, false},
		{"list with choices and no items", `{"type":"array"}`, "      choices:\n        f: [x, y]\n",
			`{"type":"array","title":"F","items":{"anyOf":[{"const":"x","title":"x"},{"const":"y","title":"y"}]}}`, false},
		{"nullable type list is optional", `{"type":["string","null"],"maxLength":9}`, "",
			`{"type":"string","title":"F","maxLength":9}`, true},
		{"nullable: true is optional", `{"type":"string","nullable":true}`, "",
			`{"type":"string","title":"F"}`, true},
		{"anyOf with null is optional", `{"anyOf":[{"type":"integer","minimum":0},{"type":"null"}],"title":"Count"}`, "",
			`{"type":"integer","title":"Count","minimum":0}`, true},
		{"schema default opens the field", `{"type":"string","default":"hello"}`, "",
			`{"type":"string","title":"F","default":"hello"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := askEmpty(t, oneField(t, tt.prop, tt.ask, ""))
			req := `["f"]`
			if tt.optional {
				req = `[]`
			}
			want := `{"type":"object","properties":{"f":` + tt.want + `},"required":` + req + `}`
			if string(f.RequestedSchema) != want {
				t.Errorf("requestedSchema:\n got %s\nwant %s", f.RequestedSchema, want)
			}
			if !json.Valid(f.RequestedSchema) {
				t.Error("requestedSchema is not JSON")
			}
			if f.Mode != "form" || f.Message != DefaultMessage {
				t.Errorf("mode %q, message %q", f.Mode, f.Message)
			}
			wantText := []string(nil)
			if tt.ask == "      textarea: [f]\n" {
				wantText = []string{"f"}
			}
			if !reflect.DeepEqual(f.Textarea, wantText) {
				t.Errorf("Textarea = %q; want %q", f.Textarea, wantText)
			}
			if got := f.NullWhenEmpty; tt.optional != (len(got) == 1) {
				t.Errorf("NullWhenEmpty = %q (the field is required and nullable: %v)", got, tt.optional)
			}
		})
	}
}

// TestNeverAsked: the rows of the table no form holds refuse the call,
// naming the field and why.
func TestNeverAsked(t *testing.T) {
	tests := []struct{ name, prop, ask, why string }{
		{"object", `{"type":"object","properties":{"a":{"type":"string"}}}`, "", "no form can hold an object"},
		{"list of objects", `{"type":"array","items":{"type":"object"}}`, "", "no form can hold a list of objects"},
		{"list of lists", `{"type":"array","items":{"type":"array"}}`, "", "no form can hold a list of lists"},
		{"free list", `{"type":"array","items":{"type":"string"}}`, "", "no form can hold a free list"},
		{"list of anything", `{"type":"array"}`, "", "no form can hold a free list"},
		{"fixed-length list", `{"type":"array","prefixItems":[{"type":"string"}]}`, "", "no form can hold a fixed-length list"},
		{"union type list", `{"type":["string","integer"]}`, "", "no form can hold a union"},
		{"union anyOf", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, "", "no form can hold a union"},
		{"union oneOf", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, "", "no form can hold a union"},
		{"mixed enum", `{"enum":["a",1]}`, "", "no form can hold a union"},
		{"file: format binary", `{"type":"string","format":"binary"}`, "", "no form can hold a file"},
		{"file: contentEncoding", `{"type":"string","contentEncoding":"base64"}`, "", "no form can hold a file"},
		{"file: contentMediaType", `{"type":"string","contentMediaType":"image/png"}`, "", "no form can hold a file"},
		{"any value", `{}`, "", "no form can hold a value of any type"},
		{"a secret by its title", `{"type":"string","title":"Access token"}`, "", "reads as a secret"},
		{"a conditional", `{"type":"string","if":{"minLength":1},"then":{"maxLength":3}}`, "", "no form can hold a union"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := oneField(t, tt.prop, tt.ask, "")
			d := Plan(a, nil, []byte(`{}`))
			if d.Outcome != Refuse || !reflect.DeepEqual(d.Fields, []string{"f"}) || d.Reasons["f"] != "required; "+tt.why {
				t.Errorf("Plan = %+v; want Refuse naming f: %q", d, tt.why)
			}
			if _, err := Build(a, nil, Decision{Outcome: Ask, Fields: []string{"f"}}, "", Fetched{}); err == nil {
				t.Error("Build made a form for a field no form can hold")
			}
		})
	}
}

func TestBuildDraft(t *testing.T) {
	a := load(t, "draft_post", draftPolicy)
	d := Plan(a, nil, []byte(`{"title":"Launch notes"}`))
	tests := []struct {
		acceptLanguage string
		bodyLabel      string
	}{
		{"de-DE,de;q=0.9", "Inhalt"},
		{"de-CH", "Inhalt"},
		{"en-GB,en;q=0.8", "Body"},
		{"fr-FR, de;q=0.5", "Inhalt"},
		{"fr-FR", "Body"}, // no title for fr, no schema title: the headline
		{"", "Body"},
		{"not a header ;;;", "Body"},
	}
	for _, tt := range tests {
		t.Run(tt.acceptLanguage, func(t *testing.T) {
			f, err := Build(a, nil, d, tt.acceptLanguage, Fetched{})
			if err != nil {
				t.Fatal(err)
			}
			want := `{"type":"object","properties":{` +
				`"title":{"type":"string","title":"Title","minLength":1,"maxLength":120,"default":"Launch notes"},` +
				`"body":{"type":"string","title":"` + tt.bodyLabel + `","maxLength":5000},` +
				`"status":{"type":"string","title":"Status","oneOf":[{"const":"draft","title":"Draft"},{"const":"published","title":"Published"}],"default":"draft"},` +
				`"publish_on":{"type":"string","title":"Publish On","format":"date"}},` +
				`"required":["title","body","status","publish_on"]}`
			if string(f.RequestedSchema) != want {
				t.Errorf("requestedSchema:\n got %s\nwant %s", f.RequestedSchema, want)
			}
			if f.Message != "A few details for your post." || !reflect.DeepEqual(f.Textarea, []string{"body"}) || f.NullWhenEmpty != nil {
				t.Errorf("message %q, textarea %q, null %q", f.Message, f.Textarea, f.NullWhenEmpty)
			}
		})
	}
	// The whole form as JSON: MCP's keys plus the one hint.
	f, _ := Build(a, nil, d, "en", Fetched{})
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mode", "message", "requestedSchema", "x-toolgate-textarea"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("form JSON lacks %q: %s", k, b)
		}
	}
	if len(keys) != 4 {
		t.Errorf("form JSON has keys beyond MCP's and the textarea hint: %s", b)
	}
}

func TestHeadline(t *testing.T) {
	for key, want := range map[string]string{
		"due_on": "Due On", "dueOn": "Due On", "publish-on": "Publish On", "userID": "User ID", "userIDs": "User IDs",
		"APIVersion": "API Version", "title": "Title", "x": "X", "2fa_enabled": "2fa Enabled",
		"__": "__", "größe": "Größe",
	} {
		if got := Headline(key); got != want {
			t.Errorf("Headline(%q) = %q; want %q", key, got, want)
		}
	}
}

// TestLabels: the locale's title, else the schema's title, else the
// headline; cleaned.
func TestLabels(t *testing.T) {
	a := load(t, "a", `actions:
  a:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        due_on: {type: string, title: "Due\u202E date"}
        dueOn: {type: string}
        city: {type: string, title: City}
      required: [due_on, dueOn, city]
    titles:
      city: {de: Stadt, fr-CA: Ville, pt-BR: Cidade}
    run: {url: 'http://x/'}
`)
	for lang, want := range map[string][]string{
		"de":                {"Due date", "Due On", "Stadt"},
		"fr-FR":             {"Due date", "Due On", "Ville"},
		"pt":                {"Due date", "Due On", "Cidade"},
		"ja, en;q=0.1":      {"Due date", "Due On", "City"},
		"*":                 {"Due date", "Due On", "City"},
		"en-US,de-AT;q=0.7": {"Due date", "Due On", "Stadt"},
	} {
		f, err := Build(a, nil, Plan(a, nil, []byte(`{}`)), lang, Fetched{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, fd := range f.Fields() {
			got = append(got, fd.Label)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: labels %q; want %q", lang, got, want)
		}
	}
}

// TestOpeningValue: the model's accepted value, else the fetched default,
// else the policy's default, else the schema's; each only when the field
// takes it and it is safe to show.
func TestOpeningValue(t *testing.T) {
	const prop = `{"type":"string","enum":["a","b","c","d"],"default":"d"}`
	withDefault := "      default: {f: c}\n"
	withFrom := "      default_from: {f: 'http://app.internal/me/f'}\n"
	tests := []struct {
		name, ask string
		args      string
		fetched   map[string]any
		want      any
	}{
		{"schema default", "      confirm: [f]\n", `{}`, nil, "d"},
		{"policy default over schema's", withDefault, `{}`, nil, "c"},
		{"fetched default over schema's", withFrom, `{}`, map[string]any{"f": "b"}, "b"},
		{"fetched default not taken: the schema's", withFrom, `{}`, map[string]any{"f": "zz"}, "d"},
		{"fetched default missing: the schema's", withFrom, `{}`, nil, "d"},
		{"model value over all", withFrom + "      confirm: [f]\n", `{"f":"a"}`, map[string]any{"f": "b"}, "a"},
		{"invalid model value: the policy default", withDefault, `{"f":"zz"}`, nil, "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := oneField(t, prop, tt.ask, "")
			d := Plan(a, nil, []byte(tt.args))
			if d.Outcome != Ask {
				// A valid model value with confirm still needs a reason to ask.
				d = Decision{Outcome: Ask, Fields: []string{"f"}, Accepted: map[string]any{"f": "a"}}
			}
			f, err := Build(a, nil, d, "", Fetched{Defaults: tt.fetched})
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Fields()[0].Value; got != tt.want {
				t.Errorf("opens on %v; want %v (%s)", got, tt.want, f.RequestedSchema)
			}
		})
	}
	// A default that would break the field's limits or is unsafe is skipped.
	a := oneField(t, `{"type":"string","maxLength":3,"default":"toolong"}`, "", "")
	if v := askEmpty(t, a).Fields()[0].Value; v != nil {
		t.Errorf("opens on %v; want nothing (the default breaks maxLength)", v)
	}
	a = oneField(t, `{"type":"string","default":"a\u202Eb"}`, "", "")
	if v := askEmpty(t, a).Fields()[0].Value; v != nil {
		t.Errorf("opens on %q; want nothing (a direction character)", v)
	}
}

func TestBuildFetchedChoices(t *testing.T) {
	a := oneField(t, `{"type":"string","enum":["u1","u2","u3"]}`, "      choices_from: {f: 'http://app.internal/members'}\n", "")
	d := Plan(a, nil, []byte(`{}`))
	body := []byte(`[{"value":"u3","label":"Zoë"},{"value":"nope","label":"Not in the enum"},{"value":"u1","label":"Ann\u202E"},{"value":"u3","label":"Again"},{"value":"u2"}]`)
	choices, err := ChoicesFromJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Build(a, nil, d, "", Fetched{Choices: map[string][]policies.Choice{"f": choices}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"f":{"type":"string","title":"F","oneOf":[{"const":"u3","title":"Zoë"},{"const":"u1","title":"Ann"},{"const":"u2","title":"u2"}]}},"required":["f"]}`
	if string(f.RequestedSchema) != want {
		t.Errorf("requestedSchema:\n got %s\nwant %s", f.RequestedSchema, want)
	}
	if _, err := Build(a, nil, d, "", Fetched{}); err == nil || !strings.Contains(err.Error(), "not fetched") {
		t.Errorf("Build without the fetched choices: %v; want an error", err)
	}
	none := Fetched{Choices: map[string][]policies.Choice{"f": {{Value: "zz", Label: "Z"}}}}
	if _, err := Build(a, nil, d, "", none); err == nil {
		t.Error("Build with no fitting choice made a form")
	}
	// Numbers from the app for a string field read as their text.
	b := oneField(t, `{"type":"string"}`, "      choices_from: {f: 'http://app.internal/members'}\n", "")
	nums, _ := ChoicesFromJSON([]byte(`[{"value":7,"label":"Seven"}]`))
	f, err = Build(b, nil, Plan(b, nil, []byte(`{}`)), "", Fetched{Choices: map[string][]policies.Choice{"f": nums}})
	if err != nil || !strings.Contains(string(f.RequestedSchema), `{"const":"7","title":"Seven"}`) {
		t.Errorf("Build = %s, %v; want the number as a string choice", f.RequestedSchema, err)
	}
}

func TestBuildErrors(t *testing.T) {
	a := load(t, "draft_post", draftPolicy)
	tests := []struct {
		name string
		d    Decision
		want string
	}{
		{"pass", Decision{Outcome: Pass}, "asks for nothing"},
		{"refuse", Decision{Outcome: Refuse, Fields: []string{"title"}}, "asks for nothing"},
		{"unknown field", Decision{Outcome: Ask, Fields: []string{"title", "nope"}}, `field "nope" is not one of the schema's properties`},
		{"object", Decision{Outcome: Ask, Fields: []string{"author"}}, `field "author": no form can hold an object`},
		{"secret", Decision{Outcome: Ask, Fields: []string{"api_key"}}, `field "api_key": reads as a secret`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(a, nil, tt.d, "", Fetched{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v; want %q", err, tt.want)
			}
		})
	}
}

// TestFieldsRoundTrip: what Fields reads back from the requestedSchema is
// what a renderer needs.
func TestFieldsRoundTrip(t *testing.T) {
	a := load(t, "a", `actions:
  a:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        title: {type: string, minLength: 1, maxLength: 5, description: Short.}
        body: {type: string}
        n: {type: integer, minimum: 1, maximum: 10}
        ok: {type: boolean}
        tags: {type: array, items: {type: string}, maxItems: 2}
        size: {type: integer, enum: [1, 2]}
      required: [title, body, n, ok, tags, size]
    ask:
      textarea: [body]
      choices: {tags: {x: Ex, y: Why}}
    run: {url: 'http://x/'}
`)
	f := askEmpty(t, a)
	two, one, five, ten := 2, 1, 5, json.Number("10")
	want := []Field{
		{Key: "title", Label: "Title", Description: "Short.", Kind: "text", Type: "string", Required: true, MinLength: &one, MaxLength: &five},
		{Key: "body", Label: "Body", Kind: "textarea", Type: "string", Required: true},
		{Key: "n", Label: "N", Kind: "integer", Type: "integer", Required: true, Minimum: "1", Maximum: ten},
		{Key: "ok", Label: "Ok", Kind: "checkbox", Type: "boolean", Required: true},
		{Key: "tags", Label: "Tags", Kind: "multiselect", Type: "string", Required: true, MaxItems: &two,
			Choices: []policies.Choice{{Value: "x", Label: "Ex"}, {Value: "y", Label: "Why"}}, titled: true},
		{Key: "size", Label: "Size", Kind: "select", Type: "integer", Required: true,
			Choices: []policies.Choice{{Value: json.Number("1"), Label: "1"}, {Value: json.Number("2"), Label: "2"}}},
	}
	if got := f.Fields(); !reflect.DeepEqual(got, want) {
		t.Errorf("Fields:\n got %+v\nwant %+v", got, want)
	}
	if (Form{RequestedSchema: json.RawMessage(`{"type":"array"}`)}).Fields() != nil {
		t.Error("Fields of an unreadable form != nil")
	}
}
