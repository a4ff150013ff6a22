package provider

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/toolgate/toolgate/"

// allowedImports lists, for each package of the module, the module's
// packages it may import (its non-test files). An entry ending in "/..."
// allows every package under that folder. The graph runs one way: the
// wire protocols' packages (provider, its sub-packages, wire/) never
// import the gate, the store, the pages or the Caddy glue; the shared
// pieces never import a protocol's package. A new package gets a line
// here. Test files are not read: a package's tests may import what they
// exercise, as provider's own cross-protocol tests (package provider_test:
// keys_test.go, scan_test.go, types_test.go, providers_test.go) import
// every adapter to table over them alike; an external test package cannot
// make a cycle.
var allowedImports = map[string][]string{
	"actions":                     nil,
	"cards":                       {"plaintext", "policies"},
	"forms":                       {"plaintext", "policies"},
	"plaintext":                   nil,
	"policies":                    nil,
	"policies/internal/genschema": {"policies"},
	"store":                       nil,

	"provider":                   nil,
	"provider/anthropic":         {"provider", "wire/..."},
	"provider/chat":              {"provider", "wire/..."},
	"provider/gemini":            {"internal/memo", "provider", "provider/internal/...", "wire/..."},
	"provider/gemini/geminitest": nil,
	"provider/providertest":      {"provider", "wire/sse"},
	"provider/responses":         {"provider", "wire/..."},
	"wire/sse":                   nil,
	"wire/jsonedit":              nil,
	"wire/links":                 {"wire/keyscan"},
	"wire/keyscan":               nil,
	"wire/turn":                  {"provider", "wire/jsonedit"},
	"wire/stream":                {"wire/shape", "wire/sse"},
	"wire/shape":                 {"wire/keyscan"},
	"wire/tooledit":              {"provider", "wire/jsonedit"},
	"wire/params":                {"wire/keyscan"},
	"interceptor":                {"provider", "wire/..."},

	// Each protocol's test package: its history checker reads JSON on its
	// own, importing no adapter.
	// anthropictest's stream builders and readers (builders.go) split events
	// with providertest.Events and wire/stream's Frame, as the adapter does.
	"provider/anthropic/anthropictest": {"provider/providertest", "wire/sse", "wire/stream"},
	// chattest.BlockedInStream reads a stream with wire/sse against a
	// providertest.Holder.
	"provider/chat/chattest": {"provider/providertest", "wire/sse"},
	// responsestest.Leaks reads a stream with wire/sse and asks a
	// providertest.Holder which calls it blocks, by the adapter's keys.
	"provider/responses/responsestest": {"provider", "provider/providertest", "wire/sse"},

	"gate":        {"actions", "cards", "forms", "interceptor", "plaintext", "policies", "provider", "store", "wire/jsonedit"},
	"pages":       {"cards", "forms", "gate", "plaintext", "store"},
	"caddymodule": {"actions", "gate", "interceptor", "internal/memo", "internal/reqbody", "pages", "policies", "provider", "provider/anthropic", "provider/chat", "provider/gemini", "provider/responses", "store", "wire/..."},

	"cmd/toolgate":               {"caddymodule", "policies"},
	"examples/demo":              {"actions", "caddymodule"},
	"internal/freeport":          nil,
	"internal/memo":              nil,
	"internal/mutation":          nil,
	"internal/pgtest":            {"internal/freeport"},
	"internal/reqbody":           nil,
	"internal/testkit":           {"actions", "internal/freeport", "provider/anthropic/anthropictest", "provider/chat/chattest", "provider/responses/responsestest"},
	"internal/testkit/benchbody": nil,
	"internal/testkit/process":   nil,
	"e2e":                        nil,
	"e2e/differential":           nil,
	"e2e/outside":                nil,
}

// TestImportsRunOneWay reads every package of the module and fails on an
// import between them that allowedImports does not list.
func TestImportsRunOneWay(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal("the module root is not the provider package's parent")
	}
	seen := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		seen++
		allowed, listed := allowedImports[rel]
		if !listed {
			t.Errorf("package %s is not in allowedImports: give it a line with the module packages it may import", rel)
			return nil
		}
		for _, imp := range pkg.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if !allows(allowed, dep) {
				t.Errorf("%s imports %s, which allowedImports does not allow", rel, dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 10 {
		t.Fatalf("read %d packages: the walk missed the module", seen)
	}
}

// allows reports whether dep matches an entry of allowed.
func allows(allowed []string, dep string) bool {
	return slices.ContainsFunc(allowed, func(a string) bool {
		if prefix, ok := strings.CutSuffix(a, "/..."); ok {
			return dep == prefix || strings.HasPrefix(dep, prefix+"/")
		}
		return dep == a
	})
}
