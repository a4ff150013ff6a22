package gemini

import (
	"errors"
	"fmt"
	"io"

	"github.com/tidwall/gjson"
)

// The streamed JSON array (wire-formats.md §9.7): :streamGenerateContent
// without alt=sse answers "[{…}\n,\r\n{…}\n]", one GenerateContentResponse
// per element, sent as each is ready. Its readers (llm-gemini's ijson,
// python-api-core's BaseResponseIterator) read each element as it
// completes, so the gate must too: an ArrayReader cuts the elements out of
// the body as it arrives, keeping the bytes between them so that what is
// passed on is the body as it came.

// ErrArrayTooLarge is returned for an element over ArrayReader.Max.
var ErrArrayTooLarge = errors.New("gemini json array: element over the size limit")

// Element is one element of a streamed JSON array as an ArrayReader cuts
// it: Lead is the bytes between the previous element (or the start of the
// body) and this one, "[" or "," with the whitespace around; Value is the
// element, a JSON object, checked valid (unless ArrayReader.Unchecked).
// Both are valid only during the callback.
type Element struct {
	Lead, Value []byte
}

// arrayState is where an ArrayReader stands.
type arrayState uint8

const (
	aStart  arrayState = iota // before "["
	aFirst                    // after "[": an element or "]"
	aNext                     // after ",": an element
	aValue                    // inside an element
	aAfter                    // after an element: "," or "]"
	aDone                     // after "]": whitespace only
	aBroken                   // an error was returned
)

// ArrayReader cuts a streamed JSON array, given in pieces of any size,
// into its elements. Elements must be objects (GenerateContentResponse);
// anything else, bytes outside the array other than whitespace, or an
// element that is not valid JSON is an error, after which every call
// returns it. The zero value is ready and has no size limit; an
// ArrayReader is used by one goroutine.
type ArrayReader struct {
	// Max caps one element's bytes, its Lead included; 0: no limit.
	Max int
	// Unchecked leaves an element's JSON unchecked: its bounds are found
	// as for a valid one (strings, escapes, brackets), and the caller
	// checks the elements it reads. Stream reads only those that may hold
	// a call (MayHoldCall, a byte search that needs no valid JSON) or
	// come while one waits; the others pass unread, as SSE events do.
	Unchecked bool

	st    arrayState
	pend  []byte // Lead and the element begun and not complete
	lead  int    // how many bytes of pend are Lead
	depth int    // nesting inside the element
	str   bool   // inside a string
	esc   bool   // the last byte was a backslash inside a string
	off   int64  // bytes read before pend, for error messages
	err   error
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Write reads p, the body's next bytes, and calls fn with each element it
// completes, in order. When fn returns false Write stops and the rest of p
// is dropped.
func (r *ArrayReader) Write(p []byte, fn func(Element) bool) error {
	if r.err != nil {
		return r.err
	}
	start := 0 // p[start:] is not yet in pend
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch r.st {
		case aStart, aFirst, aNext, aAfter, aDone:
			if isSpace(c) {
				continue
			}
			switch {
			case r.st == aStart && c == '[':
				r.st = aFirst
			case (r.st == aFirst || r.st == aAfter) && c == ']':
				r.st = aDone
			case r.st == aAfter && c == ',':
				r.st = aNext
			case (r.st == aFirst || r.st == aNext) && c == '{':
				r.st, r.depth, r.lead = aValue, 1, len(r.pend)+i-start
			default:
				return r.fail(fmt.Errorf("gemini json array: unexpected %q at byte %d", c, r.off+int64(len(r.pend)+i-start)))
			}
		case aValue:
			j, end := r.value(p[i:])
			if !end {
				if r.Max > 0 && len(r.pend)+len(p)-start > r.Max {
					return r.fail(ErrArrayTooLarge)
				}
				i = len(p)
				continue
			}
			i += j
			r.pend = append(r.pend, p[start:i+1]...)
			start = i + 1
			if r.Max > 0 && len(r.pend) > r.Max {
				return r.fail(ErrArrayTooLarge)
			}
			el := Element{Lead: r.pend[:r.lead], Value: r.pend[r.lead:]}
			if !r.Unchecked && !gjson.ValidBytes(el.Value) {
				return r.fail(fmt.Errorf("gemini json array: element at byte %d is not valid JSON", r.off+int64(r.lead)))
			}
			r.st = aAfter
			r.off += int64(len(r.pend))
			r.pend = r.pend[:0]
			if !fn(el) {
				return nil
			}
		}
		if r.Max > 0 && len(r.pend)+i+1-start > r.Max {
			return r.fail(ErrArrayTooLarge)
		}
	}
	r.pend = append(r.pend, p[start:]...)
	return nil
}

