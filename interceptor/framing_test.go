package interceptor

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/wire/sse"
)

// hideVariants frames the events of a call so that a reader splitting
// lines at LF only would not read them, while the Node SDKs (which split
// at CR, LF and CRLF and drop a BOM at each line start) do.
func hideVariants(callEvents string) map[string]string {
	return map[string]string{
		"a comment ended by a bare CR before it": ": keep-alive\r" + callEvents,
		"bare CR line ends":                      strings.ReplaceAll(callEvents, "\n", "\r"),
		"a BOM at the line start":                "\ufeff" + callEvents,
		"CRLF line ends":                         strings.ReplaceAll(callEvents, "\n", "\r\n"),
	}
}

// nodeSees reports whether any event a Node SDK would dispatch from out
// carries s in its data, bar the error event that ends a stream the gate
// stopped (its message may name the tool).
func nodeSees(out []byte, s string) bool {
	for _, ev := range sse.Parse(out) {
		if ev.Type == "error" || gjson.Get(ev.Data, "error").Exists() {
			continue
		}
		if strings.Contains(ev.Data, s) {
			return true
		}
	}
	return false
}

func TestChatStreamReadsEveryLineEnd(t *testing.T) {
	call := `{"index":0,"id":"call_1","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}"}}`
	for name, hidden := range hideVariants(chunk(deltaChoice(0, toolDelta(call))) + chunk(finishChoice(0, "tool_calls"))) {
		t.Run(name, func(t *testing.T) {
			in := chunk(deltaChoice(0, `{"role":"assistant","content":""}`)) + hidden + "data: [DONE]\n\n"
			for _, size := range []int{len(in), 1, 7} {
				h := providertest.NewHolder("delete_post")
				out, _, err := rewriteStream([]byte(in), h, size)
				if err != nil {
					t.Fatalf("pieces of %d: %v", size, err)
				}
				if nodeSees(out, "delete_post") || len(h.Holds()) != 1 || !nodeSees(out, "Waiting for your confirmation") {
					t.Fatalf("pieces of %d: the call reached the app (held %d times):\n%s", size, len(h.Holds()), out)
				}
			}
		})
	}
}

func TestAnthropicStreamReadsEveryLineEnd(t *testing.T) {
	for name, hidden := range hideVariants(anthToolEvs(1, "toolu_1", "delete_post", `{"post":`, `7}`)) {
		t.Run(name, func(t *testing.T) {
			in := anthStart("msg_1") + anthTextBlockEvs(0, "Deleting.") + hidden + anthEnd("tool_use", 9)
			for _, size := range []int{len(in), 1, 7} {
				h := providertest.NewHolder("delete_post")
				out, _, err := anthRewrite([]byte(in), h, size)
				if err != nil {
					t.Fatalf("pieces of %d: %v", size, err)
				}
				if nodeSees(out, "delete_post") || len(h.Holds()) != 1 {
					t.Fatalf("pieces of %d: the call reached the app (held %d times):\n%s", size, len(h.Holds()), out)
				}
			}
		})
	}
}

func TestResponsesStreamReadsEveryLineEnd(t *testing.T) {
	syn := newSyn().text("msg_1", "Deleting.")
	head := syn.b.String()
	syn.b.Reset()
	rest := syn.fn("1", "delete_post", `{"post":7}`).completed()
	for name, hidden := range hideVariants(rest) {
		t.Run(name, func(t *testing.T) {
			in := head + hidden
			for _, size := range []int{len(in), 1, 7} {
				h := providertest.NewHolder("delete_post")
				out, err := respRewrite([]byte(in), h, size)
				if err != nil {
					t.Fatalf("pieces of %d: %v", size, err)
				}
				if nodeSees(out, "delete_post") || len(h.Holds()) != 1 {
					t.Fatalf("pieces of %d: the call reached the app (held %d times):\n%s", size, len(h.Holds()), out)
				}
			}
		})
	}
}

// splitData writes the data of the event ev (one "data: " line) over
// two data lines, cut after the first occurrence of at.
func splitData(ev, at string) string {
	i := strings.Index(ev, at) + len(at)
	return ev[:i] + "\ndata: " + ev[i:]
}

// An event the gate rewrites keeps its data over several data lines; a
// client reading them joins them back, so a rewrite must not put a line
// end inside one data line.
func TestRewrittenEventsKeepTheirDataLines(t *testing.T) {
	check := func(t *testing.T, out []byte, want func(data string) bool) {
		t.Helper()
		found := false
		for _, ev := range sse.Parse(out) {
			if ev.Data == "[DONE]" {
				continue
			}
			if !gjson.Valid(ev.Data) {
				t.Fatalf("a client reads invalid JSON %q from:\n%s", ev.Data, out)
			}
			found = found || want(ev.Data)
		}
		if !found {
			t.Fatalf("the rewritten event is missing:\n%s", out)
		}
	}
	t.Run("chat", func(t *testing.T) {
		in := chunk(deltaChoice(0, toolDelta(toolHeader(0, "call_1", "delete_post")))) +
			chunk(deltaChoice(0, toolDelta(toolArgs(0, `{"post":7}`)))) +
			splitData(chunk(finishChoice(0, "tool_calls")), `"logprobs":null,`) + "data: [DONE]\n\n"
		out, _, err := rewriteStream([]byte(in), providertest.NewHolder("delete_post"))
		if err != nil {
			t.Fatal(err)
		}
		check(t, out, func(d string) bool { return gjson.Get(d, "choices.0.finish_reason").Str == "stop" })
	})
	t.Run("responses", func(t *testing.T) {
		in := newSyn().text("msg_1", "Deleting.").fn("1", "delete_post", `{"post":7}`).completed()
		i := strings.LastIndex(in, "data: ")
		in = in[:i] + splitData(in[i:], `"response":{`)
		out, err := respRewrite([]byte(in), providertest.NewHolder("delete_post"))
		if err != nil {
			t.Fatal(err)
		}
		check(t, out, func(d string) bool {
			return gjson.Get(d, "type").Str == "response.completed" && strings.Contains(d, "Waiting for your confirmation")
		})
	})
	t.Run("mcp", func(t *testing.T) {
		rec := httptest.NewRecorder()
		w := NewMCPResultWriter(rec, []byte("5"), rewriteTo(`{"x":1}`), 1<<20)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.Write([]byte(splitData("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"tools\":[]}}\n\n", `"id":5,`)))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, rec.Body.Bytes(), func(d string) bool { return gjson.Get(d, "result.x").Int() == 1 })
	})
}
