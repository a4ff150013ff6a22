package interceptor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	anthropicadapter "github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/anthropic/anthropictest"
	"github.com/toolgate/toolgate/provider/chat"
	"github.com/toolgate/toolgate/provider/chat/chattest"
	"github.com/toolgate/toolgate/provider/providertest"
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
	"github.com/toolgate/toolgate/provider/responses/responsestest"
)

// A streamed answer whose calls are held waits for the person's answer
// (the caller keeps the stream open with keep-alives) and, once they have
// answered, goes on in the same response: the follow-up request carries
// the restored history, and the model's reply continues the message.

const resumeResult = "The person confirmed. Removed."

// heldRestorer restores the step the holder last held, as the gate would:
// the message Hold was given, and one result per held call.
type heldRestorer struct {
	h     *providertest.Holder
	asked []providertest.RestoreCall
}

func (r *heldRestorer) Restore(_ context.Context, step string, userFollows bool) (provider.Restored, bool) {
	r.asked = append(r.asked, providertest.RestoreCall{Step: step, UserFollows: userFollows})
	holds := r.h.Holds()
	if step != testStep || len(holds) == 0 {
		return provider.Restored{}, false
	}
	last := holds[len(holds)-1]
	res := provider.Restored{Message: last.Message}
	for _, c := range last.Calls {
		res.Results = append(res.Results, provider.Result{CallID: c.ID, Content: resumeResult})
	}
	return res, true
}

// RestoreState gives the held step for its response, as the gate does for
// a request that continues from it.
func (r *heldRestorer) RestoreState(ctx context.Context, responseID, _ string, userFollows bool) []provider.Restored {
	if responseID == "" {
		return nil
	}
	res, ok := r.Restore(ctx, testStep, userFollows)
	if !ok {
		return nil
	}
	return []provider.Restored{res}
}

// resumed is what came of one resumed answer.
type resumed struct {
	waiting  []byte // what the app had read while the stream waited
	out      []byte // the whole stream
	follow   string // the follow-up request ("" none)
	held     string // what Held reported
	closeErr error
}

// runResume drives a ResponseWriter as the Caddy handler does with
// resume_wait: the first response; no continuation; Held; two keep-alives;
// then, when answered, Resume, Continue and the follow-up response.
func runResume(t *testing.T, a provider.Adapter, h *providertest.Holder, request, first string, answered bool, follow string) resumed {
	t.Helper()
	rec := newRecorder()
	rw := Wrap(rec, a, context.Background(), h, 0)
	rw.SetRequest([]byte(request))
	rw.AllowResume()
	write := func(body string) {
		rw.Header().Set("Content-Type", "text/event-stream")
		rw.WriteHeader(200)
		for p := []byte(body); len(p) > 0; p = p[min(97, len(p)):] {
			if _, err := rw.Write(p[:min(97, len(p))]); err != nil {
				t.Fatalf("Write: %v", err)
			}
		}
	}
	write(first)
	var r resumed
	if _, ok := rw.Continuation(); ok {
		t.Fatal("a continuation was offered")
	}
	r.held = rw.Held()
	if r.held != "" {
		for range 2 {
			if err := rw.KeepAlive(); err != nil {
				t.Fatalf("keep-alive: %v", err)
			}
		}
	}
	r.waiting = bytes.Clone(rec.Body.Bytes())
	if answered {
		rs := &heldRestorer{h: h}
		body, ok := rw.Resume(func(b []byte) ([]byte, error) {
			return a.RewriteRequest(context.Background(), b, testLink, rs)
		})
		if ok {
			r.follow = string(body)
			for _, q := range rs.asked {
				if q.UserFollows {
					t.Errorf("restored step %s as if the person had written on", q.Step)
				}
			}
			rw.Continue()
			write(follow)
		}
	}
	r.closeErr = rw.Close()
	r.out = rec.Body.Bytes()
	return r
}

