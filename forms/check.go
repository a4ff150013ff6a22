package forms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate/policies"
)

// Check validates a person's answer, form-encoded (url.Values is a
// map[string][]string), against form f as it reads now: rebuild the form
// before checking, so changed choices or limits apply.
//
//   - Keys the form does not hold are dropped.
//   - A field left empty (or blank) is left out of values, never filled from
//     the model's value; a required one is an error.
//   - A checkbox answers true or false; absent is false. The values true,
//     on, 1 and yes read true; false, off, 0, no and "" read false.
//   - A multi-select answers the list of picks, each once; none is [], and
//     empty values (a hidden "nothing chosen" input) are skipped.
//   - Numbers are parsed (an integer field takes whole numbers only), text
//     areas' CRLF line ends read as LF, and then the field's rules apply:
//     lengths, formats (email, uri, date, date-time per RFC 3339, offset
//     included), bounds, choices and counts.
//
// values holds every field that passed; errs, by field, short rules that
// never echo the value ("required", "at most 120 characters", "must be one
// of the choices"), nil when there are none. A form that cannot be read
// gives the error key "".
func Check(f Form, answer map[string][]string) (values map[string]any, errs map[string][]string) {
	fields, err := f.fields()
	if err != nil {
		return map[string]any{}, map[string][]string{"": {"the form cannot be read"}}
	}
	values = map[string]any{}
	errs = map[string][]string{}
	for _, fd := range fields {
		v, ok, rules := answerField(fd, answer[fd.Key])
		switch {
		case len(rules) > 0:
			errs[fd.Key] = rules
		case ok:
			values[fd.Key] = v
		}
	}
	if len(errs) == 0 {
		errs = nil
	}
	return values, errs
}

// CheckJSON is Check for an answer given as a JSON object, such as an MCP
// client's accept content: strings for text and string choices, numbers
// for numbers and number choices, booleans for checkboxes, lists for
// multi-selects; null reads as empty. A value of another type is an error
// ("must be string"); an answer that is not a JSON object gives the error
// key "".
func CheckJSON(f Form, answer []byte) (values map[string]any, errs map[string][]string) {
	fields, err := f.fields()
	if err != nil {
		return map[string]any{}, map[string][]string{"": {"the form cannot be read"}}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(answer, &m); err != nil || m == nil {
		return map[string]any{}, map[string][]string{"": {"must be a JSON object"}}
	}
	values = map[string]any{}
	errs = map[string][]string{}
	for _, fd := range fields {
		texts, rule := jsonTexts(fd, m[fd.Key])
		if rule != "" {
			errs[fd.Key] = []string{rule}
			continue
		}
		v, ok, rules := answerField(fd, texts)
		switch {
		case len(rules) > 0:
			errs[fd.Key] = rules
		case ok:
			values[fd.Key] = v
		}
	}
	if len(errs) == 0 {
		errs = nil
	}
	return values, errs
}

// jsonTexts turns one JSON answer into what a form would send, checking its
// JSON type first.
func jsonTexts(fd Field, raw json.RawMessage) ([]string, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, "must be " + jsonType(fd)
	}
	one := func(x any) (string, bool) {
		switch y := x.(type) {
		case string:
			return y, fd.Type == "string"
		case json.Number:
			return y.String(), fd.Type == "integer" || fd.Type == "number"
		}
		return "", false
	}
	switch fd.Kind {
	case policies.KindCheckbox:
		b, ok := v.(bool)
		if !ok {
			return nil, "must be true or false"
		}
		return []string{strconv.FormatBool(b)}, ""
	case policies.KindMultiselect:
		list, ok := v.([]any)
		if !ok {
			return nil, "must be a list"
		}
		texts := make([]string, 0, len(list))
		for _, x := range list {
			s, ok := one(x)
			if !ok {
				return nil, "must be one of the choices"
			}
			texts = append(texts, s)
		}
		return texts, ""
	}
	s, ok := one(v)
	if !ok {
		return nil, "must be " + jsonType(fd)
	}
	return []string{s}, ""
}

func jsonType(fd Field) string {
	switch fd.Kind {
	case policies.KindCheckbox:
		return "boolean"
	case policies.KindMultiselect:
		return "a list"
	}
	return fd.Type
}

