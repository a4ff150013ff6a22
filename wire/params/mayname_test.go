package params

import (
	"bytes"
	"strings"
	"testing"
)

// mayNameBefore is MayName as it was: a look at every quote. The search by
// the rarest letter must answer as it does (FuzzMayNameAsBefore).
func mayNameBefore(body []byte, words ...string) bool {
	if bytes.Contains(body, []byte(`\u`)) {
		return true
	}
	for i := 0; ; {
		j := bytes.IndexByte(body[i:], '"')
		if j < 0 {
			return false
		}
		i += j + 1
		for _, w := range words {
			if len(body)-i > len(w) && foldEq(body[i:i+len(w)], w) && body[i+len(w)] == '"' {
				return true
			}
		}
	}
}

// FuzzMayNameAsBefore holds MayName to the search it replaced, for the
// words the providers ask of it and a few shapes of word (a pivot first,
// last, none; a shared head searched once, one word the head of another).
func FuzzMayNameAsBefore(f *testing.F) {
	f.Add([]byte(`{"FUNCTIONS":[],"function?call":1}`), uint8(0))
	f.Add([]byte(`{"background":true}`), uint8(1))
	f.Add([]byte(`"_"`), uint8(3))
	f.Add([]byte(`"fz" "zf" "Z"`), uint8(2))
	f.Add([]byte(`"Ab" "abC_d" "ab_"`), uint8(4))
	sets := [][]string{{"functions", "function_call"}, {"background"}, {"fz", "zf", "z"}, {"_", "__"}, {"ab", "abc_d"}, {"function", "functions"}, {"q_1", "q_2", "q_"}}
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		words := sets[int(which)%len(sets)]
		if got, want := MayName(body, words...), mayNameBefore(body, words...); got != want {
			t.Fatalf("%q in %q: %v, before %v", words, body, got, want)
		}
	})
}

// BenchmarkMayName asks a 2 KB Chat request with tools whether it names
// the legacy functions parameters, as every Chat request is asked.
func BenchmarkMayName(b *testing.B) {
	tool := `{"type":"function","function":{"name":"get_weather","description":"Get the weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}}},`
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"system","content":"You are a helpful assistant for the blog."},{"role":"user","content":"` + strings.Repeat("Please list the posts of this week and their status. ", 12) + `"}],"tools":[` + strings.Repeat(tool, 4) + `{"type":"function","function":{"name":"x"}}]}`)
	b.SetBytes(int64(len(body)))
	b.Run("now", func(b *testing.B) {
		for b.Loop() {
			if MayName(body, "functions", "function_call") {
				b.Fatal("named")
			}
		}
	})
	b.Run("before", func(b *testing.B) {
		for b.Loop() {
			if mayNameBefore(body, "functions", "function_call") {
				b.Fatal("named")
			}
		}
	})
}