// chatHeld is a Chat stream: text, a held delete_post call, the finish,
// usage and [DONE].
func chatHeld(extra ...string) string {
	return strings.Join(append([]string{
		chattest.Chunk(chattest.DeltaChoice(0, `{"role":"assistant","content":"","refusal":null}`)),
		chattest.Chunk(chattest.DeltaChoice(0, `{"content":"I'll delete it."}`)),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_del", "delete_post")))),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(0, `{"post":7}`)))),
	}, extra...), "") + chattest.Chunk(chattest.FinishChoice(0, "tool_calls")) + chattest.UsageChunk + "data: [DONE]\n\n"
}

const resumeText = "Done: post 7 is deleted."

func TestResumeChatStream(t *testing.T) {
	h := providertest.NewHolder("delete_post")
	r := runResume(t, chat.Chat{}, h, testRequest, chatHeld(), true, followUp(resumeText, "stop"))
	if r.closeErr != nil {
		t.Fatal(r.closeErr)
	}
	if r.held != testStep {
		t.Fatalf("Held = %q, want the step", r.held)
	}
	// While it waits the app has the text and the link, flushed, and no end.
	if !bytes.Contains(r.waiting, []byte(testLink+testStep)) || bytes.Contains(r.waiting, []byte(`"finish_reason":"`)) || bytes.Contains(r.waiting, []byte("[DONE]")) {
		t.Errorf("while waiting the app read:\n%s", r.waiting)
	}
	if n := bytes.Count(r.waiting, keepAlive); n != 2 {
		t.Errorf("%d keep-alives", n)
	}
	checkOneEnd(t, r.out)
	acc := chattest.Accumulate(t, r.out)
	c := acc.Choices[0]
	if want := "I'll delete it.\n\n" + waitText + "\n\n" + resumeText; c.Message.Content != want {
		t.Errorf("content = %q, want %q", c.Message.Content, want)
	}
	if len(c.Message.ToolCalls) != 0 || c.FinishReason != "stop" || acc.ID != "chatcmpl-T" || acc.Usage.TotalTokens != 15+27 {
		t.Errorf("calls %v, finish %q, id %q, usage %+v", c.Message.ToolCalls, c.FinishReason, acc.ID, acc.Usage)
	}
	// The follow-up request: the history restored as in the app's next
	// request, every other byte kept.
	if got := strings.Join(chattest.Roles(t, []byte(r.follow)), " "); got != "system user assistant tool:call_del" {
		t.Errorf("follow-up roles = %s\n%s", got, r.follow)
	}
	msgs := gjson.Get(r.follow, "messages").Array()
	if msgs[2].Get("tool_calls.0.id").Str != "call_del" || msgs[2].Get("content").Str != "I'll delete it." || msgs[3].Get("content").Str != resumeResult {
		t.Errorf("follow-up = %s", r.follow)
	}
	cut := strings.Index(testRequest, `],"tools"`)
	if !strings.HasPrefix(r.follow, testRequest[:cut]) || !strings.HasSuffix(r.follow, testRequest[cut:]) {
		t.Errorf("bytes outside the appended messages changed:\n%s", r.follow)
	}
	if strings.Contains(r.follow, "Waiting for") {
		t.Errorf("the waiting text reached the model")
	}
}

func TestResumeChatWaitPassed(t *testing.T) {
	// Without an answer the stream ends as it would without waiting: the
	// same message, one finish, usage, [DONE].
	plain, _, err := runTurn(t, providertest.NewHolder("delete_post"), testRequest, sseUp(chatHeld()))
	if err != nil {
		t.Fatal(err)
	}
	r := runResume(t, chat.Chat{}, providertest.NewHolder("delete_post"), testRequest, chatHeld(), false, "")
	if r.closeErr != nil || r.held != testStep {
		t.Fatalf("held %q, close %v", r.held, r.closeErr)
	}
	checkOneEnd(t, r.out)
	want, got := chattest.Accumulate(t, plain.Body.Bytes()), chattest.Accumulate(t, r.out)
	if got.Choices[0].Message.Content != want.Choices[0].Message.Content || got.Choices[0].FinishReason != want.Choices[0].FinishReason ||
		got.Usage.TotalTokens != want.Usage.TotalTokens || got.ID != want.ID {
		t.Errorf("waited: %+v\nwithout waiting: %+v", got.Choices[0], want.Choices[0])
	}
}

