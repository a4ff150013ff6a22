package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/chat/chattest"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/wire/stream"
)

const (
	testLink = providertest.Link
	testStep = providertest.Step
	waitText = providertest.WaitText
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fixtures", "openai-chat", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var sseFixtures = []string{"stream-text.sse", "stream-one-tool-1.sse", "stream-one-tool-2.sse", "stream-parallel-tools.sse"}

// rewriteStream runs in through a Chat stream, written in pieces of the
// given sizes (cycled; all at once if none), and returns what came out.
func rewriteStream(in []byte, h provider.Holder, sizes ...int) (out []byte, flushes int, err error) {
	return providertest.Rewrite(func(dst io.Writer, flush func() error) provider.Stream {
		return Chat{}.NewStream(context.Background(), dst, flush, h)
	}, in, sizes...)
}

func TestChatStreamPassesStreamsWithoutGatedCalls(t *testing.T) {
	for _, name := range sseFixtures {
		in := fixture(t, name)
		crlf := bytes.ReplaceAll(in, []byte("\n"), []byte("\r\n"))
		for _, tc := range []struct {
			variant string
			in      []byte
		}{{"lf", in}, {"crlf", crlf}} {
			t.Run(name+"/"+tc.variant, func(t *testing.T) {
				h := providertest.NewHolder("delete_post")
				out, _, err := rewriteStream(tc.in, h)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out, tc.in) {
					t.Errorf("output differs from input:\n%s", out)
				}
				if len(h.Holds()) != 0 {
					t.Errorf("Hold called %d times", len(h.Holds()))
				}
			})
		}
	}
}

func TestChatStreamHoldsOnlyCall(t *testing.T) {
	for _, tc := range []struct {
		file, name, id, args string
		total                int64
	}{
		{"stream-one-tool-1.sse", "GetWeatherArgs", "call_c91SqDXlYFuETYv8mUHzz6pp", `{"city":"Edinburgh","country":"UK","units":"c"}`, 100},
		{"stream-one-tool-2.sse", "get_weather", "call_4XzlGBLtUe9dy3GVNV4jhq7h", `{"city":"New York City"}`, 60},
	} {
		t.Run(tc.file, func(t *testing.T) {
			h := providertest.NewHolder(tc.name)
			out, _, err := rewriteStream(fixture(t, tc.file), h)
			if err != nil {
				t.Fatal(err)
			}
			for _, leak := range []string{tc.id, tc.name, `"arguments"`, `"tool_calls":[`, "Edinburgh", "York"} {
				if bytes.Contains(out, []byte(leak)) {
					t.Errorf("output holds %q", leak)
				}
			}
			acc := chattest.Accumulate(t, out)
			c := acc.Choices[0]
			if len(c.Message.ToolCalls) != 0 {
				t.Errorf("tool calls = %+v, want none", c.Message.ToolCalls)
			}
			if c.Message.Content != waitText {
				t.Errorf("content = %q, want the waiting text", c.Message.Content)
			}
			if c.FinishReason != "stop" {
				t.Errorf("finish_reason = %q, want stop", c.FinishReason)
			}
			if acc.Usage.TotalTokens != tc.total {
				t.Errorf("usage total = %d, want %d", acc.Usage.TotalTokens, tc.total)
			}
			if len(h.Holds()) != 1 || len(h.Holds()[0].Calls) != 1 {
				t.Fatalf("holds = %+v, want one with one call", h.Holds())
			}
			call := h.Holds()[0].Calls[0]
			want := provider.Call{Choice: 0, Position: 0, ID: tc.id, Type: "function", Name: tc.name, Arguments: []byte(tc.args)}
			call.Raw = nil
			if fmt.Sprint(call) != fmt.Sprint(want) {
				t.Errorf("call = %+v\nwant %+v", call, want)
			}
			chattest.CheckMessage(t, h.Holds()[0].Message, nil, [][3]string{{tc.id, tc.name, tc.args}})
			if raw := h.Holds()[0].Calls[0].Raw; gjson.GetBytes(raw, "function.arguments").Str != tc.args || !gjson.ValidBytes(raw) {
				t.Errorf("call raw = %s", raw)
			}
		})
	}
}

const (
	weatherID   = "call_JMW1whyEaYG438VE1OIflxA2"
	weatherArgs = `{"city": "Edinburgh", "country": "GB", "units": "c"}`
	stockID     = "call_DNYTawLBoN8fj3KN6qU9N1Ou"
	stockArgs   = `{"ticker": "AAPL", "exchange": "NASDAQ"}`
)

