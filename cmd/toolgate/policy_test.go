package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

	// Rules: test runs a cases file and exits 1 naming each case the
	// policy decides otherwise; explain names the rule that decided and
	// the values it read.
	shop, err := filepath.Abs(filepath.Join("..", "..", "policies", "testdata", "policies", "shop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const goodCases = `
  - name: a small refund passes
    tool: refund_order
    args: {order: 1, amount: 20}
    expect: pass
    rule: 0
  - name: a shipped order needs finance
    tool: refund_order
    args: {order: 1, amount: 2000}
    record: {status: shipped}
    person: {id: ana, roles: [support]}
    expect: card
    rule: 2
`
	t.Run("test passes when every case does", func(t *testing.T) {
		cases := write("good.cases.yaml", "policy: "+shop+"\ncases:"+goodCases)
		out, errOut, status := run(t, bin, "policy", "test", cases)
		if status != 0 || errOut != "" {
			t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", status, out, errOut)
		}
		if want := "ok   a small refund passes\nok   a shipped order needs finance\n2 cases passed\n"; out != want {
			t.Errorf("stdout:\n%s\nwant\n%s", out, want)
		}
	})

	t.Run("test exits 1 naming the failing case", func(t *testing.T) {
		cases := write("bad.cases.yaml", "policy: "+shop+"\ncases:"+goodCases+`
  - name: a huge refund expected to pass
    tool: refund_order
    args: {order: 1, amount: 50000}
    expect: pass
  - name: the wrong rule
    tool: refund_order
    args: {order: 1, amount: 2000}
    record: {status: draft}
    expect: card
    rule: 2
`)
		out, errOut, status := run(t, bin, "policy", "test", cases)
		if status != 1 {
			t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", status, out, errOut)
		}
		for _, want := range []string{
			"ok   a small refund passes\n",
			"FAIL a huge refund expected to pass: got refuse, want pass (the model reads: Toolgate refused refund_order: Refunds over 10,000 need a ticket; nothing ran.) (decided by rules[1])\n",
			"FAIL the wrong rule: decided by rule -1, want 2 (-1: none)\n",
			"2 of 4 cases failed\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("test with a file that is not a cases file", func(t *testing.T) {
		cases := write("odd.cases.yaml", "policy: "+shop+"\ncases:\n  - tool: refund_order\n    colour: red\n")
		out, errOut, status := run(t, bin, "policy", "test", cases)
		if status != 1 || !strings.Contains(errOut, "colour") {
			t.Fatalf("exit %d, want 1 naming the unknown key\nstdout: %s\nstderr: %s", status, out, errOut)
		}
	})

	for _, tt := range []struct {
		name  string
		args  []string
		want  []string // lines of stdout, each somewhere in it
		never []string // never in stdout
	}{
		{"the rule that allowed and the arguments it read", []string{"refund_order", `{"order": 1, "amount": 20}`}, []string{
			"pass: allowed by a rule; the app runs it as before",
			"  rule: rules[0] decided allow (when: args.amount <= 50)",
			`  read: args {"order": 1, "amount": 20}`,
		}, nil},
		{"the rule that asked, the record and the person it read", []string{"--record", `{"status":"shipped"}`, "--person", "ana", "--roles", "support", "refund_order", `{"order": 1, "amount": 2000}`}, []string{
			"card: held until the person confirms",
			`  rule: rules[2] decided ask (when: record.status == "shipped" && !("finance" in person.roles))`,
			`  read: record {"status":"shipped"}`,
			`  read: person {id: "ana", tenant: "", roles: ["support"]}, protocol openai-chat`,
		}, nil},
		{"a rule that needs the record it was not given", []string{"refund_order", `{"order": 1, "amount": 2000}`}, []string{
			"card: held until the person confirms",
			"  rules: rules[2] reads the record, which was not given (--record); the running gate reads it as the person, and that rule or a later one decides",
		}, []string{"decided"}},
		{"a form names its fields, never values", []string{"draft_post", `{"title": "Hello secret title"}`}, []string{
			"form: held until the person fills in",
			"  field title (shown for review)",
		}, []string{"Hello secret title", "read:"}},
	} {
		t.Run("explain rules: "+tt.name, func(t *testing.T) {
			file := shop
			if tt.args[0] == "draft_post" {
				file = blog
			}
			var args []string
			for len(tt.args) > 0 && strings.HasPrefix(tt.args[0], "--") {
				args, tt.args = append(args, tt.args[0], tt.args[1]), tt.args[2:]
			}
			args = append(append([]string{"policy", "explain"}, args...), append([]string{file}, tt.args...)...)
			out, errOut, status := run(t, bin, args...)
			if status != 0 {
				t.Fatalf("exit %d\n%s%s", status, out, errOut)
			}
			lines := strings.Split(out, "\n")
			for _, w := range tt.want {
				if !slices.Contains(lines, w) {
					t.Errorf("stdout lacks the line %q:\n%s", w, out)
				}
			}
			for _, n := range tt.never {
				if strings.Contains(out, n) {
					t.Errorf("stdout says %q:\n%s", n, out)
				}
			}
		})
	}

	t.Run("explain with a broken policy says its mistake", func(t *testing.T) {
		bad := write("bad.yaml", "actions:\n  delete_post:\n    effect: destructive\n")
		out, errOut, status := run(t, bin, "policy", "explain", bad, "delete_post", `{}`)
		if status != 1 || !strings.Contains(errOut, `action "delete_post": card: required`) || out != "" {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", status, out, errOut)
		}
	})
}
