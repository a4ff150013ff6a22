// Package keyscan is the fast path's byte search: whether a body or an
// event may hold one of a few JSON keys (or type names), answering yes for
// every spelling some reader decodes as the key (another case, a \u
// escape), so that what it lets through unread holds no call.
package keyscan

import "bytes"

// The fast paths let a body or an event through unread when its bytes
// cannot hold a call: a byte search for the keys a call needs. It must
// not be fooled by what a reader decodes, so it also answers yes when a
// key may be spelt another way that some reader reads as the key:
//
//   - a key in another case ("Tool_Calls"): Go's encoding/json matches
//     struct fields case-insensitively, folding the long s (U+017F) to s
//     and the Kelvin sign (U+212A) to k as well. The SDKs do not (openai-go
//     and anthropic-sdk-go decode with apijson, internal/apijson/decoder.go,
//     by exact names from gjson's Map; the Node SDKs use JSON.parse), but
//     an app decoding the body into its own struct does. Chat's keys are
//     found in any case; a type name ("tool_use", "function_call") is a
//     value, which every reader compares exactly, and a key without an
//     underscore ("input", "arguments") matters only for an item of a type
//     no SDK reads as a call (see each adapter), so those are found as
//     written, in one pass each;
//   - with a \u escape ("\u0074ool_calls"): every JSON decoder decodes it
//     (gjson too, so the slow path reads such a key as the key).
//
// No JSON encoder writes an ASCII letter, digit or underscore as a \u
// escape, nor a key of these APIs in another case, so the slow path sees
// such bytes only from a body made to walk around the gate; it reads
// escaped keys as every decoder does and refuses keys in another case
// (see checkShape in package interceptor).

// Key is one key (or type name) the fast path searches for.
type Key struct {
	key    []byte // as a provider writes it, lower case
	anchor int    // index in key of the byte searched for: rare in the traffic, to keep false starts few
	fold   bool   // a key: found in any case (a value such as a type name is compared exactly by every reader)
}

func NewKey(key string, anchor byte) Key {
	return Key{key: []byte(key), anchor: bytes.IndexByte([]byte(key), anchor)}
}

// NewFolded is a key found in any case, around its first '_' (the same
// in every case, and rare in these APIs' events).
func NewFolded(key string) Key {
	return Key{key: []byte(key), anchor: bytes.IndexByte([]byte(key), '_'), fold: true}
}

// Set is the keys one adapter's fast path searches for.
type Set struct {
	folded []Key // found around each '_', in any case (NewFolded)
	exact  []Key // found as written
}

func NewSet(keys ...Key) Set {
	var s Set
	for _, k := range keys {
		if k.fold {
			s.folded = append(s.folded, k)
		} else {
			s.exact = append(s.exact, k)
		}
	}
	return s
}

// MayHold reports whether b may hold one of the keys for some reader: as
// written, in another case (a folded key), or spelt with an escape.
func (s *Set) MayHold(b []byte) bool {
	if len(s.folded) > 0 && hasFolded(b, s.folded) {
		return true
	}
	for _, k := range s.exact {
		if hasKey(b, k) {
			return true
		}
	}
	return HasEscape(b)
}

// hasFolded reports whether b holds one of keys, case folded as Go's
// encoding/json folds (ASCII, and U+017F for s and U+212A for k), found
// around each '_' in b. The bytes right before and after the '_' are
// checked first: in these APIs' events most underscores belong to other
// keys (sequence_number, output_index, …), and that check turns them away.
func hasFolded(b []byte, keys []Key) bool {
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '_')
		if j < 0 {
			return false
		}
		i += j
		for _, k := range keys {
			if !nextTo(b, i, k) {
				continue
			}
			if foldedBefore(b[:i], k.key[:k.anchor]) && foldedAfter(b[i+1:], k.key[k.anchor+1:]) {
				return true
			}
		}
		i++
	}
	return false
}

// nextTo reports whether the bytes around the '_' at i may be the key's
// letters around its anchor: the same letter in either case, or the last
// (before) or first (after) byte of a folding rune.
func nextTo(b []byte, i int, k Key) bool {
	if k.anchor == 0 || i == 0 || k.anchor+1 >= len(k.key) || i+1 >= len(b) {
		return true
	}
	before, after := b[i-1]|0x20, b[i+1]|0x20 // ASCII letters folded to lower case
	return (before == k.key[k.anchor-1] || b[i-1] >= 0x80) && (after == k.key[k.anchor+1] || b[i+1] >= 0x80)
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
	x := b[0]
	if end {
		x = b[len(b)-1]
	}
	if 'A' <= x && x <= 'Z' {
		x += 'a' - 'A'
	}
	if x == c {
		return 1
	}
	var r []byte
	switch c {
	case 's':
		r = longS
	case 'k':
		r = kelvin
	default:
		return 0
	}
	if end && bytes.HasSuffix(b, r) || !end && bytes.HasPrefix(b, r) {
		return len(r)
	}
	return 0
}

// hasKey reports whether b holds k.key as written. It scans for the
// anchor byte and compares the key around each hit: bytes.Index would
// scan for the key's first byte, often a quote, the most common byte in
// JSON.
func hasKey(b []byte, k Key) bool {
	c := k.key[k.anchor]
	for i := k.anchor; i < len(b); {
		j := bytes.IndexByte(b[i:], c)
		if j < 0 {
			return false
		}
		i += j
		// The first and last bytes first: most hits are of other words.
		if start, end := i-k.anchor, i-k.anchor+len(k.key); end <= len(b) && b[start] == k.key[0] && b[end-1] == k.key[len(k.key)-1] && bytes.Equal(b[start:end], k.key) {
			return true
		}
		i++
	}
	return false
}

// HasEscape reports whether b holds a \u escape of an ASCII letter,
// digit or underscore, or of a rune that folds to one: the way a key can
// be written that a byte search for it misses.
func HasEscape(b []byte) bool {
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return false
		}
		i += j
		if i+5 < len(b) && b[i+1] == 'u' {
			if r, ok := hex4(b[i+2 : i+6]); ok && (r < 0x80 && IsKeyByte(byte(r)) || r == 0x17f || r == 0x212a) {
				return true
			}
		}
		i += 2 // an escape is two bytes at least: the second \ of `\\` starts none
	}
	return false
}

func IsKeyByte(c byte) bool {
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
