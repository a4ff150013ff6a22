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
