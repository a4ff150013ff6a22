package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/freeport"
)

// TestRunSaysMistakesFirst starts `toolgate run` on configs with the
// mistakes a newcomer makes first and reads the first line of stderr: the
// module's own message with its fix, before Caddy's JSON log (which still
// follows, and the run still fails).
func TestRunSaysMistakesFirst(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	const goodPolicy = "actions:\n  delete_post:\n    effect: destructive\n    card:\n      reason: Delete it?\n    run:\n      method: DELETE\n      url: http://blog.internal/posts\n"
	const openssl = `(e.g. export TOOLGATE_SECRET="$(openssl rand -base64 32)")`
	for _, tt := range []struct {
		name, secret, policy string
		pages                bool
		want                 string // the first line of stderr
	}{
		{"no secret", "", goodPolicy, true,
			"toolgate: TOOLGATE_SECRET is empty: set it to at least 16 random bytes " + openssl},
		{"a short secret", "short", goodPolicy, true,
			"toolgate: TOOLGATE_SECRET is 5 bytes: set it to at least 16 random bytes " + openssl},
		{"no pages", "0123456789abcdef0123", goodPolicy, false,
			"toolgate: pages is not set: give the toolgate global option `pages <absolute URL>`, the base URL the toolgate_pages handler answers under (e.g. pages https://gate.example.com/toolgate)"},
		{"a policy key typo", "0123456789abcdef0123", strings.Replace(goodPolicy, "reason:", "reasn:", 1), true,
			"policy " + filepath.Join(dir, "a-policy-key-typo.yaml") + `: action "delete_post": card.reasn: unknown key (did you mean reason?); known keys are reason, record, rows, editable`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pf := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
			if err := os.WriteFile(pf, []byte(tt.policy), 0o600); err != nil {
				t.Fatal(err)
			}
			cf := writeCaddyfile(t, dir, pf, tt.pages, freePort(t), freePort(t))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "run", "--config", cf)
			cmd.Env = append(os.Environ(), "TOOLGATE_SECRET="+tt.secret, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if err == nil {
				t.Fatalf("toolgate run started with the mistake:\n%s", stderr.String())
			}
			first, rest, _ := strings.Cut(stderr.String(), "\n")
			if first != tt.want {
				t.Errorf("first stderr line:\n%s\nwant\n%s\nall of stderr:\n%s", first, tt.want, stderr.String())
			}
			// Caddy's own log still follows, and still ends on the error.
			if !strings.Contains(rest, `"level":"error"`) {
				t.Errorf("no JSON error log after the plain line:\n%s", rest)
			}
			if stdout.Len() > 0 {
				t.Errorf("a run that failed printed on stdout:\n%s", stdout.String())
			}
		})
	}
}

// TestRunSaysReady starts `toolgate run` on a good config and reads the
// one plain line it prints once the routes answer: the URLs and what to do
// next.
func TestRunSaysReady(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	pf := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pf, []byte("actions:\n  delete_post:\n    effect: destructive\n    card:\n      reason: Delete it?\n    run:\n      url: http://blog.internal/posts\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	model, pages := freePort(t), freePort(t)
	cf := writeCaddyfile(t, dir, pf, true, model, pages)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--config", cf)
	cmd.Env = append(os.Environ(), "TOOLGATE_SECRET=0123456789abcdef0123", "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	var ready string
	select {
	case ready = <-line:
	case <-ctx.Done():
	}
	if ready == "" {
		t.Fatalf("no ready line on stdout; stderr:\n%s", stderr.String())
	}
	for _, want := range []string{
		"toolgate: ready.",
		fmt.Sprintf("Model route: http://localhost:%d (an app's OpenAI base URL: http://localhost:%d/v1), forwarding to 127.0.0.1:1.", model, model),
		fmt.Sprintf("The person answers under http://localhost:%d/toolgate/.", pages),
		"`go run ./examples/demo -gate=false`",
		"point the upstream at your provider",
	} {
		if !strings.Contains(ready, want) {
			t.Errorf("the ready line lacks %q:\n%s", want, ready)
		}
	}
	// Ready means ready: the model route answers (502 here: nothing
	// listens upstream).
	resp, err := http.Get(fmt.Sprintf("http://localhost:%d/v1/models", model))
	if err != nil {
		t.Fatalf("the model route does not answer after the ready line: %v", err)
	}
	resp.Body.Close()
}

// writeCaddyfile writes a gate's Caddyfile: a model route on port model
// and the pages on port pages, with the policy at pf; without pages, the
// toolgate option gives none.
func writeCaddyfile(t *testing.T, dir, pf string, withPages bool, model, pages int) string {
	t.Helper()
	pagesLine := fmt.Sprintf("\t\tpages http://localhost:%d/toolgate\n", pages)
	if !withPages {
		pagesLine = ""
	}
	caddyfile := "{\n\tadmin off\n\tauto_https off\n\ttoolgate {\n\t\tstore " + filepath.Join(dir, "store") + "\n\t\tsecret {env.TOOLGATE_SECRET}\n" + pagesLine + "\t}\n}\n" +
		fmt.Sprintf(":%d {\n\ttoolgate {\n\t\tpolicy %s\n\t}\n\treverse_proxy 127.0.0.1:1\n}\n", model, pf) +
		fmt.Sprintf(":%d {\n\troute /toolgate/* {\n\t\ttoolgate_pages\n\t}\n}\n", pages)
	f, err := os.CreateTemp(dir, "Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(caddyfile); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// freePort returns a TCP port free now on localhost.
func freePort(t *testing.T) int { return freeport.Get(t) }
