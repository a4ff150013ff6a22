package interceptor

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tidwall/gjson"
)

// edit replaces src[start:end] with repl; start == end inserts.
type edit struct {
	start, end int
	repl       string
}

// editOf is the edit that replaces the value r, found in src, with repl. It
// checks that r really sits at r.Index: gjson sets Index to 0 when it cannot
// tell, and a splice at the wrong place would corrupt the body.
func editOf(src []byte, r gjson.Result, repl string) (edit, error) {
	end := r.Index + len(r.Raw)
	if r.Raw == "" || end > len(src) || string(src[r.Index:end]) != r.Raw {
		return edit{}, fmt.Errorf("locating %.40q in the body", r.Raw)
	}
	return edit{start: r.Index, end: end, repl: repl}, nil
}

// applyEdits returns a new slice: src with the edits applied. The edits
// must not overlap; an insertion at the end of a replaced span comes after
// the replacement.
func applyEdits(src []byte, edits []edit) []byte {
	slices.SortStableFunc(edits, func(a, b edit) int { return cmp.Compare(a.start, b.start) })
	n := len(src)
	for _, e := range edits {
		n += len(e.repl) - (e.end - e.start)
	}
	out := make([]byte, 0, n)
	prev := 0
	for _, e := range edits {
		out = append(out, src[prev:e.start]...)
		out = append(out, e.repl...)
		prev = e.end
	}
	return append(out, src[prev:]...)
}

// isNull reports whether r is absent or JSON null.
func isNull(r gjson.Result) bool { return r.Type == gjson.Null }
