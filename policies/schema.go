package policies

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Limits on a schema's YAML, so aliases cannot blow a small file up into a
// huge document ("billion laughs") and deep nesting cannot exhaust the stack.
const (
	maxSchemaNodes = 100_000
	maxSchemaDepth = 64
)

// schemaJSON converts an action's schema, given in YAML, to compact JSON
// that keeps the file's key order. It refuses what JSON cannot say
// (non-finite numbers, custom tags, merge keys) and keys given twice; errors
// name the key path inside the schema.
func (l *loader) schemaJSON(n *yaml.Node) ([]byte, error) {
	w := &jsonWriter{l: l}
	if err := w.value(n, "schema", 0); err != nil {
		return nil, err
	}
	return w.buf.Bytes(), nil
}

type jsonWriter struct {
	l     *loader
	buf   bytes.Buffer
	nodes int // values written, aliases counted each time
}

func (w *jsonWriter) fail(n *yaml.Node, path string, format string, args ...any) error {
	return w.l.errf(n, path, format, args...)
}

func (w *jsonWriter) value(n *yaml.Node, path string, depth int) error {
	n = deref(n)
	w.nodes++
	if w.nodes > maxSchemaNodes {
		return w.fail(n, "schema", "is too large (more than %d values)", maxSchemaNodes)
	}
	if depth > maxSchemaDepth {
		return w.fail(n, path, "is nested too deeply (more than %d levels)", maxSchemaDepth)
	}
	switch n.Kind {
	case yaml.MappingNode:
		w.buf.WriteByte('{')
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				return w.fail(k, path, "keys must be strings")
			}
			if k.ShortTag() == "!!merge" {
				return w.fail(k, path, "merge keys (<<) are not supported")
			}
			kp := path + "." + k.Value
			if seen[k.Value] {
				return w.fail(k, kp, "given twice")
			}
			seen[k.Value] = true
			if i > 0 {
				w.buf.WriteByte(',')
			}
			w.string(k.Value)
			w.buf.WriteByte(':')
			if err := w.value(n.Content[i+1], kp, depth+1); err != nil {
				return err
			}
		}
		w.buf.WriteByte('}')
	case yaml.SequenceNode:
		w.buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				w.buf.WriteByte(',')
			}
			if err := w.value(c, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
		w.buf.WriteByte(']')
	case yaml.ScalarNode:
		return w.scalar(n, path)
	default:
		return w.fail(n, path, "is not a YAML value JSON can hold")
	}
	return nil
}

func (w *jsonWriter) scalar(n *yaml.Node, path string) error {
	switch tag := n.ShortTag(); tag {
	case "!!str", "!!timestamp":
		// A timestamp stays the text as written: JSON has no dates.
		w.string(n.Value)
	case "!!null":
		w.buf.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return w.fail(n, path, "%q is not a boolean", n.Value)
		}
		w.buf.WriteString(strconv.FormatBool(b))
	case "!!int", "!!float":
		num, err := jsonNumber(n)
		if err != nil {
			return w.fail(n, path, "%w", err)
		}
		w.buf.WriteString(num)
	default:
		return w.fail(n, path, "YAML tag %s is not supported", tag)
	}
	return nil
}

// string writes s as a JSON string, leaving <, > and & readable.
func (w *jsonWriter) string(s string) {
	enc := json.NewEncoder(&w.buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	w.buf.Truncate(w.buf.Len() - 1)
}

// jsonNumber returns the JSON text of a YAML number: as written when that is
// already JSON (keeping its precision), else as YAML reads it (0x1F, 1_000).
func jsonNumber(n *yaml.Node) (string, error) {
	if s := n.Value; s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s)) {
		return s, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return "", fmt.Errorf("%q is not a number JSON can hold", n.Value)
	}
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case float64:
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			return strconv.FormatFloat(x, 'g', -1, 64), nil
		}
	}
	return "", fmt.Errorf("%q is not a number JSON can hold", n.Value)
}

// compileSchema compiles an action's schema document (from
// jsonschema.UnmarshalJSON). Formats are asserted, and nothing is loaded
// from files or the network: a $ref may only point inside the schema.
func compileSchema(action string, doc any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.UseLoader(noLoader{})
	loc := "mem:///" + url.PathEscape(action) + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

// compileError reports a schema that does not compile. When the schema
// breaks the JSON Schema metaschema, it names the key inside the schema
// (schema.properties.post.type) and the first reason, instead of the whole
// validation tree.
func (l *loader) compileError(n *yaml.Node, err error) error {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		if ve, ok := sve.Err.(*jsonschema.ValidationError); ok {
			for len(ve.Causes) > 0 {
				ve = ve.Causes[0]
			}
			key := "schema"
			for _, p := range ve.InstanceLocation {
				key += "." + p
			}
			p := message.NewPrinter(language.English)
			return l.errf(n, key, "%s", ve.ErrorKind.LocalizedString(p))
		}
	}
	return l.errf(n, "schema", "does not compile: %w", err)
}

// noLoader refuses every schema outside the policy file, so loading a policy
// does no I/O beyond reading the file.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s is outside the policy file; a schema may only refer to itself", u)
}

// schemaProperties returns the properties map of an object schema document,
// or an error when the document is not an object schema.
func schemaProperties(doc any) (map[string]any, error) {
	obj, ok := doc.(map[string]any)
	if !ok || obj["type"] != "object" {
		return nil, errors.New("must describe the arguments object (type: object)")
	}
	props, _ := obj["properties"].(map[string]any)
	return props, nil
}