func TestResumeNotOffered(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       *providertest.Holder
		stream  string
		request string
	}{
		// A call reached the app: it answers that first, in its own request.
		{"a call passed", providertest.NewHolder("delete_post"), chatHeld(chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(1, "call_get", "get_post")))), chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(1, `{}`))))), testRequest},
		{"nothing held", providertest.NewHolder("send_email"), chatHeld(), testRequest},
		{"refused: a continuation first", providertest.NewHolder().Refusing("delete_post", refusal), chatHeld(), testRequest},
		{"two choices asked for", providertest.NewHolder("delete_post"), chatHeld(), strings.Replace(testRequest, `"stream":true`, `"stream":true,"n":2`, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			rw := Wrap(rec, chat.Chat{}, context.Background(), tc.h, 0)
			rw.SetRequest([]byte(tc.request))
			rw.AllowResume()
			rw.Header().Set("Content-Type", "text/event-stream")
			rw.WriteHeader(200)
			if _, err := rw.Write([]byte(tc.stream)); err != nil {
				t.Fatal(err)
			}
			rw.Continuation()
			if s := rw.Held(); s != "" {
				t.Errorf("Held = %q", s)
			}
			if err := rw.KeepAlive(); err == nil {
				t.Errorf("a keep-alive went to a stream that is not waiting")
			}
			if _, ok := rw.Resume(func(b []byte) ([]byte, error) { return b, nil }); ok {
				t.Errorf("resumed")
			}
			rw.Close()
		})
	}
}

