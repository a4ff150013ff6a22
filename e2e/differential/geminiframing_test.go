package differential

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testkit"
)

// How the three Gemini clients read the framings an alt=sse answer could
// come in (and a unary answer with bytes around its JSON), each against
// the recorded stream it is made from: the facts of docs/gemini-clients.md.

// Outcomes of a reading against the baseline (the recorded bytes as
// recorded).
const (
	same        = "same"                  // everything the app acts on, as the baseline
	fails       = "fails"                 // an error, and no call read
	failsAfter  = "fails after the calls" // the calls read, then an error
	missesCalls = "misses the calls"      // no error, and no call read
	extraChunk  = "an extra chunk"        // as the baseline, with more (empty) responses
	dropsLast   = "drops the last event"  // no error, the calls read, fewer responses
	otherwise   = "otherwise"             // anything else
)

// framingOutcome says how got differs from the baseline.
func framingOutcome(got, base geminiSeen) string {
	switch {
	case got.same(base):
		return same
	case got.Error != "" && len(got.Calls) == 0:
		return fails
	case got.Error != "" && sameCalls(got.Calls, base.Calls):
		return failsAfter
	case got.Error == "" && len(got.Calls) == 0 && len(base.Calls) > 0:
		return missesCalls
	}
	g := got
	g.Chunks = base.Chunks
	if got.Error == "" && got.Chunks > base.Chunks && g.same(base) {
		return extraChunk
	}
	if got.Error == "" && got.Chunks < base.Chunks && sameCalls(got.Calls, base.Calls) {
		return dropsLast
	}
	return otherwise
}

// geminiFraming is one way to write the recorded stream (or unary answer)
// and what each client makes of it: go-genai, @google/genai, @ai-sdk/google.
type geminiFraming struct {
	name   string
	stream bool
	pieces func(events [][]byte, unary []byte) [][]byte
	want   [3]string
	why    string
}

// framingHolds hold a framing's stream before the piece given until the
// client has read the first response: the pieces around it reach the
// client in reads of their own.
var framingHolds = map[string]int{
	"an unframed error object mid-stream, in a read of its own, last":      1,
	"an unframed error object mid-stream, in one read with the next event": 1,
}

// The recorded bytes the framings start from: a Gemini 3 stream of two
// CRLF events (the call with its thoughtSignature, then an empty text
// with finishReason STOP), and a Gemini 2.5 unary answer with one call.
const (
	framingStream = "stream-function-call-gemini3.sse"
	framingUnary  = "function-call.json"
)

const midStreamError = `{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}`

func joined(ps ...[]byte) []byte { return bytes.Join(ps, nil) }

