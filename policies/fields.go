package policies

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The controls a form can show for a field (Property.Kind). Together they
// are the whole of what MCP's form elicitation can carry: a flat object of
// strings, numbers, booleans and lists of choices.
const (
	KindText        = "text"        // a string: one line
	KindTextarea    = "textarea"    // a string named in ask.textarea: several lines
	KindEmail       = "email"       // a string, format email
	KindURL         = "url"         // a string, format uri or url
	KindDate        = "date"        // a string, format date
	KindDateTime    = "datetime"    // a string, format date-time
	KindNumber      = "number"      // a number
	KindInteger     = "integer"     // an integer
	KindCheckbox    = "checkbox"    // a boolean: always answers true or false
	KindSelect      = "select"      // a string or number with an enum or choices: one pick
	KindMultiselect = "multiselect" // a list of enum values or with choices: several picks
)

// Property is one top-level property of a tool's schema as a form sees it.
// FormProperties reads them.
type Property struct {
	Key         string
	Title       string // the schema's title ("" when none)
	Description string // the schema's description ("" when none)
	// Kind is the control a form shows (KindText, ...); "" when no form
	// can hold the field, and Unaskable says why.
	Kind string
	// Unaskable is why no form can hold the field, short and value-free
	// ("no form can hold an object", "reads as a secret"); "" when a form
	// can.
	Unaskable string
	// Type is the JSON type of the value, or of each item of a
	// multiselect: string, integer, number or boolean ("" when unaskable).
	Type string
	// Format is the schema's format as written ("" when none).
	Format string
	// Required says the schema offered to agents lists the field in
	// required (required_for_agents included).
	Required bool
	// Nullable says the field also takes null (a type list with "null",
	// nullable: true, an enum holding null, or an anyOf/oneOf of one
	// schema and {type: null}). A form leaves a nullable field optional.
	Nullable bool
	// Enum is the allowed values (of each item, for a multiselect), null
	// left out; nil when the schema gives none.
	Enum []any
	// Bounds: nil or "" when the schema gives none. Lengths count
	// characters (code points).
	MinLength, MaxLength *int
	Minimum, Maximum     json.Number
	MinItems, MaxItems   *int
	// Default is the schema's default; HasDefault says it gives one.
	Default    any
	HasDefault bool
	// Secret says the field reads as a secret (see ReadsAsSecret), the
	// action's forbidden keys included.
	Secret bool

	list bool // an array: Type and Enum are its items'
}

