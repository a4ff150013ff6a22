package jsonedit

import (
	"bytes"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	a, err1 := Canonical([]byte(`{"b":1, "a":{"d":[1,2],"c":1.0}}`))
	b, err2 := Canonical([]byte(`{"a":{"c":1.0,"d":[1,2]},"b":1}`))
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Errorf("%s vs %s (%v %v)", a, b, err1, err2)
	}
	if _, err := Canonical([]byte(`{} {}`)); err == nil {
		t.Error("trailing data accepted")
	}
}

func TestDuplicateKey(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"a":1,"b":2}`:             false,
		`{"a":1,"a":2}`:             true,
		`{"a":1,"\u0061":2}`:        true,
		`{"post":7,"Post":8}`:       true,
		`{"k":1,"\u212a":2}`:        true, // Kelvin sign folds to k
		`{"x":[{"a":1},{"a":2}]}`:   false,
		`{"x":[{"a":1,"a":2}]}`:     true,
		`{"x":{"y":{"z":1,"z":1}}}`: true,
		`[1,2,{"q":1}]`:             false,
		`"plain"`:                   false,
		strings.Repeat("[", 300) + strings.Repeat("]", 300): true,
	} {
		if got := DuplicateKey([]byte(raw)); got != want {
			t.Errorf("DuplicateKey(%.40s) = %v, want %v", raw, got, want)
		}
	}
	many := `{` + strings.Repeat(`"k0":0,`, 0)
	for i := range 40 {
		many += `"k` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":0,`
	}
	if DuplicateKey([]byte(many+`"kaa":1}`)) != true || DuplicateKey([]byte(many+`"zz":1}`)) != false {
		t.Error("duplicates among many keys")
	}
}

// FuzzDuplicateKey: when DuplicateKey finds no key given twice, gjson (the
