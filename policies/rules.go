package policies

import (
	"bytes"
	celast "cel.dev/cel-go/common/ast"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/checker"
	"cel.dev/cel-go/common"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"
	"github.com/tidwall/gjson"
	"go.yaml.in/yaml/v3"
)

// Rules decide a call on what it does, not only on what the tool is
// called: an action's rules are CEL expressions (cel.dev/cel-go, the
// engine Caddy itself uses), tried in order; the first whose when holds
// decides the call (allow, ask or deny). When none holds, the action's
// effect decides, as it does without rules. offer_when says, over the
// person alone, to whom the tool is offered at all.
//
// Every expression is parsed, type-checked and costed once, when the
// policy loads: an unknown variable, an args field the schema does not
// have, record on an action without card.record, a type error, a result
// that is not a bool or an estimated cost above MaxRuleCost fails the
// load, naming the file, the action, the rule and the column.

// RuleThen is what a matching rule does with a call.
type RuleThen string

// The outcomes a rule may give in its then key.
const (
	// RuleAllow passes the call to the app untouched, as a complete read does.
	RuleAllow RuleThen = "allow"
	// RuleAsk holds the call for the person: the card the action's effect
	// gives, with the rule's approvers, four_eyes and ttl where it gives
	// them.
	RuleAsk RuleThen = "ask"
	// RuleDeny refuses the call; nothing runs and the model reads Because.
	RuleDeny RuleThen = "deny"
)

// MaxRuleCost is the most an expression may cost by cel-go's estimator
// (about one unit per operation), with every list, map and string of
// the call's arguments and record taken as holding at most
// maxRuleInputSize entries. It refuses an expression whose cost grows
// faster than its inputs (a loop in a loop), so an evaluation stays
// linear in the size of the arguments and the record; cel-go's run-time
// cost tracking, which would double the cost of every evaluation, is
// not used.
const MaxRuleCost = 100_000

// maxRuleInputSize is the size the cost estimate assumes for an input's
// lists, maps and strings whose size it cannot know.
const maxRuleInputSize = 1000

// Rule is one entry of an action's rules.
type Rule struct {
	// Index is the rule's place in the action's rules, from 0.
	Index int
	// Name is the rule's name key ("" when not given): a short label for
	// logs, the audit and policy explain.
	Name string
	// When is the CEL expression, as written.
	When string
	// Then is what the rule does with a call it matches.
	Then RuleThen
	// Because is what the model reads when a deny rule refuses a call.
	Because string
	// Approvers replaces the action's approvers for a call an ask rule
	// holds; nil keeps the action's.
	Approvers *Approvers
	// FourEyes replaces the action's four_eyes for a call an ask rule
	// holds; nil keeps the action's.
	FourEyes *bool
	// TTL replaces the action's ttl for a call an ask rule holds; 0 keeps
	// the action's.
	TTL time.Duration
	// UsesRecord says the expression reads record.
	UsesRecord bool
	// ArgsRead are the argument fields the expression reads by name
	// (args.f, args["f"]); ArgsAll says it reads args as a whole, so any
	// field may decide it. Both keep an edit of the card (card.editable)
	// from changing what a rule decided on.
	ArgsRead []string
	ArgsAll  bool

	prg cel.Program
}

// Label is a short name of the rule for logs and the audit: "rules[1]",
// and its name when it has one, else the start of its expression.
func (r *Rule) Label() string {
	if r == nil {
		return ""
	}
	s := r.Name
	if s == "" {
		s = r.When
		if utf8.RuneCountInString(s) > 60 {
			s = string([]rune(s)[:59]) + "…"
		}
	}
	return fmt.Sprintf("rules[%d] %s", r.Index, s)
}

// RulePerson is the person variable of a rule: whose call it is (or, at
// confirm time, who answers it).
type RulePerson struct {
	ID     string
	Tenant string
	Roles  []string
}

