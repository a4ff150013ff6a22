package shape

import (
	"bytes"

	"github.com/toolgate/toolgate/wire/keyscan"
)

// readsTop answers Reads for the bodies it can read without decoding
// anything, given an ASCII answerKey (every adapter's is): a JSON object
// whose top-level keys are plain ASCII (no escape), each value a string, a number, a literal, or an array or
// object skipped by its brackets, and nothing after it but whitespace.
// sure is false for any other body (a key with an escape or a byte past
// ASCII, a byte no JSON has there, a parenthesis, a body cut short),
// which Reads then reads with gjson as before. Every answer a provider
// sends is of the first kind, and reading it this way takes a search for
// each string's closing quote, not a byte-by-byte walk: the gate asks it
// of every JSON answer on a gated route (interceptor's checkShape), where
// the name search it spares took ~2.5 us of a 2 KB answer.
// FuzzReadsTopAsReads holds it to gjson's reading.
func readsTop(answerKey string, b []byte) (reads, sure bool) {
	for k := 0; k < len(answerKey); k++ {
		if answerKey[k] >= 0x80 {
			return false, false // ſ and K fold onto ASCII letters: gjson's reading compares it
		}
	}
	own, foreign := false, false
	sure = keyscan.Members(b, func(key, val []byte) bool {
		switch {
		case asciiEqualFold(key, answerKey):
			own = val[0] == '['
			foreign = foreign || !own
		case isCallKey(key):
			foreign = true
		}
		return true
	})
	return sure && own && !foreign, sure
}

// eventMarksTop answers EventMarks for the events readsTop can read (a
// plain object of ASCII keys, nothing after it) whose "type", if they
// have one in any case, is a string without an escape, a number, a
// literal, an array or an object; sure is false for any other, which
// EventMarks then reads with gjson as before. A stream asks it, through
// its adapter's OwnsEvent, of each event that names a gated tool.
func eventMarksTop(b []byte) (marks int, sure bool) {
	sure = keyscan.Members(b, func(key, val []byte) bool {
		switch {
		case asciiEqualFold(key, "choices"):
			marks |= MarkChat
		case asciiEqualFold(key, "item"):
			marks |= MarkResponses
		case asciiEqualFold(key, "content_block"), asciiEqualFold(key, "message"):
			marks |= MarkAnthropic
		case asciiEqualFold(key, "type"):
			if val[0] != '"' {
				return true // gjson's String of any other value is no type (its raw text, "" for null)
			}
			typ := val[1 : len(val)-1]
			if bytes.IndexByte(typ, '\\') >= 0 {
				return false // gjson unescapes it: left to gjson
			}
			switch {
			case bytes.HasPrefix(typ, []byte("response.")):
				marks |= MarkResponses
			case AnthropicEvent(string(typ)):
				marks |= MarkAnthropic
			}
		case isCallKey(key):
			marks |= MarkOther
		}
		return true
	})
	return marks, sure
}

// asciiEqualFold reports whether the ASCII key equals s in any case
// (bytes.EqualFold's answer for ASCII, without converting s to bytes for
// each of a body's keys and each call key: 0.46 against 0.75 us a 2 KB
// answer).
func asciiEqualFold(key []byte, s string) bool {
	if len(key) != len(s) {
		return false
	}
	for i := range key {
		c, d := key[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// isCallKey is IsCallKey of an ASCII key.
func isCallKey(key []byte) bool {
	for _, c := range callKeys {
		if asciiEqualFold(key, c) {
			return true
		}
	}
	return false
}