func TestResumeNeedsARestoredHistory(t *testing.T) {
	// A restore that changes nothing (the step is unknown, another
	// person's) makes no follow-up: the stream ends as without waiting.
	h := providertest.NewHolder("delete_post")
	rec := newRecorder()
	rw := Wrap(rec, chat.Chat{}, context.Background(), h, 0)
	rw.SetRequest([]byte(testRequest))
	rw.AllowResume()
	rw.Header().Set("Content-Type", "text/event-stream")
	rw.WriteHeader(200)
	if _, err := rw.Write([]byte(chatHeld())); err != nil {
		t.Fatal(err)
	}
	rw.Continuation()
	if _, ok := rw.Resume(func(b []byte) ([]byte, error) { return b, nil }); ok {
		t.Fatal("resumed on a history that restored nothing")
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	checkOneEnd(t, rec.Body.Bytes())
}

func TestResumeChatFollowUpFails(t *testing.T) {
	h := providertest.NewHolder("delete_post")
	rec := newRecorder()
	rw := Wrap(rec, chat.Chat{}, context.Background(), h, 0)
	rw.SetRequest([]byte(testRequest))
	rw.AllowResume()
	rw.Header().Set("Content-Type", "text/event-stream")
	rw.WriteHeader(200)
	if _, err := rw.Write([]byte(chatHeld())); err != nil {
		t.Fatal(err)
	}
	rw.Continuation()
	rs := &heldRestorer{h: h}
	if _, ok := rw.Resume(func(b []byte) ([]byte, error) {
		return chat.Chat{}.RewriteRequest(context.Background(), b, testLink, rs)
	}); !ok {
		t.Fatal("no follow-up")
	}
	rw.Continue()
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(529)
	rw.Write([]byte(`{"error":{"message":"overloaded"}}`))
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	out := rec.Body.Bytes()
	checkOneEnd(t, out)
	acc := chattest.Accumulate(t, out)
	if want := "I'll delete it.\n\n" + waitText + "\n\nToolgate could not continue: the provider answered HTTP 529."; acc.Choices[0].Message.Content != want {
		t.Errorf("content = %q", acc.Choices[0].Message.Content)
	}
	if bytes.Contains(out, []byte("overloaded")) || rec.Code != 200 {
		t.Errorf("the follow-up's error reached the app: %d %s", rec.Code, out)
	}
}

func TestResumeAnthropicStream(t *testing.T) {
	req := string(anthFixture(t, "request-1.json"))
	h := providertest.NewHolder("get_weather")
	follow := string(anthFixture(t, "stream-2.sse"))
	r := runResume(t, anthropicadapter.Anthropic{}, h, req, string(anthFixture(t, "stream-1.sse")), true, follow)
	if r.closeErr != nil {
		t.Fatal(r.closeErr)
	}
	if r.held != testStep {
		t.Fatalf("Held = %q", r.held)
	}
	if !bytes.Contains(r.waiting, []byte(testStep)) || bytes.Contains(r.waiting, []byte("message_delta")) || bytes.Contains(r.waiting, []byte("message_stop")) {
		t.Errorf("while waiting the app read:\n%s", r.waiting)
	}
	anthCheckOneMessage(t, r.out, "msg_01H1pwRRkQxKbUGKi785gT4M")
	m := anthropictest.Accumulate(t, r.out)
	texts := anthropictest.Texts(m)
	want := []string{"I'll get the current weather in San Francisco for you in Fahrenheit.", "\n\n" + waitText, "\n\nThe current weather in San Francisco is 68 degrees Fahrenheit."}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("content = %q", texts)
	}
	if m.StopReason != "end_turn" || m.Usage.OutputTokens != 89+19 {
		t.Errorf("stop_reason %q, usage %+v", m.StopReason, m.Usage)
	}
	// The follow-up: the recorded second request's shape, the person's
	// outcome as the tool result.
	msgs := gjson.Get(r.follow, "messages").Array()
	if len(msgs) != 3 || msgs[1].Get("content.1.type").Str != "tool_use" || msgs[2].Get("content.0.tool_use_id").Str != "toolu_01RaX2WYWRWCbaeFHssmGJXG" ||
		msgs[2].Get("content.0.content").Str != resumeResult {
		t.Errorf("follow-up = %s", r.follow)
	}
	if err := anthropictest.HistoryError([]byte(r.follow)); err != nil {
		t.Errorf("the API would refuse the follow-up: %v", err)
	}
}

func TestResumeResponsesStream(t *testing.T) {
	for _, tc := range []struct {
		name, request string
		want          string // the follow-up's input, by type or role
	}{
		{"input list", respRequest, "[user message function_call function_call_output]"},
		{"previous_response_id", strings.Replace(respRequest, `"stream":true`, `"stream":true,"previous_response_id":"resp_0"`, 1), "[function_call_output]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := providertest.NewHolder("delete_post")
			first := responsestest.NewSyn().Text("msg_1", "I'll delete it.").Fn("del", "delete_post", `{"post":7}`)
			follow := responsestest.NewSynID("resp_U").Text("msg_2", resumeText)
			r := runResume(t, responsesadapter.Responses{}, h, tc.request, first.Completed()+"data: [DONE]\n\n", true, follow.Completed())
			if r.closeErr != nil {
				t.Fatal(r.closeErr)
			}
			if r.held != testStep || bytes.Contains(r.waiting, []byte("response.completed")) {
				t.Fatalf("Held = %q; while waiting:\n%s", r.held, r.waiting)
			}
			d := responsestest.Decode(t, r.out)
			if d.Final == nil {
				t.Fatal("no terminal event")
			}
			if got := fmt.Sprint(responsestest.OutputSummary(d.Final.Output)); got != "[message message message]" {
				t.Errorf("output = %s", got)
			}
			if got, want := d.Final.OutputText(), "I'll delete it."+waitText+resumeText; got != want {
				t.Errorf("text = %q, want %q", got, want)
			}
			if n := strings.Count(string(r.out), "data: [DONE]"); n != 1 {
				t.Errorf("%d [DONE]", n)
			}
			var kinds []string
			gjson.Get(r.follow, "input").ForEach(func(_, it gjson.Result) bool {
				k := it.Get("type").Str
				if k == "" {
					k = it.Get("role").Str
				}
				kinds = append(kinds, k)
				return true
			})
			if fmt.Sprint(kinds) != tc.want {
				t.Errorf("follow-up input = %v\n%s", kinds, r.follow)
			}
			api := &responsestest.API{}
			api.Learn("resp_0", "[]")
			api.Learn("resp_syn", "["+strings.Join(first.Items, ",")+"]")
			if err := api.Check([]byte(r.follow)); err != nil {
				t.Errorf("the API would refuse the follow-up: %v\n%s", err, r.follow)
			}
			wantID := "resp_syn"
			if strings.Contains(tc.request, "previous_response_id") {
				// The app continues from the response whose history holds
				// the call's result.
				wantID = "resp_U"
				if gjson.Get(r.follow, "previous_response_id").Str != "resp_syn" {
					t.Errorf("follow-up continues from %s", gjson.Get(r.follow, "previous_response_id").Str)
				}
			}
			if d.Final.ID != wantID {
				t.Errorf("final id %s, want %s", d.Final.ID, wantID)
			}
		})
	}
}