// RuleInput is what an action's rules read about one call.
type RuleInput struct {
	Args   []byte // the validated arguments, a JSON object
	Record []byte // the card's record as read (JSON); nil when not read
	// ReadRecord, when Record is nil, reads the record the first time a
	// rule reads it (rules before it decide without it); its error is the
	// evaluation's.
	ReadRecord func() ([]byte, error)
	Person     RulePerson
	Tool       string
	Protocol   string
	Now        time.Time
}

// RuleError is a rule whose evaluation failed at run time: the gate
// refuses the call (fail closed) and logs the rule.
type RuleError struct {
	Rule *Rule
	Err  error
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("%s: evaluating: %v", e.Rule.Label(), e.Err)
}

func (e *RuleError) Unwrap() error { return e.Err }

// HasRules reports whether the action has rules.
func (a *Action) HasRules() bool { return a != nil && len(a.Rules) > 0 }

// RulesUseRecord reports whether any of the action's rules reads record,
// so the gate reads it before deciding (once, as the person).
func (a *Action) RulesUseRecord() bool { return a != nil && a.rulesUseRecord }

// Decide runs the action's rules on one call in order and returns the
// first that matches; nil when none does (the effect decides). The
// record is read (ReadRecord) only when a rule that reads it is reached. An
// evaluation error — a field the arguments or record lack, a wrong type
// in a dyn value, the cost limit — returns a *RuleError: the caller must
// refuse the call. A rule that reads record when in.Record is nil is an
// error too.
func (a *Action) Decide(in RuleInput) (*Rule, error) {
	if !a.HasRules() {
		return nil, nil
	}
	vars := &ruleVars{in: in}
	for _, r := range a.Rules {
		if r.UsesRecord && vars.in.Record == nil {
			if in.ReadRecord == nil {
				return nil, &RuleError{Rule: r, Err: errors.New("the record was not read")}
			}
			rec, err := in.ReadRecord()
			if err != nil {
				return nil, &RuleError{Rule: r, Err: err}
			}
			vars.in.Record = rec
		}
		out, _, err := r.prg.Eval(vars)
		if vars.err != nil {
			return nil, &RuleError{Rule: r, Err: vars.err}
		}
		if err != nil {
			return nil, &RuleError{Rule: r, Err: err}
		}
		b, ok := out.Value().(bool)
		if !ok {
			return nil, &RuleError{Rule: r, Err: fmt.Errorf("the result is %s, not a bool", out.Type())}
		}
		if b {
			return r, nil
		}
	}
	return nil, nil
}

// Offers reports whether the action's offer_when offers the tool to
// person (true without offer_when). An evaluation error is returned with
// false: the tool is not offered.
func (a *Action) Offers(p RulePerson) (bool, error) {
	if a == nil || a.offer == nil {
		return true, nil
	}
	out, _, err := a.offer.Eval(&ruleVars{in: RuleInput{Person: p}})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the result is %s, not a bool", out.Type())
	}
	return b, nil
}

// HasOfferWhen reports whether the action gives offer_when.
func (a *Action) HasOfferWhen() bool { return a != nil && a.offer != nil }

// ruleVars is the activation of one call's evaluation: each variable is
// decoded from JSON only when an expression reads it, once.
type ruleVars struct {
	in           RuleInput
	args, record any
	gotArgs      bool
	gotRecord    bool
	err          error
}

func (v *ruleVars) ResolveName(name string) (any, bool) {
	switch name {
	case "args":
		if !v.gotArgs {
			v.gotArgs = true
			var err error
			if v.args, err = decodeJSON(v.in.Args); err != nil {
				v.err = fmt.Errorf("reading args: %w", err)
				return nil, false
			}
			if _, ok := v.args.(map[string]any); !ok {
				v.err = errors.New("args is not a JSON object")
				return nil, false
			}
		}
		return v.args, true
	case "record":
		if !v.gotRecord {
			v.gotRecord = true
			var err error
			if v.record, err = decodeJSON(v.in.Record); err != nil {
				v.err = fmt.Errorf("reading record: %w", err)
				return nil, false
			}
		}
		return v.record, true
	case "person":
		return &v.in.Person, true
	case "tool":
		return v.in.Tool, true
	case "protocol":
		return v.in.Protocol, true
	case "now":
		return v.in.Now, true
	}
	return nil, false
}

