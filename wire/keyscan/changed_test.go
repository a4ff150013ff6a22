package keyscan

import (
	"strconv"
	"strings"
	"testing"
)

// changedByByte is Changed one byte at a time.
func changedByByte(last, b []byte) (int, int) {
	from := 0
	for from < len(last) && from < len(b) && last[from] == b[from] {
		from++
	}
	to := len(b)
	for j := len(last); to > from && j > from && last[j-1] == b[to-1]; j-- {
		to--
	}
	return from, to
}

func TestChanged(t *testing.T) {
	for _, c := range []struct {
		last, b  string
		from, to int
	}{
		{"", "", 0, 0},
		{"abc", "abc", 3, 3},
		{"abc", "", 0, 0},
		{"", "abc", 0, 3},
		{`{"text":"word1 "}`, `{"text":"word12 "}`, 14, 15},
		{"aaaaaaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaaaa", 20, 22}, // grown: the suffix stops at the prefix
		{"aaaaaaaaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaa", 20, 20}, // shrunk
		{"0123456789abcdefXYZ0123456789abcdef", "0123456789abcdefQ0123456789abcdef", 16, 17},
	} {
		from, to := Changed([]byte(c.last), []byte(c.b))
		if from != c.from || to != c.to {
			t.Errorf("Changed(%q, %q) = %d, %d; want %d, %d", c.last, c.b, from, to, c.from, c.to)
		}
	}
}

// FuzzChanged holds Changed, eight bytes at a time, to the byte loop.
func FuzzChanged(f *testing.F) {
	f.Add([]byte(`data: {"text":"word1 "}`), []byte(`data: {"text":"word12 "}`))
	f.Add([]byte("0123456789abcdef0123456789abcdef"), []byte("0123456789abcdef"))
	f.Fuzz(func(t *testing.T, last, b []byte) {
		from, to := Changed(last, b)
		wf, wt := changedByByte(last, b)
		if from != wf || to != wt {
			t.Fatalf("Changed(%q, %q) = %d, %d; byte by byte %d, %d", last, b, from, to, wf, wt)
		}
	})
}

// BenchmarkChanged compares a 220-byte stream chunk with the one before,
// which differs in one word.
func BenchmarkChanged(b *testing.B) {
	const chunk = `{"candidates":[{"content":{"parts":[{"text":"Berlin%d is the capital of Germany and its largest city by population."}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"r"}`
	var chunks [][]byte
	for i := range 10 {
		chunks = append(chunks, []byte(strings.Replace(chunk, "%d", strconv.Itoa(i), 1)))
	}
	b.SetBytes(int64(len(chunks[0])))
	for i := 0; b.Loop(); i++ {
		Changed(chunks[i%10], chunks[(i+1)%10])
	}
}