// The app's next request carries the whole answer: the model's text, the
// waiting text with the link, and the model's reply after the person
// answered. It restores to what the provider accepts: the original call,
// its result, then the reply as the model's own words.

func TestResumeNextRequestChat(t *testing.T) {
	h := providertest.NewHolder("delete_post")
	r := runResume(t, chat.Chat{}, h, testRequest, chatHeld(), true, followUp(resumeText, "stop"))
	acc := chattest.Accumulate(t, r.out)
	params := openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Delete post 7"), acc.Choices[0].Message.ToParam(), openai.UserMessage("Thanks.")},
	}
	body, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	rs := &heldRestorer{h: h}
	out, err := chat.Chat{}.RewriteRequest(context.Background(), body, testLink, rs)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(chattest.Roles(t, out), " "); got != "user assistant tool:call_del assistant user" {
		t.Fatalf("roles = %s\n%s", got, out)
	}
	msgs := gjson.GetBytes(out, "messages").Array()
	if msgs[1].Get("tool_calls.0.id").Str != "call_del" || msgs[2].Get("content").Str != resumeResult || msgs[3].Get("content").Str != resumeText ||
		msgs[3].Get("tool_calls").Exists() {
		t.Errorf("history = %s", out)
	}
	if bytes.Contains(out, []byte("Waiting for")) || bytes.Contains(out, []byte(testStep)) {
		t.Errorf("the waiting text reached the model: %s", out)
	}
}

func TestResumeNextRequestAnthropic(t *testing.T) {
	h := providertest.NewHolder("get_weather")
	req := string(anthFixture(t, "request-1.json"))
	r := runResume(t, anthropicadapter.Anthropic{}, h, req, string(anthFixture(t, "stream-1.sse")), true, string(anthFixture(t, "stream-2.sse")))
	m := anthropictest.Accumulate(t, r.out)
	for _, more := range [][]anthropic.MessageParam{nil, {anthropic.NewUserMessage(anthropic.NewTextBlock("Thanks."))}} {
		body := anthropictest.AppRequest(t, "Weather in SF in fahrenheit?", m, more...)
		out, err := anthropicadapter.Anthropic{}.RewriteRequest(context.Background(), body, testLink, &heldRestorer{h: h})
		if err != nil {
			t.Fatal(err)
		}
		if err := anthropictest.HistoryError(out); err != nil {
			t.Errorf("the API would refuse it: %v\n%s", err, out)
		}
		var shape []string
		for _, msg := range gjson.GetBytes(out, "messages").Array() {
			s := msg.Get("role").Str
			for _, b := range msg.Get("content").Array() {
				s += " " + b.Get("type").Str
			}
			shape = append(shape, s)
		}
		want := "user text | assistant text tool_use | user tool_result | assistant text"
		if more != nil {
			want += " | user text"
		}
		if got := strings.Join(shape, " | "); got != want {
			t.Errorf("history %s\nwant    %s\n%s", got, want, out)
		}
		if got := gjson.GetBytes(out, "messages.3.content.0.text").Str; got != "The current weather in San Francisco is 68 degrees Fahrenheit." {
			t.Errorf("the reply = %q", got)
		}
		if bytes.Contains(out, []byte(testStep)) {
			t.Errorf("the waiting text reached the model")
		}
	}
}