func (v *ruleVars) Parent() interpreter.Activation { return nil }

// decodeJSON reads JSON into CEL's values: objects (map[string]any),
// arrays ([]any), strings, booleans and null (types.NullValue) as they
// are; a number as an int64 when its text is a whole number that fits,
// else a float64 (±Inf beyond the range). It reads what encoding/json
// reads, to the same values, and refuses what it refuses (FuzzDecodeJSON
// holds it to that), with two more refusals: an object that gives a key
// twice (encoding/json keeps the last, the card's gjson reads the
// first: a rule must not decide on another value than the person is
// shown) and data after the value (`{}0` is not an object; a rule must
// not read the first value of a stream as the arguments).
//
// It builds the values from gjson's reading, not encoding/json's
// reflection: a rule's evaluation is mostly this decoding, and it is
// part of every gated call's hold decision (docs/speed.md).
func decodeJSON(data []byte) (any, error) {
	if len(data) == 0 {
		return nil, errors.New("empty")
	}
	if !gjson.ValidBytes(data) {
		return nil, invalidJSON(data)
	}
	var d jsonReader
	v := d.value(gjson.ParseBytes(data), 1)
	if d.err != nil {
		return nil, d.err
	}
	return v, nil
}

// errDuplicateKey is decodeJSON's refusal of an object that gives a key
// twice.
var errDuplicateKey = errors.New("an object gives a key twice")

// maxRuleJSONDepth is how deeply encoding/json lets objects and arrays nest.
const maxRuleJSONDepth = 10000

// invalidJSON says why data is not one JSON value, in encoding/json's
// words where it has them.
func invalidJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return errors.New("not valid JSON")
}

// jsonReader builds CEL's values from a valid gjson value; err is the
// first refusal.
type jsonReader struct{ err error }

