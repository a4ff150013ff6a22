package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Tests and benchmarks that need whole processes (several replicas, a
// kill -9, a resident set size) build the binaries once per test run
// into a directory of their own and start them with a Caddyfile each.

var builds struct {
	sync.Mutex
	dir  string
	bins map[string]string // package → binary
}

// binary builds a main package of this module or of its dependencies
// ("./cmd/toolgate", "github.com/caddyserver/caddy/v2/cmd/caddy") once
// per test run and returns the binary's path.
func binary(tb testing.TB, pkg string) string {
	tb.Helper()
	builds.Lock()
	defer builds.Unlock()
	if bin, ok := builds.bins[pkg]; ok {
		return bin
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "toolgate-e2e-bin-")
		if err != nil {
			tb.Fatalf("making the binaries' directory: %v", err)
		}
		builds.dir, builds.bins = dir, map[string]string{}
	}
	bin := filepath.Join(builds.dir, strconv.Itoa(len(builds.bins))+"-"+filepath.Base(pkg))
	target := pkg
	if strings.HasPrefix(pkg, "./") {
		target = "." + pkg // e2e runs in its own directory; the module root is its parent
	}
	out, err := exec.Command("go", "build", "-o", bin, target).CombinedOutput()
	if err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	builds.bins[pkg] = bin
	return bin
}

// TestMain removes the built binaries after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	os.Exit(code)
}