// answerField reads one field's answer: the value, whether the field
// answers at all (an empty one does not), and the rules it breaks.
func answerField(fd Field, raw []string) (any, bool, []string) {
	switch fd.Kind {
	case policies.KindCheckbox:
		on := false
		for _, r := range raw {
			switch strings.ToLower(strings.TrimSpace(r)) {
			case "true", "on", "1", "yes":
				on = true
			case "false", "off", "0", "no", "":
			default:
				return nil, false, []string{"must be true or false"}
			}
		}
		return on, true, nil
	case policies.KindMultiselect:
		list := []any{}
		for _, r := range raw {
			if r == "" {
				continue
			}
			v, rule := parseAs(fd, r)
			if rule != "" {
				return nil, false, []string{rule}
			}
			if !slices.ContainsFunc(list, func(x any) bool { return policies.SameValue(x, v) }) {
				list = append(list, v)
			}
		}
		return list, true, checkValue(fd, list)
	}
	if len(raw) > 1 {
		return nil, false, []string{"must be one value"}
	}
	s := ""
	if len(raw) == 1 {
		s = raw[0]
	}
	if fd.Kind == policies.KindTextarea {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	if strings.TrimSpace(s) == "" {
		if fd.Required {
			return nil, false, []string{"required"}
		}
		return nil, false, nil
	}
	v, rule := parseAs(fd, s)
	if rule != "" {
		return nil, false, []string{rule}
	}
	return v, true, checkValue(fd, v)
}

// parseAs reads one answered text as the field's type.
func parseAs(fd Field, s string) (any, string) {
	switch fd.Type {
	case "integer", "number":
		n, ok := parseNumber(strings.TrimSpace(s))
		if !ok {
			return nil, "must be " + fd.Type
		}
		if fd.Type == "integer" {
			r, _ := rat(n)
			if !r.IsInt() {
				return nil, "must be integer"
			}
			n = json.Number(r.Num().String())
		}
		return n, ""
	}
	switch fd.Kind {
	case policies.KindText, policies.KindTextarea:
		return s, ""
	case policies.KindSelect, policies.KindMultiselect:
		if slices.ContainsFunc(fd.Choices, func(c policies.Choice) bool { return c.Value == s }) {
			return s, ""
		}
	}
	return strings.TrimSpace(s), ""
}

// checkValue returns the rules value v breaks in field fd; nil when it fits.
func checkValue(fd Field, v any) []string {
	inChoices := func(x any) bool {
		return slices.ContainsFunc(fd.Choices, func(c policies.Choice) bool { return policies.SameValue(c.Value, x) })
	}
	var rules []string
	switch fd.Kind {
	case policies.KindCheckbox:
		if _, ok := v.(bool); !ok {
			return []string{"must be true or false"}
		}
		return nil
	case policies.KindMultiselect:
		list, ok := v.([]any)
		if !ok {
			return []string{"must be a list"}
		}
		for i, x := range list {
			if !inChoices(x) {
				return []string{"must be one of the choices"}
			}
			if slices.ContainsFunc(list[:i], func(y any) bool { return policies.SameValue(x, y) }) {
				return []string{"items must be unique"}
			}
		}
		if fd.MinItems != nil && len(list) < *fd.MinItems {
			rules = append(rules, fmt.Sprintf("at least %d items", *fd.MinItems))
		}
		if fd.MaxItems != nil && len(list) > *fd.MaxItems {
			rules = append(rules, fmt.Sprintf("at most %d items", *fd.MaxItems))
		}
		return rules
	case policies.KindSelect:
		if !inChoices(v) {
			return []string{"must be one of the choices"}
		}
		return nil
	case policies.KindNumber, policies.KindInteger:
		n, ok := v.(json.Number)
		r, okr := rat(n)
		if !ok || !okr {
			return []string{"must be " + fd.Type}
		}
		if fd.Kind == policies.KindInteger && !r.IsInt() {
			return []string{"must be integer"}
		}
		if m, ok := rat(fd.Minimum); ok && r.Cmp(m) < 0 {
			rules = append(rules, "minimum "+fd.Minimum.String())
		}
		if m, ok := rat(fd.Maximum); ok && r.Cmp(m) > 0 {
			rules = append(rules, "maximum "+fd.Maximum.String())
		}
		return rules
	}
	s, ok := v.(string)
	if !ok {
		return []string{"must be string"}
	}
	n := utf8.RuneCountInString(s)
	if fd.MinLength != nil && n < *fd.MinLength {
		rules = append(rules, fmt.Sprintf("at least %d characters", *fd.MinLength))
	}
	if fd.MaxLength != nil && n > *fd.MaxLength {
		rules = append(rules, fmt.Sprintf("at most %d characters", *fd.MaxLength))
	}
	if f := formatOf(fd.Kind); f != "" && !formatOK(f, s) {
		rules = append(rules, "must be a valid "+f)
	}
	return rules
}

// formatSchemas are the jsonschema library's own format checks, compiled
// once, so a form checks email, uri, date and date-time exactly as the
// action's schema does.
var formatSchemas = sync.OnceValue(func() map[string]*jsonschema.Schema {
	out := map[string]*jsonschema.Schema{}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for _, f := range [...]string{"email", "uri", "date", "date-time"} {
		loc := "mem:///format-" + f + ".json"
		if c.AddResource(loc, map[string]any{"format": f}) != nil {
			continue
		}
		if s, err := c.Compile(loc); err == nil {
			out[f] = s
		}
	}
	return out
})

// formatOK reports whether s is a valid value of format f. A format that
// cannot be checked fails, so nothing unchecked gets through.
func formatOK(f, s string) bool {
	sch := formatSchemas()[f]
	return sch != nil && sch.Validate(s) == nil
}

// numberText is what a person may type in a number field: a decimal number
// with an optional sign, fraction and exponent (HTML's valid floating-point
// number and JSON's number, and "+1", ".5" and "5." besides).
var numberText = regexp.MustCompile(`^([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?$`)

// parseNumber reads a typed number as a JSON number in its plain form
// (leading zeros and "+" dropped). Over 100 characters, or an exponent
// beyond ±400, is refused.
func parseNumber(s string) (json.Number, bool) {
	m := numberText.FindStringSubmatch(s)
	if m == nil || len(s) > 100 || m[2] == "" && m[3] == "" {
		return "", false
	}
	sign, whole, frac, exp := m[1], strings.TrimLeft(m[2], "0"), m[3], m[4]
	if sign == "+" {
		sign = ""
	}
	if whole == "" {
		whole = "0"
	}
	out := sign + whole
	if frac != "" {
		out += "." + frac
	}
	if exp != "" {
		e, err := strconv.Atoi(exp)
		if err != nil || e > 400 || e < -400 {
			return "", false
		}
		out += "e" + strconv.Itoa(e)
	}
	if _, ok := rat(json.Number(out)); !ok {
		return "", false
	}
	return json.Number(out), true
}

// rat reads a JSON number exactly; an exponent beyond ±1000 is refused so
// a hostile number cannot build a huge integer.
func rat(n json.Number) (*big.Rat, bool) {
	s := n.String()
	if s == "" || len(s) > 1000 || !json.Valid([]byte(s)) || s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return nil, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 1000 || e < -1000 {
			return nil, false
		}
	}
	return new(big.Rat).SetString(s)
}