func (d *jsonReader) value(r gjson.Result, depth int) any {
	switch r.Type {
	case gjson.Null:
		return types.NullValue
	case gjson.True:
		return true
	case gjson.False:
		return false
	case gjson.Number:
		if i, err := strconv.ParseInt(r.Raw, 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(r.Raw, 64) // ±Inf when out of range, as json.Number.Float64
		return f
	case gjson.String:
		return d.str(r.Raw)
	}
	if depth > maxRuleJSONDepth {
		if d.err == nil {
			d.err = errors.New("exceeded max depth")
		}
		return nil
	}
	if r.IsArray() {
		out := []any{}
		r.ForEach(func(_, v gjson.Result) bool {
			out = append(out, d.value(v, depth+1))
			return d.err == nil
		})
		return out
	}
	out := map[string]any{}
	r.ForEach(func(k, v gjson.Result) bool {
		key := d.str(k.Raw)
		if _, ok := out[key]; ok && d.err == nil {
			d.err = fmt.Errorf("%w: %q", errDuplicateKey, key)
		}
		out[key] = d.value(v, depth+1)
		return d.err == nil
	})
	return out
}

// str is a JSON string's value from its text (quotes included): the
// text itself when it has no escape and is valid UTF-8, else as
// encoding/json reads it (escapes, and U+FFFD for each invalid byte or
// lone surrogate).
func (d *jsonReader) str(raw string) string {
	if len(raw) < 2 {
		if d.err == nil {
			d.err = errors.New("not valid JSON")
		}
		return ""
	}
	s := raw[1 : len(raw)-1]
	if strings.IndexByte(s, '\\') < 0 && utf8.ValidString(s) {
		return s
	}
	var out string
	if err := json.Unmarshal([]byte(raw), &out); err != nil && d.err == nil {
		d.err = err
	}
	return out
}

// The object types of args and person. args has one type per action,
// from its schema's properties.
const (
	personType     = "toolgate.Person"
	argsTypePrefix = "toolgate.Args."
)

// ruleTypes is the provider of an action's rules: the registry of CEL's
// own types, with args and person as objects whose fields are checked.
type ruleTypes struct {
	*types.Registry
	argsName string
	args     map[string]*types.Type // nil: the action has no schema properties (args is a dyn map)
}

func (p *ruleTypes) FindStructType(name string) (*types.Type, bool) {
	if name == personType || name == p.argsName && p.args != nil {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Registry.FindStructType(name)
}

func (p *ruleTypes) FindStructFieldNames(name string) ([]string, bool) {
	switch {
	case name == personType:
		return []string{"id", "tenant", "roles"}, true
	case name == p.argsName && p.args != nil:
		out := make([]string, 0, len(p.args))
		for k := range p.args {
			out = append(out, k)
		}
		return out, true
	}
	return p.Registry.FindStructFieldNames(name)
}

func (p *ruleTypes) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	switch {
	case name == personType:
		return personField(field)
	case name == p.argsName && p.args != nil:
		t, ok := p.args[field]
		if !ok {
			return nil, false
		}
		return argsField(field, t), true
	}
	return p.Registry.FindStructFieldType(name, field)
}

func personField(field string) (*types.FieldType, bool) {
	get := map[string]func(*RulePerson) any{
		"id":     func(p *RulePerson) any { return p.ID },
		"tenant": func(p *RulePerson) any { return p.Tenant },
		"roles": func(p *RulePerson) any {
			if p.Roles == nil {
				return []string{}
			}
			return p.Roles
		},
	}[field]
	if get == nil {
		return nil, false
	}
	t := types.StringType
	if field == "roles" {
		t = types.NewListType(types.StringType)
	}
	return &types.FieldType{
		Type:  t,
		IsSet: func(any) bool { return true },
		GetFrom: func(obj any) (any, error) {
			p, ok := obj.(*RulePerson)
			if !ok {
				return nil, fmt.Errorf("person is %T", obj)
			}
			return get(p), nil
		},
	}, true
}

// argsField reads one argument from the decoded arguments, converted to
// the type the schema gives it (a whole double for an integer, an int for
// a number), so that the checked expression meets the value it expects.
func argsField(field string, t *types.Type) *types.FieldType {
	return &types.FieldType{
		Type: t,
		IsSet: func(obj any) bool {
			m, ok := obj.(map[string]any)
			if !ok {
				return false
			}
			v, ok := m[field]
			return ok && v != types.NullValue
		},
		GetFrom: func(obj any) (any, error) {
			m, ok := obj.(map[string]any)
			if !ok {
				return nil, errors.New("args is not an object")
			}
			v, ok := m[field]
			if !ok || v == types.NullValue {
				return nil, fmt.Errorf("args has no field %q (use has(args.%s) for an optional one)", field, field)
			}
			switch t {
			case types.IntType:
				switch x := v.(type) {
				case float64:
					if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
						return int64(x), nil
					}
				case int64:
					return x, nil
				}
				return nil, fmt.Errorf("args.%s is not an integer", field)
			case types.DoubleType:
				switch x := v.(type) {
				case int64:
					return float64(x), nil
				case float64:
					return x, nil
				}
				return nil, fmt.Errorf("args.%s is not a number", field)
			case types.StringType:
				if _, ok := v.(string); !ok {
					return nil, fmt.Errorf("args.%s is not a string", field)
				}
			case types.BoolType:
				if _, ok := v.(bool); !ok {
					return nil, fmt.Errorf("args.%s is not a boolean", field)
				}
			}
			return v, nil
		},
	}
}

// schemaType is the CEL type of a schema property: its single JSON type,
// else dyn.
func schemaType(prop any) *types.Type {
	m, _ := prop.(map[string]any)
	switch m["type"] {
	case "integer":
		return types.IntType
	case "number":
		return types.DoubleType
	case "string":
		return types.StringType
	case "boolean":
		return types.BoolType
	case "array":
		return types.NewListType(types.DynType)
	case "object":
		return types.NewMapType(types.StringType, types.DynType)
	}
	return types.DynType
}

