package interceptor

import (
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
		var seen []string
		var set map[string]struct{}
		dup := false
		v.ForEach(func(k, val gjson.Result) bool {
			key := fold(k.String())
			if set != nil {
				if _, ok := set[key]; ok {
					dup = true
					return false
				}
				set[key] = struct{}{}
			} else {
				for _, s := range seen {
					if s == key {
						dup = true
						return false
					}
				}
				seen = append(seen, key)
				if len(seen) > 16 {
					set = make(map[string]struct{}, 32)
					for _, s := range seen {
						set[s] = struct{}{}
					}
				}
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

// fold is a key with case folded as encoding/json folds it.
func fold(k string) string {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c >= 0x80 || ('A' <= c && c <= 'Z') {
			return strings.ToLower(strings.ToUpper(k))
		}
	}
	return k
}

// topLevel reads the named top-level keys of an object in one pass,
// values as gjson results; ok is false when one of them is given twice,
// or in another case ("Method"), which some parsers take for it.
func topLevel(v gjson.Result, names ...string) (vals []gjson.Result, ok bool) {
	vals = make([]gjson.Result, len(names))
	seen := make([]bool, len(names))
	ok = true
	v.ForEach(func(k, val gjson.Result) bool {
		key := k.String()
		for i, n := range names {
			if key == n || fold(key) == n {
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
