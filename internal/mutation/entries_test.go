package main

import "testing"

// TestEveryEntryApplies holds every entry to the code it mutates: a check
// that is changed or moved without its entry fails here, in the ordinary
// test run, not only when the (slow) mutation run selects that entry.
func TestEveryEntryApplies(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkEntries(root, mutations); err != nil {
		t.Fatal(err)
	}
}
