package caddymodule

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/policies"
)

// TestPolicyExplainRules: explain names the rule that decided and the
// values it read, and says when a rule needs the record it was not given.
func TestPolicyExplainRules(t *testing.T) {
	const file = "../policies/testdata/policies/shop.yaml"
	for _, c := range []struct {
		args string
		in   gate.ExplainInput
		want []string
	}{
		{`{"order":1,"amount":20}`, gate.ExplainInput{}, []string{"pass: allowed by a rule", "rule: rules[0] decided allow (when: args.amount <= 50)", `read: args {"order":1,"amount":20}`}},
		{`{"order":1,"amount":50000}`, gate.ExplainInput{}, []string{"refuse:", "Toolgate refused refund_order: Refunds over 10,000 need a ticket; nothing ran.", "rule: rules[1] (over the limit) decided deny"}},
		{`{"order":1,"amount":2000}`, gate.ExplainInput{}, []string{"card:", "rules: rules[2] reads the record, which was not given"}},
		{`{"order":1,"amount":2000}`, gate.ExplainInput{Record: []byte(`{"status":"shipped"}`), Person: policies.RulePerson{ID: "ana", Roles: []string{"support"}}, Protocol: "mcp"},
			[]string{"card:", "waits: 2h0m0s", "rule: rules[2] decided ask", `read: record {"status":"shipped"}`, `read: person {id: "ana", tenant: "", roles: ["support"]}, protocol mcp`}},
		{`{"order":1,"amount":2000}`, gate.ExplainInput{Record: []byte(`{"status":"draft"}`)}, []string{"card:", "waits: the gate's default TTL"}},
	} {
		var out bytes.Buffer
		if err := policyExplainWith(&out, file, "refund_order", c.args, c.in); err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("explain %s:\n%s\nwant it to say %q", c.args, out.String(), w)
			}
		}
	}
}

// TestPolicyTestCases: the cases file passes and validates against
// policies/cases.schema.json; a case the policy decides otherwise fails,
// named, with exit status 1 (errPolicyMistakes).
func TestPolicyTestCases(t *testing.T) {
	const file = "testdata/cases/shop.cases.yaml"
	var out bytes.Buffer
	if err := policyTest(&out, file); err != nil || !strings.Contains(out.String(), "5 cases passed") {
		t.Fatalf("%v\n%s", err, out.String())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("../policies/cases.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(doc)
	v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err := sch.Validate(v); err != nil {
		t.Fatalf("the cases file does not match its schema: %v", err)
	}
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	abs, _ := filepath.Abs("../policies/testdata/policies/shop.yaml")
	if err := os.WriteFile(broken, []byte("policy: "+abs+"\ncases:\n  - name: wrongly expected\n    tool: refund_order\n    args: {order: 1, amount: 50000}\n    expect: pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := policyTest(&out, broken); !errors.Is(err, errPolicyMistakes) || !strings.Contains(out.String(), "FAIL wrongly expected: got refuse, want pass") {
		t.Fatalf("%v\n%s", err, out.String())
	}
}
