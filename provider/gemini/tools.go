package gemini

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
)

// A Gemini request declares its functions under
// tools[].functionDeclarations[] as {name, description, parameters |
// parametersJsonSchema} (wire-formats.md §9.9). parameters is Google's
// OpenAPI subset: upper-case types ("OBJECT", "STRING"), nullable;
// parametersJsonSchema is plain JSON Schema. Several tool objects may
// each hold declarations, beside server tools (googleSearch,
// codeExecution) that hold none.

// declarations calls fn with each function declaration of a request body
// and the key its schema sits under ("" when it has none).
func declarations(root gjson.Result, fn func(decl gjson.Result, schemaKey string) bool) error {
	tools, _, err := member(root, "tools")
	if err != nil {
		return err
	}
	tools.ForEach(func(_, tool gjson.Result) bool {
		var decls gjson.Result
		if decls, _, err = member(tool, "functiondeclarations"); err != nil {
			return false
		}
		decls.ForEach(func(_, d gjson.Result) bool {
			if !d.IsObject() {
				return true
			}
			js, jsKey, e1 := member(d, "parametersjsonschema")
			p, pKey, e2 := member(d, "parameters")
			if err = errors.Join(e1, e2); err != nil {
				return false
			}
			key := ""
			switch {
			case js.Exists() && p.Exists():
				err = fmt.Errorf("function %q has both parameters and parametersJsonSchema", d.Get("name").Str)
				return false
			case js.Exists():
				key = jsKey
			case p.Exists():
				key = pKey
			}
			return fn(d, key)
		})
		return err == nil
	})
	return err
}

// RewriteTools rewrites the function declarations of a request body on
// its way to the provider. For each, rewrite gets the name and its schema
// (parametersJsonSchema as it is, or parameters read as JSON Schema, see
// ToolSchema; nil when it has none); when it says ok, the schema is
// replaced under the key the declaration used ("parameters" when it had
// none; Gemini took lower-case JSON Schema types there in the recordings)
// unless the new one is nil, and the suffix is appended to description,
// created if absent or not a string.
//
// A body without the bytes "tools" is returned as is, the same slice;
// so is one where rewrite says !ok for every declaration. Otherwise only
// the rewritten declarations change, spliced in. Invalid JSON is an
// error, as is a new schema that is not valid JSON or a declaration with
// both schema keys.
func RewriteTools(body []byte, rewrite provider.ToolRewrite) ([]byte, error) {
	if !containsFoldBytes(body, []byte("tools")) {
		return body, nil
	}
	if !gjson.ValidBytes(body) {
		return nil, errors.New("gemini request: invalid JSON carrying tools")
	}
	var edits []jsonedit.Edit
	var ferr error
	err := declarations(gjson.ParseBytes(body), func(d gjson.Result, key string) bool {
		name, _, _ := member(d, "name")
		var schema []byte
		if key != "" {
			schema = toJSONSchema(d.Get(gjson.Escape(key)))
		}
		newSchema, suffix, ok := rewrite(name.Str, schema)
		if !ok {
			return true
		}
		out := d.Raw
		if newSchema != nil {
			if !gjson.ValidBytes(newSchema) {
				ferr = fmt.Errorf("gemini request: tool %q: the new schema is not valid JSON", name.Str)
				return false
			}
			k := key
			if k == "" {
				k = "parameters"
			}
			if out, ferr = sjson.SetRaw(out, gjson.Escape(k), string(newSchema)); ferr != nil {
				return false
			}
		}
		if suffix != "" {
			desc, dk, _ := member(d, "description")
			if dk == "" {
				dk = "description"
			}
			text := suffix
			if desc.Type == gjson.String {
				text = desc.Str + suffix
			}
			if out, ferr = sjson.Set(out, gjson.Escape(dk), text); ferr != nil {
				return false
			}
		}
		if out == d.Raw {
			return true
		}
		var e jsonedit.Edit
		if e, ferr = jsonedit.Of(body, d, out); ferr != nil {
			return false
		}
		edits = append(edits, e)
		return true
	})
	if err = errors.Join(err, ferr); err != nil {
		return nil, fmt.Errorf("gemini request: %w", err)
	}
	if len(edits) == 0 {
		return body, nil
	}
	return jsonedit.Apply(body, edits), nil
}

// ToolSchema returns the schema a request body declares for the function
// name, as JSON Schema, or nil: parametersJsonSchema as it is, or
// parameters with its OpenAPI types read as JSON Schema ("OBJECT" →
// "object", nullable → a "null" type beside). What the glue gives the gate
// for an action whose policy has no schema.
func ToolSchema(body []byte, name string) []byte {
	if !containsFoldBytes(body, []byte("tools")) || !gjson.ValidBytes(body) {
		return nil
	}
	var out []byte
	declarations(gjson.ParseBytes(body), func(d gjson.Result, key string) bool {
		if n, _, _ := member(d, "name"); n.Str != name {
			return true
		}
		if key != "" {
			out = toJSONSchema(d.Get(gjson.Escape(key)))
		}
		return false
	})
	return out
}

// toJSONSchema returns a schema with Google's OpenAPI-subset spellings
// made JSON Schema's: upper-case type names lower-cased, nullable: true
// turned into a "null" type beside. Anything else stays.
func toJSONSchema(s gjson.Result) []byte {
	if !s.IsObject() {
		return []byte(s.Raw)
	}
	if !bytes.Contains([]byte(s.Raw), []byte(`"type"`)) && !bytes.Contains([]byte(s.Raw), []byte(`"nullable"`)) {
		return []byte(s.Raw)
	}
	return []byte(jsonSchemaOf(s))
}

func jsonSchemaOf(s gjson.Result) string {
	switch {
	case s.IsArray():
		var items []string
		s.ForEach(func(_, v gjson.Result) bool {
			items = append(items, jsonSchemaOf(v))
			return true
		})
		return "[" + strings.Join(items, ",") + "]"
	case !s.IsObject():
		return s.Raw
	}
	var b strings.Builder
	b.WriteByte('{')
	nullable := s.Get("nullable").Type == gjson.True
	s.ForEach(func(k, v gjson.Result) bool {
		if k.Str == "nullable" {
			return true
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(k.Raw)
		b.WriteByte(':')
		switch {
		case k.Str == "type" && v.Type == gjson.String:
			t := gjson.AppendJSONString(nil, strings.ToLower(v.Str))
			if nullable {
				b.WriteString("[" + string(t) + `,"null"]`)
			} else {
				b.Write(t)
			}
		case k.Str == "properties" || k.Str == "$defs" || k.Str == "definitions":
			// A map of names to schemas: names stay.
			b.WriteByte('{')
			n := 0
			v.ForEach(func(pk, pv gjson.Result) bool {
				if n > 0 {
					b.WriteByte(',')
				}
				n++
				b.WriteString(pk.Raw)
				b.WriteByte(':')
				b.WriteString(jsonSchemaOf(pv))
				return true
			})
			b.WriteByte('}')
		case k.Str == "enum" || k.Str == "default" || k.Str == "example" || k.Str == "const":
			b.WriteString(v.Raw) // values, not schemas
		case v.IsObject() || v.IsArray():
			b.WriteString(jsonSchemaOf(v))
		default:
			b.WriteString(v.Raw)
		}
		return true
	})
	b.WriteByte('}')
	return b.String()
}
