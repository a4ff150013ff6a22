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

// FuzzContainsFoldBytes holds the search to a plain one, for each needle
// the package searches (pivots at the start, middle and end among them).
func FuzzContainsFoldBytes(f *testing.F) {
	f.Add([]byte("xxFunctionCallyy"), uint8(0))
	f.Add([]byte("sssstreamFunctionCallArgumentS"), uint8(1))
	f.Add([]byte("TOOLs tool"), uint8(3))
	f.Add([]byte("function_RESPONSE"), uint8(5))
	for _, s := range []string{`{"tools":[]}`, `{"TOOLs":[]}`, `{"\u0074ools":[]}`, "{\"tool\u017f\":[]}", `ls LS lS tool Tool`, `{"contents":[{"parts":[{"text":"a toolbox"}]}]}`} {
		f.Add([]byte(s), uint8(3)) // "tools", which every request is searched for
	}
	needles := []string{"functioncall", "streamfunctioncallarguments", "stream_function_call_arguments", "tools", "function_call", "function_response", "zebra", "az"}
	f.Fuzz(func(t *testing.T, b []byte, which uint8) {
		lower := needles[int(which)%len(needles)]
		want := asciiContainsFold(b, lower)
		if got := containsFoldBytes(b, []byte(lower)); got != want {
			t.Fatalf("%q in %q: %v", lower, b, got)
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

// BenchmarkStreamsArguments asks a 2 KB text request (no tools) whether
// it streams a call's arguments, as every request on a Gemini route is
// asked (Provider.AroundParam).
func BenchmarkStreamsArguments(b *testing.B) {
	text := strings.Repeat("Please summarise the status of these posts, the schedule and its settings. ", 26)
	body := []byte(`{"contents":[{"role":"user","parts":[{"text":"` + text + `"}]}],"generationConfig":{"maxOutputTokens":64}}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if StreamsArguments(body) {
			b.Fatal("streams")
		}
	}
}
