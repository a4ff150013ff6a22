package interceptor

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider/chat/chattest"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/provider/responses/responsestest"
	"github.com/toolgate/toolgate/wire/sse"
)

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
		in := chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_1", "delete_post")))) +
			chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(0, `{"post":7}`)))) +
			splitData(chattest.Chunk(chattest.FinishChoice(0, "tool_calls")), `"logprobs":null,`) + "data: [DONE]\n\n"
		out, _, err := rewriteStream([]byte(in), providertest.NewHolder("delete_post"))
		if err != nil {
			t.Fatal(err)
		}
		check(t, out, func(d string) bool { return gjson.Get(d, "choices.0.finish_reason").Str == "stop" })
	})
	t.Run("responses", func(t *testing.T) {
		in := responsestest.NewSyn().Text("msg_1", "Deleting.").Fn("1", "delete_post", `{"post":7}`).Completed()
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