func TestChatStreamHoldsOneOfParallelCalls(t *testing.T) {
	for _, tc := range []struct {
		gated                      string
		keptID, keptName, keptArgs string
		heldID, heldArgs           string
		position                   int
		leaks                      []string
	}{
		{"GetWeatherArgs", stockID, "get_stock_price", stockArgs, weatherID, weatherArgs, 0, []string{weatherID, "GetWeatherArgs", "Edinb", "urgh"}},
		{"get_stock_price", weatherID, "GetWeatherArgs", weatherArgs, stockID, stockArgs, 1, []string{stockID, "get_stock_price", "AAPL", "NASDAQ"}},
	} {
		t.Run(tc.gated, func(t *testing.T) {
			h := providertest.NewHolder(tc.gated)
			out, _, err := rewriteStream(fixture(t, "stream-parallel-tools.sse"), h)
			if err != nil {
				t.Fatal(err)
			}
			for _, leak := range tc.leaks {
				if bytes.Contains(out, []byte(leak)) {
					t.Errorf("output holds %q", leak)
				}
			}
			if calls := chattest.OutputCalls(t, out); len(calls) != 1 {
				t.Errorf("output tool call indices = %v, want only 0", calls)
			}
			acc := chattest.Accumulate(t, out)
			c := acc.Choices[0]
			if len(c.Message.ToolCalls) != 1 {
				t.Fatalf("tool calls = %+v, want one", c.Message.ToolCalls)
			}
			kept := c.Message.ToolCalls[0]
			if kept.ID != tc.keptID || kept.Function.Name != tc.keptName || kept.Function.Arguments != tc.keptArgs || kept.Type != "function" {
				t.Errorf("kept call = %+v", kept)
			}
			if c.Message.Content != waitText {
				t.Errorf("content = %q", c.Message.Content)
			}
			if c.FinishReason != "tool_calls" {
				t.Errorf("finish_reason = %q, want tool_calls (a call remains)", c.FinishReason)
			}
			if len(h.Holds()) != 1 || len(h.Holds()[0].Calls) != 1 {
				t.Fatalf("holds = %+v", h.Holds())
			}
			held := h.Holds()[0].Calls[0]
			if held.ID != tc.heldID || string(held.Arguments) != tc.heldArgs || held.Position != tc.position || held.Name != tc.gated {
				t.Errorf("held = %+v", held)
			}
			chattest.CheckMessage(t, h.Holds()[0].Message, nil, [][3]string{
				{weatherID, "GetWeatherArgs", weatherArgs},
				{stockID, "get_stock_price", stockArgs},
			})
		})
	}
}

func TestChatStreamHoldsTwoCalls(t *testing.T) {
	h := providertest.NewHolder("GetWeatherArgs", "get_stock_price")
	out, _, err := rewriteStream(fixture(t, "stream-parallel-tools.sse"), h)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(`"tool_calls":[`)) || bytes.Contains(out, []byte("call_")) {
		t.Errorf("output holds a call:\n%s", out)
	}
	acc := chattest.Accumulate(t, out)
	if c := acc.Choices[0]; len(c.Message.ToolCalls) != 0 || c.FinishReason != "stop" || c.Message.Content != waitText {
		t.Errorf("choice = %+v", c)
	}
	if len(h.Holds()) != 1 {
		t.Fatalf("Hold called %d times, want once for the choice", len(h.Holds()))
	}
	calls := h.Holds()[0].Calls
	if len(calls) != 2 || calls[0].ID != weatherID || calls[1].ID != stockID ||
		string(calls[0].Arguments) != weatherArgs || string(calls[1].Arguments) != stockArgs ||
		calls[0].Position != 0 || calls[1].Position != 1 {
		t.Errorf("calls = %+v", calls)
	}
}

func TestChatStreamTextBeforeCall(t *testing.T) {
	text := []string{
		chattest.Chunk(chattest.DeltaChoice(0, `{"role":"assistant","content":"","refusal":null}`)),
		chattest.Chunk(chattest.DeltaChoice(0, `{"content":"I'll delete"}`)),
		chattest.Chunk(chattest.DeltaChoice(0, `{"content":" post 7."}`)),
	}
	calls := []string{
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_del", "delete_post")))),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(0, `{"po`)))),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(0, `st": 7}`)))),
		chattest.Chunk(chattest.FinishChoice(0, "tool_calls")),
		chattest.UsageChunk,
		"data: [DONE]\n\n",
	}
	in := strings.Join(append(slices.Clone(text), calls...), "")
	h := providertest.NewHolder("delete_post")
	out, _, err := rewriteStream([]byte(in), h)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, []byte(strings.Join(text, ""))) {
		t.Errorf("text deltas were not passed on as they came")
	}
	acc := chattest.Accumulate(t, out)
	c := acc.Choices[0]
	if want := "I'll delete post 7.\n\n" + waitText; c.Message.Content != want {
		t.Errorf("content = %q, want %q", c.Message.Content, want)
	}
	if c.FinishReason != "stop" || len(c.Message.ToolCalls) != 0 {
		t.Errorf("choice = %+v", c)
	}
	content := "I'll delete post 7."
	chattest.CheckMessage(t, h.Holds()[0].Message, &content, [][3]string{{"call_del", "delete_post", `{"post": 7}`}})
}

