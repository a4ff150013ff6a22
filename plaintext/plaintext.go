// Package plaintext makes text a record, a model or a person produced safe
// to show on one line of plain text, and caps its length: the one cleaning
// cards, forms, the gate's notes and the pages share. HTML escaping is the
// page's job, not this package's.
package plaintext

import (
	"unicode"
	"unicode/utf8"
)

// Length caps, in characters, of what the person is shown: a card or a
// form is read at a glance; a longer text is cut and ends with an
// ellipsis.
const (
	MaxSentence = 300 // a card's sentence, a reply, a notice
	MaxLabel    = 60  // a row's or a field's label
	MaxValue    = 200 // a row's value
)

// Clean makes s safe to show as plain text on one line: it removes control
// characters (tabs and newlines become spaces), format characters (which
// include the bidirectional overrides and isolates, U+202A–U+202E,
// U+2066–U+2069, and zero-width characters), line and paragraph separators
// and invalid UTF-8; it collapses runs of spaces, trims, and cuts the text
// to max characters with a trailing ellipsis. HTML escaping is the page's
// job, not this one's.
func Clean(s string, max int) string {
	out := make([]rune, 0, min(len(s), max+1))
	space := false
	for _, r := range s { // invalid UTF-8 reads as utf8.RuneError and is dropped
		switch {
		case r == utf8.RuneError:
			continue
		case unicode.IsSpace(r): // includes U+2028, U+2029 and NEL
			space = len(out) > 0
			continue
		case unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Co, unicode.Cs):
			continue
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		out = append(out, r)
		if len(out) > max {
			break
		}
	}
	if len(out) > max {
		out = append(out[:max-1], '…')
	}
	return string(out)
}
