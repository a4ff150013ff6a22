package outside

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit/process"
)

// The binaries are built once per run (process.Build); TestMain removes
// them after it.
func TestMain(m *testing.M) {
	code := m.Run()
	process.RemoveBuilt()
	os.Exit(code)
}

// moduleRoot is the directory of the module's go.mod (the head's tree).
func moduleRoot(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		tb.Fatalf("finding the module's root: %v %s", err, out)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// headBinary is the gate built from the working tree.
func headBinary(tb testing.TB) string {
	return process.Build(tb, "toolgate-head", moduleRoot(tb), "./cmd/toolgate")
}

// caddyBinary is plain Caddy: its own main (the standard modules) at the
// version the module's go.mod requires, built in the module so the same
// versions of every dependency are used.
func caddyBinary(tb testing.TB) string {
	return process.Build(tb, "caddy", moduleRoot(tb), "github.com/caddyserver/caddy/v2/cmd/caddy")
}

// baseCommits are the commits the head is compared with:
// TOOLGATE_BENCH_BASE, commas between several, 669b512 by default;
// "none" compares nothing.
func baseCommits() []string {
	s := cmp.Or(os.Getenv("TOOLGATE_BENCH_BASE"), "669b512")
	if s == "none" {
		return nil
	}
	return strings.Split(s, ",")
}

// baseBinary is the gate built from the base commit, in a detached
// `git worktree` of it that is removed once the binary is built. The
// second result is the commit's short name.
func baseBinary(tb testing.TB, commit string) (bin, name string) {
	tb.Helper()
	root := moduleRoot(tb)
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", commit+"^{commit}").Output()
	if err != nil {
		tb.Fatalf("TOOLGATE_BENCH_BASE=%s is no commit of %s: %v", commit, root, err)
	}
	name = strings.TrimSpace(string(out))
	if bin, ok := process.Built("toolgate-" + name); ok {
		return bin, name
	}
	src, err := os.MkdirTemp("", "toolgate-base-"+name+"-")
	if err != nil {
		tb.Fatal(err)
	}
	os.Remove(src) // git worktree add makes it
	if out, err := exec.Command("git", "-C", root, "worktree", "add", "--detach", src, name).CombinedOutput(); err != nil {
		tb.Fatalf("git worktree add %s: %v\n%s", name, err, out)
	}
	defer func() {
		if out, err := exec.Command("git", "-C", root, "worktree", "remove", "--force", src).CombinedOutput(); err != nil {
			tb.Errorf("git worktree remove %s: %v\n%s", src, err, out)
		}
		os.RemoveAll(src)
	}()
	return process.Build(tb, "toolgate-"+name, src, "./cmd/toolgate"), name
}

// envInt is the whole number in the environment variable, or def.
func envInt(tb testing.TB, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		tb.Fatalf("%s=%q: want a positive whole number", name, s)
	}
	return n
}

// envDuration is the duration in the environment variable, or def.
func envDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		tb.Fatalf("%s=%q: %v", name, s, err)
	}
	return d
}

// build names a gate binary and which tree it came from.
type gateBuild struct {
	name string // "head" or the base commit
	bin  string
}

// gateBuilds are the builds to compare: the bases (unless none) and the
// head.
func gateBuilds(tb testing.TB) []gateBuild {
	var out []gateBuild
	for _, commit := range baseCommits() {
		bin, name := baseBinary(tb, commit)
		out = append(out, gateBuild{name, bin})
	}
	return append(out, gateBuild{"head", headBinary(tb)})
}

// inRound is the builds in the order round r runs them: alternated, so
// neither always goes first.
func inRound[T any](all []T, r int) []T {
	out := make([]T, len(all))
	for i := range all {
		out[i] = all[(i+r)%len(all)]
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
