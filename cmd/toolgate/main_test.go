package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// built is this command, compiled once for all the package's tests (a
// link of the whole of Caddy takes seconds, minutes on a loaded machine).
var built struct {
	once sync.Once
	dir  string
	out  []byte
	err  error
}

// build compiles this command once per test run and returns the binary.
func build(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "toolgate-cmd-test-"); built.err != nil {
			return
		}
		built.out, built.err = exec.Command("go", "build", "-o", filepath.Join(built.dir, "toolgate"), ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return filepath.Join(built.dir, "toolgate")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

func TestCommand(t *testing.T) {
	bin := build(t)

	t.Run("list-modules", func(t *testing.T) {
		out, err := exec.Command(bin, "list-modules").CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		mods := map[string]bool{}
		for _, l := range strings.Split(string(out), "\n") {
			mods[strings.TrimSpace(l)] = true
		}
		for _, want := range []string{"toolgate", "http.handlers.toolgate", "http.handlers.toolgate_pages", "http.handlers.toolgate_mcp", "admin.api.toolgate", "http.handlers.reverse_proxy"} {
			if !mods[want] {
				t.Errorf("list-modules lacks %s", want)
			}
		}
	})

	dir := t.TempDir()
	validate := func(t *testing.T, policy string) (string, error) {
		t.Helper()
		pf := filepath.Join(dir, "policy.yaml")
		if err := os.WriteFile(pf, []byte(policy), 0o600); err != nil {
			t.Fatal(err)
		}
		cf := filepath.Join(dir, "Caddyfile")
		caddyfile := `{
	admin off
	toolgate {
		store ` + filepath.Join(dir, "store") + `
		secret {env.TOOLGATE_SECRET}
		pages https://gate.example.com/toolgate
	}
}
:0 {
	toolgate {
		policy ` + pf + `
	}
	reverse_proxy 127.0.0.1:1
}
:1 {
	route /mcp {
		toolgate_mcp {
			policy ` + pf + `
		}
		reverse_proxy 127.0.0.1:2
	}
}
`
		if err := os.WriteFile(cf, []byte(caddyfile), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "validate", "--config", cf)
		cmd.Env = append(os.Environ(), "TOOLGATE_SECRET=0123456789abcdef0123", "XDG_DATA_HOME="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	t.Run("validate good policy", func(t *testing.T) {
		out, err := validate(t, "actions:\n  delete_post:\n    effect: destructive\n    card:\n      reason: Delete it?\n    run:\n      method: DELETE\n      url: http://blog.internal/posts\n")
		if err != nil {
			t.Fatalf("validate failed: %v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "store")); err == nil {
			t.Error("validate opened the store")
		}
	})

	for _, tt := range []struct{ name, policy, want string }{
		{"unknown key", "actions:\n  delete_post:\n    effect: destructive\n    colour: red\n    card:\n      reason: x\n    run:\n      url: http://a/b\n", "colour"},
		{"destructive without card", "actions:\n  delete_post:\n    effect: destructive\n    run:\n      url: http://a/b\n", "card"},
		{"textarea on a non-string", "actions:\n  delete_post:\n    effect: write\n    ask_for_missing: true\n    schema:\n      type: object\n      properties:\n        n: {type: integer}\n    ask:\n      textarea: [n]\n    run:\n      url: http://a/b\n", "textarea"},
		{"choice outside the enum", "actions:\n  delete_post:\n    effect: write\n    ask_for_missing: true\n    schema:\n      type: object\n      properties:\n        s: {type: string, enum: [a, b]}\n    ask:\n      choices:\n        s: {c: C}\n    run:\n      url: http://a/b\n", "choices"},
		{"mcp confirm on a write action", "actions:\n  delete_post:\n    effect: write\n    mcp: {confirm: true}\n    run:\n      url: http://a/b\n", "mcp.confirm"},
		{"row without record", "actions:\n  delete_post:\n    effect: destructive\n    card:\n      reason: x\n      rows:\n        Post: title\n    run:\n      url: http://a/b\n", "rows"},
	} {
		t.Run("validate "+tt.name, func(t *testing.T) {
			out, err := validate(t, tt.policy)
			if err == nil {
				t.Fatalf("validate passed a broken policy:\n%s", out)
			}
			if !strings.Contains(out, "policy.yaml") || !strings.Contains(out, "delete_post") || !strings.Contains(out, tt.want) {
				t.Errorf("message does not name the file, action and key %q:\n%s", tt.want, out)
			}
			// The policy's one-line message stands on its own line, not
			// only inside Caddy's JSON log of the whole error chain.
			want := "policy " + filepath.Join(dir, "policy.yaml") + `: action "delete_post": `
			if l := lineWithPrefix(out, want); !strings.Contains(l, tt.want) {
				t.Errorf("no line of its own starts %q and names %q:\n%s", want, tt.want, out)
			}
		})
	}

	t.Run("validate unknown key names the known keys", func(t *testing.T) {
		out, err := validate(t, "actions:\n  delete_post:\n    effect: destructive\n    colour: red\n    card:\n      reason: x\n    run:\n      url: http://a/b\n")
		if err == nil {
			t.Fatalf("validate passed a broken policy:\n%s", out)
		}
		want := "policy " + filepath.Join(dir, "policy.yaml") + `: action "delete_post": colour: unknown key; known keys are effect, description, schema, card, run, reply, ttl, `
		if lineWithPrefix(out, want) == "" {
			t.Errorf("no line of its own starts %q:\n%s", want, out)
		}
	})

	t.Run("validate a broken Caddyfile says only Caddy's error", func(t *testing.T) {
		cf := filepath.Join(dir, "Broken")
		if err := os.WriteFile(cf, []byte(":0 {\n\ttoolgate {\n\t\tcolour red\n\t}\n}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "validate", "--config", cf, "--adapter", "caddyfile").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "colour") {
			t.Fatalf("validate of a broken Caddyfile: %v\n%s", err, out)
		}
		if l := lineWithPrefix(string(out), "policy "); l != "" {
			t.Errorf("a policy line for a mistake that is not the policy's:\n%s", out)
		}
	})
}

// lineWithPrefix returns the first line of out that starts with prefix,
// or "".
func lineWithPrefix(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
