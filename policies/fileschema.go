package policies

import (
	"encoding/json"
	"fmt"
	"reflect"
)

//go:generate go run ./internal/genschema policy.schema.json

// SchemaFile is the name of the policy file's JSON Schema in this package's
// folder, as generated from FileSchema. Editors that read a
// "# yaml-language-server: $schema=" line complete and check a policy file
// with it.
const SchemaFile = "policy.schema.json"

// FileSchema returns the JSON Schema (2020-12) of the policy file, indented,
// generated from the types the loader reads its keys from. The loader stays
// the judge: it checks what a schema cannot say (URL templates against the
// tool's schema, ask fields a form can hold, language tags), and it takes a
// few spellings the schema does not offer (null for an absent key, a number
// where text is due).
func FileSchema() []byte {
	g := &schemaGen{}
	s := g.of(reflect.TypeFor[policyFile]())
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["title"] = "Toolgate policy file"
	s["description"] = "The actions a Toolgate gate watches, what a person is asked before a risky one runs, and where it runs once released."
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("encoding the policy file's schema: %v", err)) // maps of plain values always encode
	}
	return append(out, '\n')
}

// schemaGen builds a JSON Schema from Go types.
type schemaGen struct{}

// fileSchemaType is a type whose schema is not its Go type's: the file
// takes it in more than one form (a string or a mapping) or from a closed
// set.
type fileSchemaType interface {
	fileSchema(g *schemaGen) map[string]any
}

// schemaRuler is a struct type with rules between its keys (a card only for
// some effects), added to its schema as allOf.
type schemaRuler interface {
	schemaRules() []any
}

func (g *schemaGen) of(t reflect.Type) map[string]any {
	if s, ok := reflect.Zero(t).Interface().(fileSchemaType); ok {
		return s.fileSchema(g)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.of(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Struct:
		return g.object(t)
	}
	panic(fmt.Sprintf("policy file schema: no schema for %s", t)) // a new type in filespec.go needs a case here
}

func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	required := []string{}
	for f := range t.Fields() {
		key := yamlKey(f)
		if key == "" {
			continue
		}
		p := g.of(f.Type)
		if d := f.Tag.Get("doc"); d != "" {
			p["description"] = d
		}
		props[key] = p
		if f.Tag.Get("required") == "true" {
			required = append(required, key)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	if r, ok := reflect.Zero(t).Interface().(schemaRuler); ok {
		s["allOf"] = r.schemaRules()
	}
	return s
}

func (policyFile) schemaRules() []any {
	return []any{map[string]any{"properties": map[string]any{"actions": map[string]any{
		"minProperties": 1,
		// checkToolName: no spaces or control characters.
		"propertyNames": map[string]any{"minLength": 1, "pattern": `^[^\s\x00-\x1f\x7f]+$`},
	}}}}
}

// schemaRules say what readAction and askKeys refuse between keys: a card
// only and always for destructive and external actions, which never ask and
// alone may be confirmed over MCP; ask only with ask_for_missing.
func (actionFile) schemaRules() []any {
	cardEffects := map[string]any{"properties": map[string]any{"effect": map[string]any{"enum": []string{string(Destructive), string(External)}}}, "required": []string{"effect"}}
	return []any{
		map[string]any{
			"if":   cardEffects,
			"then": map[string]any{"required": []string{"card"}, "properties": map[string]any{"ask": false, "ask_for_missing": map[string]any{"const": false}}},
			"else": map[string]any{"properties": map[string]any{"card": false, "approvers": false, "mcp": map[string]any{"properties": map[string]any{"confirm": map[string]any{"const": false}}}}},
		},
		map[string]any{
			"if":   map[string]any{"properties": map[string]any{"four_eyes": map[string]any{"const": true}}, "required": []string{"four_eyes"}},
			"then": map[string]any{"required": []string{"approvers"}},
		},
		map[string]any{
			"if":   map[string]any{"required": []string{"ask"}},
			"then": map[string]any{"required": []string{"ask_for_missing"}, "properties": map[string]any{"ask_for_missing": map[string]any{"const": true}}},
		},
	}
}

func (Mode) fileSchema(*schemaGen) map[string]any {
	return map[string]any{"type": "string", "enum": []string{string(Enforce), string(Shadow)}}
}

// notifyOrOff is an action's notify: a notify mapping, or false.
type notifyOrOff struct{}

func (notifyOrOff) fileSchema(g *schemaGen) map[string]any {
	return map[string]any{"anyOf": []any{g.of(reflect.TypeFor[notifyFile]()), map[string]any{"const": false}}}
}

func (approversFile) schemaRules() []any {
	return []any{map[string]any{"anyOf": []any{map[string]any{"required": []string{"roles"}}, map[string]any{"required": []string{"ids"}}}}}
}

func (Effect) fileSchema(*schemaGen) map[string]any {
	return map[string]any{"type": "string", "enum": []string{string(Read), string(Write), string(Destructive), string(External)}}
}

// toolSchemaFile is an action's schema: any JSON Schema of an object.
type toolSchemaFile struct{}

func (toolSchemaFile) fileSchema(*schemaGen) map[string]any {
	return map[string]any{
		"type":       "object",
		"required":   []string{"type"},
		"properties": map[string]any{"type": map[string]any{"const": "object"}},
	}
}

// localizedFile is a text given as a string or per language (localized).
type localizedFile struct{}

func (localizedFile) fileSchema(*schemaGen) map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string"},
		map[string]any{
			"type":                 "object",
			"description":          "The text per BCP 47 language tag; en is required.",
			"required":             []string{"en"},
			"additionalProperties": map[string]any{"type": "string", "minLength": 1},
		},
	}}
}

