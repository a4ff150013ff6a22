package forms

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestPlan(t *testing.T) {
	draft := load(t, "draft_post", draftPolicy)
	plain := load(t, "plain_write", draftPolicy)
	del := load(t, "delete_post", draftPolicy)
	free := load(t, "free", draftPolicy)
	const complete = `"title":"Launch notes","body":"Hello","status":"draft","publish_on":"2025-03-01"`
	tests := []struct {
		name     string
		decide   func() Decision
		outcome  Outcome
		fields   []string
		reasons  map[string]string
		accepted map[string]any
	}{
		{"complete and valid, confirm set", func() Decision { return Plan(draft, nil, []byte(`{`+complete+`}`)) },
			Pass, nil, nil, nil},
		{"complete with optional fields", func() Decision { return Plan(draft, nil, []byte(`{`+complete+`,"tags":["a"]}`)) },
			Pass, nil, nil, nil},
		{"missing required: form in schema order with confirm", func() Decision { return Plan(draft, nil, []byte(`{"title":"Launch notes"}`)) },
			Ask, []string{"title", "body", "status", "publish_on"},
			map[string]string{"body": "required", "status": "required", "publish_on": "required"},
			map[string]any{"title": "Launch notes"}},
		{"invalid value is asked and never accepted", func() Decision {
			return Plan(draft, nil, []byte(`{"title":"Launch notes","body":"Hi","status":"SECRET-VALUE","publish_on":"2025-03-01","tags":["a"]}`))
		}, Ask, []string{"title", "status"},
			map[string]string{"status": "must be one of the allowed values"},
			map[string]any{"title": "Launch notes"}},
		{"required for agents: null is refused by the agent schema", func() Decision {
			return Plan(draft, nil, []byte(`{"title":"T","body":"B","status":"draft","publish_on":null}`))
		}, Ask, []string{"title", "publish_on"},
			map[string]string{"publish_on": "must be string"},
			map[string]any{"title": "T"}},
		{"invalid confirm field is asked without its value", func() Decision {
			return Plan(draft, nil, []byte(`{"title":"","body":"B","status":"draft","publish_on":"2025-03-01"}`))
		}, Ask, []string{"title"}, map[string]string{"title": "at least 1 characters"}, nil},
		{"object field no form can hold", func() Decision {
			return Plan(draft, nil, []byte(`{"title":"T","author":"SECRET-VALUE"}`))
		}, Refuse, []string{"body", "status", "publish_on", "author"},
			map[string]string{"body": "required", "status": "required", "publish_on": "required", "author": "must be object; no form can hold an object"},
			nil},
		{"secret field", func() Decision {
			return Plan(draft, nil, []byte(`{`+complete+`,"api_key":7}`))
		}, Refuse, []string{"api_key"}, map[string]string{"api_key": "must be string; reads as a secret"}, nil},
		{"forbidden key from the file", func() Decision {
			return Plan(draft, nil, []byte(`{`+complete+`,"internal_ref":7}`))
		}, Refuse, []string{"internal_ref"}, map[string]string{"internal_ref": "must be string; reads as a secret"}, nil},
		{"no ask_for_missing", func() Decision { return Plan(plain, nil, []byte(`{}`)) },
			Refuse, []string{"title"}, map[string]string{"title": "required"}, nil},
		{"destructive incomplete", func() Decision { return Plan(del, nil, []byte(`{}`)) },
			Refuse, []string{"post"}, map[string]string{"post": "required"}, nil},
		{"destructive complete goes on to its card", func() Decision { return Plan(del, nil, []byte(`{"post":7}`)) },
			Pass, nil, nil, nil},
		{"arguments not JSON", func() Decision { return Plan(draft, nil, []byte(`{"title": SECRET-VALUE`)) },
			Refuse, []string{}, map[string]string{"": "must be a JSON object"}, nil},
		{"no schema: any object passes", func() Decision { return Plan(free, nil, []byte(`{"x":1}`)) },
			Pass, nil, nil, nil},
		{"no schema: not an object", func() Decision { return Plan(free, nil, []byte(`[1]`)) },
			Refuse, []string{}, map[string]string{"": "must be a JSON object"}, nil},
		{"schema from the request", func() Decision {
			return Plan(free, json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q","n"]}`), []byte(`{"q":"cats"}`))
		}, Ask, []string{"n"}, map[string]string{"n": "required"}, nil},
		{"schema from the request that cannot be used", func() Decision {
			return Plan(free, json.RawMessage(`{"type":"array"}`), []byte(`{}`))
		}, Refuse, nil, map[string]string{"": "the tool's schema cannot be used"}, nil},
		{"ask that does not fit the request's schema", func() Decision {
			a := load(t, "a", "actions:\n  a:\n    effect: write\n    ask_for_missing: true\n    ask: {confirm: [nope]}\n    run: {url: 'http://x/'}\n")
			return Plan(a, json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`), []byte(`{}`))
		}, Refuse, []string{"q"}, map[string]string{"q": "required", "": "the gate's policy cannot ask for this call"}, nil},
		{"unknown field", func() Decision {
			a := load(t, "a", "actions:\n  a:\n    effect: write\n    ask_for_missing: true\n    schema: {type: object, properties: {f: {type: string}}, additionalProperties: false}\n    run: {url: 'http://x/'}\n")
			return Plan(a, nil, []byte(`{"zz":1}`))
		}, Refuse, []string{"zz"}, map[string]string{"zz": "unknown field; no form can hold a field the schema does not describe"}, nil},
		{"nil action", func() Decision { return Plan(nil, nil, []byte(`{}`)) },
			Refuse, nil, map[string]string{"": "the action is not declared"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.decide()
			if d.Outcome != tt.outcome {
				t.Fatalf("Outcome = %v; want %v (%+v)", d.Outcome, tt.outcome, d)
			}
			if len(d.Fields) != len(tt.fields) || len(d.Fields) > 0 && !reflect.DeepEqual(d.Fields, tt.fields) {
				t.Errorf("Fields = %q; want %q", d.Fields, tt.fields)
			}
			if len(d.Reasons) != len(tt.reasons) || len(d.Reasons) > 0 && !reflect.DeepEqual(d.Reasons, tt.reasons) {
				t.Errorf("Reasons = %q; want %q", d.Reasons, tt.reasons)
			}
			if len(d.Accepted) != len(tt.accepted) || len(d.Accepted) > 0 && !reflect.DeepEqual(d.Accepted, tt.accepted) {
				t.Errorf("Accepted = %v; want %v", d.Accepted, tt.accepted)
			}
			for f, r := range d.Reasons {
				if strings.Contains(r, "SECRET-VALUE") {
					t.Errorf("reason for %q echoes the value: %q", f, r)
				}
			}
		})
	}
}

// TestPlanUnsafeValues: a model's value that validation accepts but that
// holds a control, line-separator or direction character never opens a
// form.
func TestPlanUnsafeValues(t *testing.T) {
	draft := load(t, "draft_post", draftPolicy)
	for _, title := range []string{
		"evil\u202Etxt.exe", // right-to-left override
		"a\u2028b",          // line separator
		"a\u2029b",          // paragraph separator
		"a\u2066b\u2069",    // isolate
		"a\u200Fb",          // right-to-left mark
		"a\tb",              // control character
		"a\nb",              // control character
		"a\x00b",            // control character
		"a\u200Bb",          // zero-width space
		"a\U000E0041b",      // tag character
	} {
		args, _ := json.Marshal(map[string]string{"title": title})
		d := Plan(draft, nil, args)
		if d.Outcome != Ask || !reflect.DeepEqual(d.Fields, []string{"title", "body", "status", "publish_on"}) {
			t.Fatalf("%q: %+v; want Ask with title confirmed", title, d)
		}
		if _, ok := d.Accepted["title"]; ok {
			t.Errorf("%q: accepted for showing", title)
		}
		if SafeToShow(title) {
			t.Errorf("SafeToShow(%q) = true", title)
		}
	}
	for _, ok := range []any{"Launch notes", "Grüße 👋", "עברית", json.Number("7"), true, []any{"a", json.Number("1")}} {
		if !SafeToShow(ok) {
			t.Errorf("SafeToShow(%#v) = false", ok)
		}
	}
	if SafeToShow(map[string]any{}) || SafeToShow(nil) {
		t.Error("SafeToShow of an object or nil = true")
	}
}

// TestPlanSecretSpellings: a missing secret field refuses the call, in any
// spelling of its key, title or description.
func TestPlanSecretSpellings(t *testing.T) {
	for _, prop := range []struct{ key, schema string }{
		{"api_key", `{"type":"string"}`},
		{"apiKey", `{"type":"string"}`},
		{"APIKey", `{"type":"string"}`},
		{"api-key", `{"type":"string"}`},
		{"password", `{"type":"string"}`},
		{"access_tokens", `{"type":"string"}`},
		{"pin", `{"type":"integer"}`},
		{"otpCode", `{"type":"string"}`},
		{"cardNumber", `{"type":"string"}`},
		{"cvv", `{"type":"string"}`},
		{"iban", `{"type":"string"}`},
		{"x", `{"type":"string","title":"API key"}`},
		{"y", `{"type":"string","description":"The recovery phrase of the wallet"}`},
	} {
		t.Run(prop.key, func(t *testing.T) {
			a := load(t, "a", "actions:\n  a:\n    effect: write\n    ask_for_missing: true\n    schema: {\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"string\"},\""+prop.key+"\":"+prop.schema+"},\"required\":[\"n\",\""+prop.key+"\"]}\n    run: {url: 'http://x/'}\n")
			d := Plan(a, nil, []byte(`{}`))
			if d.Outcome != Refuse || !reflect.DeepEqual(d.Fields, []string{"n", prop.key}) || d.Reasons[prop.key] != "required; reads as a secret" {
				t.Errorf("%+v; want Refuse naming n and %s as a secret", d, prop.key)
			}
		})
	}
}
