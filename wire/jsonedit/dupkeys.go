package jsonedit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// Parsers disagree on what a key given twice in one JSON object means:
// gjson reads the first value, encoding/json and JavaScript the last. A
// gate that decided on one value while the server or the app acted on the
// other could be walked around (a card for post 7, a delete of post 8), so
// it refuses such input wherever it decides. Keys are compared with case
// folded, since Go's encoding/json matches struct fields regardless of
// case ("Method" fills Method as "method" does).

// DuplicateKey reports whether any object in the JSON value raw names a
// key twice, keys compared after unescaping and with case folded (so "a",
// "\u0061" and "A" are one key). Values nested deeper than maxDepth count as duplicates: they are
// refused rather than walked.
func DuplicateKey(raw []byte) bool {
	return dupIn(gjson.ParseBytes(raw), 0)
}

const maxDepth = 256

func dupIn(v gjson.Result, depth int) bool {
	if depth > maxDepth {
		return true
	}
	switch {
	case v.IsObject():
		var seen keySeen
		dup := false
		v.ForEach(func(k, val gjson.Result) bool {
			if seen.add(Fold(k.String())) {
				dup = true
				return false
			}
			if dupIn(val, depth+1) {
				dup = true
				return false
			}
			return true
		})
		return dup
	case v.IsArray():
		dup := false
		v.ForEach(func(_, val gjson.Result) bool {
			if dupIn(val, depth+1) {
				dup = true
				return false
			}
			return true
		})
		return dup
	}
	return false
}

// Fold is a key with case folded as encoding/json folds it.
func Fold(k string) string {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c >= 0x80 || ('A' <= c && c <= 'Z') {
			return strings.ToLower(strings.ToUpper(k))
		}
	}
	return k
}

// TopLevel reads the named top-level keys of an object in one pass,
// values as gjson results; ok is false when one of them is given twice,
// or in another case ("Method", "requeststate"), which some parsers take
// for it. Both sides are folded: a name may itself hold capitals.
func TopLevel(v gjson.Result, names ...string) (vals []gjson.Result, ok bool) {
	vals = make([]gjson.Result, len(names))
	seen := make([]bool, len(names))
	folded := make([]string, len(names))
	for i, n := range names {
		folded[i] = Fold(n)
	}
	ok = true
	v.ForEach(func(k, val gjson.Result) bool {
		key := k.String()
		fk := Fold(key)
		for i, n := range names {
			if key == n || fk == folded[i] {
				if seen[i] || key != n {
					ok = false
					return false
				}
				seen[i], vals[i] = true, val
			}
		}
		return true
	})
	return vals, ok
}

// A response is read by the gate with gjson and by the app's SDK with its
// own decoder, so the two must not be able to read different calls out of
// one body. The SDKs take the last of two equal keys (openai-go and
// anthropic-sdk-go through gjson's Map in internal/apijson/decoder.go,
// the Node SDKs through JSON.parse), gjson the first; Go's encoding/json,
// which an app may decode with, also takes a key in another case. So the
// gate does not guess: wherever it reads a body or event that may hold a
// call, an object it reads that names a key twice, or names a key the
// gate reads in another case, is refused (the response fails closed)
// rather than read either way. Escaped keys need nothing: gjson decodes
// them as every decoder does.

// Shape is the part of a response the gate reads: the keys of an object
// that it reads, and the keys whose value it reads into (an object, or
// each object of an array). Only these objects are checked, so free-form
// parts (a tool's arguments, the request's tools echoed back) may hold
// any keys.
type Shape struct {
	Read []string          // the keys it reads
	Into map[string]*Shape // the keys whose value it reads into
}

// Ambiguity returns an error naming the first key, in the objects of v
// that sh reads, that a reader could take otherwise than gjson: one given
// twice (after unescaping, case folded), or one sh reads written in
// another case; nil when there is none.
func (sh *Shape) Ambiguity(v gjson.Result) error {
	switch {
	case v.IsArray():
		var err error
		v.ForEach(func(_, e gjson.Result) bool {
			err = sh.Ambiguity(e)
			return err == nil
		})
		return err
	case !v.IsObject():
		return nil
	}
	var seen keySeen
	var err error
	v.ForEach(func(k, val gjson.Result) bool {
		key := k.String()
		f := Fold(key)
		if seen.add(f) {
			err = fmt.Errorf("key %q given twice", key)
			return false
		}
		if f != key && slices.Contains(sh.Read, f) {
			err = fmt.Errorf("key %q written as %q", f, key)
			return false
		}
		if sub := sh.Into[key]; sub != nil {
			err = sub.Ambiguity(val)
		}
		return err == nil
	})
	return err
}

// keySeen is the keys of one object seen so far: a slice while they are
// few, a set past that (an object may name thousands).
type keySeen struct {
	list []string
	set  map[string]struct{}
}

// add records key and reports whether it was seen before.
func (s *keySeen) add(key string) bool {
	if s.set != nil {
		if _, ok := s.set[key]; ok {
			return true
		}
		s.set[key] = struct{}{}
		return false
	}
	if slices.Contains(s.list, key) {
		return true
	}
	s.list = append(s.list, key)
	if len(s.list) > 16 {
		s.set = make(map[string]struct{}, 32)
		for _, k := range s.list {
			s.set[k] = struct{}{}
		}
	}
	return false
}
