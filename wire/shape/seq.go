package shape

import "github.com/toolgate/toolgate/wire/keyscan"

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
	name, _, _ := s.Look(ev)
	if name == "" {
		s.Keep(ev)
	}
	return name
}

// Look returns what n.Named(ev) returns, searching ev only around where it
// differs from the event last kept (Keep), and where that is: ev[from:to]
// (keyscan.Changed's; 0 and len(ev) when none is kept). Unlike Named it
// keeps nothing, so that a caller that searches the event for more (a
// call key) can keep only an event that held none of it either: the
// caller's search of ev[from:to] then stands for the whole event too. With
// nil names it names nothing and still says where ev differs.
func (s *Seq) Look(ev []byte) (name string, from, to int) {
	if s == nil {
		return "", 0, len(ev)
	}
	if s.last == nil {
		return s.names.Named(ev), 0, len(ev) // nil names name nothing
	}
	from, to = keyscan.Changed(s.last, ev)
	if s.names == nil {
		return "", from, to
	}
	return s.names.Named(ev[s.window(ev, from):s.windowEnd(ev, to)]), from, to
}

// Keep keeps ev as the event the next ones are compared with, when it
// named nothing (Look's name ""): any event that did serves, however old.
// An event over maxKept bytes is not kept and the one before stays; Keep
// reports whether ev was kept.
func (s *Seq) Keep(ev []byte) bool {
	if s == nil || len(ev) > maxKept {
		return false
	}
	s.last = append(s.last[:0], ev...)
	return true
}

// maxKept bounds the event a Seq keeps: a larger one (a whole answer in
// one event) is rare, and the next event is compared with an older one.
const maxKept = 16 << 10

// margin is how far outside the bytes that differ a window reaches: a
// name searched on its own (Names.others) with the byte on each side, or
// a \u escape. A name of name bytes only is a whole word, and the window
// holds every word that touches the bytes that differ (window and
// windowEnd move over name bytes): a word farther off, with the bytes
// around it, was in the event kept too, so the window need not reach as
// far as the longest such name.
func (s *Seq) margin() int { return max(s.names.othersMax, 6) + 2 }

// window returns where ev's window begins: margin before its first byte
// that differs from s.last (from, keyscan.Changed's), moved back over name
// bytes and backslashes, so that the window begins after a byte that ends
// a word (or at ev's start) and at the start of any run of backslashes
// (whose pairs decide which \ begins an escape; keyscan.HasEscape reads
// them from the run's start).
func (s *Seq) window(ev []byte, from int) int {
	a := max(from-s.margin(), 0)
	for a > 0 && (nameByte[ev[a-1]] || ev[a-1] == '\\') {
		a--
	}
	return a
}

// windowEnd returns where ev's window ends: margin after its last byte
// that differs from s.last (to, keyscan.Changed's), moved on over name
// bytes and backslashes, so that it ends before a byte that ends a word
// (or at ev's end) and past any run of backslashes that begins in it (the
// \ after such a run may begin an escape in ev and not in s.last).
func (s *Seq) windowEnd(ev []byte, to int) int {
	z := min(to+s.margin(), len(ev))
	for z < len(ev) && (nameByte[ev[z]] || ev[z] == '\\') {
		z++
	}
	return z
}
