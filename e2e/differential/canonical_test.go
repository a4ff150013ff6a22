package differential

import (
	"bytes"
	"testing"
)

// The spec's reading of a framing that receivers read differently. A bare
// CR ends a line for the WHATWG event-stream rules (HTML §9.2.6) and for
// the Node SDKs, which follow them, but not for openai-go and
// anthropic-sdk-go (packages/ssestream: a bufio.Scanner that splits at LF
// only); a BOM is dropped by the Node SDKs and kept as part of the field
// name by the Go SDKs. The gate rewrites such events in canonical form so
// that every receiver reads what the spec's reader reads; canonicalSSE
// writes that reading, independently of the gate's own parser
// (wire/sse), so the test can say what each parser must read
// through the gate.

// canonicalSSE returns the events an event-stream reader following the
// WHATWG rules dispatches from body, written in the form every receiver
// reads alike: an "event:" line when the event names a type, one "data:"
// line per line of its data, a blank line, all ending with LF. A BOM is
// dropped at the start of every line, as the Node SDKs do (each line is
// decoded with a fresh TextDecoder, src/internal/decoders/line.ts), not
// only at the stream's start as the spec says; comments, id and retry
// fields, events without data and an event the stream ends in without
// its blank line are not dispatched, so they are not written.
func canonicalSSE(body []byte) []byte {
	out := []byte{} // not nil: a stream of no events has a canonical form too
	var typ []byte
	var data [][]byte
	hasData := false
	for len(body) > 0 {
		end := bytes.IndexAny(body, "\r\n")
		if end < 0 {
			break // a line the stream ends in: never complete, never read
		}
		line := body[:end]
		next := end + 1
		if body[end] == '\r' && next < len(body) && body[next] == '\n' {
			next++
		}
		body = body[next:]
		line = bytes.TrimPrefix(line, []byte("\uFEFF"))
		if len(line) == 0 {
			if hasData {
				if len(typ) > 0 {
					out = append(append(append(out, "event: "...), typ...), '\n')
				}
				for _, d := range data {
					out = append(append(append(out, "data: "...), d...), '\n')
				}
				out = append(out, '\n')
			}
			typ, data, hasData = nil, nil, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "event":
			typ = value
		case "data":
			data = append(data, value)
			hasData = true
		}
	}
	return out
}

// readersDisagree reports whether receivers may read body differently: it
// holds a CR that no LF follows, or a BOM at the start of a line.
func readersDisagree(body []byte) bool {
	for i, c := range body {
		if c == '\r' && (i+1 == len(body) || body[i+1] != '\n') {
			return true
		}
		if (i == 0 || body[i-1] == '\n' || body[i-1] == '\r') && bytes.HasPrefix(body[i:], []byte("\uFEFF")) {
			return true
		}
	}
	return false
}

func TestCanonicalSSE(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"lf", "event: a\ndata: 1\n\n", "event: a\ndata: 1\n\n"},
		{"bare cr", "event: a\rdata: 1\r\rdata: 2\r\r", "event: a\ndata: 1\n\ndata: 2\n\n"},
		{"crlf, and a cr before an lf of the next line", "data: 1\r\n\r\ndata: 2\r\r\n", "data: 1\n\ndata: 2\n\n"},
		{"mixed ends join two events", "data: 1\r\n\rdata: 2\r\n\r", "data: 1\n\ndata: 2\n\n"},
		{"an lf after a cr ends one line, not two", "data: 1\r\ndata: 2\n\n", "data: 1\ndata: 2\n\n"},
		{"bom at the start and on a line", "\uFEFFdata: 1\n\n\uFEFFevent: b\ndata: 2\n\n", "data: 1\n\nevent: b\ndata: 2\n\n"},
		{"line of only a bom is blank", "data: 1\n\uFEFF\n", "data: 1\n\n"},
		{"fields without colon, comments, no space", ": hi\nid\ndata\ndata:x\nretry: 5\n\n", "data: \ndata: x\n\n"},
		{"no data, no event", "event: ping\n\n", ""},
		{"unterminated last event", "data: 1\n\ndata: 2\n", "data: 1\n\n"},
		{"a cr as the last byte ends the line", "data: 1\r\r", "data: 1\n\n"},
	} {
		if got := string(canonicalSSE([]byte(tc.in))); got != tc.want {
			t.Errorf("%s: canonicalSSE(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}
