package gemini

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestContainsFoldBytes(t *testing.T) {
	for s, want := range map[string]bool{
		"functioncall":           true,
		"xxFUNCTIONCALL":         true,
		"fFfunctionCalL":         true,
		"functioncal":            false,
		"":                       false,
		"function_call":          false,
		strings.Repeat("f", 100): false,
		strings.Repeat("fF", 50) + "FunctionCall": true,
	} {
		if got := containsFoldBytes([]byte(s), []byte("functioncall")); got != want {
			t.Errorf("%q: %v", s, got)
		}
	}
}

func FuzzContainsFoldBytes(f *testing.F) {
	f.Add([]byte("xxFunctionCallyy"))
	f.Fuzz(func(t *testing.T, b []byte) {
		want := asciiContainsFold(b, "functioncall")
		if got := containsFoldBytes(b, []byte("functioncall")); got != want {
			t.Fatalf("%q: %v", b, got)
		}
	})
}

func asciiContainsFold(b []byte, lower string) bool {
	for i := 0; i+len(lower) <= len(b); i++ {
		ok := true
		for j := 0; j < len(lower) && ok; j++ {
			c := b[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			ok = c == lower[j]
		}
		if ok {
			return true
		}
	}
	return false
}

// FuzzArrayMember: arrayMember reads a valid body as member does.
func FuzzArrayMember(f *testing.F) {
	for _, s := range []string{
		`{"contents":[]}`, `{"contents":{}}`, `{"contents":"x"}`, `{"Contents":[1],"con_tents":[]}`,
		`{"con\u0074ents":[{"a":1}]}`, `[{"contents":[]}]`, `{"a":{"contents":[]}}`, `{"contents":[],"contents":[]}`,
		`{"contents":null}`, `{"contents.#":[]}`, `{"con\"tents":[]}`, `{"contents":[]} `, `{"CONTENTS" : [ ] }`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !gjson.ValidBytes(b) {
			return
		}
		v, _, err := member(gjson.ParseBytes(b), "contents")
		if want := err == nil && v.IsArray(); arrayMember(b, "contents") != want {
			t.Fatalf("%s: arrayMember %v, member %v", b, !want, want)
		}
	})
}