func TestChatStreamLongTextBeforeCall(t *testing.T) {
	// Over 256 KiB of text deltas: the content log is read in batches and
	// the held message still gets all of it, in order.
	var in, text strings.Builder
	for i := range 3000 {
		w := fmt.Sprintf(" w%d", i)
		text.WriteString(w)
		in.WriteString(chattest.Chunk(chattest.DeltaChoice(0, fmt.Sprintf(`{"content":%q}`, w))))
	}
	in.WriteString(chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_del", "delete_post")))))
	in.WriteString(chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(0, `{}`)))))
	in.WriteString(chattest.Chunk(chattest.FinishChoice(0, "tool_calls")))
	if in.Len() < 2*stream.FoldAt {
		t.Fatalf("stream of %d bytes is too short", in.Len())
	}
	h := providertest.NewHolder("delete_post")
	out, _, err := rewriteStream([]byte(in.String()), h, 4096)
	if err != nil {
		t.Fatal(err)
	}
	want := text.String()
	chattest.CheckMessage(t, h.Holds()[0].Message, &want, [][3]string{{"call_del", "delete_post", "{}"}})
	if c := chattest.Accumulate(t, out).Choices[0]; c.Message.Content != want+"\n\n"+waitText {
		t.Errorf("content ends %q", c.Message.Content[len(c.Message.Content)-200:])
	}
}

func TestChatStreamHeldCallBesidePassedCallInOneChunk(t *testing.T) {
	in := strings.Join([]string{
		chattest.Chunk(chattest.DeltaChoice(0, `{"role":"assistant","content":null}`)),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_del", "delete_post"), chattest.ToolHeader(1, "call_get", "get_post")))),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(1, `{"post":`), chattest.ToolArgs(0, `{"post":`)))),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(0, ` 7}`), chattest.ToolArgs(1, ` 8}`)))),
		chattest.Chunk(chattest.FinishChoice(0, "tool_calls")),
		"data: [DONE]\n\n",
	}, "")
	h := providertest.NewHolder("delete_post")
	out, _, err := rewriteStream([]byte(in), h)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("call_del")) || bytes.Contains(out, []byte("delete_post")) {
		t.Errorf("output holds the held call:\n%s", out)
	}
	acc := chattest.Accumulate(t, out)
	c := acc.Choices[0]
	if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != "call_get" || c.Message.ToolCalls[0].Function.Arguments != `{"post": 8}` {
		t.Errorf("tool calls = %+v", c.Message.ToolCalls)
	}
	if c.FinishReason != "tool_calls" || c.Message.Content != waitText {
		t.Errorf("choice = %+v", c)
	}
	chattest.CheckMessage(t, h.Holds()[0].Message, nil, [][3]string{
		{"call_del", "delete_post", `{"post": 7}`},
		{"call_get", "get_post", `{"post": 8}`},
	})
}

func TestChatStreamHoldsCustomCall(t *testing.T) {
	in := strings.Join([]string{
		chattest.Chunk(chattest.DeltaChoice(0, `{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_c","type":"custom","custom":{"name":"delete_post","input":""}}]}`)),
		chattest.Chunk(chattest.DeltaChoice(0, `{"tool_calls":[{"index":0,"custom":{"input":"post "}}]}`)),
		chattest.Chunk(chattest.DeltaChoice(0, `{"tool_calls":[{"index":0,"custom":{"input":"7"}}]}`)),
		chattest.Chunk(chattest.FinishChoice(0, "tool_calls")),
		"data: [DONE]\n\n",
	}, "")
	h := providertest.NewHolder("delete_post")
	out, _, err := rewriteStream([]byte(in), h)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("call_c")) || bytes.Contains(out, []byte("post ")) {
		t.Errorf("output holds the held call:\n%s", out)
	}
	acc := chattest.Accumulate(t, out)
	if c := acc.Choices[0]; c.Message.Content != waitText || c.FinishReason != "stop" || c.Message.Role != "assistant" {
		t.Errorf("choice = %+v", c)
	}
	call := h.Holds()[0].Calls[0]
	if call.Type != "custom" || call.Name != "delete_post" || string(call.Arguments) != "post 7" {
		t.Errorf("call = %+v", call)
	}
	chattest.CheckMessage(t, h.Holds()[0].Message, nil, [][3]string{{"call_c", "delete_post", "post 7"}})
}

