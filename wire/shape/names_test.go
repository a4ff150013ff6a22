package shape

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/wire/keyscan"
)

// namedBefore is Named as it was: one bytes.Index per name, in order. The
// one-pass search must answer as it does (FuzzNamedAsBefore).
func namedBefore(names [][]byte, b []byte) string {
	isNameByte := func(c byte) bool { return keyscan.IsKeyByte(c) || c == '-' }
	for _, name := range names {
		for i := 0; ; {
			j := bytes.Index(b[i:], name)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(name)
			if (start == 0 || !isNameByte(b[start-1])) && (end == len(b) || !isNameByte(b[end])) {
				return string(name)
			}
			i = start + 1
		}
	}
	if keyscan.HasEscape(b) {
		return "an escaped name"
	}
	return ""
}

// TestNamedFirstGiven: when a body names several gated tools, the one
// given first is reported, whatever their order in the body, names with
// other bytes ('.', ':') included.
func TestNamedFirstGiven(t *testing.T) {
	n := NewNames([]string{"send_email", "a.b", "delete_post", "x:y", "send_email"})
	for body, want := range map[string]string{
		`delete_post then send_email`: "send_email",
		`delete_post then a.b`:        "a.b",
		`x:y then delete_post`:        "delete_post",
		`x:y only`:                    "x:y",
		`aa.b and xa.bc`:              "",
		`a.b_ and delete_posts`:       "",
	} {
		if got := n.Named([]byte(body)); got != want {
			t.Errorf("%s: named %q, want %q", body, got, want)
		}
	}
}

// FuzzNamedAsBefore holds the one-pass search to the search per name it
// replaced, for any names and any bytes.
func FuzzNamedAsBefore(f *testing.F) {
	f.Add("delete_post,send-email,a.b", []byte(`{"name":"delete_post"} send-email a.b`))
	f.Add("x,xx,x-x,_", []byte(`x-x xx _x x`))
	f.Add("get_weather,weather", []byte(`{"text":"weather get_weather\u005f"}`))
	f.Add(strings.Repeat("n", 130)+",n", []byte(strings.Repeat("n", 130)))
	f.Add(",", []byte(`\u0061`)) // names all empty: an escape is still found, as before
	f.Fuzz(func(t *testing.T, list string, b []byte) {
		var names [][]byte
		var tools []string
		for _, t := range strings.Split(list, ",") {
			tools = append(tools, t)
			if t != "" {
				names = append(names, []byte(t))
			}
		}
		got := NewNames(tools).Named(b)
		if want := namedBefore(names, b); got != want {
			t.Fatalf("names %q in %q: named %q, before %q", list, b, got, want)
		}
	})
}

// benchNames are the e2e test policy's gated tools.
var benchNames = []string{"delete_post", "send_email", "post_note", "weather", "calculator", "get_weather", "get_stock_price"}

// BenchmarkNamed searches the test policy's names in a Gemini text chunk
// (an SSE event) and in a 2 KB Chat text answer, neither naming one;
// -before runs the search per name it replaced.
func BenchmarkNamed(b *testing.B) {
	chunk := []byte("data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"The posting schedule was discussed with the whole team, and we decided to keep drafts for seven days.\"}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 12,\"candidatesTokenCount\": 20,\"totalTokenCount\": 32},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"Y8tTadLTH5XqjMcP7pCKgQo\"}\r\n\r\n")
	text := strings.Repeat("Please describe the weekly post schedule, the drafts we keep and what we send each week. ", 20)
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"` + text + `"},"finish_reason":"stop"}]}`)
	n := NewNames(benchNames)
	var before [][]byte
	for _, t := range benchNames {
		before = append(before, []byte(t))
	}
	for _, c := range []struct {
		name string
		body []byte
	}{{"chunk", chunk}, {"answer", answer}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				if n.Named(c.body) != "" {
					b.Fatal("named")
				}
			}
		})
		b.Run(c.name+"-before", func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				if namedBefore(before, c.body) != "" {
					b.Fatal("named")
				}
			}
		})
	}
}
