package policies

import (
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte(validYAML))
	f.Add([]byte(validJSON))
	f.Add([]byte(base))
	f.Add([]byte(argsPolicy))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if len(p.Actions) == 0 {
			t.Fatal("loaded a policy without actions")
		}
		if v := p.Version(); len(v) != 12 || !isHex(v) {
			t.Fatalf("policy version %q", v)
		}
		for name, a := range p.Actions {
			if a.Name != name || a.Effect.NeedsCard() != (a.Card != nil) || (a.Run.Method == "") != (a.Run.URL == nil) || (a.MCP.Confirm && !a.Effect.NeedsCard()) {
				t.Fatalf("action %q loaded inconsistently: %+v", name, a)
			}
			if v := a.Version(); len(v) != 12 || !isHex(v) {
				t.Fatalf("action %q version %q", name, v)
			}
			// Whatever loaded must be usable without panics.
			_ = a.CheckArguments([]byte(`{"post":7,"q":"x"}`))
			if a.Run.URL != nil { // nil: only an MCP server runs it
				_, _ = a.Run.URL.Expand([]byte(`{"post":7,"q":"x"}`))
			}
		}
	})
}

func isHex(s string) bool {
	return strings.Trim(s, "0123456789abcdef") == ""
}
