//go:build !race

package e2e

// raceNoteRepeats sizes the long argument of the racing confirms (see
// TestSecondPressAndConcurrentConfirms): about 1.8 MB, which keeps each
// claim's transaction open for milliseconds.
const raceNoteRepeats = 1 << 17
