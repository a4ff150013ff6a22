package shape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// topSeeds are bodies readsTop must read as gjson does, or leave to it:
// the providers' answers, another's shape, two at once, duplicate keys,
// escapes in keys and strings, parentheses and brackets in strings and
// out, literals, numbers, bodies cut short or followed by more.
var topSeeds = []string{
	`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi \"there\" \\"}}],"usage":{"total_tokens":3}}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete_post","args":{"post":7}}}]}}],"usageMetadata":{}}`,
	`{"id":"msg","type":"message","content":[{"type":"tool_use","name":"delete_post","input":{}}],"stop_reason":"tool_use"}`,
	`{"id":"resp","object":"response","output":[{"type":"function_call","name":"delete_post","arguments":"{}"}]}`,
	`{"choices":[],"tool_calls":[{"function":{"name":"delete_post"}}]}`,
	`{"choices":[],"CHOICES":{}}`,
	`{"Choices":[] , "choices" : [ ] }`,
	`{"choices":"x"}`,
	`{"ch\u006fices":[]}`,
	`{"choi\"ces":[]}`,
	`{"choices":["(",")"],"x":"]}"}`,
	`{"choices":[(1)]}`,
	`{"choices":[1,2}`,
	`{"choices":[{"a":[}]}`,
	`{"choices":[],"n":-1.5e+3,"t":true,"f":false,"z":null}`,
	`{"choices":[],"n":-}`,
	`{"choices":[],"t":tru}`,
	`{"choices":[]} {"tool_calls":[]}`,
	`{"choices":[]}` + "\n",
	`{"choices":[]`,
	`{}`,
	` { } `,
	`[]`,
	`"choices"`,
	``,
	`{"choices":["\\\\\"]"]}`,
	`{"ſhoices":[]}`,
	`{"message":{"tool_calls":[]},"choices":[]}`,
	"{\"choices\":[],\x01\"x\":1}",
	`{"choices":[],}`,
	`{,"choices":[]}`,
	`{"choices"[]}`,
	`{"choices":[]"x":1}`,
}

// FuzzReadsTopAsReads: where readsTop is sure, it answers as gjson's
// reading does.
func FuzzReadsTopAsReads(f *testing.F) {
	for _, s := range topSeeds {
		f.Add(s, "choices")
	}
	f.Add(`{"candidates":[]}`, "candidates")
	f.Add(`{"output":{}}`, "output")
	f.Fuzz(func(t *testing.T, body, key string) {
		if r, sure := readsTop(key, []byte(body)); sure {
			if want := readsParsed(key, []byte(body)); r != want {
				t.Fatalf("readsTop(%q, %q) = %v, gjson reads %v", key, body, r, want)
			}
		}
	})
}

// The seeds as above, and which of them readsTop is sure of: every
// provider's usual answer (so that the gate's fast path is taken), none
// whose reading it would have to guess.
func TestReadsTop(t *testing.T) {
	unsure := map[string]bool{
		`{"ch\u006fices":[]}`: true, `{"choices":[(1)]}`: true, `{"choices":[1,2}`: true,
		`{"choices":[]} {"tool_calls":[]}`: true, `{"choices":[]`: true, `[]`: true, `"choices"`: true, ``: true,
		`{"ſhoices":[]}`: true, "{\"choices\":[],\x01\"x\":1}": true, `{"choices":[],}`: true, `{,"choices":[]}`: true,
		`{"choices"[]}`: true, `{"choices":[]"x":1}`: true, `{"choices":[],"t":tru}`: true, `{"choices":[{"a":[}]}`: true,
		`{"choi\"ces":[]}`: true,
	}
	// An answer key outside ASCII (no adapter's is) may fold onto an
	// ASCII key ("ſ" onto "S"): left to gjson.
	if _, sure := readsTop("ſ", []byte(`{"S":[]}`)); sure {
		t.Error(`readsTop("ſ", {"S":[]}) is sure`)
	}
	for _, s := range topSeeds {
		r, sure := readsTop("choices", []byte(s))
		if sure == unsure[s] {
			t.Errorf("%q: sure %v", s, sure)
		}
		if sure && r != readsParsed("choices", []byte(s)) {
			t.Errorf("%q: %v, gjson reads %v", s, r, !r)
		}
	}
}

// readsTop is sure of the recorded answers and requests in the
// repository's fixtures (copied from the providers, with their sources)
// that are JSON objects, and reads them as gjson does.
func TestReadsTopRecordedAnswers(t *testing.T) {
	n := 0
	for _, dir := range []string{"../../testdata/fixtures"} {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil || !strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
				return nil
			}
			for _, key := range []string{"choices", "candidates", "content", "output"} {
				r, sure := readsTop(key, b)
				if !sure {
					t.Errorf("%s: not sure", p)
					return nil
				}
				if r != readsParsed(key, b) {
					t.Errorf("%s, %s: %v, gjson reads %v", p, key, r, !r)
				}
			}
			n++
			return nil
		})
	}
	if n == 0 {
		t.Fatal("no recorded answer read")
	}
	t.Logf("%d recorded answers", n)
}

