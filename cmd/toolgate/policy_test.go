package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run runs the built command and returns its stdout, stderr and exit
// status.
func run(t *testing.T, bin string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		return o.String(), e.String(), exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("running %v: %v", args, err)
	}
	return o.String(), e.String(), 0
}

func TestPolicyCommand(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	write := func(name, policy string) string {
		t.Helper()
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(policy), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	blog := filepath.Join("..", "..", "policies", "testdata", "policies", "blog.yaml")
	demo := filepath.Join("..", "..", "examples", "demo", "blog.yaml")

	t.Run("check good files", func(t *testing.T) {
		out, errOut, status := run(t, bin, "policy", "check", blog, demo)
		if status != 0 {
			t.Fatalf("exit %d\n%s%s", status, out, errOut)
		}
		for _, want := range []string{
			blog + ": ok, 4 actions (1 read, 1 write, 1 destructive, 1 external)",
			demo + ": ok, 1 action (1 destructive)",
			"2 policy files, 5 actions, no mistakes",
		} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("stdout lacks the line %q:\n%s", want, out)
			}
		}
		if errOut != "" {
			t.Errorf("stderr of a good check: %q", errOut)
		}
	})

	t.Run("check names file, action and key of each mistake", func(t *testing.T) {
		noCard := write("nocard.yaml", "actions:\n  delete_post:\n    effect: destructive\n    run:\n      url: http://a/b\n")
		colour := write("colour.yaml", "actions:\n  send_mail:\n    effect: external\n    colour: red\n    card:\n      reason: x\n")
		out, errOut, status := run(t, bin, "policy", "check", noCard, blog, colour)
		if status != 1 {
			t.Fatalf("exit %d, want 1\n%s%s", status, out, errOut)
		}
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		want := []string{
			"policy " + noCard + `: action "delete_post": card: required: destructive actions wait for the person to confirm a card`,
			"policy " + colour + `: action "send_mail": colour: unknown key; known keys are effect, description, schema, card, run, reply, ttl, `,
			"2 of 3 policy files have a mistake",
		}
		if len(lines) != len(want) {
			t.Fatalf("stderr has %d lines, want %d:\n%s", len(lines), len(want), errOut)
		}
		for i, w := range want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("stderr line %d:\n%s\nwant it to start\n%s", i+1, lines[i], w)
			}
		}
		if !strings.Contains(out, blog+": ok") || strings.Contains(out, "no mistakes") {
			t.Errorf("stdout:\n%s", out)
		}
	})

	t.Run("check a file that is not there", func(t *testing.T) {
		_, errOut, status := run(t, bin, "policy", "check", filepath.Join(dir, "absent.yaml"))
		if status != 1 || !strings.Contains(errOut, "absent.yaml") {
			t.Fatalf("exit %d:\n%s", status, errOut)
		}
	})

	for _, tt := range []struct {
		name, tool, args string
		want             []string // lines of stdout, in order
	}{
		{"a card with its rows", "delete_post", `{"post": 7}`, []string{
			"card: held until the person confirms",
			"  reason: Delete this post? This cannot be undone.",
			"  record: GET http://blog.internal/posts/7 (read as the person, and again before the run)",
			"  row Post: title",
			"  row Status: status",
			"  run: DELETE http://blog.internal/posts/7",
			"  waits: 30m0s",
			"  needs: the person's id (owner); without it the call is refused",
		}},
		{"an incomplete destructive call is refused", "delete_post", `{}`, []string{
			"refuse: nothing runs and nobody is asked; the model reads:",
			"  Toolgate refused delete_post: fields post (required). Nothing ran; ask the person in words for what is missing, then call it again.",
		}},
		{"a form with its fields", "draft_post", `{"title": "Hello"}`, []string{
			"form: held until the person fills in",
			"  field title (shown for review)",
			"  field body (required)",
			"  field status (required)",
			"  field publish_on (required)",
			"  run: POST http://app.internal/posts",
			"  waits: the gate's default TTL",
			"  needs: the person's id (owner); without it the call is refused",
		}},
		{"a complete write passes", "draft_post", `{"title": "Hello", "body": "Hi", "status": "draft", "publish_on": "2026-12-01"}`, []string{
			"pass: a complete write call; the app runs it as before",
		}},
		{"a key given twice", "delete_post", `{"post": 7, "post": 8}`, []string{
			"refuse: nothing runs and nobody is asked; the model reads:",
			"  Toolgate refused delete_post: its arguments give a key twice; nothing ran. Call it again with each key once.",
		}},
		{"an undeclared tool", "get_weather", `{}`, []string{
			"pass: get_weather is not in the policy; the gate does not inspect its calls",
		}},
	} {
		t.Run("explain "+tt.name, func(t *testing.T) {
			out, errOut, status := run(t, bin, "policy", "explain", blog, tt.tool, tt.args)
			if status != 0 {
				t.Fatalf("exit %d\n%s%s", status, out, errOut)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) < len(tt.want) {
				t.Fatalf("stdout:\n%s\nwant the lines:\n%s", out, strings.Join(tt.want, "\n"))
			}
			for i, w := range tt.want {
				if lines[i] != w {
					t.Errorf("line %d:\n%s\nwant\n%s", i+1, lines[i], w)
				}
			}
		})
	}

	// The operator's own mistake in the arguments is a usage error (exit 2,
	// one plain line), not the gate's refusal of a model's call (exit 0).
	for _, tt := range []struct{ name, args, want string }{
		{"not JSON", `{"title": `, `policy explain: the arguments "{\"title\": " are not JSON (unexpected end of JSON input): give the call's arguments as one JSON object, quoted for the shell, e.g. '{"post": 7}'`},
		{"JSON but not an object", `[7]`, `policy explain: the arguments "[7]" are JSON but not an object: give the call's arguments as one JSON object, quoted for the shell, e.g. '{"post": 7}'`},
	} {
		t.Run("explain arguments "+tt.name, func(t *testing.T) {
			out, errOut, status := run(t, bin, "policy", "explain", blog, "draft_post", tt.args)
			if status != 2 || out != "" {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", status, out, errOut)
			}
			if first, _, _ := strings.Cut(errOut, "\n"); first != tt.want {
				t.Errorf("first stderr line:\n%s\nwant\n%s", first, tt.want)
			}
		})
	}

	t.Run("schema is the committed one", func(t *testing.T) {
		out, errOut, status := run(t, bin, "policy", "schema")
		committed, err := os.ReadFile(filepath.Join("..", "..", "policies", "policy.schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		if status != 0 || out != string(committed) {
			t.Fatalf("exit %d, stdout is not policies/policy.schema.json (%d bytes, want %d)\n%s", status, len(out), len(committed), errOut)
		}
	})

	t.Run("explain with a broken policy says its mistake", func(t *testing.T) {
		bad := write("bad.yaml", "actions:\n  delete_post:\n    effect: destructive\n")
		out, errOut, status := run(t, bin, "policy", "explain", bad, "delete_post", `{}`)
		if status != 1 || !strings.Contains(errOut, `action "delete_post": card: required`) || out != "" {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", status, out, errOut)
		}
	})
}
