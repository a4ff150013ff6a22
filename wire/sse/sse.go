// Package sse reads and writes event streams (text/event-stream), the
// framing every model provider's streaming API and MCP's Streamable HTTP
// use. It knows lines, fields and events, nothing of what the data says.
//
// The gate must read a stream exactly as the most lenient client does, so
// this package follows the WHATWG HTML standard ("Interpreting an event
// stream", §9.2.6): a line ends with CRLF, LF or a bare CR, also when the
// two bytes of a CRLF arrive in two pieces; an event ends with a blank
// line; "data" lines are joined with "\n"; a field without a colon is a
// name with an empty value; a line starting with ":" is a comment. One
// extension: a UTF-8 byte-order mark is dropped at the start of every
// line, not only of the stream, because the official Node SDKs do so
// (openai-node and anthropic-sdk-typescript, src/internal/decoders/line.ts,
// decode each line with a fresh TextDecoder, which drops a leading BOM), and
// a line holding only a BOM is then blank.
//
// Readers disagree on some bytes. The Go SDKs (openai-go and
// anthropic-sdk-go, packages/ssestream/ssestream.go) split lines with a
// bufio.Scanner: only at LF, dropping one CR before it, so a bare CR does
// not end their line; and they keep a BOM as part of the field name. The
// MCP go-sdk (mcp/event.go) also splits at LF only. So a Splitter marks
// each event it cuts: one whose bytes every reader reads alike (lines end
// with LF or CRLF, no other CR, no line starts with a BOM) is handed on as
// it came; any other is rewritten in canonical form (every line ending
// with LF, BOMs dropped), which every reader reads as this package did.
// What the gate forwards is then what it read, whoever reads it.
package sse

import (
	"bytes"
	"errors"
)

// bom is the UTF-8 byte-order mark.
const bom = "\xEF\xBB\xBF"

// ErrTooLarge is returned by Splitter.Split for an event over the limit.
var ErrTooLarge = errors.New("sse: event over the size limit")

// Splitter cuts an event stream, given in pieces of any size, into whole
// events. It holds the event begun in one piece and not yet complete. The
// zero value is ready to use and has no size limit; a Splitter is used by
// one goroutine.
type Splitter struct {
	// Max caps one event's bytes (all its lines); 0: no limit.
	Max int

	pend  []byte // the event begun and not yet complete
	st    state  // where the scan of pend stands
	canon []byte // scratch: an event rewritten in canonical form
}

// state is where a scan stands inside one event.
type state struct {
	line  int     // bytes of the current line read so far
	head  [3]byte // its first bytes (to tell a BOM)
	cr    bool    // the last byte read was a CR that ended a line: an LF next belongs to it
	blank bool    // with cr: the line that CR ended was blank, so the event ended there
	odd   bool    // readers may read the event's bytes differently (a bare CR, a BOM)
}

// Split cuts p, the stream's next bytes, into events and calls fn with
// each complete one, in order. ev is the event through the blank line that
// ends it. When the event lies whole in p and every reader reads its bytes
// alike, ev is p[at:at+len(ev)], the bytes as they came; otherwise at is
// -1 and ev is the Splitter's own buffer, valid only during the call: the
// event as it came when it began in an earlier piece and every reader
// reads it alike, else rewritten in canonical form. A blank line ended by
// a CR that is the last byte of p waits for the next piece (it may be a
// CRLF). When fn returns false Split stops at once and the rest
// of p is dropped. Bytes after the last complete event are kept for the
// next call. Over Max bytes in one event, Split stops with ErrTooLarge.
func (s *Splitter) Split(p []byte, fn func(ev []byte, at int) bool) error {
	if len(p) == 0 {
		return nil
	}
	crs := bytes.IndexByte(p, '\r') >= 0
	off := 0
	if len(s.pend) > 0 || s.st.cr {
		n := s.st.scan(p, crs)
		if n < 0 {
			if s.Max > 0 && len(s.pend)+len(p) > s.Max {
				return ErrTooLarge
			}
			s.pend = append(s.pend, p...)
			return nil
		}
		if s.Max > 0 && len(s.pend)+n > s.Max {
			return ErrTooLarge
		}
		s.pend = append(s.pend, p[:n]...)
		ev := s.event(s.pend)
		s.reset()
		if !fn(ev, -1) {
			return nil
		}
		off = n
	}
	for off < len(p) {
		n := s.st.scan(p[off:], crs)
		if n < 0 {
			break
		}
		if s.Max > 0 && n > s.Max {
			return ErrTooLarge
		}
		ev, at := p[off:off+n], off
		if s.st.odd {
			ev, at = s.event(ev), -1
		}
		s.st = state{}
		if !fn(ev, at) {
			return nil
		}
		off += n
	}
	if rest := p[off:]; len(rest) > 0 {
		if s.Max > 0 && len(rest) > s.Max {
			return ErrTooLarge
		}
		s.pend = append(s.pend[:0], rest...)
	}
	return nil
}

