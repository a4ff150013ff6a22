package gemini

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/wire/keyscan"
)

// Readers disagree on key spelling. Google writes camelCase; proto-JSON
// readers (the API itself, python google-genai's pydantic models) also
// take snake_case ("function_call"), and go-genai, which decodes through
// encoding/json, matches keys without case ("FunctionCall",
// "FUNCTIONCALL"). The gate reads a key as any reader would: folded to
// lower case with '_' dropped. Two members that fold alike in one object
// are read differently by different readers (encoding/json takes the
// last, gjson and others the first), so they are an error.

// fold returns a key as the gate compares it: lower case, '_' dropped.
func fold(k string) string {
	if !strings.ContainsAny(k, "_ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		return k
	}
	return strings.ReplaceAll(strings.ToLower(k), "_", "")
}

// member returns the member of obj whose key folds to key (lower case,
// no '_'), and where its key is spelled as written. More than one such
// member is an error.
func member(obj gjson.Result, key string) (v gjson.Result, spelled string, err error) {
	if !obj.IsObject() {
		return gjson.Result{}, "", nil
	}
	n := 0
	obj.ForEach(func(k, val gjson.Result) bool {
		if fold(k.Str) == key {
			n++
			v, spelled = val, k.Str
		}
		return true
	})
	if n > 1 {
		return gjson.Result{}, "", fmt.Errorf("the key %q is given %d times (in any spelling)", key, n)
	}
	return v, spelled, nil
}

// MayHoldCall reports whether a response body (or one chunk) may hold a
// functionCall part, in any spelling a reader takes: a byte search without
// JSON work. False means no reader finds a call in it.
//
// A part holds a call under a key, and every JSON reader reads a key as a
// string followed by a colon (JSON whitespace between). So the search
// looks at each ':' only: the string before it, when it ends right there
// (a '"', after whitespace), is a call key if its letters, folded as the
// gate folds keys (fold: ASCII case, '_' dropped), spell functioncall.
// That takes every reader's spelling: protojson's "functionCall" and
// "function_call", go-genai's encoding/json in any ASCII case (it folds
// no rune outside ASCII onto these letters: only ſ and K fold to ASCII,
// onto s and k), and the gate's own reading. A key with a byte outside
// ASCII or a backslash in it answers yes: strings.ToLower, the gate's
// fold, lowers İ (U+0130) to i, and an escape may spell a letter. An
// escape elsewhere answers yes when it may spell a key byte or such a
// rune, or is not JSON's (mayEscapeKey). Invalid JSON around a colon can
// only answer yes more often; every reader refuses it anyway.
//
// It replaced a search for the letters anywhere in any case (and any \u):
// faster on long text (few colons, many f's), slower on a short chunk of
// many keys (docs/speed.md), and it no longer sends text that names
// functionCall, or holds an escaped '<', down the slow path.
func MayHoldCall(b []byte) bool {
	return mayCallKey(b, 0, len(b)) || mayEscapeKey(b, 0, len(b))
}

// MayHoldCallAfter reports what MayHoldCall(b) reports, given last, a
// chunk MayHoldCall said no to: the chunks of a stream are alike, and b
// is searched only near where it differs from last (keyscan.Changed),
// which on a text chunk is its few words of text instead of its every
// colon (BenchmarkMayHoldCallAfter).
//
// Both searches decide from a few bytes around what they look at, and
// where those are bytes b shares with last, b's answer is last's: no.
//
//   - A colon's key is read backwards from the colon (callKeyBefore):
//     JSON whitespace, a quote, then the key's letters and underscores
//     until its opening quote, and it stops at the first byte that does
//     not fit. One before from reads only the bytes both begin with. One
//     at or after to reads only the bytes both end with, unless all of
//     the bytes from to up to it fit that reading: then they are letters
//     or underscores, a quote, whitespace, and it is the byte after them.
//   - An escape reads its backslash and the five bytes after it (and
//     whether b ends before them, which is as far from both ends). Which
//     backslash begins one is decided by the run of backslashes it is in,
//     read from the run's start. So an escape that begins before from-5,
//     or after a byte past to that is no backslash, is one in last too,
//     with the same bytes after it: the window starts at the run that
//     holds from-5 and ends at the first byte past to that is no
//     backslash.
func MayHoldCallAfter(last, b []byte) bool {
	from, to := keyscan.Changed(last, b)
	return mayHoldCallIn(b, from, to)
}

