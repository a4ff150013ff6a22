package policies

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// ArgumentError says which arguments of a call are wrong and why, without
// their values: it is read by the model and written to logs, and neither may
// learn what a person or the model typed.
type ArgumentError struct {
	Fields []FieldError // sorted by Field, one per field
}

// FieldError is one wrong top-level argument. Field is "" when the rule is
// about the arguments as a whole (not a JSON object, or no alternative of an
// anyOf matched).
type FieldError struct {
	Field string // the top-level argument's name
	Rule  string // short and value-free: "required", "must be integer", "maximum 10"
}

// Error lists the fields and rules: "arguments: post: required; title: must be string".
func (e *ArgumentError) Error() string {
	var b strings.Builder
	b.WriteString("arguments: ")
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteString("; ")
		}
		if f.Field != "" {
			b.WriteString(fieldName(f.Field))
			b.WriteString(": ")
		}
		b.WriteString(f.Rule)
	}
	return b.String()
}

// CheckArguments validates the arguments of a call (raw JSON text as the
// model sent it): they must be one JSON object, with no key given twice at
// any depth (parsers disagree on which copy wins, so the value checked here
// could differ from the one the endpoint reads), and valid against the
// action's schema when it has one. The error is an *ArgumentError.
//
// The schema is the one offered to agents (see AgentSchema): the fields of
// required_for_agents must be given, and not as null.
func (a *Action) CheckArguments(args []byte) error {
	s := a.agent
	if s == nil {
		s = a.schema
	}
	return validate(s, args)
}

// ErrSchema is CheckArgumentsWith's error for a tool schema that is not a
// JSON object schema or does not compile.
var ErrSchema = errors.New("the tool's schema cannot be used")

// maxCachedSchemas bounds the request schemas kept compiled per action: a
// tool usually has one schema, and a client sending a new one with every
// request must not grow memory.
const maxCachedSchemas = 8

// schemaCache keeps request schemas compiled, keyed by the sha256 of their
// bytes.
type schemaCache struct {
	mu sync.Mutex
	m  map[[32]byte]*jsonschema.Schema
}

// CheckArgumentsWith is CheckArguments against schema, a tool's full JSON
// Schema as the request's tools give it, offered to agents as AgentSchema
// makes it. A nil schema, or the policy's own, uses the schema compiled at
// load; others are compiled once and kept (a few per action). A schema that
// is not a JSON object schema, or does not compile, gives an error wrapping
// ErrSchema; the call then cannot be checked and must not pass.
func (a *Action) CheckArgumentsWith(schema json.RawMessage, args []byte) error {
	if schema == nil || bytes.Equal(schema, a.Schema) {
		return a.CheckArguments(args)
	}
	s, err := a.compiled(schema)
	if err != nil {
		return err
	}
	return validate(s, args)
}

