package policies

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// refundYAML is the example: amount thresholds, record state and
// roles on one external action.
const refundYAML = `app: Shop
actions:
  refund_order:
    effect: external
    schema:
      type: object
      properties:
        order: {type: integer}
        amount: {type: number}
        note: {type: string}
        rush: {type: boolean}
        tags: {type: array, items: {type: string}}
      required: [order, amount]
    card:
      record: http://shop.internal/orders/{order}
      reason: Refund this order?
      rows:
        Order: id
        Status: status
    run:
      url: http://shop.internal/orders/{order}/refund
    approvers: {roles: [support]}
    rules:
      - when: args.amount <= 50
        then: allow
      - name: too large
        when: args.amount > 10000
        then: deny
        because: Refunds over 10,000 need a ticket; nothing ran.
      - when: record.status == "shipped" && !("finance" in person.roles)
        then: ask
        approvers: {roles: [finance]}
        four_eyes: true
        ttl: 2h
  search:
    effect: read
    schema:
      type: object
      properties:
        q: {type: string}
    offer_when: '"staff" in person.roles'
    rules:
      - when: tool == "search" && protocol == "mcp" && args.q == "secret"
        then: deny
        because: Not over MCP.
`

func loadRefund(t *testing.T) *Policy {
	t.Helper()
	p, err := Parse("shop.yaml", []byte(refundYAML))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRulesDecide(t *testing.T) {
	a := loadRefund(t).Action("refund_order")
	if len(a.Rules) != 3 || !a.RulesUseRecord() || a.Rules[1].Label() != "rules[1] too large" {
		t.Fatalf("rules = %+v", a.Rules)
	}
	if r := a.Rules[2]; r.Approvers == nil || r.Approvers.Roles[0] != "finance" || r.FourEyes == nil || !*r.FourEyes || r.TTL != 2*time.Hour {
		t.Fatalf("ask rule = %+v", r)
	}
	shipped := []byte(`{"status":"shipped"}`)
	for _, c := range []struct {
		name, args string
		record     []byte
		roles      []string
		want       int // rule index; -1 none
		err        string
	}{
		{"small passes", `{"order":1,"amount":20}`, shipped, nil, 0, ""},
		{"int and double compare", `{"order":1,"amount":50.0}`, shipped, nil, 0, ""},
		{"huge denied", `{"order":1,"amount":50000}`, shipped, nil, 1, ""},
		{"shipped asks finance", `{"order":1,"amount":2000}`, shipped, nil, 2, ""},
		{"finance person: no rule", `{"order":1,"amount":2000}`, shipped, []string{"finance"}, -1, ""},
		{"draft: no rule", `{"order":1,"amount":2000}`, []byte(`{"status":"draft"}`), nil, -1, ""},
		{"record without status fails closed", `{"order":1,"amount":2000}`, []byte(`{}`), nil, -1, "rules[2]"},
		{"record not read fails closed", `{"order":1,"amount":2000}`, nil, nil, -1, "the record was not read"},
		{"record not an object fails closed", `{"order":1,"amount":2000}`, []byte(`[1]`), nil, -1, "rules[2]"},
		{"record giving a key twice fails closed", `{"order":1,"amount":2000}`, []byte(`{"status":"draft","status":"shipped"}`), nil, -1, `evaluating: reading record: an object gives a key twice: "status"`},
		{"record with data after it fails closed", `{"order":1,"amount":2000}`, []byte(`{"status":"shipped"}{}`), nil, -1, "reading record: data after the JSON value"},
		{"missing amount fails closed", `{"order":1}`, shipped, nil, -1, `no field "amount"`},
		{"args not an object", `[1]`, shipped, nil, -1, "not a JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := a.Decide(RuleInput{Args: []byte(c.args), Record: c.record, Person: RulePerson{ID: "ana", Roles: c.roles}, Tool: "refund_order", Now: time.Unix(0, 0)})
			if c.err != "" {
				var re *RuleError
				if !errors.As(err, &re) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want a RuleError with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := -1
			if r != nil {
				got = r.Index
			}
			if got != c.want {
				t.Fatalf("rule = %d, want %d", got, c.want)
			}
		})
	}
}

func TestRulesToolProtocolAndOfferWhen(t *testing.T) {
	a := loadRefund(t).Action("search")
	for _, proto := range []string{"mcp", "openai-chat"} {
		r, err := a.Decide(RuleInput{Args: []byte(`{"q":"secret"}`), Tool: "search", Protocol: proto})
		if err != nil || (r != nil) != (proto == "mcp") {
			t.Fatalf("%s: rule %v, err %v", proto, r, err)
		}
	}
	if ok, err := a.Offers(RulePerson{ID: "x", Roles: []string{"staff"}}); !ok || err != nil {
		t.Fatalf("staff not offered: %v", err)
	}
	if ok, err := a.Offers(RulePerson{ID: "x"}); ok || err != nil {
		t.Fatalf("non-staff offered: %v", err)
	}
	if ok, _ := loadRefund(t).Action("refund_order").Offers(RulePerson{}); !ok {
		t.Fatal("an action without offer_when must be offered")
	}
}

func TestRulesNow(t *testing.T) {
	p, err := Parse("t.yaml", []byte(`actions:
  a:
    effect: write
    rules:
      - when: now > timestamp("2030-01-01T00:00:00Z") && args.x == 1
        then: deny
        because: Too late.
`))
	if err != nil {
		t.Fatal(err)
	}
	a := p.Action("a")
	r, err := a.Decide(RuleInput{Args: []byte(`{"x":1}`), Now: time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil || r == nil {
		t.Fatalf("rule %v err %v", r, err)
	}
	r, err = a.Decide(RuleInput{Args: []byte(`{"x":1}`), Now: time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil || r != nil {
		t.Fatalf("rule %v err %v", r, err)
	}
}

// TestRulesLoadErrors: every mistake in a rule fails the load, naming the
// file, the action, the rule and, for an expression, the column.
func TestRulesLoadErrors(t *testing.T) {
	const head = `actions:
  refund:
    effect: external
    schema:
      type: object
      properties:
        amount: {type: number}
        note: {type: string}
        order: {type: integer}
    card:
      reason: Refund?
      record: http://shop/{order}
    rules:
`
	const write = `actions:
  post:
    effect: write
    schema:
      type: object
      properties:
        title: {type: string}
`
	for _, c := range []struct{ name, yaml, want string }{
		{"syntax", head + "      - {when: 'args.amount >', then: allow}\n", `policy t.yaml: action "refund": rules[0].when: column 14: Syntax error`},
		{"unknown variable", head + "      - {when: 'user.id == \"x\"', then: allow}\n", `rules[0].when: column 1: undeclared reference to 'user'`},
		{"args field the schema lacks", head + "      - {when: 'args.amout > 1', then: allow}\n", `rules[0].when: column 5: undefined field 'amout'`},
		{"person field", head + "      - {when: 'person.email == \"x\"', then: allow}\n", `undefined field 'email'`},
		{"type error", head + "      - {when: 'args.note > 5', then: allow}\n", `rules[0].when: column 11: found no matching overload for '_>_'`},
		{"not a bool", head + "      - {when: 'args.amount + 1.0', then: allow}\n", `rules[0].when: column 13: the expression gives double, not a bool`},
		{"not a bool inside", head + "      - {when: 'args.amount > 1 || args.note', then: allow}\n", `rules[0].when: column 24: expected type 'bool' but found 'string'`},
		{"cost", head + "      - {when: 'args.amount > 1 && record.items.all(a, record.items.all(b, record.items.all(c, a == b)))', then: allow}\n", `rules[0].when: column 36: it may cost up to 105006006006, more than the limit of 100000`},
		{"record without card.record", write + "    rules:\n      - {when: 'record.status == \"x\"', then: deny, because: no}\n", `undeclared reference to 'record' (record is there only for an action whose card has a record)`},
		{"ask on write", write + "    rules:\n      - {when: 'true', then: ask}\n", `rules[0].then: ask needs a card, and write actions have none`},
		{"deny without because", head + "      - {when: 'true', then: deny}\n", `rules[0].because: required for deny`},
		{"because on allow", head + "      - {when: 'true', then: allow, because: x}\n", `rules[0].because: only a deny rule has because`},
		{"ttl on deny", head + "      - {when: 'true', then: deny, because: x, ttl: 5m}\n", `rules[0].ttl: only an ask rule has ttl`},
		{"unknown then", head + "      - {when: 'true', then: maybe}\n", `rules[0].then: unknown outcome "maybe"`},
		{"no when", head + "      - {then: allow}\n", `rules[0].when: required`},
		{"unknown key", head + "      - {when: 'true', then: allow, colour: red}\n", `rules[0].colour: unknown key`},
		{"four_eyes without approvers", head + "      - {when: 'true', then: ask, four_eyes: true}\n", `rules[0].four_eyes: needs approvers`},
		{"bad approvers", head + "      - {when: 'true', then: ask, approvers: {}}\n", `rules[0].approvers: names nobody`},
		{"bad ttl", head + "      - {when: 'true', then: ask, ttl: forever}\n", `rules[0].ttl: "forever" is not a duration`},
		{"not a list", head + "      x: 1\n", `rules: must be a list of rules`},
		{"second rule named", head + "      - {when: 'true', then: allow}\n      - {when: 'args.nope', then: allow}\n", `rules[1].when: column 5: undefined field 'nope'`},
		{"offer_when reads args", write + "    offer_when: 'args.title == \"x\"'\n", `offer_when: column 1: undeclared reference to 'args' (offer_when reads person only)`},
		{"offer_when not bool", write + "    offer_when: 'person.id'\n", `offer_when: column 7: the expression gives string, not a bool`},
		// Written on several lines (a YAML block), the place is the
		// expression's line and column.
		{"multi-line syntax", head + multi("args.amount > 1 &&", "  args.amount > > 2"), `rules[0].when: line 2, column 17: Syntax error: extraneous input '>'`},
		{"multi-line unknown variable", head + multi("args.amount > 1 &&", "  user.id == 'x'"), `rules[0].when: line 2, column 3: undeclared reference to 'user'`},
		{"multi-line args field", head + multi("args.amount > 1 &&", "  args.amout > 2"), `rules[0].when: line 2, column 7: undefined field 'amout'`},
		{"multi-line record without card.record", write + "    rules:\n" + multi("args.title == 'x' &&", "  record.status == 'y'"), `rules[0].when: line 2, column 3: undeclared reference to 'record' (record is there only`},
		{"multi-line type error", head + multi("args.amount > 1 &&", "  args.note > 2"), `rules[0].when: line 2, column 13: found no matching overload for '_>_'`},
		{"multi-line not a bool", head + multi("args.amount", "  + 1.0"), `rules[0].when: line 2, column 3: the expression gives double, not a bool`},
		{"multi-line cost", head + multi("args.amount > 1 &&", "  record.items.all(a,", "    record.items.all(b, a == b))"), `rules[0].when: line 2, column 19: it may cost up to`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "policy t.yaml: action ") {
				t.Fatalf("err = %v, want the file and the action named", err)
			}
		})
	}
}

// multi is a rule whose when is written as a YAML block, one line each.
func multi(lines ...string) string {
	return "      - then: allow\n        when: |\n          " + strings.Join(lines, "\n          ") + "\n"
}

// TestRulesVersion: rules decide calls, so they are part of the action's
// version; an action without rules keeps the version it had before rules.
func TestRulesVersion(t *testing.T) {
	const base = `actions:
  a:
    effect: write
`
	v := func(y string) string {
		p, err := Parse("t.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return p.Action("a").Version()
	}
	plain := v(base)
	allow := v(base + "    rules: [{when: 'true', then: allow}]\n")
	deny := v(base + "    rules: [{when: 'true', then: deny, because: no}]\n")
	offer := v(base + "    offer_when: 'true'\n")
	if plain == allow || allow == deny || plain == offer {
		t.Fatalf("versions do not differ: %s %s %s %s", plain, allow, deny, offer)
	}
	if plain != "2bdd5e1c1e0c" && testing.Verbose() {
		t.Logf("version without rules: %s", plain)
	}
}

// BenchmarkRulesDecide is what an action's rules add to the decision on
// one call: three rules on the arguments, the third matching (every rule
// evaluated), the arguments decoded once.
func BenchmarkRulesDecide(b *testing.B) {
	p, err := Parse("shop.yaml", []byte(`actions:
  refund:
    effect: write
    schema:
      type: object
      properties:
        order: {type: integer}
        amount: {type: number}
        note: {type: string}
    rules:
      - when: args.amount > 10000
        then: deny
        because: Too much.
      - when: args.note.startsWith("urgent") && args.amount > 500
        then: deny
        because: No urgent refunds.
      - when: args.amount <= 50
        then: allow
`))
	if err != nil {
		b.Fatal(err)
	}
	a := p.Action("refund")
	in := RuleInput{Args: []byte(`{"order":123456,"amount":20,"note":"late delivery"}`), Person: RulePerson{ID: "ana", Tenant: "acme", Roles: []string{"support"}}, Tool: "refund", Protocol: "openai-chat", Now: time.Unix(0, 0)}
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		if r, err := a.Decide(in); err != nil || r == nil || r.Index != 2 {
			b.Fatal(r, err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/1e3/float64(b.N), "cpu-µs/op")
}

// processCPU is the user and system CPU this process has used: on a
// loaded machine it counts what the benchmark spent, not the time it
// waited for a core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
