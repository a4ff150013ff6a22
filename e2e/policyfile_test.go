package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/toolgate/toolgate/internal/testkit"
)

// TestPolicyIsItsContentNotItsPath (issue 15 §4): a hold made while the
// route's policy was read from one file is confirmed after the config
// names a byte-identical copy at another path (another replica's layout,
// or a file moved): it is the same policy, so the confirm runs and the
// model reads the app's reply, not "no longer declares this action".
func TestPolicyIsItsContentNotItsPath(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	l, msg := e.hold(t, "ana")

	file, _ := e.policyFile(t)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "blog.yaml")
	if err := os.WriteFile(moved, b, 0o600); err != nil {
		t.Fatal(err)
	}
	reloaded := strings.Replace(e.caddy, file, moved, 1)
	if err := testkit.Load(t, reloaded); err != nil {
		t.Fatalf("reloading with the copy: %v", err)
	}
	waitServing(t, reloaded)
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if got := toolResult(e.next(t, "ana", msg, "ok"), "call_del7"); got != "The person confirmed. Removed." {
		t.Errorf("the model read %q", got)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the app got %d releases, want 1", n)
	}
}

// TestPolicyFileEditTakesEffect (issue 15 §5): the operator edits only
// the policy file and runs a plain reload, which Caddy skips (the config
// is unchanged). The gate watches its policy files: the edit takes effect
// on its own, a hold made before it runs nothing (its action changed) and
// a new call runs under the new policy; an edit that does not load is
// refused and the policy before it stays.
func TestPolicyFileEditTakesEffect(t *testing.T) {
	e := newEnv(t, envOptions{app: "policy_poll 50ms"})
	setupPost(e)
	before, msg := e.hold(t, "ana")

	file, _ := e.policyFile(t)
	edit := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		from, to = strings.ReplaceAll(from, "APP", e.app.URL), strings.ReplaceAll(to, "APP", e.app.URL)
		if !strings.Contains(string(b), from) {
			t.Fatalf("%q is not in the policy", from)
		}
		if err := os.WriteFile(file, []byte(strings.Replace(string(b), from, to, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	edit("url: APP/posts/{post}\n    reply: Removed.", "url: APP/archive/{post}\n    reply: Archived.")
	// A plain reload, as `caddy reload` without --force: the same config,
	// so Caddy keeps the running one.
	if err := caddy.Load(testkit.Adapt(t, e.caddy), false); err != nil {
		t.Fatalf("plain reload: %v", err)
	}
	time.Sleep(500 * time.Millisecond) // a few polls, past the debounce

	if st := e.answerOnly(ana, before, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	changed := "The gate's policy for this action was changed after the person was asked; nothing ran. Call it again to ask the person under the current policy."
	if got := toolResult(e.next(t, "ana", msg, "ok"), "call_del7"); got != changed {
		t.Errorf("the hold made before the edit: the model read %q, want %q", got, changed)
	}
	after, msg2 := e.hold(t, "ana", call{"call_del7b", "delete_post", `{"post":7}`, false})
	if st := e.answerOnly(ana, after, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if got := toolResult(e.next(t, "ana", msg2, "ok"), "call_del7b"); got != "The person confirmed. Archived." {
		t.Errorf("the hold made after the edit: the model read %q", got)
	}
	if calls := e.app.Calls(); len(calls) != 1 || calls[0].URI != "/archive/7" {
		t.Errorf("the app got %+v, want one DELETE /archive/7", calls)
	}

	// A broken edit: the policy before it stays.
	edit("effect: destructive", "effect: explosive")
	time.Sleep(500 * time.Millisecond)
	third, msg3 := e.hold(t, "ana", call{"call_del7c", "delete_post", `{"post":7}`, false})
	if st := e.answerOnly(ana, third, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if got := toolResult(e.next(t, "ana", msg3, "ok"), "call_del7c"); got != "The person confirmed. Archived." {
		t.Errorf("after a broken edit: the model read %q", got)
	}
}
