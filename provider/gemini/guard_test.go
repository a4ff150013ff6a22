package gemini

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/wire/shape"
	"github.com/toolgate/toolgate/wire/stream"
)

// OwnsEvent takes a chunk for Gemini's only when its one call key, in any
// case Go's encoding/json folds, is candidates (an array), and it carries
// no mark of Chat's, Responses' or Anthropic's events.
func TestOwnsEvent(t *testing.T) {
	for data, want := range map[string]bool{
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete"}}]}}],"usageMetadata":{}}`: true,
		`{"Candidates":[{"content":{"parts":[{"text":"delete"}]}}]}`:                                     true,
		`{"candidateſ":[{"content":{"parts":[{"text":"delete"}]}}],"modelVersion":"m"}`:                  true, // ſ folds to s
		`{"candidates":{"content":{"parts":[{"functionCall":{"name":"delete"}}]}}}`:                      false,
		`{"usageMetadata":{},"note":"delete"}`:                                                           false,
		`{"choices":[{"delta":{"tool_calls":[{"function":{"name":"delete"}}]}}]}`:                        false,
		`{"candidates":[],"choices":[{"delta":{"tool_calls":[{"function":{"name":"delete"}}]}}]}`:        false,
		`{"candidates":[],"Content":[{"type":"tool_use","name":"delete"}]}`:                              false,
		`{"candidates":[],"content_block":{"type":"tool_use","name":"delete"}}`:                          false,
		`{"candidates":[],"type":"content_block_start"}`:                                                 false,
		`{"candidates":[],"item":{"type":"function_call","name":"delete"}}`:                              false,
		`{"candidates":[],"type":"response.output_item.added"}`:                                          false,
		`{"candidates":[],"message":{"tool_calls":[{"function":{"name":"delete"}}]}}`:                    false,
		`{"candidates":[],"functionCall":{"name":"delete"}}`:                                             false,
		`["delete"]`: false,
		`delete`:     false,
	} {
		if got := (Provider{}).OwnsEvent([]byte(data)); got != want {
			t.Errorf("OwnsEvent(%s) = %v, want %v", data, got, want)
		}
	}
}

// A guarded Stream, in both framings and at every split, ends at a chunk
// in another protocol's shape naming a gated tool: what came before went
// out, the chunk does not, a call waiting for its finishReason is never
// written, and the stream ends in Gemini's error with
// stream.ErrNamesGated. Its own chunks naming the tool are read as
// before, and a foreign chunk naming none passes.
func TestStreamGuardRefusesForeignChunks(t *testing.T) {
	names := shape.NewNames([]string{"delete"})
	own := Provider{}.OwnsEvent
	text := `{"candidates":[{"content":{"role":"model","parts":[{"text":"I will not delete it."}]},"index":0}]}`
	waiting := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"delete","args":{"path":"/etc/secret"}}}]},"index":0}]}`
	chat := `{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"delete","arguments":"{}"}}]}}]}`
	both := `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"index":0}],"choices":[{"delta":{"tool_calls":[{"function":{"name":"delete"}}]}}]}`
	body := func(f Framing, chunks ...string) []byte {
		var b []byte
		for i, c := range chunks {
			switch {
			case f == SSE && strings.HasPrefix(c, ":"):
				b = append(b, c+"\n\n"...) // an event without data
			case f == SSE:
				b = AppendEvent(b, []byte(c), "\n")
			case i == 0:
				b = append(append(b, ArrayOpen...), c...)
			default:
				b = append(append(b, ArraySep...), c...)
			}
		}
		if f == JSONArray {
			b = append(b, ']')
		}
		return b
	}
	for _, f := range []Framing{SSE, JSONArray} {
		cases := map[string][]string{
			"a chat chunk":                    {text, chat},
			"candidates and choices":          {text, both},
			"a chat chunk while a call waits": {text, waiting, chat},
		}
		if f == SSE {
			cases["an event without data"] = []string{text, ": delete"}
		}
		for name, chunks := range cases {
			b := body(f, chunks...)
			for _, cuts := range append(splits(len(b)), nil) {
				var dst bytes.Buffer
				s := NewStream(context.Background(), f, &dst, nil, holder(map[string]bool{"delete": true}))
				s.GuardWith(names, own)
				err := writeAll(s, b, cuts)
				out := dst.String()
				if !errors.Is(err, stream.ErrNamesGated) || !strings.Contains(out, "I will not delete it.") ||
					strings.Contains(out, "/etc/secret") || strings.Contains(out, `"name":"delete"`) || strings.Contains(out, ": delete") ||
					!strings.Contains(out, `"status":"UNAVAILABLE"`) {
					t.Fatalf("%v, %s, cuts %v: %v; the app got %q", f, name, cuts, err, out)
				}
			}
		}
		// A foreign chunk naming no gated tool, and Gemini's own naming
		// one in its text, pass as they came.
		b := body(f, text, `{"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}`)
		var dst bytes.Buffer
		s := NewStream(context.Background(), f, &dst, nil, holder(map[string]bool{"delete": true}))
		s.GuardWith(names, own)
		if err := writeAll(s, b, nil); err != nil || dst.String() != string(b) {
			t.Errorf("%v, no gated name in the foreign chunk: %v; the app got %q", f, err, dst.String())
		}
	}
}

// writeAll writes b to s in the pieces cuts gives and closes it.
func writeAll(s *Stream, b []byte, cuts []int) error {
	prev := 0
	for _, at := range append(cuts, len(b)) {
		if at < prev {
			at = prev
		}
		if _, err := s.Write(b[prev:at]); err != nil {
			return err
		}
		prev = at
	}
	return s.Close()
}
