package sse

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// gateRead cuts stream into pieces at the given offsets and returns what
// the gate reads (the dispatched events, as Data and Type see them) and
// the bytes it hands on (every event as Split gives it, then Rest).
func gateRead(t testing.TB, stream []byte, cuts []int) (events []Event, out []byte) {
	t.Helper()
	var s Splitter
	var scratch []byte
	read := func(ev []byte) {
		out = append(out, ev...)
		var data []byte
		var ok bool
		if data, scratch, ok = Data(ev, scratch); ok && EventLen(ev) == len(ev) && endsEvent(ev) {
			events = append(events, Event{Type: string(Type(ev)), Data: string(data)})
		}
	}
	prev := 0
	for _, c := range append(cuts, len(stream)) {
		if c < prev || c > len(stream) {
			continue
		}
		piece := stream[prev:c]
		err := s.Split(piece, func(ev []byte, at int) bool {
			if at >= 0 && !bytes.Equal(piece[at:at+len(ev)], ev) {
				t.Fatalf("event at %d is not the piece's bytes", at)
			}
			read(ev)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		prev = c
	}
	if rest := s.Rest(); rest != nil {
		read(rest) // dispatched only if it ends with a blank line (a CR at the very end)
	}
	return events, out
}

// endsEvent reports whether ev ends with a blank line (LF or CRLF after a
// line end, or is a blank line alone).
func endsEvent(ev []byte) bool {
	return bytes.HasSuffix(ev, []byte("\n\n")) || bytes.HasSuffix(ev, []byte("\n\r\n")) || string(ev) == "\n" || string(ev) == "\r\n"
}

func TestSplitterReadsAsTheSpec(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         []Event
	}{
		{"LF", "data: a\n\ndata: b\n\n", []Event{{"", "a"}, {"", "b"}}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []Event{{"", "a"}, {"", "b"}}},
		{"bare CR", "data: a\r\rdata: b\r\r", []Event{{"", "a"}, {"", "b"}}},
		{"mixed ends", "event: x\rdata: a\r\n\ndata: b\n\r", []Event{{"x", "a"}, {"", "b"}}},
		{"CR then CRLF", "data: a\r\r\ndata: b\n\n", []Event{{"", "a"}, {"", "b"}}},
		{"BOM at the start", bom + "data: a\n\n", []Event{{"", "a"}}},
		{"BOM at a line start", "data: a\n" + bom + "data: b\n\n", []Event{{"", "a\nb"}}},
		{"BOM alone is a blank line", "data: a\n" + bom + "\ndata: b\n\n", []Event{{"", "a"}, {"", "b"}}},
		{"two BOMs", bom + bom + "data: a\n\ndata: b\n\n", []Event{{"", "b"}}},
		{"several data lines", "data: {\"a\":\ndata: 1}\n\n", []Event{{"", "{\"a\":\n1}"}}},
		{"no space", "data:a\nevent:x\n\n", []Event{{"x", "a"}}},
		{"two spaces", "data:  a\n\n", []Event{{"", " a"}}},
		{"field without colon", "data\n\ndata\ndata\n\n", []Event{{"", ""}, {"", "\n"}}},
		{"comments and unknown fields", ": hi\nid: 1\nretry: 5\nfoo: bar\ndata: a\n\n", []Event{{"", "a"}}},
		{"no data, no event", "event: x\n\ndata: a\n\n", []Event{{"", "a"}}},
		{"unfinished event", "data: a\n\ndata: b\n", []Event{{"", "a"}}},
		{"empty data", "data:\n\n", []Event{{"", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := specParse([]byte(tc.stream), true); !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Fatalf("the reference reads %q, the test wants %q", got, tc.want)
			}
			if got := Parse([]byte(tc.stream)); !sameEvents(got, tc.want) {
				t.Fatalf("Parse reads %q, want %q", got, tc.want)
			}
			for cut := 0; cut <= len(tc.stream); cut++ {
				got, _ := gateRead(t, []byte(tc.stream), []int{cut})
				if !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
					t.Fatalf("cut at %d: read %q, want %q", cut, got, tc.want)
				}
			}
		})
	}
}

