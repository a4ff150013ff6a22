package differential

import (
	"bytes"
	"strings"
	"testing"
)

// SSE framings: the same events written the other ways the event-stream
// rules (WHATWG HTML §9.2.6) allow, or that some parser tolerates.

type framing struct {
	name  string
	apply func(t testing.TB, b base) (modelCase, bool)
}

// ambiguous marks the ungated twins of a framing as cases the gate may
// refuse: their event: labels and data disagree, so readers that go by
// the label and readers that go by the data see different streams.
func ambiguous(fr framing) framing {
	return framing{fr.name, func(t testing.TB, b base) (modelCase, bool) {
		c, ok := fr.apply(t, b)
		c.MayRefuse = ok && !b.gated
		return c, ok
	}}
}

// endsUnread marks the ungated twins of a framing as cases the gate may
// refuse because the stream may end inside an event no reader dispatches:
// mixed-line-ends turns a data line's end and the blank line after it into
// one CRLF when the first is a CR and the second an LF, so events run
// together (in a stream of event: and data: lines, all of them). The gate
// still reads that last event, as a reader that dispatches what is left at
// the end would, and stops the stream when it holds call bytes it cannot
// read (several events' data run together is no JSON): what it cannot
// read it does not pass.
func endsUnread(fr framing) framing {
	return framing{fr.name, func(t testing.TB, b base) (modelCase, bool) {
		c, ok := fr.apply(t, b)
		c.MayRefuse = ok && !b.gated
		return c, ok
	}}
}

// reframe makes a framing that rewrites the body and keeps one write per
// event.
func reframe(name string, f func(body []byte) []byte) framing {
	return framing{name, func(t testing.TB, b base) (modelCase, bool) {
		out := f(b.body)
		if bytes.Equal(out, b.body) {
			t.Fatalf("corpus: framing %s changed nothing in %s/%s", name, b.provider, b.name)
		}
		return newCase(b, name, out), true
	}}
}

// rewrite makes a framing that writes the body in pieces of n bytes.
func rewrite(name string, n int, f func(body []byte) []byte) framing {
	return framing{name, func(t testing.TB, b base) (modelCase, bool) {
		c := newCase(b, name, f(b.body))
		c.Pieces = pieces(c.body(), n)
		return c, true
	}}
}

// withEvents makes a framing that applies only to streams with event:
// lines (Responses, Anthropic).
func withEvents(fr framing) framing {
	return framing{fr.name, func(t testing.TB, b base) (modelCase, bool) {
		if !bytes.Contains(b.body, []byte("\nevent: ")) && !bytes.HasPrefix(b.body, []byte("event: ")) {
			return modelCase{}, false
		}
		return fr.apply(t, b)
	}}
}

// readersDiffer marks a framing that receivers may read differently (a
// bare CR, a BOM): where its bytes have one, through the gate every parser
// must read what the spec's reader reads (the case's Canonical), not what
// it reads of the raw bytes. (mixed-line-ends leaves no bare CR in a
// stream of three-line events: every receiver reads those bytes alike.)
func readersDiffer(fr framing) framing {
	return framing{fr.name, func(t testing.TB, b base) (modelCase, bool) {
		c, ok := fr.apply(t, b)
		if ok && readersDisagree(c.body()) {
			c.Canonical = canonicalSSE(c.body())
		}
		return c, ok
	}}
}

