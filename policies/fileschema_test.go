package policies

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// TestFileSchemaUpToDate fails while the committed schema is not what the
// types in filespec.go give now: after a key is added or changed there, run
// go generate ./policies.
func TestFileSchemaUpToDate(t *testing.T) {
	committed, err := os.ReadFile(SchemaFile)
	if err != nil {
		t.Fatalf("reading the committed schema: %v", err)
	}
	if got := FileSchema(); !bytes.Equal(committed, got) {
		t.Fatalf("%s is not what FileSchema generates now; run go generate ./policies and commit it", SchemaFile)
	}
}

// compiledFileSchema compiles the committed schema with the validator the
// loader uses for tool schemas.
func compiledFileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(SchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("decoding %s: %v", SchemaFile, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///policy.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem:///policy.schema.json")
	if err != nil {
		t.Fatalf("compiling %s: %v", SchemaFile, err)
	}
	return s
}

// validateYAML validates a policy file's contents against schema the way
// an editor does: the YAML read as JSON.
func validateYAML(t *testing.T, schema *jsonschema.Schema, data []byte) error {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("reading the YAML: %v", err)
	}
	raw, err := (&loader{file: "test"}).schemaJSON(doc.Content[0])
	if err != nil {
		t.Fatalf("converting the YAML to JSON: %v", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return schema.Validate(v)
}

var schemaLine = regexp.MustCompile(`(?m)^# yaml-language-server: \$schema=(\S+)$`)

// TestExamplePoliciesMatchSchema: every policy file in the repository (the
// examples and this package's testdata) loads, validates against the
// schema, and names the schema for editors in a path that leads to it.
func TestExamplePoliciesMatchSchema(t *testing.T) {
	schema := compiledFileSchema(t)
	var files []string
	for _, root := range []string{"../examples", "testdata/policies"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 2 {
		t.Fatalf("found %d policy files, want the examples' and testdata's", len(files))
	}
	want, err := filepath.Abs(SchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(file, data); err != nil {
				t.Fatalf("the loader refuses it: %v", err)
			}
			if err := validateYAML(t, schema, data); err != nil {
				t.Fatalf("the schema refuses it: %v", err)
			}
			m := schemaLine.FindSubmatch(data)
			if m == nil {
				t.Fatalf("no # yaml-language-server: $schema= line")
			}
			got, err := filepath.Abs(filepath.Join(filepath.Dir(file), string(m[1])))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("the $schema line leads to %s, want %s", got, want)
			}
		})
	}
}

// TestBrokenPoliciesFailSchema: mistakes an editor should show are refused
// by the schema as by the loader.
func TestBrokenPoliciesFailSchema(t *testing.T) {
	schema := compiledFileSchema(t)
	const card = "    card: {reason: Delete it}\n"
	for _, tc := range []struct{ name, yaml string }{
		{"unknown top key", "app: Blog\nactoins: {}\n"},
		{"no actions", "app: Blog\nactions: {}\n"},
		{"misspelt action key", "actions:\n  delete_post:\n    effect: destructive\n" + card + "    reploy: Removed.\n"},
		{"unknown effect", "actions:\n  delete_post:\n    effect: dangerous\n"},
		{"no effect", "actions:\n  delete_post:\n" + card},
		{"destructive without card", "actions:\n  delete_post:\n    effect: destructive\n"},
		{"read with card", "actions:\n  find_post:\n    effect: read\n" + card},
		{"destructive that asks", "actions:\n  delete_post:\n    effect: destructive\n" + card + "    ask_for_missing: true\n"},
		{"ask without ask_for_missing", "actions:\n  draft:\n    effect: write\n    ask: {message: Hi}\n"},
		{"write confirmed over MCP", "actions:\n  draft:\n    effect: write\n    mcp: {confirm: true}\n"},
		{"run without url", "actions:\n  draft:\n    effect: write\n    run: {method: POST}\n"},
		{"run method", "actions:\n  draft:\n    effect: write\n    run: {method: FETCH, url: http://app/x}\n"},
		{"record method", "actions:\n  delete_post:\n    effect: destructive\n    card: {reason: Delete it, record: {url: http://app/x, method: POST}}\n"},
		{"reason without en", "actions:\n  delete_post:\n    effect: destructive\n    card:\n      reason: {de: Löschen}\n"},
		{"row label without en", "actions:\n  delete_post:\n    effect: destructive\n    card:\n      reason: Delete it\n      record: http://app/x\n      rows: {Post: {path: title, label: {de: Beitrag}}}\n"},
		{"row without path", "actions:\n  delete_post:\n    effect: destructive\n    card:\n      reason: Delete it\n      record: http://app/x\n      rows: {Post: {label: Post}}\n"},
		{"choice label without en", "actions:\n  draft:\n    effect: write\n    ask_for_missing: true\n    schema: {type: object, properties: {s: {type: string}}}\n    ask: {choices: {s: {a: {de: Ah}}}}\n"},
		{"card without reason", "actions:\n  delete_post:\n    effect: destructive\n    card: {record: http://app/x}\n"},
		{"ttl words", "actions:\n  draft:\n    effect: write\n    ttl: soon\n"},
		{"ttl past a day", "actions:\n  draft:\n    effect: write\n    ttl: 86401\n"},
		{"schema not an object", "actions:\n  draft:\n    effect: write\n    schema: {type: string}\n"},
		{"tool name with a space", "actions:\n  delete post:\n    effect: write\n"},
		{"field named twice", "actions:\n  draft:\n    effect: write\n    required_for_agents: [a, a]\n"},
		{"rule without when", "actions:\n  draft:\n    effect: write\n    rules: [{then: allow}]\n"},
		{"rule outcome", "actions:\n  draft:\n    effect: write\n    rules: [{when: 'true', then: maybe}]\n"},
		{"deny without because", "actions:\n  draft:\n    effect: write\n    rules: [{when: 'true', then: deny}]\n"},
		{"because on allow", "actions:\n  draft:\n    effect: write\n    rules: [{when: 'true', then: allow, because: x}]\n"},
		{"approvers on deny", "actions:\n  delete_post:\n    effect: destructive\n" + card + "    rules: [{when: 'true', then: deny, because: x, approvers: {roles: [a]}}]\n"},
		{"unknown rule key", "actions:\n  draft:\n    effect: write\n    rules: [{when: 'true', then: allow, colour: red}]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse("broken.yaml", []byte(tc.yaml)); err == nil {
				t.Fatalf("the loader takes it; the case is not broken")
			}
			if err := validateYAML(t, schema, []byte(tc.yaml)); err == nil {
				t.Fatalf("the schema takes it")
			}
		})
	}
}

