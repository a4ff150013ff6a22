package differential

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testkit"
)

// What the gate can write while it holds a Gemini stream open and waits
// (resume keeps a held stream alive with keep-alives) that all three
// clients ignore. The stream under test is what a held answer looks like:
// a first event with the waiting text, the wait, then the rest of the
// recorded Gemini 3 stream (the call, then the finish). The server holds
// the stream after the first event until the client has shown the app
// read it, so the keep-alives come while the app waits.

// waitingEvent is the held answer's first event: the waiting text.
const waitingEvent = `data: {"candidates": [{"content": {"parts": [{"text": "Waiting for your confirmation: http://127.0.0.1:1/toolgate/h/aaaaaaaaaaaaaaaaaaaaaaaaaa"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 29,"totalTokenCount": 29},"modelVersion": "gemini-3-pro-preview","responseId": "QUVVadTSNJ6_qtsPvN7J8Q0"}` + "\r\n\r\n"

// keepAlive is a keep-alive candidate and what each client (go-genai,
// @google/genai, @ai-sdk/google) makes of the stream with it, in every
// placement (keepAlivePlacements) unless byPlacement says otherwise.
type keepAlive struct {
	name        string
	bytes       string
	want        [3]string
	byPlacement map[string][3]string
	why         string
}

var keepAlives = []keepAlive{
	{name: "a blank line pair, CRLF (\\r\\n\\r\\n)", bytes: "\r\n\r\n", want: [3]string{same, same, same},
		why: "go-genai skips an empty token; @google/genai drops an empty event; an SSE reader dispatches nothing"},
	{name: "a blank line pair, LF (\\n\\n)", bytes: "\n\n", want: [3]string{same, same, same},
		byPlacement: map[string][3]string{"in the write of the event before": {failsAfterWaiting, same, same}},
		why:         "go-genai looks for \\n\\n before \\r\\n\\r\\n: after a CRLF event in the same read it ends the token inside the blank lines and leaves an \\n that the next event's prefix then holds"},
	{name: "one CRLF", bytes: "\r\n", want: [3]string{failsAfterWaiting, same, same},
		byPlacement: map[string][3]string{"many in one write": {same, same, same}},
		why:         "go-genai: an odd count leaves one at the start of the next token, whose prefix is then not data (fifty in one write make blank line pairs)"},
	{name: "one LF", bytes: "\n", want: [3]string{failsAfterWaiting, same, same},
		byPlacement: map[string][3]string{"in the write of the event before": {same, same, same}, "many in one write": {same, same, same}},
		why:         "as one CRLF: whether go-genai fails depends on how many reach it between two events and where its token ends (after a CRLF event, the first LF of the three ends a \n\n)"},
	{name: "an SSE comment (: keep-alive)", bytes: ": keep-alive\r\n\r\n", want: [3]string{failsAfterWaiting, same, same},
		why: "go-genai: any token whose prefix is not data is an error"},
	{name: "an event: ping event", bytes: "event: ping\r\n\r\n", want: [3]string{failsAfterWaiting, same, same}, why: "as a comment"},
	{name: "an empty data: event", bytes: "data:\r\n\r\n", want: [3]string{failsAfterWaiting, failsAfterWaiting, failsAfter},
		why: "no JSON; @ai-sdk/google reports an error part and reads on (the calls after it)"},
	{name: "a data: {} event", bytes: "data: {}\r\n\r\n", want: [3]string{extraChunk, extraChunk, extraChunk},
		why: "an empty response, handed to the app"},
	{name: "a space", bytes: " ", want: [3]string{failsAfterWaiting, same, missesCalls},
		why: "the next line starts with it: go-genai's token prefix and the SSE field name become \" data\" (an error for go-genai, an unknown field @ai-sdk/google skips, the call's event with it); @google/genai trims events"},
}

// failsAfterWaiting: an error after the waiting text, before the calls.
const failsAfterWaiting = "fails after the waiting text"