// ruleEnv is the CEL environment of one action's rules.
func ruleEnv(action string, fields *fieldSet, record bool) (*cel.Env, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	p := &ruleTypes{Registry: reg, argsName: argsTypePrefix + action}
	argsType := types.NewMapType(types.StringType, types.DynType)
	if fields != nil && fields.props != nil {
		p.args = make(map[string]*types.Type, len(fields.props))
		for k, v := range fields.props {
			p.args[k] = schemaType(v)
		}
		argsType = types.NewObjectType(p.argsName)
	}
	opts := []cel.EnvOption{
		cel.CustomTypeProvider(p),
		cel.CrossTypeNumericComparisons(true),
		cel.Variable("args", argsType),
		cel.Variable("person", types.NewObjectType(personType)),
		cel.Variable("tool", cel.StringType),
		cel.Variable("protocol", cel.StringType),
		cel.Variable("now", cel.TimestampType),
	}
	if record {
		opts = append(opts, cel.Variable("record", types.NewMapType(types.StringType, types.DynType)))
	}
	return cel.NewEnv(opts...)
}

// personEnv is the environment of offer_when: person alone.
func personEnv() (*cel.Env, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	return cel.NewEnv(
		cel.CustomTypeProvider(&ruleTypes{Registry: reg}),
		cel.Variable("person", types.NewObjectType(personType)),
	)
}

// sizeEstimator tells cel-go's cost estimator how large the inputs may be.
type sizeEstimator struct{}

func (sizeEstimator) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: maxRuleInputSize}
}

func (sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// compileRule checks and plans one expression in env. The error is one
// line, naming where in the expression it is: its column, and its line
// too when the expression is written on several lines (as cel-go counts:
// the line and column of the expression's own text, from 1).
func compileRule(env *cel.Env, expr string) (cel.Program, ruleReads, error) {
	multiline := strings.Contains(expr, "\n")
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		errs := iss.Errors()
		var b strings.Builder
		for i, e := range errs {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(exprAt(e.Location, multiline))
			b.WriteString(strings.ReplaceAll(e.Message, " (in container '')", ""))
		}
		return nil, ruleReads{}, errors.New(b.String())
	}
	info := ast.NativeRep().SourceInfo()
	root := ast.NativeRep().Expr()
	if !ast.OutputType().IsExactType(types.BoolType) {
		// Where the value that is not a bool is made: the root's operator,
		// or its start.
		return nil, ruleReads{}, fmt.Errorf("%sthe expression gives %s, not a bool", exprAt(info.GetStartLocation(root.ID()), multiline), ast.OutputType())
	}
	est, err := env.EstimateCost(ast, sizeEstimator{})
	if err != nil {
		return nil, ruleReads{}, fmt.Errorf("estimating its cost: %w", err)
	}
	if est.Max > MaxRuleCost {
		// A cost beyond the limit comes from a loop inside a loop: point at
		// the outer one (else at the expression).
		at := info.GetStartLocation(root.ID())
		if id, ok := nestedLoop(root); ok {
			at = info.GetStartLocation(id)
		}
		return nil, ruleReads{}, fmt.Errorf("%sit may cost up to %d, more than the limit of %d (with inputs of up to %d entries); make it simpler", exprAt(at, multiline), est.Max, MaxRuleCost, maxRuleInputSize)
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, ruleReads{}, err
	}
	var reads ruleReads
	for _, id := range referencedIdents(ast) {
		if id == "record" {
			reads.record = true
		}
	}
	reads.args, reads.allArgs = argsRead(ast)
	return prg, reads, nil
}

// exprAt is the place in an expression an error names ("column 4: ",
// "line 2, column 4: "), from a cel-go location (1-based line, 0-based
// column); "" when cel-go gives none.
func exprAt(l common.Location, multiline bool) string {
	if l == nil || l.Line() <= 0 {
		return ""
	}
	if multiline {
		return fmt.Sprintf("line %d, column %d: ", l.Line(), l.Column()+1)
	}
	return fmt.Sprintf("column %d: ", l.Column()+1)
}

