package caddymodule

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// configurationDocs is the configuration reference that
// TestConfigurationDocs holds to the code.
const configurationDocs = "../docs/configuration.md"

// TestConfigurationDocs fails when docs/configuration.md lacks an option a
// config struct or the Caddyfile parser knows, or lists one they do not:
// an operator reads the reference, not the structs, so a new option
// without a row is as good as hidden, and a row without an option sends
// them to an "unrecognized subdirective". Each table follows a
// `<!-- config-table: MODULE-ID -->` line; its rows name the Caddyfile
// subdirective and the JSON key in backticks, and each row's example is
// adapted to check that it reaches that JSON key.
func TestConfigurationDocs(t *testing.T) {
	doc, err := os.ReadFile(configurationDocs)
	if err != nil {
		t.Fatal(err)
	}
	tables := readConfigTables(t, string(doc))
	keywords := caddyfileKeywords(t, "caddyfile.go")
	for _, c := range []struct {
		module caddy.Module
		parser string // the function in caddyfile.go that reads its block
	}{
		{App{}, "parseGlobal"},
		{Handler{}, "Handler.UnmarshalCaddyfile"},
		{MCP{}, "MCP.UnmarshalCaddyfile"},
		{PagesHandler{}, "PagesHandler.UnmarshalCaddyfile"},
	} {
		id := string(c.module.CaddyModule().ID)
		t.Run(id, func(t *testing.T) {
			rows, ok := tables[id]
			if !ok {
				t.Fatalf("%s has no table for %s (a line <!-- config-table: %s --> before it)", configurationDocs, id, id)
			}
			var docKeys, docJSON []string
			for _, r := range rows {
				docKeys = append(docKeys, r.keyword)
				docJSON = append(docJSON, r.json)
				for name, cell := range map[string]string{"default": r.def, "unit": r.unit, "what it does": r.what, "example": r.example} {
					if strings.TrimSpace(cell) == "" {
						t.Errorf("row %s: the %s cell is empty", r.keyword, name)
					}
				}
				checkConfigExample(t, id, r)
			}
			want, ok := keywords[c.parser]
			if !ok {
				t.Fatalf("caddyfile.go has no %s", c.parser)
			}
			compareDocKeys(t, "Caddyfile subdirectives", docKeys, want)
			compareDocKeys(t, "JSON keys", docJSON, configJSONKeys(reflect.TypeOf(c.module)))
		})
	}
}

// configRow is one row of a configuration table.
type configRow struct {
	keyword, json, def, unit, what, example string
}

var (
	tableMarker = regexp.MustCompile(`^<!-- config-table: (\S+) -->$`)
	mdCodeSpan  = regexp.MustCompile("`([^`]+)`")
)

// readConfigTables reads the tables that follow config-table markers, by
// module ID.
func readConfigTables(t *testing.T, doc string) map[string][]configRow {
	t.Helper()
	tables := map[string][]configRow{}
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		m := tableMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		if _, dup := tables[m[1]]; dup {
			t.Errorf("two tables for %s", m[1])
		}
		tables[m[1]] = []configRow{}
		// The header and its separator, then the rows up to the first
		// line that is not a table row.
		for j := i + 3; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
			cells := mdTableCells(lines[j])
			if len(cells) != 6 {
				t.Errorf("%s line %d: want 6 cells (Caddyfile, JSON, default, unit, what it does, example), got %d", configurationDocs, j+1, len(cells))
				continue
			}
			key, json := mdCodeSpan.FindStringSubmatch(cells[0]), mdCodeSpan.FindStringSubmatch(cells[1])
			if key == nil || json == nil {
				t.Errorf("%s line %d: the Caddyfile and JSON cells must name the option in backticks", configurationDocs, j+1)
				continue
			}
			tables[m[1]] = append(tables[m[1]], configRow{
				keyword: strings.Fields(key[1])[0], json: json[1],
				def: cells[2], unit: cells[3], what: cells[4], example: cells[5],
			})
		}
	}
	return tables
}