var geminiFramings = []geminiFraming{
	{"as-recorded (CRLF)", true, func(e [][]byte, _ []byte) [][]byte { return e }, [3]string{same, same, same}, ""},
	{"LF line ends", true, func(e [][]byte, _ []byte) [][]byte { return lines(e, "\n") }, [3]string{same, same, same}, ""},
	{"CR line ends", true, func(e [][]byte, _ []byte) [][]byte { return lines(e, "\r") }, [3]string{fails, same, dropsLast},
		"@ai-sdk/google (eventsource-parser) does not end the last event at the stream's end on a bare CR; go-genai splits only at \\n\\n or \\r\\n\\r\\n: the whole body is one token, whose data is no JSON"},
	{"data: without the space", true, func(e [][]byte, _ []byte) [][]byte {
		return mapEvents(e, func(ev []byte) []byte { return bytes.Replace(ev, []byte("data: "), []byte("data:"), 1) })
	}, [3]string{same, same, same}, ""},
	{"a comment event first (: keep-alive)", true, func(e [][]byte, _ []byte) [][]byte {
		return append([][]byte{[]byte(": keep-alive\r\n\r\n")}, e...)
	}, [3]string{fails, same, same}, "go-genai: a token whose prefix is not data is an error (invalid stream chunk)"},
	{"a comment event between the events", true, func(e [][]byte, _ []byte) [][]byte {
		return [][]byte{e[0], []byte(": keep-alive\r\n\r\n"), e[1]}
	}, [3]string{failsAfter, same, same}, "go-genai, as above"},
	{"a comment line inside the call's event", true, func(e [][]byte, _ []byte) [][]byte {
		return [][]byte{joined([]byte(": note\r\n"), e[0]), e[1]}
	}, [3]string{fails, missesCalls, same},
		"go-genai: the token's prefix is the comment's; @google/genai drops an event that does not start with data: (the call with it)"},
	{"event: lines", true, func(e [][]byte, _ []byte) [][]byte {
		return mapEvents(e, func(ev []byte) []byte { return joined([]byte("event: message\r\n"), ev) })
	}, [3]string{fails, missesCalls, same}, "@google/genai drops every event (none starts with data:); go-genai fails on the first"},
	{"id: lines after data:", true, func(e [][]byte, _ []byte) [][]byte {
		return mapEvents(e, func(ev []byte) []byte { return bytes.Replace(ev, []byte("\r\n\r\n"), []byte("\r\nid: 1\r\n\r\n"), 1) })
	}, [3]string{fails, fails, same}, "the genai clients take the rest of the event after data: as its JSON"},
	{"a retry: event first", true, func(e [][]byte, _ []byte) [][]byte {
		return append([][]byte{[]byte("retry: 1000\r\n\r\n")}, e...)
	}, [3]string{fails, same, same}, ""},
	{"a blank line pair (CRLF) between the events", true, func(e [][]byte, _ []byte) [][]byte {
		return [][]byte{e[0], []byte("\r\n\r\n"), e[1]}
	}, [3]string{same, same, same}, ""},
	{"a blank line pair (CRLF) first", true, func(e [][]byte, _ []byte) [][]byte {
		return append([][]byte{[]byte("\r\n\r\n")}, e...)
	}, [3]string{same, same, same}, ""},
	{"a blank line pair (LF) between CRLF events, one write", true, func(e [][]byte, _ []byte) [][]byte {
		return [][]byte{joined(e[0], []byte("\n\n"), e[1])}
	}, [3]string{failsAfter, same, same},
		"go-genai looks for \\n\\n before \\r\\n\\r\\n anywhere in its buffer: the token ends inside the blank lines, one \\n is left to start the next event"},
	{"a single CRLF between the events", true, func(e [][]byte, _ []byte) [][]byte {
		return [][]byte{e[0], []byte("\r\n"), e[1]}
	}, [3]string{failsAfter, same, same}, "go-genai: the next token starts with \\r\\n, its prefix is not data"},
	{"an empty data: event between the events", true, func(e [][]byte, _ []byte) [][]byte {
		return [][]byte{e[0], []byte("data:\r\n\r\n"), e[1]}
	}, [3]string{failsAfter, failsAfter, failsAfter}, "no JSON to read: @ai-sdk/google reports an error part and reads on (the finish and usage after it)"},
	{"a data: {} event between the events", true, func(e [][]byte, _ []byte) [][]byte {
		return [][]byte{e[0], []byte("data: {}\r\n\r\n"), e[1]}
	}, [3]string{extraChunk, extraChunk, extraChunk}, "an empty response, handed to the app (@ai-sdk/google: a raw chunk, and nothing else)"},
	{"the call's JSON over two data: lines", true, func(e [][]byte, _ []byte) [][]byte {
		return [][]byte{bytes.Replace(e[0], []byte(`,"role": "model"`), []byte(",\r\ndata: \"role\": \"model\""), 1), e[1]}
	}, [3]string{fails, fails, same}, "the genai clients read one data: line an event"},
	{"byte by byte", true, func(e [][]byte, _ []byte) [][]byte { return pieces(joined(e...), 1) }, [3]string{same, same, same}, ""},
	{"pieces of 7 bytes", true, func(e [][]byte, _ []byte) [][]byte { return pieces(joined(e...), 7) }, [3]string{same, same, same}, ""},
	{"split inside the blank line", true, func(e [][]byte, _ []byte) [][]byte {
		n := len(e[0]) - 2
		return [][]byte{e[0][:n], joined(e[0][n:], e[1])}
	}, [3]string{same, same, same}, ""},
	{"a BOM first", true, func(e [][]byte, _ []byte) [][]byte {
		return append([][]byte{[]byte("\uFEFF")}, e...)
	}, [3]string{fails, same, same}, "go-genai keeps the BOM in the first token's prefix; Node's TextDecoder drops it"},
	{"the last event without its blank line", true, func(e [][]byte, _ []byte) [][]byte {
		return [][]byte{e[0], bytes.TrimSuffix(e[1], []byte("\r\n\r\n"))}
	}, [3]string{same, failsAfter, dropsLast},
		"@ai-sdk/google (eventsource-parser) never dispatches it; go-genai reads what is left at the end as a token; @google/genai: Incomplete JSON segment at the end"},
	{"half of the last event, then the end", true, func(e [][]byte, _ []byte) [][]byte {
		return [][]byte{e[0], e[1][:len(e[1])/2]}
	}, [3]string{failsAfter, failsAfter, dropsLast}, "@ai-sdk/google never dispatches an event the stream ends in"},
	{"an error object in a data: event mid-stream", true, func(e [][]byte, _ []byte) [][]byte {
		return [][]byte{e[0], []byte("data: " + midStreamError + "\r\n\r\n"), e[1]}
	}, [3]string{failsAfter, failsAfter, failsAfter}, "@ai-sdk/google reports an error part and reads on (the finish after it)"},
	{"an unframed error object mid-stream, in a read of its own, last", true, func(e [][]byte, _ []byte) [][]byte {
		return [][]byte{e[0], []byte(midStreamError + "\r\n\r\n")}
	}, [3]string{failsAfter, failsAfter, dropsLast},
		"go-genai reads an unframed {\"error\"} token as an APIError; @google/genai throws on a network read that is an error object; @ai-sdk/google ignores a line without a known field"},
	{"an unframed error object mid-stream, in one read with the next event", true, func(e [][]byte, _ []byte) [][]byte {
		return [][]byte{e[0], joined([]byte(midStreamError+"\r\n\r\n"), e[1])}
	}, [3]string{failsAfter, same, same},
		"@google/genai tests each network read as a whole for an error object; this one is not JSON, and the event is dropped as not data:"},
	{"the JSON-array stream to an alt=sse request", true, func(_ [][]byte, _ []byte) [][]byte {
		return [][]byte{jsonArrayStream}
	}, [3]string{fails, fails, missesCalls}, "no client reads the JSON-array stream: each asks for alt=sse"},

	{"unary: as recorded", false, func(_ [][]byte, u []byte) [][]byte { return [][]byte{u} }, [3]string{same, same, same}, ""},
	{"unary: whitespace first, written while held", false, func(_ [][]byte, u []byte) [][]byte {
		return [][]byte{[]byte(" "), []byte("\n"), []byte("\r\n"), []byte("\t "), u}
	}, [3]string{same, same, same}, "JSON allows whitespace before the value"},
	{"unary: whitespace after", false, func(_ [][]byte, u []byte) [][]byte { return [][]byte{u, []byte("\r\n \n")} }, [3]string{same, same, same}, ""},
	{"unary: a BOM first", false, func(_ [][]byte, u []byte) [][]byte { return [][]byte{[]byte("\uFEFF"), u} }, [3]string{fails, same, same}, "fetch's text() and json() drop a leading BOM; encoding/json does not"},
	{"unary: an error object with HTTP 200", false, func(_ [][]byte, _ []byte) [][]byte { return [][]byte{[]byte(midStreamError)} },
		[3]string{missesCalls, missesCalls, missesCalls}, "only the status makes an error of a unary answer"},
	{"unary: one byte at a time", false, func(_ [][]byte, u []byte) [][]byte { return pieces(u, 1) }, [3]string{same, same, same}, ""},
}