// compiled returns schema as agents are offered it, compiled.
func (a *Action) compiled(schema json.RawMessage) (*jsonschema.Schema, error) {
	key := sha256.Sum256(schema)
	if c := a.cache; c != nil {
		c.mu.Lock()
		s := c.m[key]
		c.mu.Unlock()
		if s != nil {
			return s, nil
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(a.AgentSchema(schema)))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	if _, err := schemaProperties(doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	s, err := compileSchema(a.Name, doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	if c := a.cache; c != nil {
		c.mu.Lock()
		if c.m == nil {
			c.m = make(map[[32]byte]*jsonschema.Schema)
		}
		if len(c.m) < maxCachedSchemas {
			c.m[key] = s
		}
		c.mu.Unlock()
	}
	return s, nil
}

// validate checks args against s (nil: any JSON object).
func validate(s *jsonschema.Schema, args []byte) error {
	if err := checkJSONObject(args); err != nil {
		return err
	}
	if s == nil {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return &ArgumentError{Fields: []FieldError{{Rule: "must be a JSON object"}}}
	}
	err = s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ArgumentError{Fields: []FieldError{{Rule: "could not be checked"}}}
	}
	var c collector
	c.walk(ve)
	return c.result()
}

// checkJSONObject checks that args is a single JSON object whose objects
// never repeat a key.
func checkJSONObject(args []byte) error {
	notObject := &ArgumentError{Fields: []FieldError{{Rule: "must be a JSON object"}}}
	if trimmed := bytes.TrimLeft(args, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return notObject
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var c collector
	if err := walkJSON(dec, "", 0, &c); err != nil {
		return notObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return notObject
	}
	if len(c.rules) > 0 {
		return c.result()
	}
	return nil
}

// walkJSON reads one JSON value from dec, adding a rule for every key given
// twice. top is the top-level field the value sits in ("" for the root).
func walkJSON(dec *json.Decoder, top string, depth int, c *collector) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			field := top
			if depth == 0 {
				field = k
			}
			if seen[k] {
				if depth == 0 {
					c.add(field, nil, "given twice", 0)
				} else {
					c.add(field, nil, "repeats a key inside", 0)
				}
			}
			seen[k] = true
			if err := walkJSON(dec, field, depth+1, c); err != nil {
				return err
			}
		}
		_, err = dec.Token() // '}'
		return err
	case json.Delim('['):
		for dec.More() {
			if err := walkJSON(dec, top, depth+1, c); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}

// collector gathers one rule per top-level field from validation errors.
type collector struct {
	rules map[string]ruleAt
}

type ruleAt struct {
	rule string
	rank int // lower wins when a field breaks several rules
}

// add records a rule for the top-level field, at nested path rest under it.
func (c *collector) add(field string, rest []string, rule string, rank int) {
	if len(rest) > 0 {
		rule += " at " + fieldName(field) + pathText(rest)
	}
	if c.rules == nil {
		c.rules = map[string]ruleAt{}
	}
	if old, ok := c.rules[field]; ok && (old.rank < rank || old.rank == rank && old.rule <= rule) {
		return
	}
	c.rules[field] = ruleAt{rule, rank}
}

// at adds a rule for the value at instance location loc.
func (c *collector) at(loc []string, rule string, rank int) {
	if len(loc) == 0 {
		c.add("", nil, rule, rank)
		return
	}
	c.add(loc[0], loc[1:], rule, rank)
}

func (c *collector) result() error {
	if len(c.rules) == 0 {
		return &ArgumentError{Fields: []FieldError{{Rule: "invalid"}}}
	}
	e := &ArgumentError{Fields: make([]FieldError, 0, len(c.rules))}
	for f, r := range c.rules {
		e.Fields = append(e.Fields, FieldError{Field: f, Rule: r.rule})
	}
	slices.SortFunc(e.Fields, func(a, b FieldError) int { return strings.Compare(a.Field, b.Field) })
	return e
}

// walk turns a validation error tree into rules. Rules are built from the
// error kinds, never from the library's messages, which quote the values.
func (c *collector) walk(ve *jsonschema.ValidationError) {
	loc := ve.InstanceLocation
	with := func(name string) []string { return append(slices.Clip(loc), name) }
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			c.at(with(m), "required", 0)
		}
	case *kind.DependentRequired:
		for _, m := range k.Missing {
			c.at(with(m), "required with "+fieldName(k.Prop), 0)
		}
	case *kind.Dependency:
		for _, m := range k.Missing {
			c.at(with(m), "required with "+fieldName(k.Prop), 0)
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			c.at(with(p), "unknown field", 0)
		}
	case *kind.PropertyNames:
		c.at(with(k.Property), "invalid field name", 0)
	case *kind.AnyOf, *kind.OneOf:
		// The branches' own errors contradict each other; name the choice.
		c.at(loc, rule(k), 2)
	default:
		if len(ve.Causes) > 0 {
			for _, cause := range ve.Causes {
				c.walk(cause)
			}
			return
		}
		rank := 2
		if _, ok := k.(*kind.Type); ok {
			rank = 1
		}
		c.at(loc, rule(k), rank)
	}
}

// rule is the short text for one failed keyword.
func rule(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return "must be " + strings.Join(k.Want, " or ")
	case *kind.Enum:
		return "must be one of the allowed values"
	case *kind.Const:
		return "must be the allowed value"
	case *kind.Format:
		return "must be a valid " + k.Want
	case *kind.Minimum:
		return "minimum " + ratText(k.Want)
	case *kind.Maximum:
		return "maximum " + ratText(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be greater than " + ratText(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be less than " + ratText(k.Want)
	case *kind.MultipleOf:
		return "must be a multiple of " + ratText(k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("at least %d characters", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("at most %d characters", k.Want)
	case *kind.Pattern:
		return "must match the pattern " + k.Want
	case *kind.MinItems:
		return fmt.Sprintf("at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("at most %d items", k.Want)
	case *kind.UniqueItems:
		return "items must be unique"
	case *kind.AdditionalItems:
		return "too many items"
	case *kind.Contains:
		return "must hold a matching item"
	case *kind.MinContains:
		return fmt.Sprintf("must hold at least %d matching items", k.Want)
	case *kind.MaxContains:
		return fmt.Sprintf("must hold at most %d matching items", k.Want)
	case *kind.MinProperties:
		return fmt.Sprintf("at least %d fields", k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("at most %d fields", k.Want)
	case *kind.AnyOf:
		return "must match one of the allowed forms"
	case *kind.OneOf:
		return "must match exactly one of the allowed forms"
	case *kind.Not, *kind.FalseSchema:
		return "not allowed"
	case *kind.ContentEncoding:
		return "must be " + k.Want + " encoded"
	case *kind.ContentMediaType:
		return "must be valid " + k.Want
	}
	if kw := k.KeywordPath(); len(kw) > 0 {
		return "fails " + strings.Join(kw, "/")
	}
	return "invalid"
}

// ratText writes a schema bound (not an argument value) briefly.
func ratText(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// pathText writes a nested location under a field: .name for keys and [i]
// for array items.
func pathText(rest []string) string {
	var b strings.Builder
	for _, p := range rest {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		b.WriteString(".")
		b.WriteString(fieldName(p))
	}
	return b.String()
}

// fieldName writes a field name as is when it is plain, quoted otherwise,
// so a strange key cannot break up the message.
func fieldName(s string) string {
	if s == "" {
		return `""`
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return strconv.Quote(s)
		}
	}
	return s
}
