package gemini

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tidwall/gjson"
)

// A splice of the body, so that every byte outside the changed values
// stays. interceptor/jsonedit.go has the same three lines unexported; the
// refactor's shared JSON-edit package replaces both.

// sedit replaces src[start:end] with repl; start == end inserts.
type sedit struct {
	start, end int
	repl       string
}

// sEditOf is the edit that replaces the value r, found in src, with repl,
// after checking r sits at r.Index (gjson leaves it 0 when it cannot tell).
func sEditOf(src []byte, r gjson.Result, repl string) (sedit, error) {
	end := r.Index + len(r.Raw)
	if r.Raw == "" || end > len(src) || string(src[r.Index:end]) != r.Raw {
		return sedit{}, fmt.Errorf("locating %.40q in the body", r.Raw)
	}
	return sedit{start: r.Index, end: end, repl: repl}, nil
}

// applySEdits returns a new slice: src with the edits applied (they must
// not overlap; an insertion at the end of a replaced span comes after it).
func applySEdits(src []byte, edits []sedit) []byte {
	slices.SortStableFunc(edits, func(a, b sedit) int { return cmp.Compare(a.start, b.start) })
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
