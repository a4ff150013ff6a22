package policies

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"cel.dev/cel-go/common/types"
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

// decodeJSONStd is what decodeJSON was before it read through gjson
// (encoding/json, numbers by json.Number), kept as FuzzDecodeJSON's
// reference.
func decodeJSONStd(data []byte) (any, error) {
	if len(data) == 0 {
		return nil, errors.New("empty")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	var conv func(any) any
	conv = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = conv(e)
			}
		case []any:
			for i, e := range x {
				x[i] = conv(e)
			}
		case json.Number:
			if i, err := x.Int64(); err == nil {
				return i
			}
			f, _ := x.Float64()
			return f
		case nil:
			return types.NullValue
		}
		return v
	}
	return conv(v), nil
}

// givesAKeyTwice reports whether an object in the valid JSON data gives
// a key twice (after its escapes are read), by encoding/json's tokens.
func givesAKeyTwice(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a number out of float64's range is still a token
	type frame struct {
		keys   map[string]bool
		object bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		isKey := top != nil && top.object && top.key
		if top != nil && top.object {
			top.key = !top.key
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &frame{keys: map[string]bool{}, object: true, key: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					// The closed value was a member's value: the next
					// token is a key. (Token flipped key on the opening.)
					stack[len(stack)-1].key = true
				}
			}
		case string:
			if isKey {
				if top.keys[t] {
					return true
				}
				top.keys[t] = true
			}
		}
	}
}

// FuzzDecodeJSON: the rules' reading of JSON (gjson) gives the values
// encoding/json gives on what it reads, and refuses what it refuses;
// the only other refusal is an object giving a key twice.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[1.5,-0,1e400,-9223372036854775809,9223372036854775807],"c":{"d":null,"e":true,"f":false}}`,
		`{"a":"\u00e9\ud800\n\"x","\u0061b":"\xff\xfe"}`,
		`{"a":1,"\u0061":2}`, `{"a":{"b":1,"b":2}}`, `[{"a":1},{"a":1}]`,
		`{}0`, `{} `, "\t[]\r\n", `{"a":01}`, `"x"`, `12`, `-`, `[1,]`, `{"a" 1}`, "\"\x01\"", `nul`, `[]]`,
		`{"a":"\x"}`, `1.0`, `1E2`, `-0.0e-0`, "\ufeff{}",
	} {
		f.Add([]byte(s))
	}
	for in, want := range map[string]bool{
		`{"a":{"b":1},"a":2}`: true, `{"a":1,"\u0061":2}`: true, `[{"a":[{"b":1,"b":1}]}]`: true,
		`{"a":{"a":1}}`: false, `[{"a":1},{"a":1}]`: false, `{"a":[1,"a"],"b":"a"}`: false, `{"a":{},"b":[],"c":"a"}`: false,
	} {
		if givesAKeyTwice([]byte(in)) != want {
			f.Fatalf("givesAKeyTwice(%s) != %v", in, want)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeJSON(data)
		want, stdErr := decodeJSONStd(data)
		switch {
		case stdErr != nil && err == nil:
			t.Fatalf("read %q, which encoding/json refuses (%v), as %#v", data, stdErr, got)
		case stdErr != nil:
		case err != nil:
			if !errors.Is(err, errDuplicateKey) || !givesAKeyTwice(data) {
				t.Fatalf("refused %q (%v), which encoding/json reads as %#v", data, err, want)
			}
		case givesAKeyTwice(data):
			t.Fatalf("read %q, which gives a key twice, as %#v", data, got)
		case !reflect.DeepEqual(got, want):
			t.Fatalf("read %q as %#v, encoding/json as %#v", data, got, want)
		}
	})
}

// TestDecodeJSONDepth: objects and arrays nest as deeply as encoding/json
// lets them, and no deeper.
func TestDecodeJSONDepth(t *testing.T) {
	for _, n := range []int{maxRuleJSONDepth, maxRuleJSONDepth + 1} {
		data := []byte(strings.Repeat(`[{"a":`, n/2) + strings.Repeat("[", n%2) + "1" + strings.Repeat("]", n%2) + strings.Repeat("}]", n/2))
		_, err := decodeJSON(data)
		_, stdErr := decodeJSONStd(data)
		if (err == nil) != (stdErr == nil) || (err == nil) != (n <= maxRuleJSONDepth) {
			t.Errorf("depth %d: err %v, encoding/json's %v", n, err, stdErr)
		}
	}
}