func TestChatStreamTwoChoices(t *testing.T) {
	in := strings.Join([]string{
		chattest.Chunk(chattest.DeltaChoice(0, `{"role":"assistant","content":"Sure."}`), chattest.DeltaChoice(1, `{"role":"assistant","content":null}`)),
		chattest.Chunk(chattest.DeltaChoice(1, chattest.ToolDelta(chattest.ToolHeader(0, "call_1", "delete_post")))),
		chattest.Chunk(chattest.DeltaChoice(1, chattest.ToolDelta(chattest.ToolArgs(0, `{"post":1}`)))),
		chattest.Chunk(chattest.FinishChoice(0, "stop"), chattest.FinishChoice(1, "tool_calls")),
		"data: [DONE]\n\n",
	}, "")
	h := providertest.NewHolder("delete_post")
	out, _, err := rewriteStream([]byte(in), h)
	if err != nil {
		t.Fatal(err)
	}
	acc := chattest.Accumulate(t, out)
	if len(acc.Choices) != 2 {
		t.Fatalf("choices = %d", len(acc.Choices))
	}
	if c := acc.Choices[0]; c.Message.Content != "Sure." || c.FinishReason != "stop" {
		t.Errorf("choice 0 = %+v", c)
	}
	if c := acc.Choices[1]; c.Message.Content != waitText || c.FinishReason != "stop" || len(c.Message.ToolCalls) != 0 {
		t.Errorf("choice 1 = %+v", c)
	}
	if len(h.Holds()) != 1 || h.Holds()[0].Calls[0].Choice != 1 {
		t.Errorf("holds = %+v", h.Holds())
	}
}