// value reads the bytes of an element, from where the last call (or the
// element's '{') left it, and returns the index in q of the byte that ends
// it and true, or len(q) and false when q ends inside it. Bytes that
// change nothing (most of a string, and of what lies between the
// structure's bytes) are skipped in a tight loop: only '"', '\\', and
// brackets and braces outside strings are looked at.
func (r *ArrayReader) value(q []byte) (int, bool) {
	for i := 0; i < len(q); i++ {
		if r.esc {
			r.esc = false
			continue
		}
		if r.str {
			for i < len(q) && !inString[q[i]] {
				i++
			}
			if i == len(q) {
				break
			}
			if q[i] == '\\' {
				r.esc = true
			} else {
				r.str = false
			}
			continue
		}
		for i < len(q) && !outString[q[i]] {
			i++
		}
		if i == len(q) {
			break
		}
		switch q[i] {
		case '"':
			r.str = true
		case '{', '[':
			r.depth++
		default: // '}' or ']'
			r.depth--
			if r.depth == 0 {
				return i, true
			}
		}
	}
	return len(q), false
}

// The bytes value stops at inside a string, and outside one.
var inString, outString = func() (in, out [256]bool) {
	in['"'], in['\\'] = true, true
	for _, c := range []byte(`"{}[]`) {
		out[c] = true
	}
	return in, out
}()

// Close ends the body and returns its tail: the bytes after the last
// element ("\n]" and any whitespace), to be written as they came. A body
// that did not end its array (truncated, or empty) is an error.
func (r *ArrayReader) Close() (tail []byte, err error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.st != aDone {
		what := "before its first '['"
		switch r.st {
		case aValue:
			what = "inside an element"
		case aFirst, aNext, aAfter:
			what = "before its closing ']'"
		}
		return nil, r.fail(fmt.Errorf("gemini json array: the body ended %s: %w", what, io.ErrUnexpectedEOF))
	}
	tail = r.pend
	r.pend = nil
	return tail, nil
}

// Pending reports how many bytes of an unfinished element (with its Lead)
// the reader holds.
func (r *ArrayReader) Pending() int { return len(r.pend) }

func (r *ArrayReader) fail(err error) error {
	r.st, r.err, r.pend = aBroken, err, nil
	return err
}

// Separators Gemini writes (recorded, wire-formats.md §9.7): elements are
// pretty-printed and joined by "\n,\r\n"; the array ends with "\n]" and no
// newline after.
const (
	ArrayOpen  = "["
	ArraySep   = "\n,\r\n"
	ArrayClose = "\n]"
)

// ArrayWriter writes a streamed JSON array: "[" before the first element,
// ArraySep between elements, ArrayClose at Close ("[]" when no element was
// written). It is for elements the gate makes; elements read by an
// ArrayReader are passed on with their own Lead.
type ArrayWriter struct {
	W io.Writer
	n int
}

// Element writes one element (a JSON object, written as given).
func (w *ArrayWriter) Element(v []byte) error {
	lead := ArraySep
	if w.n == 0 {
		lead = ArrayOpen
	}
	w.n++
	if _, err := io.WriteString(w.W, lead); err != nil {
		return err
	}
	_, err := w.W.Write(v)
	return err
}

// Close ends the array.
func (w *ArrayWriter) Close() error {
	end := ArrayClose
	if w.n == 0 {
		end = "[]"
	}
	_, err := io.WriteString(w.W, end)
	return err
}
