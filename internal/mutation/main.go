// Command mutation removes the gate's security checks one at a time and
// expects a test to fail each time: a check whose removal leaves its tests
// green is a check no test guards. The checks are listed in checks.go, one
// entry each, with the tests expected to fail without it.
//
// It works on a scratch copy of the tree (the files git tracks, and the
// untracked ones it does not ignore), never on the working tree. It first
// builds every package named and runs every named test on the copy as it
// is, which must pass; then, for each entry, it replaces the check's code
// with the entry's replacement, builds the packages its tests are in, runs
// each named test alone, and puts the file back. It fails, naming the
// entry, when a mutated tree does not build, when a named test does not
// exist, or when a named test still passes.
//
// Usage, from the repository root:
//
//	go run ./internal/mutation            # every entry
//	go run ./internal/mutation -run owner # entries whose name matches
//	go run ./internal/mutation -list      # the entries, one a line
//
// .ci/mutation runs it in CI. Tests run without -race, each with
// -test.timeout (default 3m): a mutation that makes a test hang fails it.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// mutation is one security check, removed.
type mutation struct {
	// Name says which check is removed; a failing run names it.
	Name string
	// File is the check's file, from the repository root.
	File string
	// From is the check's code, exactly as in File, where it must occur
	// exactly once (add context until it does).
	From string
	// To is the code that replaces From and disables the check. The tree
	// must still build.
	To string
	// Tests are the tests expected to fail without the check, each
	// "package:TestName" with the package as go test takes it
	// ("./gate"); "TestName/sub" names a subtest. Each of them must fail.
	Tests []string
}

func main() {
	run := flag.String("run", "", "only the entries whose name matches this regular expression")
	list := flag.Bool("list", false, "list the entries and exit")
	timeout := flag.Duration("timeout", 3*time.Minute, "how long one test may run")
	keep := flag.Bool("keep", false, "keep the scratch copy (its path is printed)")
	flag.Parse()
	if err := mainErr(*run, *list, *timeout, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "mutation:", err)
		os.Exit(1)
	}
}

