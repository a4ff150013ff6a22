package gemini

import (
	"context"
	"io"
	"testing"
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

// BenchmarkStreamText is what a text answer pays going through a Stream:
// 200 text chunks, in 512-byte writes, no call.
func BenchmarkStreamText(b *testing.B) {
	var body []byte
	for range 200 {
		body = AppendEvent(body, []byte(`{"candidates":[{"content":{"parts":[{"text":"Berlin is the capital of Germany and its largest city by population."}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"r"}`), "\r\n")
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		s := NewStream(context.Background(), SSE, io.Discard, nil, &fakeHolder{})
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
		s := NewStream(context.Background(), SSE, io.Discard, nil, &fakeHolder{fates: []Fate{Held, Passed}})
		if _, err := s.Write(body); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