// ttlFile is an action's ttl (loader.ttl).
type ttlFile struct{}

func (ttlFile) fileSchema(*schemaGen) map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "integer", "minimum": 0, "maximum": int(maxTTL.Seconds())},
		map[string]any{"type": "string", "pattern": `^([0-9]+|([0-9]*\.?[0-9]+(ns|us|µs|ms|s|m|h))+)$`},
	}}
}

// recordFile is card.record: a URL, or a mapping of url and method.
type recordFile struct{}

func (recordFile) fileSchema(g *schemaGen) map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string"},
		g.of(reflect.TypeFor[recordMappingFile]()),
	}}
}

// recordVerb is card.record.method: GET in any case.
type recordVerb string

func (recordVerb) fileSchema(*schemaGen) map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"const": "GET"},
		map[string]any{"type": "string", "pattern": "^[Gg][Ee][Tt]$"},
	}}
}

// runMethod is run.method, in any case.
type runMethod string

func (runMethod) fileSchema(*schemaGen) map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"enum": []string{"GET", "POST", "PUT", "PATCH", "DELETE"}},
		map[string]any{"type": "string", "pattern": "^([Gg][Ee][Tt]|[Pp][Oo][Ss][Tt]|[Pp][Uu][Tt]|[Pp][Aa][Tt][Cc][Hh]|[Dd][Ee][Ll][Ee][Tt][Ee])$"},
	}}
}

// fieldNames is a list of field names, each once (loader.strList).
type fieldNames []string

func (fieldNames) fileSchema(*schemaGen) map[string]any {
	return map[string]any{"type": "array", "uniqueItems": true, "items": map[string]any{"type": "string", "minLength": 1}}
}

// choicesFile is one field's choices (loader.choices).
type choicesFile struct{}

func (choicesFile) fileSchema(g *schemaGen) map[string]any {
	value := map[string]any{"type": []string{"string", "number"}}
	label := map[string]any{"anyOf": []any{map[string]any{"type": "null"}, g.of(reflect.TypeFor[localizedFile]())}}
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "object", "minProperties": 1, "additionalProperties": label},
		map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"anyOf": []any{
			value,
			map[string]any{"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": label},
		}}},
	}}
}

// rowFile is one card row (loader.rows): a gjson path, or a mapping of
// path and a label given per language.
type rowFile struct{}

func (rowFile) fileSchema(g *schemaGen) map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "string"},
		g.of(reflect.TypeFor[rowMappingFile]()),
	}}
}

// defaultFile is one field's default (loader.defaultValue).
type defaultFile struct{}

func (defaultFile) fileSchema(*schemaGen) map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": []string{"string", "number", "boolean"}},
		map[string]any{"type": "array", "items": map[string]any{"type": []string{"string", "number"}}},
	}}
}

// ruleThenFile is a rule's then key.
type ruleThenFile string

func (ruleThenFile) fileSchema(*schemaGen) map[string]any {
	return map[string]any{"enum": []string{string(RuleAllow), string(RuleAsk), string(RuleDeny)}}
}

// schemaRules say what loader.rules refuses between a rule's keys:
// because with deny only (and required there), approvers, four_eyes and
// ttl with ask only.
func (ruleFile) schemaRules() []any {
	then := func(v RuleThen) map[string]any {
		return map[string]any{"properties": map[string]any{"then": map[string]any{"const": string(v)}}, "required": []string{"then"}}
	}
	return []any{
		map[string]any{
			"if":   then(RuleDeny),
			"then": map[string]any{"required": []string{"because"}, "properties": map[string]any{"because": map[string]any{"minLength": 1}}},
			"else": map[string]any{"properties": map[string]any{"because": false}},
		},
		map[string]any{
			"if":   map[string]any{"not": then(RuleAsk)},
			"then": map[string]any{"properties": map[string]any{"approvers": false, "four_eyes": false, "ttl": false}},
		},
	}
}
