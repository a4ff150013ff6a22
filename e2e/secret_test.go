package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testkit"
)

// TestSecretMismatchAndRotation (issue 15 §4), through a real Caddy and
// Badger: a config with another secret on the same store is refused with
// one line naming the secret (it used to start, and its answers 409 on
// the others). A rotation — the new secret, the old one in
// previous_secrets — is taken: the person's page token signed with the
// old secret still answers, and the release carries a signature the app
// still on the old secret verifies. Once the new secret is alone, the
// old one is refused.
func TestSecretMismatchAndRotation(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	l, msg := e.hold(t, "ana")
	status, body, s := e.view(ana, l) // the token is signed with the old secret
	if status != 200 || len(s.Holds) != 1 {
		t.Fatalf("view: %d %s", status, body)
	}
	const newSecret = "new-secret-0123456789abcdef"
	with := func(secretLines string) string {
		return strings.Replace(e.caddy, "secret "+secret, secretLines, 1)
	}
	err := testkit.Load(t, with("secret "+newSecret))
	if err == nil || !strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "previous_secrets") {
		t.Fatalf("another secret on the same store: %v, want a refusal naming the secret and previous_secrets", err)
	}
	if strings.Contains(err.Error(), newSecret) || strings.Contains(err.Error(), secret) {
		t.Fatalf("the refusal names a secret: %v", err)
	}
	rotated := with("secret " + newSecret + "\n\t\tprevious_secrets " + secret)
	if err := testkit.Load(t, rotated); err != nil {
		t.Fatalf("rotating: %v", err)
	}
	waitServing(t, rotated)
	if st, b := e.answer(ana, l, s.Holds[0].ID, s.Tokens[s.Holds[0].ID], "confirm", nil); st != http.StatusSeeOther {
		t.Fatalf("confirming with the token signed before the rotation: %d %s", st, b)
	}
	if got := toolResult(e.next(t, "ana", msg, "ok"), "call_del7"); got != "The person confirmed. Removed." {
		t.Errorf("the model read %q", got)
	}
	if calls := e.app.Calls(); len(calls) != 1 || calls[0].SignatureErr != nil {
		t.Fatalf("releases %+v: want one the app on the old secret verifies", calls)
	}
	if err := testkit.Load(t, with("secret "+newSecret)); err != nil {
		t.Fatalf("the rotation done: %v", err)
	}
	if err := testkit.Load(t, with("secret "+secret)); err == nil {
		t.Fatal("the old secret alone after the rotation was taken")
	}
}