// FormProperties returns the top-level properties of schema (a tool's full
// JSON Schema; nil means the policy's) as agents are offered it (see
// AgentSchema), in the schema's order, each with what a form can make of it
// under this action's ask configuration: choices make a select of a free
// string and several choices of a free list, textarea makes text several
// lines, and secrets and forbidden keys are never asked.
//
// A property's $ref is followed when it points inside the schema (#/...);
// an allOf, anyOf or oneOf of one schema reads as that schema, and an
// anyOf or oneOf of one schema and {type: null} as that schema, nullable. Values are as
// encoding/json reads them with UseNumber (numbers are json.Number).
//
// The error says the schema is not a JSON object schema (type: object).
func (a *Action) FormProperties(schema json.RawMessage) ([]Property, error) {
	if schema == nil {
		schema = a.Schema
	}
	if len(schema) == 0 {
		return nil, errors.New("the action has no schema")
	}
	doc, err := decodeOrdered(a.AgentSchema(schema))
	if err != nil {
		return nil, errors.New("the schema is not JSON")
	}
	root, ok := doc.(object)
	if !ok || root.str("type") != "object" {
		return nil, errors.New("the schema must describe the arguments object (type: object)")
	}
	required := map[string]bool{}
	if list, ok := getValue(root, "required").([]any); ok {
		for _, r := range list {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	props, _ := getValue(root, "properties").(object)
	out := make([]Property, 0, len(props))
	seen := make(map[string]bool, len(props))
	for _, m := range props {
		if seen[m.key] {
			continue
		}
		seen[m.key] = true
		v, _ := props.get(m.key) // a key given twice reads as its last copy
		p := readProperty(root, m.key, v)
		p.Required = required[m.key]
		a.applyAsk(&p)
		out = append(out, p)
	}
	return out, nil
}

// applyAsk settles a property's Kind under the action's ask configuration
// and forbidden keys.
func (a *Action) applyAsk(p *Property) {
	p.Secret = ReadsAsSecret(p.Key, p.Title, p.Description, a.ForbiddenKeys)
	if p.Secret {
		p.Unaskable, p.Kind = "reads as a secret", ""
		return
	}
	if p.Unaskable == freeList && a.Ask.hasChoices(p.Key) {
		p.Unaskable = ""
		if p.Type == "" {
			p.Type = "string"
		}
	}
	if p.Unaskable != "" {
		p.Kind = ""
		return
	}
	p.Kind = baseKind(p, a.Ask.hasChoices(p.Key))
	if p.Kind == KindText && a.Ask != nil && slices.Contains(a.Ask.Textarea, p.Key) {
		p.Kind = KindTextarea
	}
}

// baseKind is the control for an askable property, before ask.textarea.
func baseKind(p *Property, choices bool) string {
	switch {
	case p.list:
		return KindMultiselect
	case p.Type == "boolean":
		return KindCheckbox
	}
	if p.Enum != nil || choices {
		return KindSelect
	}
	switch p.Type {
	case "integer":
		return KindInteger
	case "number":
		return KindNumber
	}
	switch p.Format {
	case "email":
		return KindEmail
	case "uri", "url":
		return KindURL
	case "date":
		return KindDate
	case "date-time":
		return KindDateTime
	}
	return KindText
}

// Reasons a field cannot be asked; the rest are built in readProperty.
const (
	freeList   = "no form can hold a free list"
	union      = "no form can hold a union"
	anyValue   = "no form can hold a value of any type"
	unreadable = "no form can read its schema"
)

// readProperty reads one property schema v of root.
func readProperty(root object, key string, v any) Property {
	p := Property{Key: key}
	o, nullable, why := resolve(root, v, 0)
	if o != nil {
		p.Title, p.Description = o.str("title"), o.str("description")
	}
	if why != "" {
		p.Unaskable = why
		return p
	}
	t, enum, null, why := valueType(o)
	if why != "" {
		p.Unaskable = why
		return p
	}
	p.Nullable = nullable || null
	p.Format = o.str("format")
	if d, ok := o.get("default"); ok {
		p.Default, p.HasDefault = d, true
	}
	switch t {
	case "object":
		p.Unaskable = "no form can hold an object"
		return p
	case "array":
		readList(root, o, &p)
		p.MinItems, p.MaxItems = count(o, "minItems"), count(o, "maxItems")
		return p
	}
	if isFile(o) {
		p.Unaskable = "no form can hold a file"
		return p
	}
	p.Type, p.Enum = t, enum
	switch t {
	case "string":
		p.MinLength, p.MaxLength = count(o, "minLength"), count(o, "maxLength")
	case "integer", "number":
		p.Minimum, p.Maximum = bound(o, "minimum"), bound(o, "maximum")
	}
	return p
}

// readList reads an array property's items into p: a list of enum values
// is a multiselect; a list of free strings or numbers can become one with
// ask.choices (Unaskable is then freeList); anything else is never asked.
func readList(root, o object, p *Property) {
	p.list = true
	if _, ok := o.get("prefixItems"); ok {
		p.Unaskable = "no form can hold a fixed-length list"
		return
	}
	items, ok := o.get("items")
	if !ok {
		p.Unaskable = freeList
		return
	}
	if _, ok := items.([]any); ok {
		p.Unaskable = "no form can hold a fixed-length list"
		return
	}
	io, _, why := resolve(root, items, 0)
	if why != "" {
		p.Unaskable = "no form can hold a list of mixed values"
		return
	}
	t, enum, _, why := valueType(io)
	switch {
	case why == anyValue:
		p.Unaskable = freeList
	case why != "":
		p.Unaskable = "no form can hold a list of mixed values"
	case t == "object":
		p.Unaskable = "no form can hold a list of objects"
	case t == "array":
		p.Unaskable = "no form can hold a list of lists"
	case isFile(io):
		p.Unaskable = "no form can hold a list of files"
	case t == "boolean":
		p.Unaskable = "no form can hold a list of yes-or-no values"
	default:
		p.Type, p.Enum = t, enum
		if enum == nil {
			p.Unaskable = freeList
		}
	}
}

// resolve follows a property schema to the object a form reads: $ref inside
// the schema, an allOf of one schema, and an anyOf or oneOf of one schema,
// or of one schema and {type: null} (which makes it nullable). Keys beside those keywords
// win over the schema they name (a title beside a $ref is the field's).
func resolve(root object, v any, depth int) (o object, nullable bool, why string) {
	if depth > 16 {
		return nil, false, unreadable
	}
	switch x := v.(type) {
	case bool:
		if x {
			return nil, false, anyValue
		}
		return nil, false, "the schema allows no value"
	case object:
		o = x
	default:
		return nil, false, unreadable
	}
	if ref, ok := o.get("$ref"); ok {
		s, _ := ref.(string)
		target, ok := pointer(root, s)
		if !ok {
			return o, false, unreadable
		}
		t, n, why := resolve(root, target, depth+1)
		if why != "" {
			return o, false, why
		}
		o, nullable = overlay(t, o.without("$ref")), n
	}
	if all, ok := o.get("allOf"); ok {
		list, _ := all.([]any)
		if len(list) != 1 {
			return o, false, union
		}
		t, n, why := resolve(root, list[0], depth+1)
		if why != "" {
			return o, false, why
		}
		o, nullable = overlay(t, o.without("allOf")), nullable || n
	}
	for _, kw := range [...]string{"anyOf", "oneOf"} {
		alt, ok := o.get(kw)
		if !ok {
			continue
		}
		list, _ := alt.([]any)
		var other any
		nulls := 0
		for _, b := range list {
			if bo, ok := b.(object); ok && len(bo) == 1 && bo.str("type") == "null" {
				nulls++
			} else {
				other = b
			}
		}
		// One schema, or one schema and null (AgentSchema leaves the first
		// of the second).
		if len(list)-nulls != 1 || nulls > 1 {
			return o, false, union
		}
		t, n, why := resolve(root, other, depth+1)
		if why != "" {
			return o, false, why
		}
		o, nullable = overlay(t, o.without(kw)), nullable || n || nulls == 1
	}
	for _, kw := range [...]string{"not", "if"} {
		if _, ok := o.get(kw); ok {
			return o, false, union
		}
	}
	return o, nullable, ""
}

// overlay returns base with top's keys set over it.
func overlay(base, top object) object {
	out := slices.Clone(base)
	for _, m := range top {
		out = out.set(m.key, m.value)
	}
	return out
}

// pointer resolves a $ref inside the schema: "#" or "#/json/pointer".
func pointer(root object, ref string) (any, bool) {
	if !strings.HasPrefix(ref, "#") {
		return nil, false
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return nil, false
	}
	var cur any = root
	if frag == "" {
		return cur, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false // an anchor name: not followed
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case object:
			v, ok := c.get(tok)
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// valueType reads the type of a resolved schema: its type keyword (a list
// holding "null" and one type reads as that type, nullable), else the type
// its enum or const values share. enum is the allowed values, null left out.
func valueType(o object) (t string, enum []any, nullable bool, why string) {
	if n, ok := o.get("nullable"); ok && n == true {
		nullable = true
	}
	if c, ok := o.get("const"); ok {
		enum = []any{c}
	} else if e, ok := o.get("enum"); ok {
		list, ok := e.([]any)
		if !ok {
			return "", nil, false, unreadable
		}
		enum = []any{}
		for _, v := range list {
			if v == nil {
				nullable = true
				continue
			}
			enum = append(enum, v)
		}
	}
	var types []string
	switch x := getValue(o, "type").(type) {
	case string:
		types = []string{x}
	case []any:
		for _, v := range x {
			s, _ := v.(string)
			types = append(types, s)
		}
	case nil:
	default:
		return "", nil, false, unreadable
	}
	if i := slices.Index(types, "null"); i >= 0 {
		types = slices.Delete(types, i, i+1)
		if len(types) == 0 {
			return "", nil, false, "no form can hold null"
		}
		nullable = true
	}
	switch {
	case len(types) > 1:
		return "", nil, false, union
	case len(types) == 1:
		t = types[0]
	case enum == nil:
		return "", nil, false, anyValue
	default:
		t = enumType(enum)
	}
	if enum != nil && t != "boolean" {
		for _, v := range enum {
			if !ofType(v, t) {
				return "", nil, false, union
			}
		}
	}
	if t == "boolean" {
		enum = nil // a checkbox answers true or false
	}
	return t, enum, nullable, ""
}

// enumType is the type every value of enum shares, or "" when they differ.
func enumType(enum []any) string {
	t := ""
	for _, v := range enum {
		var vt string
		switch x := v.(type) {
		case string:
			vt = "string"
		case bool:
			vt = "boolean"
		case json.Number:
			vt = "number"
			if isInteger(x) {
				vt = "integer"
			}
		default:
			return "" // objects and arrays
		}
		switch {
		case t == "", t == vt:
			t = vt
		case t == "integer" && vt == "number", t == "number" && vt == "integer":
			t = "number"
		default:
			return ""
		}
	}
	return t
}

// ofType reports whether v is a JSON value of type t.
func ofType(v any, t string) bool {
	switch t {
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		return ok && isInteger(n)
	case "boolean":
		_, ok := v.(bool)
		return ok
	}
	return false
}

// isInteger reports whether n is an integer (2.0 is one, as in JSON Schema).
func isInteger(n json.Number) bool {
	r, ok := ratOf(n)
	return ok && r.IsInt()
}

// ratOf reads a JSON number exactly. Numbers with an exponent beyond ±1000 are
// refused, so a hostile "1e999999999" cannot make the reader build a huge
// integer.
func ratOf(n json.Number) (*big.Rat, bool) {
	s := n.String()
	if len(s) == 0 || len(s) > 1000 || !json.Valid([]byte(s)) || s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || exp > 1000 || exp < -1000 {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// isFile reports a string schema that carries a file: format binary or byte,
// or a content encoding or media type.
func isFile(o object) bool {
	switch o.str("format") {
	case "binary", "byte":
		return true
	}
	_, enc := o.get("contentEncoding")
	_, media := o.get("contentMediaType")
	return enc || media
}

// count reads a non-negative integer keyword (minLength, maxItems, ...).
func count(o object, key string) *int {
	n, ok := getValue(o, key).(json.Number)
	if !ok {
		return nil
	}
	r, ok := ratOf(n)
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() || r.Num().Int64() > 1<<31 {
		return nil
	}
	c := int(r.Num().Int64())
	return &c
}

// bound reads a number keyword (minimum, maximum).
func bound(o object, key string) json.Number {
	n, ok := getValue(o, key).(json.Number)
	if !ok {
		return ""
	}
	if _, ok := ratOf(n); !ok {
		return ""
	}
	return n
}

func getValue(o object, key string) any {
	v, _ := o.get(key)
	return v
}

// AgentSchema returns schema (a tool's full JSON Schema) as agents are
// offered it: the fields named in required_for_agents are added to the
// root's required list and made non-nullable ("null" dropped from a type
// list, an enum and an anyOf/oneOf, nullable: true dropped), keeping the
// schema's key order. Without required_for_agents, or when schema is not a
// JSON object, schema is returned as it is. Nothing else changes; telling
// the model that an ask_for_missing action may be called with what it knows
// is OfferTool's job.
//
// A field given by $ref keeps what its definition allows; only required
// is added for it.
func (a *Action) AgentSchema(schema json.RawMessage) json.RawMessage {
	if len(a.RequiredForAgents) == 0 {
		return schema
	}
	doc, err := decodeOrdered(schema)
	if err != nil {
		return schema
	}
	root, ok := doc.(object)
	if !ok {
		return schema
	}
	var req []any
	if list, ok := getValue(root, "required").([]any); ok {
		req = slices.Clone(list)
	}
	for _, f := range a.RequiredForAgents {
		if !slices.Contains(req, any(f)) {
			req = append(req, f)
		}
	}
	root = root.set("required", req)
	if props, ok := getValue(root, "properties").(object); ok {
		props = slices.Clone(props)
		for i, m := range props {
			if p, ok := m.value.(object); ok && slices.Contains(a.RequiredForAgents, m.key) {
				props[i].value = nonNullable(p)
			}
		}
		root = root.set("properties", props)
	}
	var buf bytes.Buffer
	encodeOrdered(&buf, root)
	return buf.Bytes()
}

// nonNullable returns a property schema that no longer takes null.
func nonNullable(p object) object {
	p = p.without("nullable")
	if types, ok := getValue(p, "type").([]any); ok {
		kept := slices.DeleteFunc(slices.Clone(types), func(v any) bool { return v == "null" })
		if len(kept) == 1 {
			p = p.set("type", kept[0])
		} else {
			p = p.set("type", kept)
		}
	}
	if enum, ok := getValue(p, "enum").([]any); ok {
		p = p.set("enum", slices.DeleteFunc(slices.Clone(enum), func(v any) bool { return v == nil }))
	}
	for _, kw := range [...]string{"anyOf", "oneOf"} {
		if list, ok := getValue(p, kw).([]any); ok {
			p = p.set(kw, slices.DeleteFunc(slices.Clone(list), func(b any) bool {
				bo, ok := b.(object)
				return ok && len(bo) == 1 && bo.str("type") == "null"
			}))
		}
	}
	return p
}
