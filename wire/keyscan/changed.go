package keyscan

import (
	"encoding/binary"
	"math/bits"
)

// Changed returns where b differs from last: b[from:to] is what lies
// between the bytes both begin with and the bytes both end with (counted
// no further back than those they begin with, so from <= to). The events
// of a stream are alike (a chunk's id, model and keys repeat, only a few
// bytes of text change), so a search of an event for what the last one
// did not hold need only look near b[from:to]: a match wholly in the
// bytes both share was in last too. It compares eight bytes at a time.
func Changed(last, b []byte) (from, to int) {
	from = commonPrefix(last, b)
	return from, len(b) - commonSuffix(last, b, min(len(last), len(b))-from)
}

// commonPrefix returns how many bytes a and b begin with alike: 64 at a
// time by the runtime's comparison (vector instructions), then eight.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+64 <= n && string(a[i:i+64]) == string(b[i:i+64]) {
		i += 64
	}
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// commonSuffix returns how many bytes a and b end with alike, up to most
// (at most the shorter's length), as commonPrefix counts.
func commonSuffix(a, b []byte, most int) int {
	a, b = a[len(a)-most:], b[len(b)-most:]
	i := 0 // bytes alike at the end
	for i+64 <= most && string(a[most-i-64:most-i]) == string(b[most-i-64:most-i]) {
		i += 64
	}
	for ; i+8 <= most; i += 8 {
		if x := binary.LittleEndian.Uint64(a[most-i-8:]) ^ binary.LittleEndian.Uint64(b[most-i-8:]); x != 0 {
			return i + bits.LeadingZeros64(x)/8
		}
	}
	for i < most && a[most-1-i] == b[most-1-i] {
		i++
	}
	return i
}
