package forms

import (
	"net/url"
	"testing"
)

// FuzzPlan feeds a request's schema and a model's arguments through the
// whole path: Plan, Build, Check and Merge never panic, a form holds what
// the decision names, and never opens on an unsafe value.
func FuzzPlan(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"q":{"type":"string","maxLength":3},"n":{"type":["integer","null"]},"t":{"type":"array","items":{"enum":["a","b"]}}},"required":["q","n","t"]}`), []byte(`{"q":"abcd"}`))
	f.Add([]byte(`{"type":"object","properties":{"d":{"$ref":"#/$defs/D"}},"$defs":{"D":{"type":"string","format":"date","default":"x"}},"required":["d"]}`), []byte(`{"d":"2025-99-99"}`))
	f.Add([]byte(`{"type":"object","properties":{"s":{"enum":[1,2.5]},"b":{"type":"boolean","default":"no"}},"required":["s","b"]}`), []byte(`{"s":"\u202e"}`))
	a := load(f, "free", draftPolicy)
	f.Fuzz(func(t *testing.T, schema, args []byte) {
		d := Plan(a, schema, args)
		if d.Outcome != Ask {
			return
		}
		form, err := Build(a, schema, d, "de", Fetched{})
		if err != nil {
			t.Fatalf("Plan asked, Build failed: %v", err)
		}
		fields := form.Fields()
		if len(fields) != len(d.Fields) {
			t.Fatalf("form holds %d fields; decision names %q", len(fields), d.Fields)
		}
		for i, fd := range fields {
			if fd.Key != d.Fields[i] {
				t.Fatalf("field %d is %q; want %q", i, fd.Key, d.Fields[i])
			}
			if fd.Value != nil && !SafeToShow(fd.Value) {
				t.Fatalf("field %q opens on an unsafe value", fd.Key)
			}
		}
		values, _ := Check(form, url.Values{})
		_, _ = Merge(form, args, values) // may fail: the model's arguments may repeat a key
	})
}
