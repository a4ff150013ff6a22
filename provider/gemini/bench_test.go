package gemini

import "testing"

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
