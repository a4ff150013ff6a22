package policies

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Template is an absolute http or https URL that may name top-level
// arguments in braces, e.g. http://blog.internal/posts/{post}?notify={notify}.
// It is checked when parsed, so a policy mistake is found at load; the zero
// value is not usable.
type Template struct {
	raw    string
	parts  []part
	fields []string // distinct names, in order of first use
}

// part is a run of literal text, or one named field.
type part struct {
	lit   string
	field string // "" for literal text
	query bool   // the field stands after the '?', in the query
}

// ParseTemplate checks and parses a URL template. The URL must be absolute
// http or https without a fragment; braces must pair up around a field name
// of letters, digits, '_' or '-'; and the scheme and host may not name fields,
// so the model cannot steer where the request goes.
func ParseTemplate(s string) (*Template, error) {
	t := &Template{raw: s}
	inQuery := false
	seen := map[string]bool{}
	lit := 0 // start of the current literal run
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '}':
			return nil, fmt.Errorf("%q at offset %d closes no field", "}", i)
		case c == '#':
			return nil, errors.New("a URL may not have a fragment (#)")
		case c <= ' ' || c == 0x7f:
			return nil, fmt.Errorf("byte %d is a space or control character; escape it", i)
		case c == '?':
			inQuery = true
		case c == '{':
			end := strings.IndexAny(s[i+1:], "{}")
			if end < 0 || s[i+1+end] == '{' {
				return nil, fmt.Errorf("%q at offset %d is not closed", "{", i)
			}
			name := s[i+1 : i+1+end]
			if err := checkFieldName(name); err != nil {
				return nil, fmt.Errorf("at offset %d: %w", i, err)
			}
			if lit < i {
				t.parts = append(t.parts, part{lit: s[lit:i]})
			}
			t.parts = append(t.parts, part{field: name, query: inQuery})
			if !seen[name] {
				seen[name] = true
				t.fields = append(t.fields, name)
			}
			i += end + 1
			lit = i + 1
		}
	}
	if lit < len(s) {
		t.parts = append(t.parts, part{lit: s[lit:]})
	}
	if err := t.checkURL(); err != nil {
		return nil, err
	}
	return t, nil
}

// checkFieldName keeps names to what tool schemas use, so a name can never
// hide URL syntax.
func checkFieldName(name string) error {
	if name == "" {
		return errors.New("{} names no field")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("field name %q may hold only letters, digits, _ and -", name)
		}
	}
	return nil
}

// checkURL checks that the scheme and host are literal and that the URL
// parses as absolute http or https once its fields are filled in.
func (t *Template) checkURL() error {
	var first string // the literal text before the first field
	if len(t.parts) > 0 && t.parts[0].field == "" {
		first = t.parts[0].lit
	}
	sep := strings.Index(first, "://")
	if sep < 0 {
		if len(t.fields) > 0 {
			return errors.New("the scheme and host may not name fields")
		}
		return errors.New("must be an absolute http or https URL")
	}
	// The authority ends at the first '/' or '?'; a field before that end
	// would sit in the scheme, user, host or port.
	if len(t.fields) > 0 && !strings.ContainsAny(first[sep+3:], "/?") {
		return errors.New("the scheme and host may not name fields")
	}
	var dummy strings.Builder
	for _, p := range t.parts {
		if p.field != "" {
			dummy.WriteString("x")
		} else {
			dummy.WriteString(p.lit)
		}
	}
	u, err := url.Parse(dummy.String())
	if err != nil {
		return fmt.Errorf("must be an absolute http or https URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "" {
		return errors.New("must be an absolute http or https URL")
	}
	return nil
}

// Fields returns the names of the arguments the template uses, each once,
// in order of first use.
func (t *Template) Fields() []string {
	return append([]string(nil), t.fields...)
}

// String returns the template as written in the policy file.
func (t *Template) String() string {
	return t.raw
}

// Expand fills in the template from args, the arguments as a JSON object.
// Strings go in as they are, numbers as their JSON text and booleans as true
// or false; objects, arrays, null and missing fields are errors. Each value is
// escaped for where it stands: url.PathEscape before the '?', url.QueryEscape
// after it. A path segment that a value would leave empty, "." or ".." is
// refused, since it would point the request at another resource (DELETE
// /posts/ instead of /posts/7).
func (t *Template) Expand(args []byte) (string, error) {
	var values map[string]json.RawMessage
	if err := json.Unmarshal(args, &values); err != nil || values == nil {
		return "", errors.New("the arguments are not a JSON object")
	}
	var b strings.Builder
	inQuery := false
	segStart := 0  // where the current path segment starts in b
	segField := "" // the last field written into the current segment
	endSegment := func() error {
		if segField == "" {
			return nil
		}
		switch b.String()[segStart:] {
		case "", ".", "..":
			return fmt.Errorf("field %q: an empty, \".\" or \"..\" value would change the URL path", segField)
		}
		return nil
	}
	for _, p := range t.parts {
		if p.field == "" {
			lit := p.lit
			for !inQuery {
				i := strings.IndexAny(lit, "/?")
				if i < 0 {
					break
				}
				b.WriteString(lit[:i])
				if err := endSegment(); err != nil {
					return "", err
				}
				inQuery = lit[i] == '?'
				b.WriteByte(lit[i])
				segStart, segField = b.Len(), ""
				lit = lit[i+1:]
			}
			b.WriteString(lit)
			continue
		}
		v, err := fieldText(values, p.field)
		if err != nil {
			return "", err
		}
		if p.query {
			b.WriteString(url.QueryEscape(v))
		} else {
			b.WriteString(url.PathEscape(v))
			segField = p.field
		}
	}
	if !inQuery {
		if err := endSegment(); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// fieldText returns the text of one top-level argument for a URL.
func fieldText(values map[string]json.RawMessage, name string) (string, error) {
	raw, ok := values[name]
	if !ok {
		return "", fmt.Errorf("field %q is missing from the arguments", name)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", fmt.Errorf("field %q is empty", name)
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("field %q is not a valid JSON string", name)
		}
		return s, nil
	case c == 't' || c == 'f':
		return string(raw), nil // true or false: json.Unmarshal checked the literal
	case c == '-' || c >= '0' && c <= '9':
		return string(raw), nil
	case c == 'n':
		return "", fmt.Errorf("field %q is null; a URL takes only strings, numbers and booleans", name)
	case c == '{':
		return "", fmt.Errorf("field %q is an object; a URL takes only strings, numbers and booleans", name)
	default:
		return "", fmt.Errorf("field %q is an array; a URL takes only strings, numbers and booleans", name)
	}
}