func mainErr(run string, list bool, timeout time.Duration, keep bool) error {
	ms := mutations
	if run != "" {
		re, err := regexp.Compile(run)
		if err != nil {
			return fmt.Errorf("-run: %w", err)
		}
		ms = nil
		for _, m := range mutations {
			if re.MatchString(m.Name) {
				ms = append(ms, m)
			}
		}
		if len(ms) == 0 {
			return fmt.Errorf("no entry matches %q", run)
		}
	}
	if list {
		for _, m := range ms {
			fmt.Printf("%s\t%s\t%s\n", m.Name, m.File, strings.Join(m.Tests, " "))
		}
		return nil
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	if err := checkEntries(root, ms); err != nil {
		return err
	}
	scratch, err := os.MkdirTemp("", "toolgate-mutation-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("scratch copy:", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}
	tree, err := copyTree(root, scratch)
	if err != nil {
		return fmt.Errorf("copying the tree: %w", err)
	}
	r := &runner{tree: tree, bin: filepath.Join(scratch, "bin"), timeout: timeout}
	if err := os.Mkdir(r.bin, 0o755); err != nil {
		return err
	}
	start := time.Now()
	if err := r.baseline(ms); err != nil {
		return err
	}
	var failed []string
	for i, m := range ms {
		t0 := time.Now()
		verdict := r.mutate(m)
		fmt.Printf("[%d/%d] %s: %s (%s)\n", i+1, len(ms), m.Name, verdict.text, time.Since(t0).Round(time.Second))
		if !verdict.caught {
			failed = append(failed, m.Name+": "+verdict.text)
		}
	}
	fmt.Printf("%d mutations in %s\n", len(ms), time.Since(start).Round(time.Second))
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d checks are not guarded as listed:\n  %s", len(failed), len(ms), strings.Join(failed, "\n  "))
	}
	return nil
}

// repoRoot is the module's root: the directory of go.mod, found from the
// working directory up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// checkEntries refuses an entry that cannot be applied as written, before
// anything runs.
func checkEntries(root string, ms []mutation) error {
	seen := map[string]bool{}
	for _, m := range ms {
		switch {
		case m.Name == "" || seen[m.Name]:
			return fmt.Errorf("entry %q: a name of its own is required", m.Name)
		case m.From == m.To:
			return fmt.Errorf("entry %q: From and To are the same", m.Name)
		case len(m.Tests) == 0:
			return fmt.Errorf("entry %q: no test named", m.Name)
		}
		seen[m.Name] = true
		for _, t := range m.Tests {
			if _, _, err := splitTest(t); err != nil {
				return fmt.Errorf("entry %q: %w", m.Name, err)
			}
		}
		src, err := os.ReadFile(filepath.Join(root, m.File))
		if err != nil {
			return fmt.Errorf("entry %q: %w", m.Name, err)
		}
		if n := bytes.Count(src, []byte(m.From)); n != 1 {
			return fmt.Errorf("entry %q: its code occurs %d times in %s, want once (was the check changed or moved?)", m.Name, n, m.File)
		}
	}
	return nil
}

// splitTest reads "package:TestName".
func splitTest(s string) (pkg, name string, err error) {
	pkg, name, ok := strings.Cut(s, ":")
	if !ok || !strings.HasPrefix(pkg, "./") || !strings.HasPrefix(name, "Test") {
		return "", "", fmt.Errorf("test %q: want ./package:TestName", s)
	}
	return pkg, name, nil
}

// copyTree copies the files git lists (tracked, and untracked but not
// ignored) to scratch/toolgate and returns that directory. The recordings
// the tests read are in the tree (testdata/fixtures), so the copy needs
// nothing beside it.
func copyTree(root, scratch string) (string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return "", fmt.Errorf("git ls-files: %w", err)
	}
	tree := filepath.Join(scratch, "toolgate")
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		if err := copyFile(filepath.Join(root, f), filepath.Join(tree, f)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted in the working tree, not yet in the index
			}
			return "", err
		}
	}
	return tree, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if st.IsDir() {
		return nil // a submodule or a directory git lists
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// runner builds and runs tests in the scratch tree.
type runner struct {
	tree    string
	bin     string // where test binaries go
	timeout time.Duration
}

// verdict is what came of one mutation.
type verdict struct {
	caught bool
	text   string
}

// baseline builds every named package and runs every named test on the
// unmutated copy: each must exist and pass, or no failure under a
// mutation would mean anything.
func (r *runner) baseline(ms []mutation) error {
	byPkg := map[string][]string{}
	for _, m := range ms {
		for _, t := range m.Tests {
			pkg, name, _ := splitTest(t)
			byPkg[pkg] = append(byPkg[pkg], name)
		}
	}
	pkgs := make([]string, 0, len(byPkg))
	for p := range byPkg {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	t0 := time.Now()
	for _, pkg := range pkgs {
		bin, out, err := r.build(pkg)
		if err != nil {
			return fmt.Errorf("building %s before any mutation: %v\n%s", pkg, err, out)
		}
		names := uniq(byPkg[pkg])
		for _, name := range names {
			res := r.runTest(pkg, bin, name)
			if res.err != nil || res.noTests || res.skipped {
				return fmt.Errorf("%s:%s before any mutation: %s\n%s", pkg, name, res.describe(), res.out)
			}
		}
	}
	fmt.Printf("baseline: %d tests in %d packages pass (%s)\n", countTests(byPkg), len(pkgs), time.Since(t0).Round(time.Second))
	return nil
}

// mutate applies m, runs its tests and restores the file.
func (r *runner) mutate(m mutation) verdict {
	path := filepath.Join(r.tree, m.File)
	orig, err := os.ReadFile(path)
	if err != nil {
		return verdict{text: "reading " + m.File + ": " + err.Error()}
	}
	defer func() {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			panic(fmt.Sprintf("restoring %s in the scratch copy: %v", m.File, err))
		}
	}()
	if err := os.WriteFile(path, bytes.Replace(orig, []byte(m.From), []byte(m.To), 1), 0o644); err != nil {
		return verdict{text: "writing " + m.File + ": " + err.Error()}
	}
	bins := map[string]string{}
	var caughtBy, missed []string
	for _, t := range m.Tests {
		pkg, name, _ := splitTest(t)
		bin, ok := bins[pkg]
		if !ok {
			var out []byte
			bin, out, err = r.build(pkg)
			if err != nil {
				return verdict{text: fmt.Sprintf("BROKEN: the mutated %s does not build (%v):\n%s", pkg, err, indent(out))}
			}
			bins[pkg] = bin
		}
		res := r.runTest(pkg, bin, name)
		switch {
		case res.noTests:
			missed = append(missed, t+" (no such test)")
		case res.err == nil && res.skipped:
			missed = append(missed, t+" (skipped)")
		case res.err == nil:
			missed = append(missed, t+" (passed)")
		default:
			caughtBy = append(caughtBy, t)
		}
	}
	if len(missed) > 0 {
		return verdict{text: "SURVIVED: " + strings.Join(missed, ", ") + " did not fail without the check"}
	}
	return verdict{caught: true, text: "caught by " + strings.Join(caughtBy, ", ")}
}

// build compiles the test binary of pkg in the scratch tree.
func (r *runner) build(pkg string) (bin string, out []byte, err error) {
	bin = filepath.Join(r.bin, strings.NewReplacer("./", "", "/", "_", ".", "_").Replace(pkg)+".test")
	// No symbol table or DWARF: the binaries only run, and link faster.
	cmd := exec.Command("go", "test", "-c", "-ldflags=-s -w", "-o", bin, pkg)
	cmd.Dir = r.tree
	out, err = cmd.CombinedOutput()
	return bin, out, err
}

// result is one test run.
type result struct {
	err     error
	noTests bool
	skipped bool // it, or a subtest, skipped: it guards nothing in this run
	out     []byte
}

func (res result) describe() string {
	switch {
	case res.noTests:
		return "no such test"
	case res.skipped:
		return "skipped (a PostgreSQL test needs TOOLGATE_TEST_POSTGRES: source .ci/postgres)"
	case res.err != nil:
		return "failed: " + res.err.Error()
	}
	return "passed"
}

// runTest runs one test (and its subtests) of a built binary, in its
// package's directory as go test would.
func (r *runner) runTest(pkg, bin, name string) result {
	cmd := exec.Command(bin, "-test.run", runPattern(name), "-test.count=1", "-test.v", "-test.timeout="+r.timeout.String())
	cmd.Dir = filepath.Join(r.tree, pkg)
	out, err := cmd.CombinedOutput()
	return result{
		err:     err,
		noTests: err == nil && bytes.Contains(out, []byte("no tests to run")),
		skipped: bytes.Contains(out, []byte("--- SKIP: ")),
		out:     out,
	}
}

// runPattern matches exactly one test (and a subtest path, when given).
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

func uniq(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func countTests(byPkg map[string][]string) int {
	n := 0
	for _, names := range byPkg {
		n += len(uniq(names))
	}
	return n
}

func indent(b []byte) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = append(lines[:20], "...")
	}
	return "    " + strings.Join(lines, "\n    ")
}
