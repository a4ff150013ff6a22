package policies

import (
	"encoding/json"
	"testing"
	"time"
)

const fuzzRulesYAML = `actions:
  pay:
    effect: external
    schema:
      type: object
      properties:
        amount: {type: number}
        id: {type: integer}
    card:
      reason: Pay?
      record: http://app/{id}
    rules:
      - when: has(args.amount) && args.amount > 100
        then: deny
        because: Too much.
      - when: record.status == "ok" && record.items.all(i, i > 0)
        then: allow
`

// FuzzRules: arguments and records of any JSON shape never panic the
// rules, and a call the deny rule matches never comes out allowed: an
// amount over 100 is denied, or the evaluation fails (and the gate
// refuses the call).
func FuzzRules(f *testing.F) {
	p, err := Parse("fuzz.yaml", []byte(fuzzRulesYAML))
	if err != nil {
		f.Fatal(err)
	}
	a := p.Action("pay")
	for _, s := range [][2]string{
		{`{"amount":5,"id":1}`, `{"status":"ok","items":[1,2]}`},
		{`{"amount":500}`, `{"status":"ok","items":[]}`},
		{`{"amount":"500"}`, `{"status":"ok","items":[1]}`},
		{`{"amount":1e400}`, `[]`},
		{`{"amount":null}`, `{"status":"ok","items":[-1]}`},
		{`[1]`, `null`},
		{`{"amount":100.0000001}`, `{"status":"ok","items":[1.5]}`},
		{`{"amount":-9223372036854775809}`, `{"status":{"x":1}}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, args, record []byte) {
		r, err := a.Decide(RuleInput{Args: args, Record: record, Person: RulePerson{ID: "ana"}, Now: time.Unix(0, 0)})
		if err != nil || r == nil || r.Then != RuleAllow {
			return
		}
		var v map[string]any
		if json.Unmarshal(args, &v) != nil {
			t.Fatalf("allowed arguments that are not an object: %s", args)
		}
		switch amount := v["amount"].(type) {
		case nil:
		case float64:
			if amount > 100 {
				t.Fatalf("allowed an amount over 100: %s", args)
			}
		default:
			t.Fatalf("allowed an amount that is not a number: %s", args)
		}
	})
}