// nestedLoop finds the outermost comprehension (all, exists, exists_one,
// map, filter) with another one inside it: what makes an expression's
// cost grow faster than its inputs.
func nestedLoop(root celast.Expr) (int64, bool) {
	var outer int64
	found := false
	var walk func(e celast.Expr, in int64)
	walk = func(e celast.Expr, in int64) {
		if found {
			return
		}
		switch e.Kind() {
		case celast.ComprehensionKind:
			if in != 0 {
				outer, found = in, true
				return
			}
			c := e.AsComprehension()
			walk(c.IterRange(), 0)
			walk(c.AccuInit(), 0)
			for _, x := range []celast.Expr{c.LoopCondition(), c.LoopStep(), c.Result()} {
				walk(x, e.ID())
			}
		case celast.CallKind:
			c := e.AsCall()
			if c.IsMemberFunction() {
				walk(c.Target(), in)
			}
			for _, a := range c.Args() {
				walk(a, in)
			}
		case celast.SelectKind:
			walk(e.AsSelect().Operand(), in)
		case celast.ListKind:
			for _, x := range e.AsList().Elements() {
				walk(x, in)
			}
		case celast.MapKind:
			for _, x := range e.AsMap().Entries() {
				walk(x.AsMapEntry().Key(), in)
				walk(x.AsMapEntry().Value(), in)
			}
		case celast.StructKind:
			for _, x := range e.AsStruct().Fields() {
				walk(x.AsStructField().Value(), in)
			}
		}
	}
	walk(root, 0)
	return outer, found
}

// ruleReads is what a checked expression reads of its input.
type ruleReads struct {
	record  bool     // it reads record
	args    []string // the argument fields it reads by name
	allArgs bool     // it reads args otherwise (as a whole, or shadowed)
}

// argsRead lists the fields of args an expression reads by name: args.f,
// has(args.f) and args["f"]. Any other use of the name args (passing it
// whole, a key that is not a literal, a comprehension variable of that
// name) gives all: then any field may decide it.
func argsRead(a *cel.Ast) (fields []string, all bool) {
	isArgs := func(e celast.Expr) bool { return e.Kind() == celast.IdentKind && e.AsIdent() == "args" }
	named := map[int64]bool{}
	var idents []int64
	celast.PostOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.IdentKind:
			if isArgs(e) {
				idents = append(idents, e.ID())
			}
		case celast.SelectKind:
			if sel := e.AsSelect(); isArgs(sel.Operand()) {
				named[sel.Operand().ID()] = true
				fields = append(fields, sel.FieldName())
			}
		case celast.CallKind:
			c := e.AsCall()
			if c.FunctionName() != "_[_]" || len(c.Args()) != 2 || !isArgs(c.Args()[0]) || c.Args()[1].Kind() != celast.LiteralKind {
				return
			}
			if key, ok := c.Args()[1].AsLiteral().Value().(string); ok {
				named[c.Args()[0].ID()] = true
				fields = append(fields, key)
			}
		}
	}))
	for _, id := range idents {
		if !named[id] {
			all = true
		}
	}
	slices.Sort(fields)
	return slices.Compact(fields), all
}

// referencedIdents lists the variables a checked expression reads.
func referencedIdents(ast *cel.Ast) []string {
	var out []string
	for _, r := range ast.NativeRep().ReferenceMap() {
		if r.Name != "" && r.Value == nil && len(r.OverloadIDs) == 0 {
			out = append(out, r.Name)
		}
	}
	return out
}

