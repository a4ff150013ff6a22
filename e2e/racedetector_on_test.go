//go:build race

package e2e

// raceNoteRepeats sizes the long argument of the racing confirms (see
// TestSecondPressAndConcurrentConfirms). The race detector slows every
// claim some tenfold, so a short argument keeps them as open as a long one
// does without it, at a tenth of the cost: each of the 100 claims decodes
// it.
const raceNoteRepeats = 1 << 11
