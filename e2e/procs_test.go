package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/internal/testkit/process"
)

// Tests and benchmarks that need whole processes (several replicas, a
// kill -9, a resident set size) build the binaries once per test run
// (process.Build) and start them with a Caddyfile each (process.New).

// binary builds a main package of this module or of its dependencies
// ("./cmd/toolgate", "github.com/caddyserver/caddy/v2/cmd/caddy") once
// per test run and returns the binary's path.
func binary(tb testing.TB, pkg string) string {
	// e2e runs in its own directory; the module root is its parent.
	return process.Build(tb, filepath.Base(pkg), "..", pkg)
}

// TestMain removes the built binaries after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	process.RemoveBuilt()
	os.Exit(code)
}