// rules reads an action's rules and offer_when; fields are the schema's
// properties (nil without a schema).
func (l *loader) rules(a *Action, rn, on *yaml.Node, fields *fieldSet) error {
	if !isNull(on) {
		s, err := l.str(on, "offer_when")
		if err != nil {
			return err
		}
		env, err := personEnv()
		if err != nil {
			return l.errf(on, "offer_when", "%w", err)
		}
		if a.offer, _, err = compileRule(env, s); err != nil {
			return l.errf(on, "offer_when", "%w (offer_when reads person only)", err)
		}
		a.OfferWhen = s
	}
	if isNull(rn) {
		return nil
	}
	rn = deref(rn)
	if rn.Kind != yaml.SequenceNode {
		return l.errf(rn, "rules", "must be a list of rules")
	}
	record := a.Card != nil && a.Card.Record != nil
	env, err := ruleEnv(a.Name, fields, record)
	if err != nil {
		return l.errf(rn, "rules", "%w", err)
	}
	for i, n := range rn.Content {
		key := fmt.Sprintf("rules[%d]", i)
		f, err := l.fields(n, key, ruleKeys...)
		if err != nil {
			return err
		}
		r := &Rule{Index: i}
		if r.Name, err = l.str(f["name"], key+".name"); err != nil {
			return err
		}
		if r.When, err = l.str(f["when"], key+".when"); err != nil {
			return err
		}
		if strings.TrimSpace(r.When) == "" {
			return l.errf(n, key+".when", "required: a CEL expression that gives a bool")
		}
		then, err := l.str(f["then"], key+".then")
		if err != nil {
			return err
		}
		switch r.Then = RuleThen(then); r.Then {
		case RuleAllow, RuleDeny:
		case RuleAsk:
			if !a.Effect.NeedsCard() {
				return l.errf(f["then"], key+".then", "ask needs a card, and %s actions have none; a rule may allow or deny their calls", a.Effect)
			}
		case "":
			return l.errf(n, key+".then", "required: allow, ask or deny")
		default:
			return l.errf(f["then"], key+".then", "unknown outcome %q; want allow, ask or deny", then)
		}
		if r.Because, err = l.str(f["because"], key+".because"); err != nil {
			return err
		}
		switch {
		case r.Then == RuleDeny && strings.TrimSpace(r.Because) == "":
			return l.errf(n, key+".because", "required for deny: the sentence the model reads")
		case r.Then != RuleDeny && !isNull(f["because"]):
			return l.errf(f["because"], key+".because", "only a deny rule has because")
		}
		if r.Then != RuleAsk {
			for _, k := range []string{"approvers", "four_eyes", "ttl"} {
				if !isNull(f[k]) {
					return l.errf(f[k], key+"."+k, "only an ask rule has %s", k)
				}
			}
		} else if err := l.askRule(a, r, f, key); err != nil {
			return err
		}
		var reads ruleReads
		if r.prg, reads, err = compileRule(env, r.When); err != nil {
			hint := ""
			if !record && strings.Contains(r.When, "record") {
				hint = " (record is there only for an action whose card has a record)"
			}
			return l.errf(f["when"], key+".when", "%w%s", err, hint)
		}
		r.UsesRecord, r.ArgsRead, r.ArgsAll = reads.record, reads.args, reads.allArgs
		a.rulesUseRecord = a.rulesUseRecord || r.UsesRecord
		a.Rules = append(a.Rules, r)
	}
	return nil
}

// askRule reads the keys an ask rule may give in place of the action's.
func (l *loader) askRule(a *Action, r *Rule, f map[string]*yaml.Node, key string) error {
	var err error
	if !isNull(f["approvers"]) {
		if r.Approvers, err = l.approvers(a, f["approvers"]); err != nil {
			return rekey(err, key)
		}
	}
	if !isNull(f["four_eyes"]) {
		on, err := l.boolean(f["four_eyes"], key+".four_eyes")
		if err != nil {
			return err
		}
		if on && r.Approvers == nil && a.Approvers == nil {
			return l.errf(f["four_eyes"], key+".four_eyes", "needs approvers (the rule's or the action's): with four_eyes on the owner may not confirm, so someone else must be named")
		}
		r.FourEyes = &on
	}
	if !isNull(f["ttl"]) {
		if r.TTL, err = l.ttl(f["ttl"]); err != nil {
			return rekey(err, key)
		}
	}
	return nil
}

// rekey puts a rule's key path in front of an error's key.
func rekey(err error, key string) error {
	var pe *Error
	if errors.As(err, &pe) {
		pe.Key = key + "." + pe.Key
	}
	return err
}

var (
	_ types.Provider         = (*ruleTypes)(nil)
	_ interpreter.Activation = (*ruleVars)(nil)
)
