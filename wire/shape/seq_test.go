package shape

import (
	"fmt"
	"strings"
	"testing"
)

// seqEvents applies edits to base, three bytes an edit (what: replace,
// insert or delete; where; which byte), and returns base and each
// event after it.
func seqEvents(base, edits []byte) [][]byte {
	evs := [][]byte{base}
	ev := base
	for i := 0; i+3 <= len(edits); i += 3 {
		next := append([]byte(nil), ev...)
		at := int(edits[i+1]) % (len(next) + 1)
		c := edits[i+2]
		switch edits[i] % 3 {
		case 0:
			if at < len(next) {
				next[at] = c
			}
		case 1:
			next = append(next[:at], append([]byte{c}, next[at:]...)...)
		case 2:
			if at < len(next) {
				next = append(next[:at], next[at+1:]...)
			}
		}
		evs = append(evs, next)
		ev = next
	}
	return evs
}

func checkSeq(t *testing.T, list string, evs [][]byte) {
	n := NewNames(strings.Split(list, ","))
	seq := n.NewSeq()
	for i, ev := range evs {
		if got, want := seq.Named(ev), n.Named(ev); got != want {
			t.Fatalf("names %q, event %d %q (after %q): Seq named %q, Named %q", list, i, ev, evs[max(i-1, 0)], got, want)
		}
	}
}

// TestSeqNamedAsNamed: a Seq names what Named names in each event of a
// stream, where an edit makes a name whole or cuts one, next to the bytes
// the last event shared, and where it changes which backslash begins an
// escape far from the edit.
func TestSeqNamedAsNamed(t *testing.T) {
	chunk := func(text string) []byte {
		return []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"` + text + `"},"finish_reason":null}]}` + "\n\n")
	}
	var stream [][]byte
	for i := range 30 {
		stream = append(stream, chunk(fmt.Sprintf("word%d ", i)))
	}
	cases := []struct {
		name string
		evs  [][]byte
	}{
		{"a text stream", stream},
		{"a name in one chunk", [][]byte{chunk("a"), chunk("b"), chunk("delete_post"), chunk("c"), chunk("c")}},
		{"a name completed by its last byte", [][]byte{chunk("delete_pos"), chunk("delete_post")}},
		{"a name freed by its neighbour", [][]byte{chunk("xdelete_post"), chunk(".delete_post")}},
		{"a name freed after it", [][]byte{chunk("delete_posts"), chunk("delete_post.")}},
		{"an escape made by a backslash far before it", [][]byte{
			[]byte(`{"a":"x` + strings.Repeat(`\\`, 40) + `u0061"}`),
			[]byte(`{"a":"\` + strings.Repeat(`\\`, 40) + `u0061"}`),
		}},
		{"an escape unmade", [][]byte{
			[]byte(`{"a":"x\u0061"}`),
			[]byte(`{"a":"\\u0061"}`),
			[]byte(`{"a":"\\\u0061"}`),
		}},
		{"a name with a dot completed", [][]byte{chunk("a."), chunk("a.b")}},
		{"a name with a dot begun", [][]byte{chunk(".b"), chunk("a.b")}},
		{"a name with two dots completed", [][]byte{chunk("a.."), chunk("a..b")}},
		{"a long name with dots completed far from its start", [][]byte{chunk("acme.stock.quotx"), chunk("acme.stock.quote")}},
		{"a long name with dots begun far from its end", [][]byte{chunk("xacme.stock.quote"), chunk(".acme.stock.quote")}},
		{"a name kept from an event that named one", [][]byte{chunk("a"), chunk("delete_post a"), chunk("delete_post b")}},
		{"the same event again", [][]byte{chunk("a"), chunk("a"), chunk("a")}},
		{"shorter and longer", [][]byte{chunk(strings.Repeat("a", 90)), chunk("a"), chunk(strings.Repeat("send_email ", 9))}},
	}
	// A run of backslashes that begins far before the byte that changes,
	// so that it crosses the window's start: its pairs, counted from the
	// window and not from the run's start, would decide otherwise which \
	// begins an escape. Each length of run is tried, the parity of the
	// part before the window differing between them.
	for n := 60; n < 70; n++ {
		run := strings.Repeat(`\`, n)
		cases = append(cases, struct {
			name string
			evs  [][]byte
		}{fmt.Sprintf("a run of %d backslashes before an edit", n), [][]byte{
			[]byte(`{"a":"` + run + `xu0061"}`),
			[]byte(`{"a":"` + run + `u0061"}`),
			[]byte(`{"a":"` + run + `yu0061"}`),
		}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkSeq(t, strings.Join(benchNames, ",")+",a.b,a..b,acme.stock.quote", c.evs) })
	}
}

// FuzzSeqAsNamed holds a Seq to Named over a stream of events made by
// edits of one.
func FuzzSeqAsNamed(f *testing.F) {
	f.Add("delete_post,a.b,x", []byte(`data: {"delta":{"content":"delete_pos"}}`), []byte{0, 30, 't', 1, 31, 'x', 2, 10, 0})
	f.Add("get_weather", []byte(`{"a":"\\\\\\u0061"}`), []byte{2, 6, 0, 1, 6, '\\'})
	f.Fuzz(func(t *testing.T, list string, base, edits []byte) {
		checkSeq(t, list, seqEvents(base, edits))
	})
}

// BenchmarkSeqNamed searches a Chat text stream's chunks, each with its
// own word, by Named alone and by a Seq.
func BenchmarkSeqNamed(b *testing.B) {
	var evs [][]byte
	for i := range 200 {
		evs = append(evs, []byte(fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"word%d "},"finish_reason":null}]}`+"\n\n", i)))
	}
	n := NewNames(benchNames)
	b.Run("named", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			n.Named(evs[i%len(evs)])
		}
	})
	b.Run("seq", func(b *testing.B) {
		s := n.NewSeq()
		for i := 0; b.Loop(); i++ {
			s.Named(evs[i%len(evs)])
		}
	})
}