// A bare CR is a line end only for some readers: the event is rewritten
// with LF, so that openai-go (which splits at LF) reads what a Node client
// reads. A CRLF split across two pieces is one line end and stays as it
// came.
func TestSplitterRewritesWhatReadersReadDifferently(t *testing.T) {
	for _, tc := range []struct {
		name, stream, out string
	}{
		{"LF stays", "data: a\n\n", "data: a\n\n"},
		{"CRLF stays", "data: a\r\n\r\n", "data: a\r\n\r\n"},
		{"bare CR", "data: a\rdata: b\r\r", "data: a\ndata: b\n\n"},
		{"BOM", bom + "data: a\n\n", "data: a\n\n"},
		{"BOM mid-stream", "data: a\n\n" + bom + "data: b\n\n", "data: a\n\ndata: b\n\n"},
		// The stream ends in a line of a BOM and no line end: the Node
		// readers flush that line, drop the BOM and take it for the blank
		// line that ends the event; the Go readers and the spec do not
		// (found by FuzzSplitter).
		{"BOM alone ends the stream", "data\n" + bom, "data\n"},
		{"BOM and a field end the stream", "data: a\n" + bom + "data: b", "data: a\ndata: b"},
	} {
		for cut := 0; cut <= len(tc.stream); cut++ {
			got, out := gateRead(t, []byte(tc.stream), []int{cut})
			if string(out) != tc.out {
				t.Errorf("%s, cut at %d: handed on %q, want %q", tc.name, cut, out, tc.out)
			}
			if node := nodeParse(out); !sameEvents(node, got) {
				t.Errorf("%s, cut at %d: node reads %q from %q, the gate read %q", tc.name, cut, node, out, got)
			}
		}
	}
}

func TestSplitterHandsOnEventsInPlace(t *testing.T) {
	var s Splitter
	stream := []byte("data: a\n\ndata: b\r\n\r\ndata: c\n")
	var ats []int
	if err := s.Split(stream, func(ev []byte, at int) bool { ats = append(ats, at); return true }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ats, []int{0, 9}) || s.Pending() != len("data: c\n") {
		t.Fatalf("events at %v, %d bytes pending", ats, s.Pending())
	}
	// A blank line ended by a CR that is the last byte waits for the next:
	// it may be a CRLF.
	s.Reset()
	var got []string
	s.Split([]byte("data: a\r\n\r"), func(ev []byte, at int) bool { got = append(got, string(ev)); return true })
	if len(got) != 0 {
		t.Fatalf("handed on %q before the CR's next byte", got)
	}
	s.Split([]byte("\ndata: b\n\n"), func(ev []byte, at int) bool { got = append(got, string(ev)); return true })
	if !reflect.DeepEqual(got, []string{"data: a\r\n\r\n", "data: b\n\n"}) {
		t.Fatalf("handed on %q", got)
	}
}

func TestSplitterLimit(t *testing.T) {
	s := Splitter{Max: 16}
	err := s.Split([]byte("data: 0123456789abcdef\n\n"), func([]byte, int) bool { return true })
	if err != ErrTooLarge {
		t.Fatalf("in place: %v", err)
	}
	s = Splitter{Max: 16}
	s.Split([]byte("data: 0123456789"), func([]byte, int) bool { return true })
	if err := s.Split([]byte("abcdef\n\n"), func([]byte, int) bool { return true }); err != ErrTooLarge {
		t.Fatalf("pending: %v", err)
	}
}

func TestAppendReplacedWritesSeveralDataLines(t *testing.T) {
	ev := []byte("event: x\r\nid: 7\r\ndata: {\"a\":\r\ndata: 1}\r\n: note\r\n\r\n")
	out, meaningful := AppendReplaced(nil, ev, []byte("{\"a\":\n2}"), false)
	if want := "event: x\r\nid: 7\r\ndata: {\"a\":\ndata: 2}\n: note\r\n\r\n"; string(out) != want || !meaningful {
		t.Fatalf("got %q (%v), want %q", out, meaningful, want)
	}
	if got := specParse(out, false); !reflect.DeepEqual(got, []Event{{"x", "{\"a\":\n2}"}}) {
		t.Fatalf("read back as %q", got)
	}
	out, meaningful = AppendReplaced(nil, []byte("data: x\n\n"), nil, true)
	if string(out) != "\n" || meaningful {
		t.Fatalf("dropped: %q (%v)", out, meaningful)
	}
}

// cutsOf turns fuzz bytes into increasing cut offsets within n.
func cutsOf(b []byte, n int) []int {
	var cuts []int
	at := 0
	for _, c := range b {
		at += int(c) % 8
		if at > n {
			break
		}
		cuts = append(cuts, at)
	}
	return cuts
}

