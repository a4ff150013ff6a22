package memo

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// answer is the function under memo in these tests: it names every part
// of its key, with the parts' boundaries, so that an answer given for
// another key shows.
func answer(k Key) string { return k.A + "\x00" + k.B + "\x00" + k.C }

// keys differ from each other in one part, in the split between parts,
// or in case; the last is longer than a table keeps.
var keys = []Key{
	{"POST", "/v1/chat/completions", ""},
	{"GET", "/v1/chat/completions", ""},
	{"post", "/v1/chat/completions", ""},
	{"POST", "/v1/chat/completions/", ""},
	{"POST", "/v1/chat/completions", "alt=sse"},
	{"POST", "/v1/chat/completions", "alt=json"},
	{"POSTa", "b", ""},
	{"POST", "ab", ""},
	{"POS", "Tab", ""},
	{"", "", ""},
	{"", "", "x"},
	{"", "x", ""},
	{"x", "", ""},
	{"POST", "/v1beta/models/gemini-2.5-flash:generateContent", "alt=sse"},
	{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "alt=sse"},
	{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", ""},
	{"POST", "/v1beta/models/gemini-2.5-flash:streamgeneratecontent", ""},
	{"POST", "/v1/messages", ""},
	{"POST", "/v1/responses", ""},
	{"DELETE", "/v1/responses", ""},
	{"POST", "/" + strings.Repeat("a", MaxKey), ""},
}

// Get answers each key as the function does, in a random order over more
// keys than slots (so that other keys sit in the slot a key looks in),
// and the function runs again only for a key whose entry was replaced.
func TestGetAsComputed(t *testing.T) {
	var tab Table[string]
	rng := rand.New(rand.NewPCG(3, 4))
	calls, hits := 0, 0
	for range 50000 {
		k := keys[rng.IntN(len(keys))]
		cached := tab.Cached(k)
		got := tab.Get(k, func(k Key) string { calls++; return answer(k) })
		if got != answer(k) {
			t.Fatalf("Get(%q) = %q, want %q", k, got, answer(k))
		}
		if cached {
			hits++
		}
		if k.size() > MaxKey && tab.Cached(k) {
			t.Fatalf("a %d-byte key is kept", k.size())
		}
		if k.size() <= MaxKey && !tab.Cached(k) {
			t.Fatalf("%q is not kept right after Get", k)
		}
	}
	if hits == 0 || calls+hits != 50000 {
		t.Fatalf("%d hits, %d calls of 50000 lookups: each lookup either hits or computes", hits, calls)
	}
}

// Lookups at once each get their own key's answer (run with -race).
func TestGetConcurrent(t *testing.T) {
	var tab Table[string]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range 5000 {
				k := keys[rng.IntN(len(keys))]
				if got := tab.Get(k, answer); got != answer(k) {
					t.Errorf("Get(%q) = %q", k, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A nil table computes each time.
func TestNilTable(t *testing.T) {
	var tab *Table[string]
	n := 0
	for range 3 {
		if got := tab.Get(keys[0], func(k Key) string { n++; return answer(k) }); got != answer(keys[0]) {
			t.Fatal(got)
		}
	}
	if n != 3 || tab.Cached(keys[0]) {
		t.Fatalf("nil table: %d computations of 3", n)
	}
}

// FuzzGetAsComputed: two keys looked up in turn, twice, answered as the
// function does whatever slot they share.
func FuzzGetAsComputed(f *testing.F) {
	for i, k := range keys {
		o := keys[(i+5)%len(keys)]
		f.Add(k.A, k.B, k.C, o.A, o.B, o.C)
	}
	f.Fuzz(func(t *testing.T, a1, b1, c1, a2, b2, c2 string) {
		var tab Table[string]
		k1, k2 := Key{a1, b1, c1}, Key{a2, b2, c2}
		for _, k := range []Key{k1, k2, k1, k2} {
			if got := tab.Get(k, answer); got != answer(k) {
				t.Fatalf("Get(%q) = %q", k, got)
			}
		}
	})
}

func BenchmarkGet(b *testing.B) {
	var tab Table[string]
	k := keys[13]
	for b.Loop() {
		tab.Get(k, answer)
	}
}
