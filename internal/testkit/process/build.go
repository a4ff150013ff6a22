package process

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The binaries Build makes live in one temporary directory per test run,
// removed by RemoveBuilt.
var built struct {
	sync.Mutex
	dir  string
	bins map[string]string // name → binary
}

// Build builds the main package pkg ("./cmd/toolgate", or a dependency's,
// "github.com/caddyserver/caddy/v2/cmd/caddy") in the module at dir, once
// per test run under name, and returns the binary's path. Building in the
// module uses the versions its go.mod requires for every dependency.
func Build(tb testing.TB, name, dir, pkg string) string {
	tb.Helper()
	built.Lock()
	defer built.Unlock()
	if bin, ok := built.bins[name]; ok {
		return bin
	}
	if built.dir == "" {
		d, err := os.MkdirTemp("", "toolgate-bin-")
		if err != nil {
			tb.Fatalf("making the binaries' directory: %v", err)
		}
		built.dir, built.bins = d, map[string]string{}
	}
	bin := filepath.Join(built.dir, name)
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s in %s: %v\n%s", pkg, dir, err, out)
	}
	tb.Logf("built %s (%s) in %s", name, pkg, time.Since(start).Round(time.Second))
	built.bins[name] = bin
	return bin
}

// Built returns the binary Build made under name in this run, if any.
func Built(name string) (string, bool) {
	built.Lock()
	defer built.Unlock()
	bin, ok := built.bins[name]
	return bin, ok
}

// RemoveBuilt removes what Build made; a TestMain calls it once its tests
// have run.
func RemoveBuilt() {
	built.Lock()
	defer built.Unlock()
	if built.dir != "" {
		os.RemoveAll(built.dir)
		built.dir, built.bins = "", nil
	}
}