// keepAlivePlacements write the keep-alives (three of them) into the held
// stream: waiting event, [hold], the rest.
var keepAlivePlacements = []struct {
	name   string
	pieces func(waiting, ka []byte, rest [][]byte) [][]byte
	paced  bool
}{
	{"alone, one write each, while held", func(w, ka []byte, rest [][]byte) [][]byte {
		return append([][]byte{w, ka, ka, ka}, rest...)
	}, true},
	{"in the write of the event before", func(w, ka []byte, rest [][]byte) [][]byte {
		return append([][]byte{joined(w, ka), ka, ka}, rest...)
	}, false},
	{"in the write of the event after", func(w, ka []byte, rest [][]byte) [][]byte {
		return [][]byte{w, ka, ka, joined(ka, rest[0]), rest[1]}
	}, false},
	{"many in one write", func(w, ka []byte, rest [][]byte) [][]byte {
		return append([][]byte{w, bytes.Repeat(ka, 50)}, rest...)
	}, false},
}

// keepAliveOutcome is framingOutcome, with the error after the waiting
// text named.
func keepAliveOutcome(got, base geminiSeen) string {
	o := framingOutcome(got, base)
	if o == fails && got.Chunks >= 1 && strings.HasPrefix(got.Text, "Waiting for your confirmation") {
		return failsAfterWaiting
	}
	return o
}

// TestGeminiKeepAlivesWhileHeld writes each keep-alive candidate into a
// held Gemini stream, in each placement, and asserts what each client
// makes of it against the same held stream without keep-alives (which
// each must read whole: the waiting text, then the call and the finish).
// The one all three ignore in every placement is a blank line pair in the
// stream's own line ends (\r\n\r\n: Gemini writes CRLF); the rest break
// go-genai at least.
func TestGeminiKeepAlivesWhileHeld(t *testing.T) {
	rest := sseEvents(testkit.Fixture(t, "gemini", framingStream))
	waiting := []byte(waitingEvent)
	srv := newGeminiServer(t)
	held := func(pieces [][]byte, paced bool) geminiAnswer {
		a := sseAnswer(pieces...)
		a.HoldAt, a.HoldSeen, a.Paced = 1, 1, paced
		return a
	}
	cases := []geminiCase{{name: "held, no keep-alive", stream: true, tools: geminiTools, answer: held(append([][]byte{waiting}, rest...), false)}}
	for _, ka := range keepAlives {
		for _, pl := range keepAlivePlacements {
			cases = append(cases, geminiCase{name: ka.name + " / " + pl.name, stream: true, tools: geminiTools,
				answer: held(pl.pieces(waiting, []byte(ka.bytes), rest), pl.paced)})
		}
	}
	seen, _ := geminiReadings(t, srv, cases)
	base := seen["held, no keep-alive"]
	for _, client := range geminiClients {
		b, ok := base[client]
		if !ok {
			continue
		}
		if b.Error != "" || b.Chunks != 3 || len(b.Calls) != 1 || b.Finish != "STOP" || !strings.HasPrefix(b.Text, "Waiting for your confirmation") {
			t.Fatalf("%s did not read the held stream whole: %s", client, b)
		}
	}
	var table strings.Builder
	for _, ka := range keepAlives {
		for _, pl := range keepAlivePlacements {
			name := ka.name + " / " + pl.name
			want := ka.want
			if w, ok := ka.byPlacement[pl.name]; ok {
				want = w
			}
			got := [3]string{}
			for i, client := range geminiClients {
				s, ok := seen[name][client]
				if !ok {
					got[i] = "-"
					continue
				}
				got[i] = keepAliveOutcome(s, base[client])
				if got[i] != want[i] {
					t.Errorf("%s: %s %s, want %s\n got:      %s\n baseline: %s", name, client, got[i], want[i], s, base[client])
				}
			}
			fmt.Fprintf(&table, "| %s | %s | %s | %s | %s |\n", ka.name, pl.name, got[0], got[1], got[2])
		}
	}
	t.Logf("keep-alive | placement | go-genai | @google/genai | @ai-sdk/google\n%s", table.String())
}