// BenchmarkReads: a 2 KB Chat text answer read by its top-level keys
// (readsTop), by gjson (readsParsed), and searched for the test policy's
// names (Named), which checkShape asked first before.
func BenchmarkReads(b *testing.B) {
	text := strings.Repeat("Please describe the weekly post schedule, the drafts we keep and what we send each week. ", 20)
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"` + text + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":300,"total_tokens":310}}`)
	b.Run("top", func(b *testing.B) {
		b.SetBytes(int64(len(answer)))
		for b.Loop() {
			if r, sure := readsTop("choices", answer); !r || !sure {
				b.Fatal("not read")
			}
		}
	})
	b.Run("gjson", func(b *testing.B) {
		b.SetBytes(int64(len(answer)))
		for b.Loop() {
			if !readsParsed("choices", answer) {
				b.Fatal("not read")
			}
		}
	})
	n := NewNames(benchNames)
	b.Run("named", func(b *testing.B) {
		b.SetBytes(int64(len(answer)))
		for b.Loop() {
			if n.Named(answer) != "" {
				b.Fatal("named")
			}
		}
	})
}

// eventSeeds are events' data EventMarks must mark as gjson's reading
// does, or leave to it: each provider's events, two at once, a type in
// any case, escaped, not a string, twice.
var eventSeeds = []string{
	`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`,
	`{"type":"message_start","message":{"id":"m","content":[]}}`,
	`{"type":"response.output_text.delta","item_id":"i","delta":"hi","sequence_number":3}`,
	`{"type":"response.output_item.added","item":{"type":"function_call","name":"delete_post"}}`,
	`{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},"index":0}],"modelVersion":"g"}`,
	`{"TYPE":"ping"}`,
	`{"type":"respon\u0073e.created"}`,
	`{"type":"ping\\"}`,
	`{"type":7,"choices":[]}`,
	`{"type":null}`,
	`{"type":{"x":"response.a"}}`,
	`{"type":["message_stop"]}`,
	`{"type":"ping","type":"response.done"}`,
	`{"Choices":[],"tool_calls":[]}`,
	`{"message":{},"content_block":{},"item":{}}`,
	`{"functionCall":{"name":"delete_post"}}`,
	`{"type":"ping"} x`,
	`[{"type":"ping"}]`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}`,
}

// FuzzEventMarksTopAsParsed: where eventMarksTop is sure, it marks an
// event as gjson's reading does.
func FuzzEventMarksTopAsParsed(f *testing.F) {
	for _, s := range append(eventSeeds, topSeeds...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		if m, sure := eventMarksTop([]byte(data)); sure {
			if want := eventMarksParsed([]byte(data)); m != want {
				t.Fatalf("eventMarksTop(%q) = %b, gjson reads %b", data, m, want)
			}
		}
	})
}

// TestEventMarksTop: the seeds marked as gjson reads them, and which it
// is sure of; and every data line of the recorded streams in the
// repository's fixtures is read sure and alike (so that a stream's fast
// path is taken), but [DONE].
func TestEventMarksTop(t *testing.T) {
	unsure := map[string]bool{
		`{"type":"respon\u0073e.created"}`: true, `{"type":"ping\\"}`: true,
		`{"type":"ping"} x`: true, `[{"type":"ping"}]`: true,
	}
	for _, s := range eventSeeds {
		m, sure := eventMarksTop([]byte(s))
		if sure == unsure[s] {
			t.Errorf("%q: sure %v", s, sure)
		}
		if sure && m != eventMarksParsed([]byte(s)) {
			t.Errorf("%q: %b, gjson reads %b", s, m, eventMarksParsed([]byte(s)))
		}
	}
	n := 0
	filepath.WalkDir("../../testdata/fixtures", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".sse") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") {
			data, ok := strings.CutPrefix(line, "data:")
			data = strings.TrimPrefix(data, " ")
			if !ok || data == "[DONE]" {
				continue
			}
			m, sure := eventMarksTop([]byte(data))
			if !sure {
				t.Errorf("%s: not sure of %.80s", p, data)
				continue
			}
			if want := eventMarksParsed([]byte(data)); m != want {
				t.Errorf("%s: %.80s: %b, gjson reads %b", p, data, m, want)
			}
			n++
		}
		return nil
	})
	if n < 50 {
		t.Fatalf("%d recorded events read", n)
	}
	t.Logf("%d recorded events", n)
}

// BenchmarkEventMarks: a Chat chunk and a Gemini chunk marked by their
// top-level keys (eventMarksTop) and by gjson (eventMarksParsed).
func BenchmarkEventMarks(b *testing.B) {
	for _, c := range []struct{ name, data string }{
		{"chat", `{"id":"chatcmpl-outside","object":"chat.completion.chunk","created":1727346178,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5050236cbd","choices":[{"index":0,"delta":{"content":"word7 "},"logprobs":null,"finish_reason":null}]}`},
		{"gemini", `{"candidates":[{"content":{"parts":[{"text":"word7 "}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"bench"}`},
	} {
		data := []byte(c.data)
		b.Run(c.name+"/top", func(b *testing.B) {
			for b.Loop() {
				if _, sure := eventMarksTop(data); !sure {
					b.Fatal("not sure")
				}
			}
		})
		b.Run(c.name+"/gjson", func(b *testing.B) {
			for b.Loop() {
				eventMarksParsed(data)
			}
		})
	}
}