func TestChatStreamIgnoresSplits(t *testing.T) {
	in := fixture(t, "stream-parallel-tools.sse")
	want, _, err := rewriteStream(in, providertest.NewHolder("GetWeatherArgs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sizes := range [][]int{{1}, {2}, {3, 1, 7}, {64}, {333, 1}} {
		got, _, err := rewriteStream(in, providertest.NewHolder("GetWeatherArgs"), sizes...)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("sizes %v: output differs from the one-write output", sizes)
		}
	}
	// Two writes, split at every byte.
	one := fixture(t, "stream-one-tool-2.sse")
	wantOne, _, err := rewriteStream(one, providertest.NewHolder("get_weather"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(one); i++ {
		got, _, err := rewriteStream(one, providertest.NewHolder("get_weather"), i, len(one))
		if err != nil || !bytes.Equal(got, wantOne) {
			t.Fatalf("split at %d: err %v, output differs", i, err)
		}
	}

	// And a \r\n stream, byte by byte.
	crlf := bytes.ReplaceAll(in, []byte("\n"), []byte("\r\n"))
	got, _, err := rewriteStream(crlf, providertest.NewHolder("GetWeatherArgs"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if acc := chattest.Accumulate(t, got); len(acc.Choices[0].Message.ToolCalls) != 1 || acc.Choices[0].Message.Content != waitText {
		t.Errorf("crlf stream: choice = %+v", acc.Choices[0])
	}
}

func TestChatStreamPassesOtherLines(t *testing.T) {
	in := strings.Join([]string{
		": keep-alive\n\n",
		"retry: 1000\n\n",
		"event: message\nid: 1\n" + chattest.Chunk(chattest.DeltaChoice(0, `{"role":"assistant","content":null}`)),
		"id: 2\n" + chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_del", "delete_post")))),
		": ping\n\n",
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(0, `{}`)))),
		chattest.Chunk(chattest.FinishChoice(0, "tool_calls")),
		"data: [DONE]\n\n",
	}, "")
	out, _, err := rewriteStream([]byte(in), providertest.NewHolder("delete_post"))
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{": keep-alive\n\n", "retry: 1000\n\n", "event: message\nid: 1\n", ": ping\n\n", "data: [DONE]\n\n"} {
		if !strings.Contains(string(out), keep) {
			t.Errorf("output lost %q", keep)
		}
	}
	// The id line's event carried only a held fragment besides it, so the
	// data went; the id line stays.
	if !strings.Contains(string(out), "id: 2\n") || strings.Contains(string(out), "call_del") {
		t.Errorf("output:\n%s", out)
	}
	chattest.Accumulate(t, out)
}

func TestChatStreamPassesErrorEvent(t *testing.T) {
	ev := `data: {"error":{"message":"tool_calls failed","type":"server_error","param":"tool_calls","code":null}}` + "\n\n"
	in := chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_del", "delete_post")))) + ev
	out, _, err := rewriteStream([]byte(in), providertest.NewHolder("delete_post"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(out, []byte(ev)) {
		t.Errorf("error event was not passed on:\n%s", out)
	}

	// An error event that carries choices is read like any chunk.
	odd := `data: {"error":{"message":"x"},"choices":[` + chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_del", "delete_post"))) + "]}\n\n"
	out, _, err = rewriteStream([]byte(odd), providertest.NewHolder("delete_post"))
	if err != nil || bytes.Contains(out, []byte("call_del")) {
		t.Errorf("err %v, output %s", err, out)
	}
}

func TestChatStreamFailsClosed(t *testing.T) {
	header := chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_get", "get_post"))))
	for _, tc := range []struct {
		name string
		in   string
		want string // the output before the failure
	}{
		{"invalid JSON", chattest.Chunk(chattest.DeltaChoice(0, `{"content":"hi"}`)) + `data: {"choices":[{"delta":{"tool_calls":[` + "\n\n" + chattest.Chunk(chattest.DeltaChoice(0, `{"content":"after"}`)),
			chattest.Chunk(chattest.DeltaChoice(0, `{"content":"hi"}`))},
		{"nameless first delta", chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(0, `{}`)))), ""},
		{"name grows after pass", header + chattest.Chunk(chattest.DeltaChoice(0, `{"tool_calls":[{"index":0,"function":{"name":"_and_delete"}}]}`)), header},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := rewriteStream([]byte(tc.in), providertest.NewHolder("delete_post", "get_post_and_delete"))
			if err == nil {
				t.Fatal("no error")
			}
			if want := tc.want + string(chatStopEvent(stream.StopMessage(err))); string(out) != want {
				t.Errorf("output = %q, want %q", out, tc.want)
			}
		})
	}

	t.Run("later writes fail", func(t *testing.T) {
		var buf bytes.Buffer
		s := Chat{}.NewStream(context.Background(), &buf, nil, providertest.NewHolder())
		_, err := s.Write([]byte("data: {\"tool_calls\":\n\n"))
		if err == nil {
			t.Fatal("no error")
		}
		stop := string(chatStopEvent(stream.StopMessage(err)))
		if _, err := s.Write([]byte("data: {}\n\n")); err == nil || buf.String() != stop {
			t.Errorf("write after failure: err %v, output %q", err, buf.Bytes())
		}
		if s.Close() == nil {
			t.Error("Close forgot the failure")
		}
	})

	t.Run("event over the cap", func(t *testing.T) {
		var buf bytes.Buffer
		s := Chat{}.NewStream(context.Background(), &buf, nil, providertest.NewHolder())
		piece := bytes.Repeat([]byte("a"), 1<<20)
		_, err := s.Write([]byte("data: \""))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 9 && err == nil; i++ {
			_, err = s.Write(piece)
		}
		if err == nil {
			t.Fatal("no error for a 9 MiB event")
		}
		if buf.String() != string(chatStopEvent(stream.StopMessage(err))) {
			t.Errorf("wrote %d bytes", buf.Len())
		}
	})
}