// Rest returns what is left at the end of the stream: an event begun and
// never ended by a blank line (in canonical form when readers could differ
// on it), or nil. It ends mid-line when its last byte is not "\n". The
// Splitter is empty afterwards; the bytes are valid until its next use.
//
// A last line that starts with a BOM and has no line end is one readers
// differ on: the Node SDKs flush it as a line and drop the BOM, so a BOM
// alone there is to them the blank line that ends the event, which the
// Go SDKs and the spec never dispatch. In canonical form the BOM is gone
// and no reader dispatches the event.
func (s *Splitter) Rest() []byte {
	if len(s.pend) == 0 {
		s.reset()
		return nil
	}
	ev := s.pend
	if s.st.odd || s.st.cr || s.st.line >= len(bom) && string(s.st.head[:]) == bom {
		ev = appendCanon(s.canon[:0], ev)
		s.canon = ev
	}
	s.reset()
	return ev
}

// Pending reports how many bytes of an unfinished event the Splitter holds.
func (s *Splitter) Pending() int { return len(s.pend) }

// Reset drops any unfinished event, for a new stream. The buffers are
// kept unless they grew large.
func (s *Splitter) Reset() { s.reset() }

func (s *Splitter) reset() {
	const keep = 64 << 10
	if cap(s.pend) > keep {
		s.pend = nil
	}
	if cap(s.canon) > keep {
		s.canon = nil
	}
	s.pend = s.pend[:0]
	s.st = state{}
}

// event returns ev as handed on: as it came, or in canonical form.
func (s *Splitter) event(ev []byte) []byte {
	if !s.st.odd {
		return ev
	}
	s.canon = appendCanon(s.canon[:0], ev)
	return s.canon
}

// scan reads b, which continues the event st describes (or starts one, for
// a zero st), and returns how many bytes of b complete it, through its
// blank line; or -1 when b ends first, st then describing all of b. A blank
// line ended by a CR that is the last byte of b is not yet an end: the
// next byte tells whether it was a CRLF. crs tells whether b may hold a CR
// at all (the search for line ends is then one IndexByte).
func (st *state) scan(b []byte, crs bool) int {
	if len(b) == 0 {
		return -1
	}
	i := 0
	if st.cr {
		st.cr = false
		if b[0] == '\n' {
			i = 1
		} else {
			st.odd = true // a bare CR: the Go readers do not end the line there
		}
		if st.blank {
			st.blank = false
			return i
		}
	}
	for i < len(b) {
		j := eol(b[i:], crs)
		if j < 0 {
			st.take(b[i:])
			return -1
		}
		st.take(b[i : i+j])
		blank := st.line == 0 || st.line == len(bom) && string(st.head[:]) == bom
		if st.line >= len(bom) && string(st.head[:]) == bom {
			st.odd = true // only the Node readers drop a BOM here
		}
		st.line = 0
		i += j
		if b[i] == '\r' {
			if i+1 == len(b) {
				st.cr, st.blank = true, blank
				return -1
			}
			if b[i+1] == '\n' {
				i++
			} else {
				st.odd = true
			}
		}
		i++
		if blank {
			return i
		}
	}
	return -1
}

// take adds b, bytes of the current line, to st. Only the line's first
// bytes are kept, and its length only up to one past them: enough to tell
// an empty line, a BOM alone, and a line starting with a BOM.
func (st *state) take(b []byte) {
	k := 0
	for ; k < len(b) && st.line < len(st.head); k++ {
		st.head[st.line] = b[k]
		st.line++
	}
	if k < len(b) {
		st.line = len(st.head) + 1
	}
}

// eol returns the index of the first CR or LF in b, or -1. Without crs, b
// holds no CR.
func eol(b []byte, crs bool) int {
	n := bytes.IndexByte(b, '\n')
	if !crs {
		return n
	}
	lim := b
	if n >= 0 {
		lim = b[:n]
	}
	if c := bytes.IndexByte(lim, '\r'); c >= 0 {
		return c
	}
	return n
}

// appendCanon appends ev in canonical form: each line ended by LF, a
// leading BOM dropped from each. A line that still starts with a BOM after
// that is a field no reader knows (Node's reader drops only one), so it is
// left out rather than offered to a reader that drops the next. A last
// line without a line end stays without one.
func appendCanon(dst, ev []byte) []byte {
	for len(ev) > 0 {
		j := eol(ev, true)
		line := ev
		if j >= 0 {
			line = ev[:j]
		}
		line = bytes.TrimPrefix(line, []byte(bom))
		if !bytes.HasPrefix(line, []byte(bom)) {
			dst = append(dst, line...)
			if j >= 0 {
				dst = append(dst, '\n')
			}
		}
		if j < 0 {
			break
		}
		if ev[j] == '\r' && j+1 < len(ev) && ev[j+1] == '\n' {
			j++
		}
		ev = ev[j+1:]
	}
	return dst
}
