package anthropic

// Test helpers of the Anthropic adapter's own tests; the fakes every
// adapter shares are in provider/providertest.

import (
	"bytes"
	"reflect"

	"github.com/toolgate/toolgate/wire/sse"
)

const (
	testLink = "https://gate.example/toolgate/h/"
	testStep = "abcdefghijklmnopqrstuvwxyz"
	waitText = "Waiting for your confirmation: Delete this post? Answer here: " + testLink + testStep
)

// passedAsRead reports whether a stream without calls came out as it
// went in: byte for byte, or, when its bytes hold a CR or a BOM (which
// readers may read differently, so the gate writes such events in
// canonical form), as the same events for every reader.
func passedAsRead(in, out []byte) bool {
	if bytes.Equal(in, out) {
		return true
	}
	if !bytes.ContainsRune(in, '\r') && !bytes.Contains(in, []byte("\ufeff")) {
		return false
	}
	return reflect.DeepEqual(sse.Parse(in), sse.Parse(out))
}

// crVariants are a stream's seeds for the fuzzers: its lines ended by a
// bare CR, and its events each after a BOM.
func crVariants(in []byte) [][]byte {
	return [][]byte{bytes.ReplaceAll(in, []byte("\n"), []byte("\r")), bytes.ReplaceAll(in, []byte("\n\n"), []byte("\n\n\ufeff"))}
}
