package policies

import "testing"

// TestOfferTool: a declared tool is offered with its required-for-agents
// fields required and, for an ask-for-missing action, the ask hint; every
// other definition stays as the app wrote it (not declared, shadow mode,
// nothing to change, no parameters).
func TestOfferTool(t *testing.T) {
	p := &Policy{Actions: map[string]*Action{
		"draft":  {AskForMissing: true, RequiredForAgents: []string{"status"}},
		"ask":    {AskForMissing: true},
		"pin":    {RequiredForAgents: []string{"status"}},
		"plain":  {},
		"shadow": {AskForMissing: true, RequiredForAgents: []string{"status"}, Mode: Shadow},
	}}
	params := []byte(`{"type":"object","properties":{"status":{"type":["string","null"]}}}`)
	required := `{"type":"object","properties":{"status":{"type":"string"}},"required":["status"]}`
	for _, tc := range []struct {
		name, params, schema, suffix string
		ok                           bool
	}{
		{"draft", string(params), required, askHint, true},
		{"ask", string(params), string(params), askHint, true},
		{"pin", string(params), required, "", true},
		{"plain", string(params), "", "", false},
		{"shadow", string(params), "", "", false},
		{"undeclared", string(params), "", "", false},
		{"draft", "", "", "", false},
	} {
		var in []byte
		if tc.params != "" {
			in = []byte(tc.params)
		}
		schema, suffix, ok := p.OfferTool(tc.name, in)
		if string(schema) != tc.schema || suffix != tc.suffix || ok != tc.ok {
			t.Errorf("%s %s: %s %q %v, want %s %q %v", tc.name, tc.params, schema, suffix, ok, tc.schema, tc.suffix, tc.ok)
		}
	}
	var none *Policy
	if _, _, ok := none.OfferTool("draft", params); ok {
		t.Error("a nil policy offered a tool as rewritten")
	}
}
