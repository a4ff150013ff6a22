package shape

import (
	"encoding/binary"
	"math/bits"
)

// Seq is the name search (Names.Named) over the events of one stream, in
// order. The events of a stream are alike (a Chat chunk's id, model and
// keys repeat, only a few bytes of text change), so each event is searched
// only around where it differs from the last one that named nothing: a
// name wholly in the bytes both share, with the bytes around it, was in
// that event too. One Seq per stream; not safe for concurrent use.
type Seq struct {
	names *Names
	last  []byte // the last event searched that named nothing; nil: none
}

// NewSeq returns the search for one stream's events; nil names finds
// nothing.
func (n *Names) NewSeq() *Seq { return &Seq{names: n} }

// Named returns what n.Named(ev) returns.
func (s *Seq) Named(ev []byte) string {
	if s == nil || s.names == nil {
		return ""
	}
	b := ev
	if s.last != nil {
		p := commonPrefix(s.last, ev)
		b = ev[s.window(ev, p):s.windowEnd(ev, p)]
	}
	name := s.names.Named(b)
	if name == "" && len(ev) <= maxKept {
		// An event that names a tool is not kept: the one kept must have
		// named nothing. Any event that did serves, however old.
		s.last = append(s.last[:0], ev...)
	}
	return name
}

// maxKept bounds the event a Seq keeps: a larger one (a whole answer in
// one event) is rare, and the next event is compared with an older one.
const maxKept = 16 << 10

// margin is how far outside the bytes that differ a window reaches: a
// name (Names.max) with the byte on each side, or a \u escape.
func (s *Seq) margin() int { return max(s.names.max, 6) + 2 }

// window returns where ev's window begins: margin before its first byte
// that differs from s.last (prefix, commonPrefix's), moved back over name
// bytes and backslashes, so that the window begins after a byte that ends
// a word (or at ev's start) and at the start of any run of backslashes
// (whose pairs decide which \ begins an escape; keyscan.HasEscape reads
// them from the run's start).
func (s *Seq) window(ev []byte, prefix int) int {
	a := max(prefix-s.margin(), 0)
	for a > 0 && (nameByte[ev[a-1]] || ev[a-1] == '\\') {
		a--
	}
	return a
}

// windowEnd returns where ev's window ends: margin after its last byte
// that differs from s.last (the bytes both end with, counted no further
// back than the bytes both begin with), moved on over name bytes and
// backslashes, so that it ends before a byte that ends a word (or at ev's
// end) and past any run of backslashes that begins in it (the \ after
// such a run may begin an escape in ev and not in s.last).
func (s *Seq) windowEnd(ev []byte, prefix int) int {
	z := min(len(ev)-commonSuffix(s.last, ev, min(len(s.last), len(ev))-prefix)+s.margin(), len(ev))
	for z < len(ev) && (nameByte[ev[z]] || ev[z] == '\\') {
		z++
	}
	return z
}

// commonPrefix returns how many bytes a and b begin with alike, eight at a
// time.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
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

// commonSuffix returns how many bytes a and b end with alike, up to
// most.
func commonSuffix(a, b []byte, most int) int {
	n := most
	i := 0
	for ; i+8 <= n; i += 8 {
		x := binary.LittleEndian.Uint64(a[len(a)-i-8:]) ^ binary.LittleEndian.Uint64(b[len(b)-i-8:])
		if x != 0 {
			return min(i+bits.LeadingZeros64(x)/8, n)
		}
	}
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}
