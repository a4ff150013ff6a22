package keyscan

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestContains(t *testing.T) {
	for _, c := range []struct {
		b, needle string
		want      bool
	}{
		{`{"previous_response_id":"resp_1"}`, `"previous_response_id"`, true},
		{`{"previous_response_ix":"resp_1"}`, `"previous_response_id"`, false},
		{`vvvv"conversation`, `"conversation"`, false},
		{`"conversation"`, `"conversation"`, true},
		{`ab`, `abc`, false},
		{`x`, ``, true},
		{`"::"`, `::`, true},
		{`"::"`, `:;`, false},
		{`{"text":"see a/b and http://gate.example/h/x"}`, `http://gate.example/h/`, true},
		{`{"text":"see a/b and http://gate.example/x/h"}`, `http://gate.example/h/`, false},
		{`/h/`, `x/h/`, false},
	} {
		if got := Contains([]byte(c.b), []byte(c.needle)); got != c.want {
			t.Errorf("%q in %q: %v", c.needle, c.b, got)
		}
	}
}

// FuzzContains holds Contains to bytes.Contains.
func FuzzContains(f *testing.F) {
	f.Add([]byte(`{"conversation":"c"}`), []byte(`"conversation"`))
	f.Add([]byte(`vvv`), []byte(`vv`))
	f.Add([]byte(`zz`), []byte(`z`))
	f.Add([]byte(`{"t":"a/b http://x/h/abc"}`), []byte(`http://x/h/`))
	f.Fuzz(func(t *testing.T, b, needle []byte) {
		if got, want := Contains(b, needle), bytes.Contains(b, needle); got != want {
			t.Fatalf("%q in %q: %v, bytes.Contains %v", needle, b, got, want)
		}
	})
}

// BenchmarkContains looks for a key a 2 KB Responses request does not
// hold, as every Responses request is searched; -bytes with
// bytes.Contains.
func BenchmarkContains(b *testing.B) {
	tool := `{"type":"function","name":"get_weather","description":"Get the weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}},`
	body := []byte(`{"model":"gpt-4o","input":[{"role":"user","content":"` + strings.Repeat("Please review the posts of this week and their status. ", 12) + `"}],"tools":[` + strings.Repeat(tool, 4) + `{"type":"function","name":"x"}]}`)
	needle := []byte(`"previous_response_id"`)
	b.Run("rarest", func(b *testing.B) {
		for b.Loop() {
			if Contains(body, needle) {
				b.Fatal("found")
			}
		}
	})
	b.Run("bytes", func(b *testing.B) {
		for b.Loop() {
			if bytes.Contains(body, needle) {
				b.Fatal("found")
			}
		}
	})
}

// TestScanFold: each place the word may begin, in order, in any case,
// found by its rarest letter; none too near either end.
func TestScanFold(t *testing.T) {
	if k := Rarest([]byte("streamfunctioncallarguments")); k != 20 {
		t.Errorf("rarest of streamfunctioncallarguments at %d, want 20 (g)", k)
	}
	if k := Rarest([]byte(`"_:`)); k != -1 {
		t.Errorf("no letter: %d", k)
	}
	var at []int
	ScanFold([]byte("g tag TAG tAg ta"), []byte("tag"), func(i int) bool { at = append(at, i); return false })
	if want := []int{2, 6, 10}; !slices.Equal(at, want) {
		t.Errorf("places %v, want %v", at, want)
	}
}