var framings = []framing{
	reframe("crlf", toCRLF),
	readersDiffer(reframe("cr", toCR)),
	endsUnread(readersDiffer(reframe("mixed-line-ends", mixedEnds))),
	readersDiffer(reframe("bom", withBOM)),
	readersDiffer(reframe("bom-crlf", func(b []byte) []byte { return withBOM(toCRLF(b)) })),
	reframe("multi-data-lines", multiDataLines),
	reframe("data-without-space", withoutSpace),
	reframe("fields-without-colon", fieldsWithoutColon),
	reframe("bare-data-line", bareDataLine),
	reframe("comments", withComments),
	reframe("unterminated-last-event", func(b []byte) []byte { return bytes.TrimSuffix(b, []byte("\n")) }),
	rewrite("byte-by-byte", 1, func(b []byte) []byte { return b }),
	rewrite("crlf-byte-by-byte", 1, toCRLF),
	readersDiffer(rewrite("cr-byte-by-byte", 1, toCR)),
	rewrite("pieces-of-7", 7, func(b []byte) []byte { return b }),
	ambiguous(withEvents(reframe("no-event-lines", func(b []byte) []byte {
		return mapLines(b, func(l string) []string {
			if strings.HasPrefix(l, "event:") {
				return nil
			}
			return []string{l}
		})
	}))),
	ambiguous(withEvents(reframe("ping-label-on-every-event", func(b []byte) []byte {
		return mapLines(b, func(l string) []string {
			if strings.HasPrefix(l, "event:") {
				return []string{"event: ping"}
			}
			return []string{l}
		})
	}))),
	ambiguous(withEvents(reframe("unknown-event-label", func(b []byte) []byte {
		return mapLines(b, func(l string) []string {
			if strings.HasPrefix(l, "event:") {
				return []string{"event: x-unknown"}
			}
			return []string{l}
		})
	}))),
}

func toCRLF(b []byte) []byte       { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }
func toCR(b []byte) []byte         { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r")) }
func withBOM(b []byte) []byte      { return append([]byte("\uFEFF"), b...) }
func bareDataLine(b []byte) []byte { return beforeData(b, "data") }

// multiDataLines spreads each data line's JSON over several data: lines.
func multiDataLines(b []byte) []byte { return mapLines(b, splitDataLine) }

// withoutSpace drops the optional space after data: and event:.
func withoutSpace(b []byte) []byte {
	return mapLines(b, func(l string) []string {
		if v, ok := strings.CutPrefix(l, "data: "); ok {
			return []string{"data:" + v}
		}
		if v, ok := strings.CutPrefix(l, "event: "); ok {
			return []string{"event:" + v}
		}
		return []string{l}
	})
}

// fieldsWithoutColon adds fields without a colon, which are fields with
// an empty value: "id" and an unknown one are ignored.
func fieldsWithoutColon(b []byte) []byte { return beforeData(b, "id", "x-unknown-field") }

// withComments adds a comment-only block first and comments in each event.
func withComments(b []byte) []byte {
	return append([]byte(": stream opened\n\n"), beforeData(b, ": keep-alive", ":")...)
}

// pieces cuts b into writes of n bytes.
func pieces(b []byte, n int) [][]byte {
	var out [][]byte
	for len(b) > n {
		out = append(out, b[:n])
		b = b[n:]
	}
	return append(out, b)
}

// mapLines rewrites an LF-framed body line by line (blank lines included;
// f may return several lines, or none).
func mapLines(b []byte, f func(line string) []string) []byte {
	lines := strings.Split(string(b), "\n")
	var out []string
	for i, l := range lines {
		if i == len(lines)-1 && l == "" {
			out = append(out, l) // the body's final line end
			continue
		}
		out = append(out, f(l)...)
	}
	return []byte(strings.Join(out, "\n"))
}

// mixedEnds ends the lines with CRLF, CR and LF in turn.
func mixedEnds(b []byte) []byte {
	ends := []string{"\r\n", "\r", "\n"}
	var out strings.Builder
	n := 0
	for line := range strings.SplitAfterSeq(string(b), "\n") {
		if body, ok := strings.CutSuffix(line, "\n"); ok {
			out.WriteString(body + ends[n%len(ends)])
			n++
			continue
		}
		out.WriteString(line)
	}
	return []byte(out.String())
}

// beforeData puts lines before every data line.
func beforeData(b []byte, extra ...string) []byte {
	return mapLines(b, func(l string) []string {
		if strings.HasPrefix(l, "data:") {
			return append(append([]string(nil), extra...), l)
		}
		return []string{l}
	})
}

// splitDataLine cuts a data line holding JSON after each comma outside a
// string: the parser joins the lines with LF, which JSON reads as
// whitespace, so the data is the same.
func splitDataLine(l string) []string {
	v, ok := strings.CutPrefix(l, "data: ")
	if !ok || !strings.HasPrefix(v, "{") {
		return []string{l}
	}
	var out []string
	inString, escaped, start := false, false, 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && c == ',':
			out = append(out, "data: "+v[start:i+1])
			start = i + 1
		}
	}
	return append(out, "data: "+v[start:])
}
