package shape

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/wire/keyscan"
)

// namedBefore is Named as it was: one bytes.Index per name, in order. The
// one-pass search must answer as it does (FuzzNamedAsBefore).
func namedBefore(names [][]byte, b []byte) string {
	isNameByte := func(c byte) bool { return keyscan.IsKeyByte(c) || c == '-' }
	for _, name := range names {
		for i := 0; ; {
			j := bytes.Index(b[i:], name)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(name)
			if (start == 0 || !isNameByte(b[start-1])) && (end == len(b) || !isNameByte(b[end])) {
				return string(name)
			}
			i = start + 1
		}
	}
	if keyscan.HasEscape(b) {
		return "an escaped name"
	}
	return ""
}

// TestNamedFirstGiven: when a body names several gated tools, the one
// given first is reported, whatever their order in the body, names with
// other bytes ('.', ':') included.
func TestNamedFirstGiven(t *testing.T) {
	n := NewNames([]string{"send_email", "a.b", "delete_post", "x:y", "send_email"})
	for body, want := range map[string]string{
		`delete_post then send_email`: "send_email",
		`delete_post then a.b`:        "a.b",
		`x:y then delete_post`:        "delete_post",
		`x:y only`:                    "x:y",
		`aa.b and xa.bc`:              "",
		`a.b_ and delete_posts`:       "",
	} {
		if got := n.Named([]byte(body)); got != want {
			t.Errorf("%s: named %q, want %q", body, got, want)
		}
	}
}

// FuzzNamedAsBefore holds the one-pass search to the search per name it
// replaced, for any names and any bytes.
func FuzzNamedAsBefore(f *testing.F) {
	f.Add("delete_post,send-email,a.b", []byte(`{"name":"delete_post"} send-email a.b`))
	f.Add("x,xx,x-x,_", []byte(`x-x xx _x x`))
	f.Add("get_weather,weather", []byte(`{"text":"weather get_weather\u005f"}`))
	f.Add(strings.Repeat("n", 130)+",n", []byte(strings.Repeat("n", 130)))
	f.Add(",", []byte(`\u0061`)) // names all empty: an escape is still found, as before
	f.Fuzz(func(t *testing.T, list string, b []byte) {
		var names [][]byte
		var tools []string
		for _, t := range strings.Split(list, ",") {
			tools = append(tools, t)
			if t != "" {
				names = append(names, []byte(t))
			}
		}
		got := NewNames(tools).Named(b)
		if want := namedBefore(names, b); got != want {
			t.Fatalf("names %q in %q: named %q, before %q", list, b, got, want)
		}
	})
}

// benchNames are the e2e test policy's gated tools.
var benchNames = []string{"delete_post", "send_email", "post_note", "weather", "calculator", "get_weather", "get_stock_price"}

// BenchmarkNamed searches the test policy's names in a Gemini text chunk
// (an SSE event) and in a 2 KB Chat text answer, neither naming one;
// -before runs the search per name it replaced.
func BenchmarkNamed(b *testing.B) {
	chunk := []byte("data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"The posting schedule was discussed with the whole team, and we decided to keep drafts for seven days.\"}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 12,\"candidatesTokenCount\": 20,\"totalTokenCount\": 32},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"Y8tTadLTH5XqjMcP7pCKgQo\"}\r\n\r\n")
	text := strings.Repeat("Please describe the weekly post schedule, the drafts we keep and what we send each week. ", 20)
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"` + text + `"},"finish_reason":"stop"}]}`)
	n := NewNames(benchNames)
	var before [][]byte
	for _, t := range benchNames {
		before = append(before, []byte(t))
	}
	for _, c := range []struct {
		name string
		body []byte
	}{{"chunk", chunk}, {"answer", answer}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				if n.Named(c.body) != "" {
					b.Fatal("named")
				}
			}
		})
		b.Run(c.name+"-before", func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				if namedBefore(before, c.body) != "" {
					b.Fatal("named")
				}
			}
		})
	}
}

// TestNameLanes holds nameLanes to nameByte for every byte in every lane,
// next to bytes of both kinds.
func TestNameLanes(t *testing.T) {
	for c := range 256 {
		for lane := range 8 {
			for _, fill := range []byte{'a', '.', 0xff, 0} {
				var w [8]byte
				for i := range w {
					w[i] = fill
				}
				w[lane] = byte(c)
				m := nameLanes(binary.LittleEndian.Uint64(w[:]))
				for i := range 8 {
					if got, want := m>>(8*i+7)&1 == 1, nameByte[w[i]]; got != want {
						t.Fatalf("byte %#x in lane %d among %#x: lane %d named %v, nameByte %v", c, lane, fill, i, got, want)
					}
					if m>>(8*i)&0x7f != 0 {
						t.Fatalf("mask %#x has bits below a lane's high bit", m)
					}
				}
			}
		}
	}
}

// TestNameMask holds nameMask to nameByte on bodies of every length up to
// 130 bytes, of random bytes and of name bytes with few others.
func TestNameMask(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		for size := range 131 {
			b := make([]byte, size)
			for i := range b {
				if r.IntN(2) == 0 {
					b[i] = byte(r.IntN(256))
				} else {
					b[i] = "ab_Z9-"[r.IntN(6)]
				}
			}
			for base := 0; base < len(b); base += 64 {
				m := nameMask(b[base:])
				for i := range 64 {
					want := base+i < len(b) && nameByte[b[base+i]]
					if got := m>>i&1 == 1; got != want {
						t.Fatalf("%q, byte %d: masked %v, nameByte %v", b, base+i, got, want)
					}
				}
			}
		}
	}
}

// TestNamedAtEveryOffset puts each test name at every offset of bodies
// around the 64-byte blocks firstWord reads, alone and inside a longer
// word, so a run that crosses a block's edge or ends b is read whole.
func TestNamedAtEveryOffset(t *testing.T) {
	n := NewNames(benchNames)
	for _, name := range benchNames {
		for size := len(name); size <= 200; size += 7 {
			for at := 0; at+len(name) <= size; at++ {
				b := bytes.Repeat([]byte{'.'}, size)
				copy(b[at:], name)
				if got := n.Named(b); got != name {
					t.Fatalf("%q at %d of %d bytes: named %q", name, at, size, got)
				}
				if at > 0 {
					b[at-1] = 'x' // now inside a longer word
					if got := n.Named(b); got != "" {
						t.Fatalf("x%s at %d of %d bytes: named %q", name, at-1, size, got)
					}
					b[at-1] = '.'
				}
				if at+len(name) < size {
					b[at+len(name)] = '9'
					if got := n.Named(b); got != "" {
						t.Fatalf("%s9 at %d of %d bytes: named %q", name, at, size, got)
					}
				}
			}
		}
	}
}