// FuzzSplitter checks the Splitter against the spec's reader (transcribed
// in reference_test.go), whatever the split, and checks that every real
// reader reads what it hands on as the gate read it: the spec's, the Node
// SDKs', openai-go's and anthropic-sdk-go's. The bytes it hands on do not
// depend on the split.
func FuzzSplitter(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "data: a\r\n\r\n", "data: a\r\r", "data: a\rdata: b\n\n", bom + "data: a\n\n",
		"data: a\n" + bom + "\ndata: b\n\n", "event: x\ndata: {\"choices\":[\r{}]}\n\n", "data\n\n",
		": c\nid: 1\ndata:x\r\n\r", "data: a\r\r\n\n", "data: [DONE]\n\n", "\xef\xbb",
	} {
		f.Add([]byte(s), []byte{3, 1, 4})
	}
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		want := specParse(stream, true)
		got, out := gateRead(t, stream, cutsOf(cuts, len(stream)))
		if !sameEvents(got, want) {
			t.Fatalf("gate read %q, the spec %q", got, want)
		}
		_, whole := gateRead(t, stream, nil)
		if !bytes.Equal(out, whole) {
			t.Fatalf("handed on %q in pieces, %q whole", out, whole)
		}
		for name, read := range map[string]func([]byte) []Event{
			"spec":             func(b []byte) []Event { return specParse(b, false) },
			"node":             nodeParse,
			"openai-go":        openaiGoParse,
			"anthropic-sdk-go": anthropicGoParse,
		} {
			if r := read(out); !sameEvents(r, got) {
				t.Fatalf("%s reads %q from %q, the gate read %q", name, r, out, got)
			}
		}
	})
}

func sameEvents(a, b []Event) bool { return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b) }

// FuzzWriteParse checks that events written by AppendEvent are read back
// as they were, by this package and by the spec's reader.
func FuzzWriteParse(f *testing.F) {
	f.Add("message", "hello")
	f.Add("", "{\"a\":\n1}")
	f.Add("x", " lead\n\ntrail\n")
	f.Add("t", bom+"data")
	f.Fuzz(func(t *testing.T, typ, data string) {
		if strings.ContainsAny(typ, "\r\n") || !utf8.ValidString(typ+data) {
			t.Skip()
		}
		want := []Event{{Type: typ, Data: strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(data)}}
		stream := AppendEvent(AppendEvent(nil, Event{Type: typ, Data: data}), Event{Data: "end"})
		want = append(want, Event{Data: "end"})
		if got := Parse(stream); !reflect.DeepEqual(got, want) || !sameEvents(Parse(bytes.ReplaceAll(stream, []byte("\n"), []byte("\r"))), want) {
			t.Fatalf("wrote %q, read %q, want %q", stream, got, want)
		}
		if got := specParse(stream, false); !reflect.DeepEqual(got, want) {
			t.Fatalf("the spec reads %q from %q", got, stream)
		}
	})
}

func BenchmarkSplitter(b *testing.B) {
	var buf bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&buf, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word%d \"},\"finish_reason\":null}]}\n\n", i)
	}
	stream := buf.Bytes()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	var s Splitter
	for b.Loop() {
		s.Split(stream, func([]byte, int) bool { return true })
	}
}

// FuzzDataAsLines holds Data, with its shortcut for one data line and its
// blank line, to the loop over every line (dataLines).
func FuzzDataAsLines(f *testing.F) {
	for _, ev := range []string{"data: {}\n\n", "data:{}\r\n\r\n", "data: a\ndata: b\n\n", "data: x\r\n", "data: x", "data:", "data: x\n\n\n", "data: x\nevent: y\n\n", "datax: y\n\n", ": c\n\n", "data: x\r\r\n"} {
		f.Add([]byte(ev))
	}
	f.Fuzz(func(t *testing.T, ev []byte) {
		data, _, ok := Data(ev, nil)
		want, _, wantOK := dataLines(ev, nil)
		if ok != wantOK || !bytes.Equal(data, want) {
			t.Fatalf("Data(%q) = %q, %v; the lines read %q, %v", ev, data, ok, want, wantOK)
		}
	})
}

// BenchmarkData reads a Gemini text chunk's event: one data line, CRLF.
func BenchmarkData(b *testing.B) {
	ev := []byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"word12 \"}],\"role\":\"model\"},\"index\":0}],\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"bench\"}\r\n\r\n")
	for b.Loop() {
		if _, _, ok := Data(ev, nil); !ok {
			b.Fatal("no data")
		}
	}
}