// TestLoaderKnowsTheSchemaKeys: in every mapping with fixed keys, the keys
// the loader names as known are the schema's, in the same order. It reads
// the loader's own message, so a key list written out by hand again (not
// taken from filespec.go) fails here, not in an editor.
func TestLoaderKnowsTheSchemaKeys(t *testing.T) {
	const base = "actions:\n  delete_post:\n    effect: destructive\n    card:\n      reason: Delete it\n      record: {url: http://app/x}\n    run: {url: http://app/x}\n    mcp: {confirm: true}\n    rules: [{when: 'true', then: allow}]\n  draft:\n    effect: write\n    ask_for_missing: true\n    ask: {message: Hi}\n"
	var schema map[string]any
	if err := json.Unmarshal(FileSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	// walk follows a path of keys, a number picking from a list.
	walk := func(path ...any) map[string]any {
		var v any = schema
		for _, p := range path {
			switch p := p.(type) {
			case string:
				v = v.(map[string]any)[p]
			case int:
				v = v.([]any)[p]
			}
		}
		return v.(map[string]any)
	}
	action := []any{"properties", "actions", "additionalProperties"}
	in := func(path ...any) []any { return append(append([]any{}, action...), path...) }
	for _, tc := range []struct {
		mapping string
		after   string // the line the unknown key follows, with its indent
		keys    []string
		schema  []any // the path of the mapping's schema in FileSchema
	}{
		{"file", "actions:\n", fileKeys, nil},
		{"action", "    effect: destructive\n", actionKeys, action},
		{"card", "      reason: Delete it\n", cardKeys, in("properties", "card")},
		{"card.record", "{url: http://app/x", recordMappingKeys, in("properties", "card", "properties", "record", "anyOf", 1)},
		{"run", "run: {url: http://app/x", runKeys, in("properties", "run")},
		{"mcp", "{confirm: true", mcpKeys, in("properties", "mcp")},
		{"ask", "{message: Hi", askKeyNames, in("properties", "ask")},
		{"rule", "{when: 'true', then: allow", ruleKeys, in("properties", "rules", "items")},
	} {
		t.Run(tc.mapping, func(t *testing.T) {
			var src string
			switch {
			case tc.mapping == "file":
				src = "zz_unknown: 1\n" + base
			case strings.HasSuffix(tc.after, "\n"):
				indent := tc.after[:len(tc.after)-len(strings.TrimLeft(tc.after, " "))]
				src = strings.Replace(base, tc.after, tc.after+indent+"zz_unknown: 1\n", 1)
			default:
				src = strings.Replace(base, tc.after, tc.after+", zz_unknown: 1", 1)
			}
			_, err := Parse("keys.yaml", []byte(src))
			want := "zz_unknown: unknown key; known keys are " + strings.Join(tc.keys, ", ")
			if err == nil || !strings.HasSuffix(err.Error(), want) {
				t.Fatalf("error %v\nwant it to end %q", err, want)
			}
			props := walk(append(tc.schema, "properties")...)
			var inSchema []string
			for k := range props {
				inSchema = append(inSchema, k)
			}
			slices.Sort(inSchema)
			sorted := slices.Sorted(slices.Values(tc.keys))
			if len(sorted) == 0 || !slices.Equal(inSchema, sorted) {
				t.Fatalf("the schema's keys %v, the loader's %v", inSchema, sorted)
			}
		})
	}
}
