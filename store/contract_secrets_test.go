package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/store"
)

// Issue 15 §4: a store remembers the fingerprints of the secrets its
// replicas use. Another secret is refused; a rotation (the new secret
// with the old one among the previous secrets) is taken, and once the
// new one is alone the old one is refused.
func testSecrets(t *testing.T, open openStoreFunc) {
	s := open(t, contractConfig{})
	k, ok := s.(store.SecretKeeper)
	if !ok {
		t.Fatalf("%T does not keep its secrets' fingerprints", s)
	}
	ctx := context.Background()
	oldFP, newFP := store.SecretFingerprint([]byte("old-secret-0123456789")), store.SecretFingerprint([]byte("new-secret-0123456789"))
	if oldFP == newFP || len(oldFP) != 64 || strings.Contains(oldFP, "old-secret") {
		t.Fatalf("fingerprints %q, %q", oldFP, newFP)
	}
	for i, c := range []struct {
		fps []string
		ok  bool
	}{
		{[]string{oldFP}, true},        // the first start records it
		{[]string{oldFP}, true},        // a second replica with the same
		{[]string{newFP}, false},       // another secret
		{[]string{newFP, oldFP}, true}, // rotating: the old one still accepted
		{[]string{oldFP}, true},        // a replica not yet rotated
		{[]string{newFP, oldFP}, true}, // rotated again
		{[]string{newFP}, true},        // rotation done
		{[]string{oldFP}, false},       // the old secret is no longer in use
		{[]string{"unrelated", newFP}, true},
	} {
		err := k.CheckSecrets(ctx, c.fps)
		if c.ok != (err == nil) || err != nil && !errors.Is(err, store.ErrSecretMismatch) {
			t.Fatalf("step %d: CheckSecrets(%v) = %v, want ok %v", i, c.fps, err, c.ok)
		}
		if err != nil && (strings.Contains(err.Error(), oldFP) || !strings.Contains(err.Error(), oldFP[:12])) {
			t.Errorf("step %d: the error names the fingerprints in full or not at all: %v", i, err)
		}
	}
}
