package differential

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
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
		byPlacement: map[string][3]string{"in the write of the event before": {sameOrFailsAfterWaiting, same, same}},
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

// lfKeepAlives are written into the same held stream framed with LF line
// ends: the blank line pair must be the stream's own.
var lfKeepAlives = []keepAlive{
	{name: "LF stream: a blank line pair, LF (\\n\\n)", bytes: "\n\n", want: [3]string{same, same, same}},
	{name: "LF stream: a blank line pair, CRLF (\\r\\n\\r\\n)", bytes: "\r\n\r\n", want: [3]string{same, same, same},
		byPlacement: map[string][3]string{"in the write of the event after": {sameOrFailsAfterWaiting, same, same}},
		why:         "go-genai fails when its buffer holds the keep-alive and the whole next event: it finds the event's \\n\\n first, so its token starts with the CRLFs (TestGoGenaiBlankLinesOfTheOtherLineEnd); with its first 1 KiB buffer it usually holds only part of the event"},
}

// failsAfterWaiting: an error after the waiting text, before the calls.
const failsAfterWaiting = "fails after the waiting text"

// sameOrFailsAfterWaiting: one or the other, by how the reads fall.
const sameOrFailsAfterWaiting = same + " or " + failsAfterWaiting

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
	lf := func(ps [][]byte) [][]byte {
		return mapEvents(ps, func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")) })
	}
	waitingLF, restLF := lf([][]byte{waiting})[0], lf(rest)
	cases := []geminiCase{
		{name: "held, no keep-alive", stream: true, tools: geminiTools, answer: held(append([][]byte{waiting}, rest...), false)},
		{name: "held, LF, no keep-alive", stream: true, tools: geminiTools, answer: held(append([][]byte{waitingLF}, restLF...), false)},
	}
	for _, ka := range keepAlives {
		for _, pl := range keepAlivePlacements {
			cases = append(cases, geminiCase{name: ka.name + " / " + pl.name, stream: true, tools: geminiTools,
				answer: held(pl.pieces(waiting, []byte(ka.bytes), rest), pl.paced)})
		}
	}
	for _, ka := range lfKeepAlives {
		for _, pl := range keepAlivePlacements {
			cases = append(cases, geminiCase{name: ka.name + " / " + pl.name, stream: true, tools: geminiTools,
				answer: held(pl.pieces(waitingLF, []byte(ka.bytes), restLF), pl.paced)})
		}
	}
	seen, _ := geminiReadings(t, srv, cases)
	for _, name := range []string{"held, no keep-alive", "held, LF, no keep-alive"} {
		for _, client := range geminiClients {
			b, ok := seen[name][client]
			if !ok {
				continue
			}
			if b.Error != "" || b.Chunks != 3 || len(b.Calls) != 1 || b.Finish != "STOP" || !strings.HasPrefix(b.Text, "Waiting for your confirmation") {
				t.Fatalf("%s did not read the %s stream whole: %s", client, name, b)
			}
		}
	}
	var table strings.Builder
	for _, ka := range slices.Concat(keepAlives, lfKeepAlives) {
		base := seen["held, no keep-alive"]
		if strings.HasPrefix(ka.name, "LF stream") {
			base = seen["held, LF, no keep-alive"]
		}
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
				if got[i] != want[i] && !(want[i] == sameOrFailsAfterWaiting && (got[i] == same || got[i] == failsAfterWaiting)) {
					t.Errorf("%s: %s %s, want %s\n got:      %s\n baseline: %s", name, client, got[i], want[i], s, base[client])
				}
			}
			fmt.Fprintf(&table, "| %s | %s | %s | %s | %s |\n", ka.name, pl.name, got[0], got[1], got[2])
		}
	}
	t.Logf("keep-alive | placement | go-genai | @google/genai | @ai-sdk/google\n%s", table.String())
}

// goGenaiSeenWith streams with go-genai through the given HTTP client.
func goGenaiSeenWith(c *http.Client) geminiSeen {
	return goGenaiSeenClient(context.Background(), "http://provider.invalid", nil, true, nil, nil, c)
}

// TestGoGenaiBlankLinesOfTheOtherLineEnd: go-genai's scanner looks for
// \n\n anywhere in what it holds before it looks for \r\n\r\n, so a blank
// line pair in the other line ends than the events', held in one buffer
// with them, ends a token in the wrong place: the next token starts with a
// line end and its prefix is not data (an error). The body is handed over
// in one read (no network), so the buffer holds it all.
func TestGoGenaiBlankLinesOfTheOtherLineEnd(t *testing.T) {
	small := func(text, end string) string {
		return `data: {"candidates": [{"content": {"parts": [{"text": "` + text + `"}],"role": "model"},"index": 0}]}` + end + end
	}
	for _, tc := range []struct {
		name, body string
		wantErr    bool
	}{
		{"CRLF events", small("a", "\r\n") + small("b", "\r\n"), false},
		{"CRLF events, a CRLF pair between", small("a", "\r\n") + "\r\n\r\n" + small("b", "\r\n"), false},
		{"CRLF events, an LF pair between", small("a", "\r\n") + "\n\n" + small("b", "\r\n"), true},
		{"LF events, an LF pair between", small("a", "\n") + "\n\n" + small("b", "\n"), false},
		{"LF events, a CRLF pair between", small("a", "\n") + "\r\n\r\n" + small("b", "\n"), true},
	} {
		rt := roundTrip{status: 200, header: http.Header{"Content-Type": {"text/event-stream"}}, body: []byte(tc.body)}
		s := goGenaiSeenWith(&http.Client{Transport: rt})
		if (s.Error != "") != tc.wantErr || s.Text == "" {
			t.Errorf("%s: go-genai read %s, want an error: %v (after the first text)", tc.name, s, tc.wantErr)
		}
	}
}