// Merge puts the person's values (from Check or CheckJSON) over the
// model's arguments (args, a JSON object) and returns the final arguments
// as compact JSON. Every field form f holds takes the person's value, or,
// left empty, is removed (or set to null when the schema requires it but
// lets it be null: Form.NullWhenEmpty), so an empty field is never filled
// from the model's value. Other arguments are kept as the model wrote
// them, in their order; values for keys the form does not hold are
// ignored. Arguments that are not one JSON object, or give a key the form
// does not hold twice, are an error.
func Merge(f Form, args []byte, values map[string]any) ([]byte, error) {
	fields, err := f.fields()
	if err != nil {
		return nil, fmt.Errorf("merging: %w", err)
	}
	type arg struct {
		key string
		raw json.RawMessage
	}
	notObject := errors.New("merging: the arguments are not a JSON object")
	dec := json.NewDecoder(bytes.NewReader(args))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, notObject
	}
	var given []arg
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, notObject
		}
		k, _ := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, notObject
		}
		given = append(given, arg{k, raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, notObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notObject
	}
	inForm := make(map[string]Field, len(fields))
	for _, fd := range fields {
		inForm[fd.Key] = fd
	}
	var b bytes.Buffer
	b.WriteByte('{')
	seen := map[string]bool{}
	write := func(key string, value func() error) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		writeJSON(&b, key)
		b.WriteByte(':')
		return value()
	}
	put := func(fd Field) error {
		if seen[fd.Key] {
			return nil
		}
		seen[fd.Key] = true
		if v, ok := values[fd.Key]; ok {
			return write(fd.Key, func() error {
				var one bytes.Buffer
				enc := json.NewEncoder(&one)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(v); err != nil {
					return fmt.Errorf("merging: field %q: %w", fd.Key, err)
				}
				b.Write(bytes.TrimSuffix(one.Bytes(), []byte("\n")))
				return nil
			})
		}
		if fd.null {
			return write(fd.Key, func() error { b.WriteString("null"); return nil })
		}
		return nil
	}
	for _, a := range given {
		if fd, ok := inForm[a.key]; ok {
			if err := put(fd); err != nil {
				return nil, err
			}
			continue
		}
		if seen[a.key] {
			return nil, fmt.Errorf("merging: the arguments give %q twice", a.key)
		}
		seen[a.key] = true
		if err := write(a.key, func() error { return json.Compact(&b, a.raw) }); err != nil {
			return nil, err
		}
	}
	for _, fd := range fields {
		if err := put(fd); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