// mayHoldCallIn is MayHoldCallAfter(last, b) where keyscan.Changed(last,
// b) is from, to.
func mayHoldCallIn(b []byte, from, to int) bool {
	if mayCallKey(b, from, to) {
		return true
	}
	end := to
	for end < len(b) && keyLetter[b[end]] {
		end++
	}
	if end < len(b) && b[end] == '"' {
		end++
	}
	for end < len(b) && (b[end] == ' ' || b[end] == '\t' || b[end] == '\r' || b[end] == '\n') {
		end++
	}
	if end < len(b) && b[end] == ':' && callKeyBefore(b, end) {
		return true
	}
	start := max(from-5, 0)
	for start > 0 && b[start-1] == '\\' {
		start--
	}
	for to < len(b) && b[to] == '\\' {
		to++
	}
	return mayEscapeKey(b, start, to)
}

// keyLetter is what a key's end may hold for callKeyBefore to read on:
// an ASCII letter or '_'.
var keyLetter = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	t['_'] = true
	return t
}()

// mayCallKey reports whether a colon in b[from:to] ends a key that may
// fold to functioncall (callKeyBefore, which reads b before from too).
func mayCallKey(b []byte, from, to int) bool {
	for i := from; i < to; {
		j := bytes.IndexByte(b[i:to], ':')
		if j < 0 {
			return false
		}
		i += j
		if callKeyBefore(b, i) {
			return true
		}
		i++
	}
	return false
}

// callKey is functioncall backwards: callKeyBefore reads a key from its end.
const callKey = "llacnoitcnuf"

// callKeyBefore reports whether the string that ends before the colon at
// i (after JSON whitespace) may be a key that folds to functioncall.
func callKeyBefore(b []byte, i int) bool {
	j := i - 1
	for j >= 0 && (b[j] == ' ' || b[j] == '\t' || b[j] == '\r' || b[j] == '\n') {
		j--
	}
	if j < 0 || b[j] != '"' {
		return false
	}
	n := 0 // letters of callKey matched
	for j--; j >= 0; j-- {
		c := b[j]
		switch {
		case c == '"':
			return n == len(callKey)
		case c == '_':
		case c == '\\' || c >= 0x80:
			return true
		case n == len(callKey):
			return false
		default:
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != callKey[n] {
				return false
			}
			n++
		}
	}
	return false
}

// mayEscapeKey reports whether an escape that begins in b[from:to] (read
// from from: b[from-1] is no backslash) may spell a key's
// letter: \u of an ASCII letter, digit or '_', of a rune some reader folds
// onto one (İ, ſ, K), a \u without four hex digits, or a \U (no JSON
// escape; the search before this one took any \u or \U). An encoder
// escapes '<', '>', '&' or a rune outside ASCII, never a letter.
func mayEscapeKey(b []byte, from, to int) bool {
	for i := from; i < to; {
		j := bytes.IndexByte(b[i:to], '\\')
		if j < 0 {
			return false
		}
		i += j
		if i+1 < len(b) {
			switch b[i+1] {
			case 'U':
				return true
			case 'u':
				if i+5 >= len(b) {
					return true
				}
				r, ok := hex4(b[i+2 : i+6])
				if !ok || r < 0x80 && keyscan.IsKeyByte(byte(r)) || r == 0x130 || r == 0x17f || r == 0x212a {
					return true
				}
			}
		}
		i += 2 // an escape is two bytes at least: the second \ of `\\` starts none
	}
	return false
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

// containsFoldBytes reports whether b holds lower (ASCII lower case, with
// a letter in it) in any case: keyscan.IndexFold, which looks at two of
// its letters side by side (a short word's rarest letter alone, 'l' of
// "tools", is in every sentence of a request's prose). Every request on a
// Gemini route is searched for "tools" (RewriteTools).
func containsFoldBytes(b, lower []byte) bool {
	return keyscan.IndexFold(b, lower) >= 0
}

// arrayMember reports whether the JSON object b (valid JSON: the caller
// checked) has one member whose key folds to key (member finds it) and its
// value is an array, reading b in place: gjson.ParseBytes copies the whole
// of b (a turn's request, read for each response). Its top-level members
// are walked by keyscan.Members; a body that walk is not sure of (a key
// with an escape or a byte outside ASCII, a value SkipValue does not
// read) is left to member.
func arrayMember(b []byte, key string) bool {
	n, array := 0, false
	sure := keyscan.Members(b, func(k, v []byte) bool {
		if foldsTo(k, key) {
			n++
			array = v[0] == '['
		}
		return true
	})
	if !sure {
		v, _, err := member(gjson.ParseBytes(b), key)
		return err == nil && v.IsArray()
	}
	return n == 1 && array
}

// foldsTo reports whether the ASCII key k folds (fold) to key.
func foldsTo(k []byte, key string) bool {
	at := 0
	for _, c := range k {
		if c == '_' {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if at == len(key) || key[at] != c {
			return false
		}
		at++
	}
	return at == len(key)
}
