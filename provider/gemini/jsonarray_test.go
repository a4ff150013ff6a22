package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

// readArray feeds stream to an ArrayReader cut at the given offsets and
// returns the elements and the body put back together from Lead, Value
// and tail.
func readArray(t testing.TB, stream []byte, cuts []int) (elems []string, back []byte, err error) {
	t.Helper()
	return readArrayWith(t, &ArrayReader{}, stream, cuts)
}

func readArrayWith(t testing.TB, r *ArrayReader, stream []byte, cuts []int) (elems []string, back []byte, err error) {
	t.Helper()
	prev := 0
	for _, c := range append(cuts, len(stream)) {
		if c < prev || c > len(stream) {
			continue
		}
		if err := r.Write(stream[prev:c], func(e Element) bool {
			elems = append(elems, string(e.Value))
			back = append(back, e.Lead...)
			back = append(back, e.Value...)
			return true
		}); err != nil {
			return elems, back, err
		}
		prev = c
	}
	tail, err := r.Close()
	return elems, append(back, tail...), err
}

func TestArrayReaderRecordings(t *testing.T) {
	for _, name := range []string{"stream-json-array-function-call.json", "stream-json-array-function-call-id.json"} {
		stream, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		var want []json.RawMessage
		if err := json.Unmarshal(stream, &want); err != nil {
			t.Fatal(err)
		}
		for _, step := range []int{0, 1, 7, 100} {
			var cuts []int
			for c := step; step > 0 && c < len(stream); c += step {
				cuts = append(cuts, c)
			}
			elems, back, err := readArray(t, stream, cuts)
			if err != nil {
				t.Fatalf("%s step %d: %v", name, step, err)
			}
			if len(elems) != len(want) {
				t.Fatalf("%s: %d elements, want %d", name, len(elems), len(want))
			}
			for i := range want {
				if elems[i] != string(want[i]) {
					t.Errorf("%s element %d differs", name, i)
				}
			}
			if !bytes.Equal(back, stream) {
				t.Errorf("%s step %d: the body put back together differs", name, step)
			}
		}
	}
}

func TestArrayReader(t *testing.T) {
	for _, c := range []struct {
		name, in string
		elems    []string
		err      string
	}{
		{"empty array", "[]", nil, ""},
		{"whitespace", " \r\n[ \n{}\n ,\t{\"a\":1} ]\n", []string{"{}", `{"a":1}`}, ""},
		{"brackets and escapes in strings", `[{"t":"}]\"[{\\"},{"u":"\u005d"}]`, []string{`{"t":"}]\"[{\\"}`, `{"u":"\u005d"}`}, ""},
		{"nested", `[{"a":[{"b":[]}],"c":{}}]`, []string{`{"a":[{"b":[]}],"c":{}}`}, ""},
		{"truncated inside an element", `[{"a":1},{"b":`, []string{`{"a":1}`}, "inside an element"},
		{"truncated before the close", `[{"a":1}`, []string{`{"a":1}`}, "before its closing"},
		{"truncated inside a string", `[{"a":"}`, nil, "inside an element"},
		{"nothing", ``, nil, "before its first"},
		{"sse instead", "data: {}\r\n\r\n", nil, `unexpected 'd'`},
		{"scalar element", `[1]`, nil, `unexpected '1'`},
		{"two commas", `[{},,{}]`, []string{"{}"}, `unexpected ','`},
		{"trailing comma", `[{},]`, []string{"{}"}, `unexpected ']'`},
		{"garbage after", `[{}]x`, []string{"{}"}, `unexpected 'x'`},
		{"second array", `[{}][{}]`, []string{"{}"}, `unexpected '['`},
		{"missing comma", `[{}{}]`, []string{"{}"}, `unexpected '{'`},
		{"mismatched brackets", `[{"a":[}]]`, nil, "not valid JSON"},
		{"invalid inside", `[{"a":tru}]`, nil, "not valid JSON"},
		{"bom", "\xEF\xBB\xBF[{}]", nil, "unexpected"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, step := range []int{0, 1} {
				var cuts []int
				for i := 1; step > 0 && i < len(c.in); i++ {
					cuts = append(cuts, i)
				}
				elems, back, err := readArray(t, []byte(c.in), cuts)
				if strings.Join(elems, "|") != strings.Join(c.elems, "|") {
					t.Errorf("step %d: elements %q, want %q", step, elems, c.elems)
				}
				switch {
				case c.err == "" && err != nil:
					t.Errorf("step %d: %v", step, err)
				case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
					t.Errorf("step %d: error %v, want one saying %q", step, err, c.err)
				case c.err == "" && string(back) != c.in:
					t.Errorf("step %d: put back together %q", step, back)
				}
			}
		})
	}
}