func TestChatStreamClose(t *testing.T) {
	in := fixture(t, "stream-one-tool-1.sse")
	// Cut the stream before the finish chunk: nothing is held, nothing of
	// the call is written.
	cut := in[:bytes.Index(in, []byte(`"finish_reason":"tool_calls"`))]
	cut = cut[:bytes.LastIndex(cut, []byte("\n\n"))+2]
	h := providertest.NewHolder("GetWeatherArgs")
	out, _, err := rewriteStream(cut, h)
	if err != nil {
		t.Errorf("Close = %v, want nil", err)
	}
	if len(h.Holds()) != 0 || bytes.Contains(out, []byte("GetWeatherArgs")) || bytes.Contains(out, []byte("call_")) {
		t.Errorf("holds %d, output:\n%s", len(h.Holds()), out)
	}

	// A body ending mid-line is an error; a tail that names no call is
	// still passed on.
	tail := "data: {\"choices\":[{\"delta\":{\"content\":\"x"
	out, _, err = rewriteStream([]byte(tail), providertest.NewHolder())
	if !errors.Is(err, errMidLine) || string(out) != tail {
		t.Errorf("mid-line: err %v, output %q", err, out)
	}

	// A last event without its blank line is handled like any other.
	last := strings.TrimSuffix(chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_get", "get_post")))), "\n")
	out, _, err = rewriteStream([]byte(last), providertest.NewHolder())
	if err != nil || string(out) != last {
		t.Errorf("unterminated event: err %v, output %q", err, out)
	}
}

func TestChatStreamFlushesAfterEachEvent(t *testing.T) {
	in := fixture(t, "stream-text.sse")
	events := strings.SplitAfter(string(in), "\n\n")
	events = events[:len(events)-1] // the empty string after the last
	var buf bytes.Buffer
	flushes := 0
	s := Chat{}.NewStream(context.Background(), &buf, func() error { flushes++; return nil }, providertest.NewHolder("delete_post"))
	written := 0
	for i, ev := range events {
		// Each event arrives in two pieces; it goes out whole, at once.
		half := len(ev) / 2
		if _, err := s.Write([]byte(ev[:half])); err != nil {
			t.Fatal(err)
		}
		if buf.Len() != written {
			t.Fatalf("event %d: half an event was written", i)
		}
		if _, err := s.Write([]byte(ev[half:])); err != nil {
			t.Fatal(err)
		}
		written += len(ev)
		if buf.Len() != written || flushes != i+1 {
			t.Fatalf("event %d: wrote %d bytes (want %d), %d flushes", i, buf.Len(), written, flushes)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestChatJSONPassesBodiesWithoutGatedCalls(t *testing.T) {
	for _, name := range []string{"json-one-tool.json", "json-parallel-tools.json"} {
		body := fixture(t, name)
		h := providertest.NewHolder("delete_post")
		out, err := Chat{}.RewriteJSON(context.Background(), body, h)
		if err != nil {
			t.Fatal(err)
		}
		if &out[0] != &body[0] || len(out) != len(body) {
			t.Errorf("%s: not the same slice", name)
		}
	}
	// No "tool_calls": no JSON work, so not even validation.
	text := []byte(`{"choices":[{"message":{"content":"hi"}`)
	if out, err := (Chat{}).RewriteJSON(context.Background(), text, providertest.NewHolder()); err != nil || &out[0] != &text[0] {
		t.Errorf("text body: %v", err)
	}
}

// checkEnvelope checks that out kept every byte of in outside the choices
// array's elements.
func checkEnvelope(t *testing.T, in, out []byte) {
	t.Helper()
	ci, co := gjson.GetBytes(in, "choices"), gjson.GetBytes(out, "choices")
	if !bytes.Equal(in[:ci.Index+1], out[:co.Index+1]) || !bytes.Equal(in[ci.Index+len(ci.Raw)-1:], out[co.Index+len(co.Raw)-1:]) {
		t.Errorf("bytes outside the choices changed:\n%s\n%s", in, out)
	}
}

func TestChatJSONHoldsOnlyCall(t *testing.T) {
	body := fixture(t, "json-one-tool.json")
	orig := slices.Clone(body)
	h := providertest.NewHolder("GetWeatherArgs")
	out, err := Chat{}.RewriteJSON(context.Background(), body, h)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, orig) {
		t.Error("the input was modified")
	}
	checkEnvelope(t, body, out)
	c := chattest.DecodeCompletion(t, out).Choices[0]
	if len(c.Message.ToolCalls) != 0 || c.Message.Content != waitText || c.FinishReason != "stop" {
		t.Errorf("choice = %+v", c)
	}
	if gjson.GetBytes(out, "choices.0.message.tool_calls").Exists() {
		t.Error("tool_calls key kept")
	}
	if bytes.Contains(out, []byte("call_Y6qJ7ofLgOrBnMD5WbVAeiRV")) || bytes.Contains(out, []byte("Edinburgh")) {
		t.Error("output holds the held call")
	}
	if !gjson.GetBytes(out, "choices.0.message.refusal").Exists() {
		t.Error("other message fields were lost")
	}
	if len(h.Holds()) != 1 {
		t.Fatalf("holds = %d", len(h.Holds()))
	}
	call := h.Holds()[0].Calls[0]
	if call.ID != "call_Y6qJ7ofLgOrBnMD5WbVAeiRV" || call.Name != "GetWeatherArgs" || call.Type != "function" ||
		string(call.Arguments) != `{"city":"Edinburgh","country":"UK","units":"c"}` || !bytes.HasPrefix(call.Raw, []byte(`{"id": "call_Y6`)) {
		t.Errorf("call = %+v", call)
	}
	chattest.CheckMessage(t, h.Holds()[0].Message, nil, [][3]string{{"call_Y6qJ7ofLgOrBnMD5WbVAeiRV", "GetWeatherArgs", `{"city":"Edinburgh","country":"UK","units":"c"}`}})
}

func TestChatJSONHoldsOneOfParallelCalls(t *testing.T) {
	body := fixture(t, "json-parallel-tools.json")
	h := providertest.NewHolder("GetWeatherArgs")
	out, err := Chat{}.RewriteJSON(context.Background(), body, h)
	if err != nil {
		t.Fatal(err)
	}
	checkEnvelope(t, body, out)
	c := chattest.DecodeCompletion(t, out).Choices[0]
	if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != "call_h1DWI1POMJLb0KwIyQHWXD4p" ||
		c.Message.ToolCalls[0].Function.Arguments != stockArgs || c.FinishReason != "tool_calls" || c.Message.Content != waitText {
		t.Errorf("choice = %+v", c)
	}
	wantMsg := `{"role":"assistant","content":null,"tool_calls":` + gjson.GetBytes(body, "choices.0.message.tool_calls").Raw + `}`
	if string(h.Holds()[0].Message) != wantMsg {
		t.Errorf("message = %s\nwant %s", h.Holds()[0].Message, wantMsg)
	}
	if p := h.Holds()[0].Calls[0].Position; p != 0 {
		t.Errorf("position = %d", p)
	}
}

func TestChatJSONSynthetic(t *testing.T) {
	const env = `{"id":"chatcmpl-X","object":"chat.completion","created":1,"model":"gpt-4o","choices":[%s],"usage":{"total_tokens":3}}`
	for _, tc := range []struct {
		name, choices, gated string
		content, finish      string
		kept                 int
	}{
		{"text before call",
			`{"index":0,"message":{"role":"assistant","content":"Sure \u00e9.","tool_calls":[{"id":"c1","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}"}}]},"finish_reason":"tool_calls"}`,
			"delete_post", "Sure é.\n\n" + waitText, "stop", 0},
		{"custom call",
			`{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"custom","custom":{"name":"delete_post","input":"post 7"}}]},"finish_reason":"tool_calls"}`,
			"delete_post", waitText, "stop", 0},
		{"gated beside passed, held last",
			`{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_post","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"delete_post","arguments":"{}"}}]},"finish_reason":"tool_calls"}`,
			"delete_post", waitText, "tool_calls", 1},
		{"length stays length",
			`{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"delete_post","arguments":"{\"po"}}]},"finish_reason":"length"}`,
			"delete_post", waitText, "length", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(fmt.Sprintf(env, tc.choices))
			h := providertest.NewHolder(tc.gated)
			out, err := Chat{}.RewriteJSON(context.Background(), body, h)
			if err != nil {
				t.Fatal(err)
			}
			checkEnvelope(t, body, out)
			c := chattest.DecodeCompletion(t, out).Choices[0]
			if c.Message.Content != tc.content || string(c.FinishReason) != tc.finish || len(c.Message.ToolCalls) != tc.kept {
				t.Errorf("choice = %+v", c)
			}
			if len(h.Holds()) != 1 || !gjson.ValidBytes(h.Holds()[0].Message) {
				t.Errorf("holds = %+v", h.Holds())
			}
		})
	}
}

func TestChatJSONTwoChoices(t *testing.T) {
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function","function":{"name":"delete_post","arguments":"{}"}}]}`
	body := []byte(fmt.Sprintf(`{"id":"x","choices":[{"index":0,"message":`+call+`,"finish_reason":"tool_calls"},{"index":1,"message":`+call+`,"finish_reason":"tool_calls"}]}`, 1, 2))
	h := providertest.NewHolder("delete_post")
	out, err := Chat{}.RewriteJSON(context.Background(), body, h)
	if err != nil {
		t.Fatal(err)
	}
	c := chattest.DecodeCompletion(t, out)
	if len(c.Choices) != 2 || c.Choices[1].Message.Content != waitText || len(c.Choices[1].Message.ToolCalls) != 0 {
		t.Errorf("choices = %+v", c.Choices)
	}
	if len(h.Holds()) != 2 || h.Holds()[0].Calls[0].Choice != 0 || h.Holds()[1].Calls[0].Choice != 1 || h.Holds()[1].Calls[0].ID != "c2" {
		t.Errorf("holds = %+v", h.Holds())
	}
}

func TestChatJSONInvalid(t *testing.T) {
	body := []byte(`{"choices":[{"message":{"tool_calls":[{"function":{"name":"delete_post"`)
	if _, err := (Chat{}).RewriteJSON(context.Background(), body, providertest.NewHolder("delete_post")); err == nil {
		t.Error("no error for invalid JSON naming tool_calls")
	}
}

// fuzzHolder holds GetWeatherArgs and delete_post, passes get_weather after
// inspection and refuses get_stock_price.
func fuzzHolder() *providertest.Holder {
	return providertest.NewHolder("GetWeatherArgs", "delete_post").Passing("get_weather").Refusing("get_stock_price", "refused: ticker (a string)")
}

func FuzzChatStream(f *testing.F) {
	for _, name := range sseFixtures {
		f.Add(fixture(f, name), []byte{0})
		f.Add(fixture(f, name), []byte{3, 200, 17})
		for _, v := range providertest.CRVariants(fixture(f, name)) {
			f.Add(v, []byte{7})
		}
	}
	f.Fuzz(func(t *testing.T, in []byte, splits []byte) {
		sizes := make([]int, len(splits))
		for i, b := range splits {
			sizes[i] = int(b) + 1
		}
		h := fuzzHolder()
		whole, _, werr := rewriteStream(in, h)
		split, _, serr := rewriteStream(in, fuzzHolder(), sizes...)
		if !bytes.Equal(whole, split) || (werr == nil) != (serr == nil) {
			t.Fatalf("splits changed the output:\n%q (%v)\n%q (%v)", whole, werr, split, serr)
		}
		if !hasToolCalls(in) && !providertest.PassedAsRead(in, whole) {
			t.Fatalf("a stream without tool calls changed:\n%q\n%q", in, whole)
		}
		if chattest.BlockedInStream(h, whole) {
			t.Fatalf("a held or refused call got through:\n%q", whole)
		}
	})
}

func FuzzChatJSON(f *testing.F) {
	f.Add(fixture(f, "json-one-tool.json"))
	f.Add(fixture(f, "json-parallel-tools.json"))
	f.Add([]byte(`{"choices":[{"index":0,"message":{"content":"a","tool_calls":[{"id":"c","type":"custom","custom":{"name":"delete_post","input":"x"}}]},"finish_reason":"tool_calls"}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"message":{"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"get_weather","arguments":"{}"}},{"id":"d","type":"function","function":{"name":"get_stock_price","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		h := fuzzHolder()
		out, err := Chat{}.RewriteJSON(context.Background(), body, h)
		if err != nil {
			return
		}
		if !hasToolCalls(body) && !bytes.Equal(out, body) {
			t.Fatal("a body without tool calls changed")
		}
		if bytes.Equal(out, body) {
			return
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("invalid output %q", out)
		}
		gjson.GetBytes(out, "choices.#.message.tool_calls").ForEach(func(_, tcs gjson.Result) bool {
			tcs.ForEach(func(_, tc gjson.Result) bool {
				if slices.ContainsFunc(chattest.CallNames(tc), h.Blocks) {
					t.Fatalf("a held or refused call got through: %s", out)
				}
				return true
			})
			return true
		})
	})
}

func benchStream(b *testing.B, in []byte, h provider.Holder) {
	evs := providertest.Events(in)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		s := Chat{}.NewStream(context.Background(), io.Discard, func() error { return nil }, h)
		for _, ev := range evs {
			if _, err := s.Write(ev); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChatStreamText200(b *testing.B) {
	benchStream(b, chattest.TextStream(200), providertest.NewHolder("delete_post"))
}

func BenchmarkChatStreamParallelOneHeld(b *testing.B) {
	benchStream(b, fixture(b, "stream-parallel-tools.sse"), providertest.NewHolder("GetWeatherArgs"))
}

// jsonBody2K is a 2 KB chat.completion, with or without a (non-gated) call.
func jsonBody2K(withCall bool) []byte {
	text := strings.Repeat("All good here. ", 110)
	msg := fmt.Sprintf(`{"role":"assistant","content":%q,"refusal":null}`, text)
	finish := "stop"
	if withCall {
		msg = fmt.Sprintf(`{"role":"assistant","content":%q,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_post","arguments":"{\"post\":7}"}}],"refusal":null}`, text)
		finish = "tool_calls"
	}
	return []byte(fmt.Sprintf(`{"id":"chatcmpl-X","object":"chat.completion","created":1727346165,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],"usage":{"prompt_tokens":76,"completion_tokens":24,"total_tokens":100},"system_fingerprint":"fp_e45dabd248"}`, msg, finish))
}

func BenchmarkChatJSON(b *testing.B) {
	for _, tc := range []struct {
		name     string
		withCall bool
	}{{"text", false}, {"non-gated-call", true}} {
		b.Run(tc.name, func(b *testing.B) {
			body := jsonBody2K(tc.withCall)
			h := providertest.NewHolder("delete_post")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				out, err := Chat{}.RewriteJSON(context.Background(), body, h)
				if err != nil || len(out) != len(body) {
					b.Fatal(err)
				}
			}
		})
	}
}
