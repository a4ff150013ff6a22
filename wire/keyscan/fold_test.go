package keyscan

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testkit/benchbody"
)

// indexFoldBefore is the search IndexFold replaced: bytes.EqualFold at
// each place, the first that matches.
func indexFoldBefore(b, lower []byte) int {
	for i := 0; i+len(lower) <= len(b); i++ {
		if bytes.EqualFold(b[i:i+len(lower)], lower) {
			return i
		}
	}
	return -1
}

func TestIndexFold(t *testing.T) {
	for _, c := range []struct {
		b, lower string
		want     int
	}{
		{`{"tools":[]}`, "tools", 2},
		{`{"TOOLS":[]}`, "tools", 2},
		{`{"tOoLs":[]}`, "tools", 2},
		{`{"tool":"s"}`, "tools", -1},
		{`tools`, "tools", 0},
		{`tool`, "tools", -1},
		{``, "tools", -1},
		{`xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxtools`, "tools", 45}, // in the tail, after the 8-byte blocks
		{`xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxtoolS`, "tools", 45},
		{`xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxtoo`, "tools", -1},
		{`ls ls LS lS tool tools`, "tools", 17},                         // the two letters looked at, without the rest
		{`to\u006fls tools`, "tools", 11},                               // an escape is not the letter
		{"too\u013fs tool\u017f TOOLs", "tools", 14},                    // a rune that folds onto a letter (ſ onto s) is not it; Ŀ folds onto none
		{"\x8cOOLS ,ools TOOL\x93 toolS", "tools", 18},                  // bytes that |0x20 makes letters: 0x8c|0x20 = 0xac, not 'l'
		{"lS\x00\x00\x00\x00\x00\x00\x00\x00toOLs", "tools", 10},        // zero bytes
		{"\xff\xff\xff\xff\xff\xff\xff\xff\xfftools", "tools", 9},       // no borrow across lanes
		{"@OOL[ tOOL{ tool`", "tools", -1},                              // the bytes next to the letters in ASCII
		{`"STREAM_FUNCTION_CALL_ARGUMENTS"`, "arguments", 22},           // the other word the gate searches for
		{`the spring argument is over: ARGUMENTS`, "arguments", 29},     // two rare letters apart
		{`g m g m gum gumnts arguMent arguments`, "arguments", 28},      //
		{`a_b A_B a-b`, "a_b", 0},                                       // a byte that is no letter is compared as it is
		{`A-B a_c A_B`, "a_b", 8},                                       //
		{`"x": 1`, `": `, 2},                                            // no letter: bytes.Index
		{`abc`, ``, 0},                                                  //
		{`zzzzzzzzzzzzzzzzz`, "z", 0},                                   // one letter
		{`yyyyyyyyyyyyyyyyyyZ`, "z", 18},                                //
		{`qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq`, "qq", 0}, // many places in one block: the first
	} {
		if got := IndexFold([]byte(c.b), []byte(c.lower)); got != c.want {
			t.Errorf("%q in %q: %d, want %d", c.lower, c.b, got, c.want)
		}
		if got := indexFoldBefore([]byte(c.b), []byte(c.lower)); got != c.want {
			t.Errorf("%q in %q: the search before says %d, the case %d", c.lower, c.b, got, c.want)
		}
	}
}

// TestIndexFoldAtEveryOffset puts the word, in each of three cases, at
// each place of bodies of every length to 40, around the 8- and 16-byte
// blocks' edges, after bytes that repeat half of it (the letters looked
// at, perhaps).
func TestIndexFoldAtEveryOffset(t *testing.T) {
	for _, word := range []string{"tools", "arguments", "streamfunctioncallarguments", "ab", "z"} {
		alternate := []byte(word)
		for i := range alternate {
			if i%2 == 0 {
				alternate[i] -= 'a' - 'A'
			}
		}
		for _, spelled := range []string{word, strings.ToUpper(word), string(alternate)} {
			for n := 0; n <= 40; n++ {
				for at := 0; at+len(word) <= n; at++ {
					b := bytes.Repeat([]byte(word[len(word)/2:]+"."), n)[:n]
					copy(b[at:], spelled)
					got, want := IndexFold(b, []byte(word)), indexFoldBefore(b, []byte(word))
					if got != want || want > at {
						t.Fatalf("%q in %q: %d, the search before %d", word, b, got, want)
					}
				}
			}
		}
	}
}

// FuzzIndexFold holds IndexFold to bytes.EqualFold at each place, for a
// lower made of what the fuzzer gives (ASCII, lowered).
func FuzzIndexFold(f *testing.F) {
	f.Add([]byte(`{"contents":[],"TOOLS":[]}`), []byte("tools"))
	f.Add([]byte(`stream_function_call_ARGUMENTSstreamfunctioncallargument`), []byte("arguments"))
	f.Add([]byte("too\u013fs tool\u017f TOOLs"), []byte("tools"))
	f.Add([]byte("\x8cOOLS ,ools TOOL\x93 toolS"), []byte("tools"))
	f.Add([]byte(`a_b A_B`), []byte("a_b"))
	f.Add([]byte(`"x": 1`), []byte(`": `))
	f.Fuzz(func(t *testing.T, b, needle []byte) {
		lower := bytes.ToLower(needle)
		if !isASCII(lower) {
			return
		}
		if got, want := IndexFold(b, lower), indexFoldBefore(b, lower); got != want {
			t.Fatalf("%q in %q: %d, the search before %d", lower, b, got, want)
		}
	})
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// BenchmarkIndexFold looks for "tools" and "arguments" in a 2 KB Gemini
// request without them (e2e's BenchmarkPassThroughGeminiJSON's), as every
// Gemini request is searched; -scan with ScanFold and bytes.EqualFold,
// the search before.
func BenchmarkIndexFold(b *testing.B) {
	body := benchbody.GeminiRequest()
	for _, word := range []string{"tools", "arguments"} {
		lower := []byte(word)
		b.Run(word, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if IndexFold(body, lower) >= 0 {
					b.Fatal("found")
				}
			}
		})
		b.Run(word+"-scan", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if ScanFold(body, lower, func(i int) bool { return bytes.EqualFold(body[i:i+len(lower)], lower) }) {
					b.Fatal("found")
				}
			}
		})
	}
}