func TestArrayReaderTruncatedIsUnexpectedEOF(t *testing.T) {
	_, _, err := readArray(t, []byte(`[{"a":1}`), nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v", err)
	}
}

func TestArrayReaderLimit(t *testing.T) {
	r := ArrayReader{Max: 10}
	err := r.Write([]byte(`[{"a":"0123456789"}]`), func(Element) bool { return true })
	if !errors.Is(err, ErrArrayTooLarge) {
		t.Fatalf("got %v", err)
	}
	if err := r.Write([]byte(`]`), func(Element) bool { return true }); !errors.Is(err, ErrArrayTooLarge) {
		t.Fatalf("after an error: %v", err)
	}
}

func TestArrayWriter(t *testing.T) {
	var b bytes.Buffer
	w := ArrayWriter{W: &b}
	if err := w.Close(); err != nil || b.String() != "[]" {
		t.Fatalf("empty: %q %v", b.String(), err)
	}
	b.Reset()
	w = ArrayWriter{W: &b}
	for _, e := range []string{`{"a":1}`, `{"b":2}`} {
		if err := w.Element([]byte(e)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "[{\"a\":1}\n,\r\n{\"b\":2}\n]" {
		t.Fatalf("got %q", got)
	}
	var back []json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back) != 2 {
		t.Fatalf("not an array of 2: %v", err)
	}
}

// FuzzArrayReader: whatever the body and however it is cut, the reader
// either errs or yields exactly the elements encoding/json reads in it,
// and the body put back together is the body.
func FuzzArrayReader(f *testing.F) {
	for _, name := range []string{"stream-json-array-function-call.json", "stream-json-array-function-call-id.json"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(7))
	}
	f.Add([]byte(`[{"t":"}]\"[{\\"},{}]`), uint16(1))
	f.Add([]byte(`[{"a":[}]]`), uint16(3))
	f.Fuzz(func(t *testing.T, body []byte, step uint16) {
		var cuts []int
		for c := int(step); step > 0 && c < len(body); c += int(step) {
			cuts = append(cuts, c)
		}
		elems, back, err := readArray(t, body, cuts)
		// Unchecked (as Stream reads): the same elements wherever the
		// checked reader reads them, and only bytes of the body, in order.
		ue, uback, uerr := readArrayWith(t, &ArrayReader{Unchecked: true}, body, cuts)
		if !bytes.HasPrefix(body, uback) {
			t.Fatalf("unchecked: put back together is not the body's start: %q", uback)
		}
		if err == nil && (uerr != nil || !slices.Equal(ue, elems) || !bytes.Equal(uback, back)) {
			t.Fatalf("unchecked: %q, %v; checked %q", ue, uerr, elems)
		}
		var want []json.RawMessage
		jerr := json.Unmarshal(body, &want)
		objects := jerr == nil
		for _, w := range want {
			objects = objects && len(w) > 0 && w[0] == '{'
		}
		if err != nil {
			if objects && want != nil {
				t.Fatalf("reader refused an array of objects json reads: %v", err)
			}
			return
		}
		if jerr != nil {
			t.Fatalf("reader read %q, json says %v", body, jerr)
		}
		if len(elems) != len(want) {
			t.Fatalf("%d elements, json %d", len(elems), len(want))
		}
		for i := range want {
			if !bytes.Equal(bytes.TrimSpace(want[i]), []byte(elems[i])) {
				t.Fatalf("element %d: %q vs %q", i, elems[i], want[i])
			}
		}
		if !bytes.Equal(back, body) {
			t.Fatalf("put back together differs")
		}
	})
}