// mdTableCells splits a Markdown table row at its unescaped pipes.
func mdTableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// checkConfigExample adapts a row's example inside its directive and checks that
// the module's JSON then carries the row's key.
func checkConfigExample(t *testing.T, id string, r configRow) {
	t.Helper()
	ex := mdCodeSpan.FindStringSubmatch(r.example)
	if ex == nil {
		t.Errorf("row %s: the example must be in backticks", r.keyword)
		return
	}
	if strings.Fields(ex[1])[0] != r.keyword {
		t.Errorf("row %s: the example %q does not use %s", r.keyword, ex[1], r.keyword)
		return
	}
	policy := "policy /etc/toolgate/blog.yaml\n"
	if r.keyword == "policy" {
		policy = ""
	}
	var in string
	switch id {
	case "toolgate":
		in = "{\n toolgate {\n " + ex[1] + "\n }\n}\n:80 {\n respond ok\n}"
	case "http.handlers.toolgate":
		in = ":80 {\n toolgate {\n " + policy + ex[1] + "\n }\n}"
	case "http.handlers.toolgate_mcp":
		in = ":80 {\n toolgate_mcp {\n " + policy + ex[1] + "\n }\n}"
	case "http.handlers.toolgate_pages":
		in = ":80 {\n toolgate_pages {\n " + ex[1] + "\n }\n}"
	}
	cfg, err := adapt(t, in)
	if err != nil {
		t.Errorf("row %s: the example %q does not adapt: %v", r.keyword, ex[1], err)
		return
	}
	var obj map[string]any
	if id == "toolgate" {
		obj, _ = cfg["apps"].(map[string]any)["toolgate"].(map[string]any)
	} else {
		obj = findHandlerJSON(cfg, strings.TrimPrefix(id, "http.handlers."))
	}
	if _, ok := obj[r.json]; !ok {
		t.Errorf("row %s: the example %q sets no %q in %v", r.keyword, ex[1], r.json, obj)
	}
}

// findHandlerJSON finds the first handler object of that name in an adapted
// config.
func findHandlerJSON(v any, name string) map[string]any {
	switch v := v.(type) {
	case map[string]any:
		if v["handler"] == name {
			return v
		}
		for _, e := range v {
			if h := findHandlerJSON(e, name); h != nil {
				return h
			}
		}
	case []any:
		for _, e := range v {
			if h := findHandlerJSON(e, name); h != nil {
				return h
			}
		}
	}
	return nil
}

// caddyfileKeywords reads, from the parser's source, the subdirectives
// each parsing function accepts: the string cases of its switches. Keyed
// by function name, "Type.Method" for methods.
func caddyfileKeywords(t *testing.T, file string) map[string][]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := fn.Name.Name
		if fn.Recv != nil && len(fn.Recv.List) == 1 {
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				name = id.Name + "." + name
			}
		}
		var keys []string
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if cc, ok := n.(*ast.CaseClause); ok {
				for _, e := range cc.List {
					if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if s, err := strconv.Unquote(lit.Value); err == nil {
							keys = append(keys, s)
						}
					}
				}
			}
			return true
		})
		if len(keys) > 0 {
			out[name] = keys
		}
	}
	return out
}

// configJSONKeys are the JSON keys of a config struct's fields.
func configJSONKeys(typ reflect.Type) []string {
	var keys []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// compareDocKeys reports what the docs list that the code lacks, and the
// other way round.
func compareDocKeys(t *testing.T, what string, docs, code []string) {
	t.Helper()
	for _, k := range docs {
		if !slices.Contains(code, k) {
			t.Errorf("%s lists %s %q, which the code does not know", configurationDocs, what, k)
		}
	}
	for _, k := range code {
		if !slices.Contains(docs, k) {
			t.Errorf("%s lacks %s %q", configurationDocs, what, k)
		}
	}
}
