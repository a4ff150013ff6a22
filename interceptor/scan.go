package interceptor

import "bytes"

// The fast paths let a body or an event through unread when its bytes
// cannot hold a call: a byte search for the keys a call needs. It must
// not be fooled by what a reader decodes, so it also answers yes when a
// key may be spelt another way that some reader reads as the key:
//
//   - in another case ("Tool_Calls"): Go's encoding/json matches struct
//     fields case-insensitively, folding the long s (U+017F) to s and the
//     Kelvin sign (U+212A) to k as well. The SDKs do not (openai-go and
//     anthropic-sdk-go decode with apijson, internal/apijson/decoder.go,
//     by exact names from gjson's Map; the Node SDKs use JSON.parse), but
//     an app decoding the body into its own struct does;
//   - with a \u escape ("\u0074ool_calls"): every JSON decoder decodes it
//     (gjson too, so the slow path reads such a key as the key).
//
// No JSON encoder writes an ASCII letter, digit or underscore as a \u
// escape, nor a key of these APIs in another case, so the slow path sees
// such bytes only from a body made to walk around the gate; it reads
// escaped keys as every decoder does and refuses keys in another case
// (see checkShape).

// scanKey is one key the fast path searches for.
type scanKey struct {
	key    []byte // as a provider writes it, lower case
	anchor int    // index in key of the byte searched for: rare in the traffic, to keep false starts few
}

func newScanKey(key string, anchor byte) scanKey {
	return scanKey{key: []byte(key), anchor: bytes.IndexByte([]byte(key), anchor)}
}

// keySet is the keys one adapter's fast path searches for. Keys holding
// an underscore are found around each '_' (rare in these APIs' text
// events, and the same in every case) in any case, the long s and the
// Kelvin sign included. A key without one ("input", "arguments") is found
// as written: it matters only for an item of a type no SDK reads as a call
// (see each adapter), so one pass for it is enough; its escaped spellings
// are still caught.
type keySet struct {
	folded []scanKey // anchored at their first '_'
	exact  []scanKey
}

func newKeySet(keys ...scanKey) keySet {
	var s keySet
	for _, k := range keys {
		if i := bytes.IndexByte(k.key, '_'); i >= 0 {
			s.folded = append(s.folded, scanKey{key: k.key, anchor: i})
		} else {
			s.exact = append(s.exact, k)
		}
	}
	return s
}

// mayHold reports whether b may hold one of the keys for some reader: as
// written, in another case, or spelt with an escape.
func (s *keySet) mayHold(b []byte) bool {
	if len(s.folded) > 0 && hasFolded(b, s.folded) {
		return true
	}
	for _, k := range s.exact {
		if hasKey(b, k) {
			return true
		}
	}
	return hasKeyEscape(b)
}

// hasFolded reports whether b holds one of keys, case folded as Go's
// encoding/json folds (ASCII, and U+017F for s and U+212A for k), found
// around each '_' in b.
func hasFolded(b []byte, keys []scanKey) bool {
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '_')
		if j < 0 {
			return false
		}
		i += j
		for _, k := range keys {
			if foldedBefore(b[:i], k.key[:k.anchor]) && foldedAfter(b[i+1:], k.key[k.anchor+1:]) {
				return true
			}
		}
		i++
	}
	return false
}

// foldedAfter reports whether b starts with lower, case folded.
func foldedAfter(b, lower []byte) bool {
	for _, c := range lower {
		n := foldedLen(b, c, false)
		if n == 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// foldedBefore reports whether b ends with lower, case folded.
func foldedBefore(b, lower []byte) bool {
	for k := len(lower) - 1; k >= 0; k-- {
		n := foldedLen(b, lower[k], true)
		if n == 0 {
			return false
		}
		b = b[:len(b)-n]
	}
	return true
}

// Runes outside ASCII that Go's case folding maps onto a key letter.
var (
	longS  = []byte("\u017f") // ſ folds to s
	kelvin = []byte("\u212a") // K folds to k
)

// foldedLen returns how many bytes at the start (or, with end, the end) of
// b spell the lower-case byte c, case folded; 0 when they do not.
func foldedLen(b []byte, c byte, end bool) int {
	if len(b) == 0 {
		return 0
	}
	at := func(n int) []byte {
		if end {
			return b[len(b)-n:]
		}
		return b[:n]
	}
	x := at(1)[0]
	if 'A' <= x && x <= 'Z' {
		x += 'a' - 'A'
	}
	switch {
	case x == c:
		return 1
	case c == 's' && len(b) >= len(longS) && bytes.Equal(at(len(longS)), longS):
		return len(longS)
	case c == 'k' && len(b) >= len(kelvin) && bytes.Equal(at(len(kelvin)), kelvin):
		return len(kelvin)
	}
	return 0
}

// hasKey reports whether b holds k.key as written. It scans for the
// anchor byte and compares the key around each hit: bytes.Index would
// scan for the key's first byte, often a quote, the most common byte in
// JSON.
func hasKey(b []byte, k scanKey) bool {
	c := k.key[k.anchor]
	for i := k.anchor; i < len(b); {
		j := bytes.IndexByte(b[i:], c)
		if j < 0 {
			return false
		}
		i += j
		if start := i - k.anchor; start+len(k.key) <= len(b) && bytes.Equal(b[start:start+len(k.key)], k.key) {
			return true
		}
		i++
	}
	return false
}

// hasKeyEscape reports whether b holds a \u escape of an ASCII letter,
// digit or underscore, or of a rune that folds to one: the way a key can
// be written that a byte search for it misses.
func hasKeyEscape(b []byte) bool {
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return false
		}
		i += j
		if i+5 < len(b) && b[i+1] == 'u' {
			if r, ok := hex4(b[i+2 : i+6]); ok && (r < 0x80 && isKeyByte(byte(r)) || r == 0x17f || r == 0x212a) {
				return true
			}
		}
		i += 2 // an escape is two bytes at least: the second \ of `\\` starts none
	}
	return false
}

func isKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