// jsonArrayStream is the recorded JSON-array stream (no alt=sse).
var jsonArrayStream []byte

// lines rewrites the events' CRLFs.
func lines(events [][]byte, end string) [][]byte {
	return mapEvents(events, func(ev []byte) []byte { return bytes.ReplaceAll(ev, []byte("\r\n"), []byte(end)) })
}

func mapEvents(events [][]byte, f func([]byte) []byte) [][]byte {
	out := make([][]byte, len(events))
	for i, ev := range events {
		out[i] = f(append([]byte(nil), ev...))
	}
	return out
}

// TestGeminiStreamFramings writes the recorded Gemini 3 stream (and a
// recorded unary answer) in each framing of geminiFramings and asserts
// what each of the three clients makes of it against the bytes as
// recorded: the same, fails, fails after the calls, misses the calls,
// an extra chunk, or otherwise.
func TestGeminiStreamFramings(t *testing.T) {
	events := sseEvents(testkit.Fixture(t, "gemini", framingStream))
	unary := testkit.Fixture(t, "gemini", framingUnary)
	jsonArrayStream = testkit.Fixture(t, "gemini", "stream-json-array-function-call.json")
	if len(events) != 2 {
		t.Fatalf("%s: %d events, want 2", framingStream, len(events))
	}
	srv := newGeminiServer(t)
	cases := []geminiCase{
		{name: "baseline stream", stream: true, tools: geminiTools, answer: sseAnswer(events...)},
		{name: "baseline unary", stream: false, tools: geminiTools, answer: jsonAnswer(200, unary)},
	}
	for _, fr := range geminiFramings {
		a := sseAnswer(fr.pieces(events, unary)...)
		if !fr.stream {
			a = geminiAnswer{Header: http.Header{"Content-Type": {"application/json; charset=UTF-8"}}, Pieces: fr.pieces(events, unary)}
		}
		if strings.Contains(fr.name, "JSON-array") {
			a.Header = http.Header{"Content-Type": {"application/json; charset=UTF-8"}}
		}
		a.HoldAt, a.HoldSeen = framingHolds[fr.name], 1
		cases = append(cases, geminiCase{name: fr.name, stream: fr.stream, tools: geminiTools, answer: a})
	}
	seen, withNode := geminiReadings(t, srv, cases)
	var table strings.Builder
	for _, fr := range geminiFramings {
		base := seen["baseline unary"]
		if fr.stream {
			base = seen["baseline stream"]
		}
		if n := len(base[goGenai].Calls); n != 1 {
			t.Fatalf("go-genai read %d calls in the baseline, want 1: %s", n, base[goGenai])
		}
		got := [3]string{}
		for i, client := range geminiClients {
			s, ok := seen[fr.name][client]
			if !ok {
				got[i] = "-"
				continue
			}
			got[i] = framingOutcome(s, base[client])
			if got[i] != fr.want[i] {
				t.Errorf("%s: %s %s, want %s\n got:      %s\n baseline: %s", fr.name, client, got[i], fr.want[i], s, base[client])
			}
		}
		fmt.Fprintf(&table, "| %s | %s | %s | %s |\n", fr.name, got[0], got[1], got[2])
	}
	if !withNode {
		t.Log("only go-genai's readings were checked")
	}
	t.Logf("framing | go-genai | @google/genai | @ai-sdk/google\n%s", table.String())
}