func TestResumeNextRequestResponses(t *testing.T) {
	h := providertest.NewHolder("delete_post")
	first := responsestest.NewSyn().Text("msg_1", "I'll delete it.").Fn("del", "delete_post", `{"post":7}`)
	r := runResume(t, responsesadapter.Responses{}, h, respRequest, first.Completed(), true, responsestest.NewSynID("resp_U").Text("msg_2", resumeText).Completed())
	d := responsestest.Decode(t, r.out)
	joined := ""
	for _, it := range d.Final.Output {
		joined += responsestest.MessageText(it) + "\n\n"
	}
	for _, tc := range []struct {
		name, items string
		want        string
	}{
		// The app sends the output items back as they came.
		{"items", outputItems(d.Final.Output), "user message function_call function_call_output message user"},
		// The app joins the answer's text into one message.
		{"joined text", `{"role":"assistant","content":` + string(gjson.AppendJSONString(nil, joined)) + `}`, "user message function_call function_call_output assistant user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(`{"model":"gpt-5.1","input":[{"role":"user","content":"Delete post 7"},` + tc.items + `,{"role":"user","content":"Thanks."}]}`)
			out, err := responsesadapter.Responses{}.RewriteRequest(context.Background(), body, testLink, &heldRestorer{h: h})
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			gjson.GetBytes(out, "input").ForEach(func(_, it gjson.Result) bool {
				k := it.Get("type").Str
				if k == "" {
					k = it.Get("role").Str
				}
				kinds = append(kinds, k)
				return true
			})
			if got := strings.Join(kinds, " "); got != tc.want {
				t.Errorf("input %s\nwant  %s\n%s", got, tc.want, out)
			}
			api := &responsestest.API{}
			if err := api.Check(out); err != nil {
				t.Errorf("the API would refuse it: %v\n%s", err, out)
			}
			if !strings.Contains(gjson.GetBytes(out, "input.4").Raw, resumeText) || bytes.Contains(out, []byte(testStep)) {
				t.Errorf("input = %s", out)
			}
		})
	}
}

// outputItems is the output items of a response, raw, comma-separated.
func outputItems(items []responses.ResponseOutputItemUnion) string {
	raw := make([]string, len(items))
	for i, it := range items {
		raw[i] = it.RawJSON()
	}
	return strings.Join(raw, ",")
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// BenchmarkWriterStreamText200Resume: a 200-chunk answer without calls
// through the writer, as the handler drives it, with resume allowed and
// not: allowing it costs nothing when nothing is held.
func BenchmarkWriterStreamText200Resume(b *testing.B) {
	stream := chattest.TextStream(200)
	req := []byte(testRequest)
	for _, allow := range []bool{false, true} {
		b.Run(fmt.Sprintf("allowed=%v", allow), func(b *testing.B) {
			h := providertest.NewHolder("delete_post")
			w := &discardWriter{h: http.Header{}}
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				rw := Wrap(w, chat.Chat{}, context.Background(), h, 0)
				rw.SetRequest(req)
				if allow {
					rw.AllowResume()
				}
				rw.Header().Set("Content-Type", "text/event-stream")
				rw.WriteHeader(200)
				if _, err := rw.Write(stream); err != nil {
					b.Fatal(err)
				}
				if _, ok := rw.Continuation(); ok || rw.Held() != "" {
					b.Fatal("a follow-up for an answer without calls")
				}
				if err := rw.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
