// Package jsonedit makes small edits to JSON bytes and checks them as the
// gate must read them: a value replaced or inserted in place (every other
// byte kept), keys a reader could take otherwise (given twice, or in
// another case), and one canonical encoding to digest arguments by.
package jsonedit

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tidwall/gjson"
)

// Edit replaces src[Start:End] with Repl; Start == End inserts.
type Edit struct {
	Start, End int
	Repl       string
}

// Of is the edit that replaces the value r, found in src, with repl. It
// checks that r really sits at r.Index: gjson sets Index to 0 when it cannot
// tell, and a splice at the wrong place would corrupt the body.
func Of(src []byte, r gjson.Result, repl string) (Edit, error) {
	end := r.Index + len(r.Raw)
	if r.Raw == "" || end > len(src) || string(src[r.Index:end]) != r.Raw {
		return Edit{}, fmt.Errorf("locating %.40q in the body", r.Raw)
	}
	return Edit{Start: r.Index, End: end, Repl: repl}, nil
}

// Apply returns a new slice: src with the edits applied. The edits
// must not overlap; an insertion at the end of a replaced span comes after
// the replacement.
func Apply(src []byte, edits []Edit) []byte {
	slices.SortStableFunc(edits, func(a, b Edit) int { return cmp.Compare(a.Start, b.Start) })
	n := len(src)
	for _, e := range edits {
		n += len(e.Repl) - (e.End - e.Start)
	}
	out := make([]byte, 0, n)
	prev := 0
	for _, e := range edits {
		out = append(out, src[prev:e.Start]...)
		out = append(out, e.Repl...)
		prev = e.End
	}
	return append(out, src[prev:]...)
}

// IsNull reports whether r is absent or JSON null.
func IsNull(r gjson.Result) bool { return r.Type == gjson.Null }

// Arguments decodes a tool call's arguments value as the providers send
// it: the text of a JSON string, or the raw JSON of anything else a
// provider might send.
func Arguments(a gjson.Result) []byte {
	if a.Type == gjson.String {
		return []byte(a.Str)
	}
	return []byte(a.Raw)
}
