package jsonedit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
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
// gate's reader) and encoding/json (the server's or app's) agree on every
// top-level value of an object.
func FuzzDuplicateKey(f *testing.F) {
	f.Add([]byte(`{"post":7,"post":8}`))
	f.Add([]byte(`{"a":{"b":1},"A":2}`))
	f.Add([]byte(`{"\u0070ost":1,"q":[1,{"r":2}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil || !gjson.ValidBytes(raw) || DuplicateKey(raw) {
			return
		}
		for k, v := range m {
			got := gjson.GetBytes(raw, gjson.Escape(k))
			var a, b any
			if json.Unmarshal(v, &a) != nil || json.Unmarshal([]byte(got.Raw), &b) != nil {
				continue // a key gjson's path syntax cannot name
			}
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("key %q: encoding/json reads %s, gjson %s", k, ja, jb)
			}
		}
	})
}
