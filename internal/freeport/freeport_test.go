package freeport

import "testing"

// TestGetNeverRepeats: many calls in a row give as many distinct ports,
// even when the kernel would reuse a port that was just closed.
func TestGetNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 2000 {
		p := Get(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
