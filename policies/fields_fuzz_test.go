package policies

import (
	"encoding/json"
	"testing"
)

// FuzzFormProperties feeds schemas as a request's tools could give them:
// nothing may panic, and what AgentSchema returns for a JSON object is
// JSON.
func FuzzFormProperties(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"$ref":"#/properties/b"},"c":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"required":["a"]}`))
	f.Add([]byte(`{"type":"object","properties":{"t":{"type":"array","items":{"enum":["x",1e999999]}},"n":{"type":"integer","minimum":1e-99999,"maxLength":-1}}}`))
	f.Add([]byte(`{"type":"object","properties":{"s":{"allOf":[{"$ref":"#/$defs/%7e"}]}},"$defs":{"~":{"const":null}}}`))
	p, err := Parse("fuzz.yaml", []byte(askBase))
	if err != nil {
		f.Fatal(err)
	}
	a := p.Action("draft_post")
	f.Fuzz(func(t *testing.T, schema []byte) {
		out := a.AgentSchema(schema)
		if json.Valid(schema) && !json.Valid(out) {
			t.Fatalf("AgentSchema(%s) = %s, not JSON", schema, out)
		}
		props, err := a.FormProperties(schema)
		for _, p := range props {
			if (p.Kind == "") == (p.Unaskable == "") {
				t.Fatalf("property %q: kind %q, unaskable %q", p.Key, p.Kind, p.Unaskable)
			}
			_ = Fits(p, nil, "x")
		}
		_ = err
		_ = a.CheckAsk(schema)
		_ = a.CheckArgumentsWith(schema, []byte(`{"title":"x","publish_on":null}`))
	})
}
