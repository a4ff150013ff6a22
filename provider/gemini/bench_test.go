package gemini

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/wire/shape"
)

// BenchmarkMayHoldCall is the cost every chunk without a call pays: the
// byte search alone.
func BenchmarkMayHoldCall(b *testing.B) {
	chunk := chunks(b, "stream-function-call-gemini3.sse")[1] // a finish chunk, no call
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		if MayHoldCall(chunk) {
			b.Fatal("a call in a finish chunk")
		}
	}
}

// BenchmarkMayHoldCallRecorded is the byte search on every chunk of the
// recorded streams, call chunks included (a chunk as Gemini and Vertex
// send them: text, thoughts, usageMetadata with many keys).
func BenchmarkMayHoldCallRecorded(b *testing.B) {
	var all [][]byte
	n := 0
	for _, f := range []string{"stream-function-call-gemini3.sse", "stream-function-call.sse", "stream-parallel-function-calls.sse", "vertex-stream-partial-args.sse", "vertex-stream-thought-no-args-and-partial-args.sse"} {
		for _, c := range chunks(b, f) {
			all = append(all, c)
			n += len(c)
		}
	}
	b.ReportAllocs()
	b.SetBytes(int64(n))
	for b.Loop() {
		for _, c := range all {
			MayHoldCall(c)
		}
	}
}

// BenchmarkCallsAndRewrite is the cost of a response with a held call.
func BenchmarkCallsAndRewrite(b *testing.B) {
	body := read(b, "parallel-function-calls.json")
	fates := []Fate{Held, Passed}
	texts := map[int]string{0: "wait"}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		calls, err := Calls(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Rewrite(body, calls, fates, texts); err != nil {
			b.Fatal(err)
		}
	}
}

// textChunk is a text chunk as Gemini streams them.
const textChunk = `{"candidates":[{"content":{"parts":[{"text":"Berlin is the capital of Germany and its largest city by population."}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"r"}`

// BenchmarkMayHoldCallText is the byte search on a text chunk.
func BenchmarkMayHoldCallText(b *testing.B) {
	chunk := []byte(textChunk)
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		if MayHoldCall(chunk) {
			b.Fatal("a call in a text chunk")
		}
	}
}

// BenchmarkStreamText is what a text answer pays going through a Stream:
// 200 text chunks, in 512-byte writes, no call.
func BenchmarkStreamText(b *testing.B) {
	var body []byte
	for range 200 {
		body = AppendEvent(body, []byte(textChunk), "\r\n")
	}
	benchStream(b, SSE, body)
}

// BenchmarkStreamArrayText is BenchmarkStreamText in the JSON array (a
// stream without alt=sse).
func BenchmarkStreamArrayText(b *testing.B) {
	body := []byte("[")
	for i := range 200 {
		if i > 0 {
			body = append(body, ArraySep...)
		}
		body = append(body, textChunk...)
	}
	benchStream(b, JSONArray, append(body, ']'))
}

// BenchmarkTurnJSONText is a unary 2 KB text answer through a Turn, as
// the glue hands it over.
func BenchmarkTurnJSONText(b *testing.B) {
	text := strings.Repeat("The meetup moved to Friday. ", 60)
	body := []byte(`{"candidates":[{"content":{"parts":[{"text":"` + text + `"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":300,"totalTokenCount":310},"modelVersion":"gemini-2.5-flash","responseId":"bench"}`)
	req := []byte(`{"contents":[{"role":"user","parts":[{"text":"When is the meetup?"}]}]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		t := Provider{}.NewTurn(context.Background(), holder(nil), req, 2)
		if err := t.JSON(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTurnStreamText is BenchmarkStreamText through a Turn, as the
// glue hands a stream over: with a 2 KB request, for what the turn reads
// of it.
func BenchmarkTurnStreamText(b *testing.B) {
	var body []byte
	for range 200 {
		body = AppendEvent(body, []byte(textChunk), "\r\n")
	}
	var contents []string
	for i := 0; len(strings.Join(contents, ",")) < 1900; i++ {
		contents = append(contents, `{"role":"user","parts":[{"text":"Message `+strings.Repeat("x", i%10)+`: tell me about the spring meetup and what we planned."}]}`)
	}
	req := []byte(`{"contents":[` + strings.Join(contents, ",") + `],"generationConfig":{"temperature":0.2}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		t := Provider{}.NewTurn(context.Background(), holder(nil), req, 2)
		s := t.Stream(io.Discard, nil)
		for p := body; len(p) > 0; {
			n := min(512, len(p))
			if _, err := s.Write(p[:n]); err != nil {
				b.Fatal(err)
			}
			p = p[n:]
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchStream(b *testing.B, f Framing, body []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		s := NewStream(context.Background(), f, io.Discard, nil, holder(nil))
		for p := body; len(p) > 0; {
			n := min(512, len(p))
			if _, err := s.Write(p[:n]); err != nil {
				b.Fatal(err)
			}
			p = p[n:]
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamHeld is a recorded stream whose gated call is held.
func BenchmarkStreamHeld(b *testing.B) {
	body := read(b, "stream-parallel-function-calls.sse")
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		s := NewStream(context.Background(), SSE, io.Discard, nil, holder(nil, Held, Passed))
		if _, err := s.Write(body); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamGuarded is a 200-chunk text stream as the turn runs it on
// a gated route: each chunk, one word apart, searched for the e2e test
// policy's gated tools (GuardWith) and for a call key, in Gemini's CRLF
// framing, one event per Write as a provider's flushes arrive.
func BenchmarkStreamGuarded(b *testing.B) {
	var events [][]byte
	n := 0
	for i := range 200 {
		chunk := `{"candidates":[{"content":{"parts":[{"text":"word` + strconv.Itoa(i) + ` "}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"bench"}`
		events = append(events, AppendEvent(nil, []byte(chunk), "\r\n"))
		n += len(events[i])
	}
	names := shape.NewNames([]string{"delete_post", "send_email", "post_note", "weather", "calculator", "get_weather", "get_stock_price"})
	b.ReportAllocs()
	b.SetBytes(int64(n))
	for b.Loop() {
		s := NewStream(context.Background(), SSE, io.Discard, nil, holder(nil))
		s.GuardWith(names, Provider{}.OwnsEvent)
		for _, ev := range events {
			if _, err := s.Write(ev); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
