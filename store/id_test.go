package store_test

import (
	"regexp"
	"testing"

	"github.com/toolgate/toolgate/store"
)

func TestNewID(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z2-7]{26}$`)
	seen := make(map[string]bool)
	for range 1000 {
		id, err := store.NewID()
		if err != nil {
			t.Fatalf("NewID: %v", err)
		}
		if !valid.MatchString(id) {
			t.Fatalf("NewID = %q, want 26 characters of [a-z2-7]", id)
		}
		if seen[id] {
			t.Fatalf("NewID returned %q twice", id)
		}
		seen[id] = true
	}
}
