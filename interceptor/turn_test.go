package interceptor

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/chat"
	"github.com/toolgate/toolgate/provider/chat/chattest"
	"github.com/toolgate/toolgate/provider/providertest"
)

const (
	refusedID   = "call_refused_9Xq"
	refusedArgs = `{"subject":"Q3 report"}`
	refusal     = "Toolgate refused send_email: the field to (required, an email address) is missing. Nothing ran."
	followID    = "chatcmpl-U"
)

// The follow-up's envelope: another id, as a real second response has.
const followEnvelope = `"id":"` + followID + `","object":"chat.completion.chunk","created":1727346190,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_7568d46099"`

func chunkU(choices ...string) string {
	return "data: {" + followEnvelope + `,"choices":[` + strings.Join(choices, ",") + "]}\n\n"
}

const usageChunkU = "data: {" + followEnvelope + `,"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":7,"total_tokens":27,"completion_tokens_details":{"reasoning_tokens":1}}}` + "\n\n"

const testRequest = `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},` +
	`"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Send the Q3 report"}],` +
	`"tools":[{"type":"function","function":{"name":"send_email","parameters":{"type":"object"}}}]}`

// refusingStream is a first response: text, a refused send_email call and
// a get_post call that passes unread, the finish, usage and [DONE].
func refusingStream(extra ...string) string {
	return strings.Join(append([]string{
		chattest.Chunk(chattest.DeltaChoice(0, `{"role":"assistant","content":"","refusal":null}`)),
		chattest.Chunk(chattest.DeltaChoice(0, `{"content":"Sure."}`)),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, refusedID, "send_email")))),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(0, refusedArgs[:9])))),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(0, refusedArgs[9:])))),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(1, "call_get", "get_post")))),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(1, `{"post":8}`)))),
	}, extra...), "") + chattest.Chunk(chattest.FinishChoice(0, "tool_calls")) + chattest.UsageChunk + "data: [DONE]\n\n"
}

// followUp is a follow-up response: a role chunk, the text, the given
// chunks, the finish, usage and [DONE].
func followUp(text, finish string, extra ...string) string {
	var b strings.Builder
	b.WriteString(chunkU(chattest.DeltaChoice(0, `{"role":"assistant","content":"","refusal":null}`)))
	for _, w := range strings.SplitAfter(text, " ") {
		b.WriteString(chunkU(chattest.DeltaChoice(0, `{"content":`+string(gjson.AppendJSONString(nil, w))+`}`)))
	}
	for _, e := range extra {
		b.WriteString(e)
	}
	b.WriteString(chunkU(chattest.FinishChoice(0, finish)))
	b.WriteString(usageChunkU)
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// turnRun drives a ResponseWriter the way the Caddy handler does: the
// first response, then while Continuation reports one (and follow-ups
// remain), Continue and the next response. It returns the follow-up
// request bodies it was given.
type upstream struct {
	status      int
	contentType string
	body        string
}

func sseUp(body string) upstream  { return upstream{200, "text/event-stream", body} }
func jsonUp(body string) upstream { return upstream{200, "application/json", body} }

func runTurn(t *testing.T, h provider.Holder, request string, responses ...upstream) (rec *recorder, requests []string, closeErr error) {
	t.Helper()
	rec = newRecorder()
	rw := Wrap(rec, chat.Chat{}, context.Background(), h, 0)
	rw.SetRequest([]byte(request))
	for i, r := range responses {
		if i > 0 {
			next, ok := rw.Continuation()
			if !ok {
				t.Fatalf("no continuation before response %d", i)
			}
			requests = append(requests, string(next))
			rw.Continue()
		}
		if r.status == 0 {
			continue // the upstream did not answer
		}
		rw.Header().Set("Content-Type", r.contentType)
		rw.Header().Set("X-Request-Id", fmt.Sprint("req-", i))
		rw.WriteHeader(r.status)
		// In pieces, as a proxy copies them.
		for p := []byte(r.body); len(p) > 0; p = p[min(97, len(p)):] {
			if _, err := rw.Write(p[:min(97, len(p))]); err != nil {
				t.Fatalf("response %d: Write: %v", i, err)
			}
		}
	}
	return rec, requests, rw.Close()
}

// countData counts the data lines of a stream for which match is true.
func countData(out []byte, match func(data string) bool) int {
	n := 0
	for line := range strings.SplitSeq(string(out), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && match(data) {
			n++
		}
	}
	return n
}

func checkOneEnd(t *testing.T, out []byte) {
	t.Helper()
	finishes := countData(out, func(d string) bool { return gjson.Get(d, "choices.0.finish_reason").Type == gjson.String })
	usages := countData(out, func(d string) bool { u := gjson.Get(d, "usage"); return u.Exists() && u.Type != gjson.Null })
	dones := countData(out, func(d string) bool { return d == "[DONE]" })
	if finishes != 1 || usages != 1 || dones != 1 {
		t.Errorf("finish chunks %d, usage chunks %d, [DONE] %d; want one each:\n%s", finishes, usages, dones, out)
	}
	if !bytes.HasSuffix(out, []byte("data: [DONE]\n\n")) {
		t.Errorf("the stream does not end with [DONE]")
	}
	if bytes.Contains(out, []byte(followID)) {
		t.Errorf("the follow-up's id reached the app")
	}
}

func checkNoRefusedCall(t *testing.T, out []byte) {
	t.Helper()
	for _, leak := range []string{refusedID, "send_email", "Q3 report", refusal} {
		if bytes.Contains(out, []byte(leak)) {
			t.Errorf("output holds %q", leak)
		}
	}
}

func TestTurnStreamContinues(t *testing.T) {
	h := providertest.NewHolder().Refusing("send_email", refusal)
	rec, reqs, err := runTurn(t, h, testRequest,
		sseUp(refusingStream()),
		sseUp(followUp("Who should receive it?", "stop")))
	if err != nil {
		t.Fatal(err)
	}
	out := rec.Body.Bytes()
	checkOneEnd(t, out)
	checkNoRefusedCall(t, out)
	acc := chattest.Accumulate(t, out)
	c := acc.Choices[0]
	if want := "Sure.\n\nWho should receive it?"; c.Message.Content != want {
		t.Errorf("content = %q, want %q", c.Message.Content, want)
	}
	if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != "call_get" || c.Message.ToolCalls[0].Function.Arguments != `{"post":8}` {
		t.Errorf("tool calls = %+v", c.Message.ToolCalls)
	}
	if c.FinishReason != "tool_calls" {
		t.Errorf("finish_reason = %q, want tool_calls: get_post reached the app", c.FinishReason)
	}
	if acc.ID != "chatcmpl-T" || acc.Usage.TotalTokens != 15+27 || acc.Usage.CompletionTokensDetails.ReasoningTokens != 1 {
		t.Errorf("id %q, usage %+v", acc.ID, acc.Usage)
	}
	if len(rec.headers) != 1 || rec.Header().Get("X-Request-Id") != "req-0" {
		t.Errorf("headers %v, %v: want the first response's, once", rec.headers, rec.Header())
	}

	// The follow-up request: the request with the refused call and its
	// result appended to messages, every other byte kept.
	if len(reqs) != 1 {
		t.Fatalf("requests = %d", len(reqs))
	}
	req := reqs[0]
	cut := strings.Index(testRequest, `],"tools"`)
	if !strings.HasPrefix(req, testRequest[:cut]) || !strings.HasSuffix(req, testRequest[cut:]) {
		t.Errorf("bytes outside the appended messages changed:\n%s", req)
	}
	if got := strings.Join(chattest.Roles(t, []byte(req)), " "); got != "system user assistant tool:"+refusedID {
		t.Errorf("roles = %s", got)
	}
	msgs := gjson.Get(req, "messages").Array()
	asst := msgs[2]
	if asst.Get("content").Str != "Sure." || asst.Get("tool_calls.#").Int() != 1 ||
		asst.Get("tool_calls.0.id").Str != refusedID || asst.Get("tool_calls.0.function.name").Str != "send_email" ||
		asst.Get("tool_calls.0.function.arguments").Str != refusedArgs {
		t.Errorf("assistant message = %s", asst.Raw)
	}
	if msgs[3].Get("content").Str != refusal {
		t.Errorf("tool message = %s", msgs[3].Raw)
	}
	chattest.CheckMessage(t, []byte(asst.Raw), ptr("Sure."), [][3]string{{refusedID, "send_email", refusedArgs}})
}

func ptr(s string) *string { return &s }

func TestTurnStreamHeldBesideRefused(t *testing.T) {
	h := providertest.NewHolder("delete_post").Refusing("send_email", refusal)
	first := refusingStream(
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(2, "call_del", "delete_post")))),
		chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(2, `{"post":7}`)))))
	rec, reqs, err := runTurn(t, h, testRequest, sseUp(first), sseUp(followUp("Who should receive it?", "stop")))
	if err != nil {
		t.Fatal(err)
	}
	out := rec.Body.Bytes()
	checkOneEnd(t, out)
	checkNoRefusedCall(t, out)
	c := chattest.Accumulate(t, out).Choices[0]
	if want := "Sure.\n\n" + waitText + "\n\nWho should receive it?"; c.Message.Content != want {
		t.Errorf("content = %q\nwant %q", c.Message.Content, want)
	}
	if len(c.Message.ToolCalls) != 1 || c.FinishReason != "tool_calls" || bytes.Contains(out, []byte("call_del")) {
		t.Errorf("choice = %+v", c)
	}
	// Only the refused call goes back; the held one waits for the person.
	if ids := gjson.Get(reqs[0], "messages.2.tool_calls.#.id").Raw; ids != `["`+refusedID+`"]` {
		t.Errorf("follow-up calls = %s", ids)
	}
	// Hold saw the whole message of the first response.
	chattest.CheckMessage(t, h.Holds()[0].Message, ptr("Sure."), [][3]string{
		{refusedID, "send_email", refusedArgs}, {"call_get", "get_post", `{"post":8}`}, {"call_del", "delete_post", `{"post":7}`},
	})
}

func TestTurnStreamTextFlowsAsItComes(t *testing.T) {
	h := providertest.NewHolder().Refusing("send_email", refusal)
	rec := newRecorder()
	rw := Wrap(rec, chat.Chat{}, context.Background(), h, 0)
	rw.SetRequest([]byte(testRequest))
	rw.Header().Set("Content-Type", "text/event-stream")
	rw.WriteHeader(http.StatusOK)
	first := refusingStream()
	if _, err := rw.Write([]byte(first)); err != nil {
		t.Fatal(err)
	}
	if _, ok := rw.Continuation(); !ok {
		t.Fatal("no continuation")
	}
	if bytes.Contains(rec.Body.Bytes(), []byte(`"finish_reason":"`)) || bytes.Contains(rec.Body.Bytes(), []byte("[DONE]")) ||
		bytes.Contains(rec.Body.Bytes(), []byte(`"usage"`)) {
		t.Fatalf("the first response's end was written:\n%s", rec.Body.Bytes())
	}
	rw.Continue()
	rw.Header().Set("Content-Type", "text/event-stream")
	rw.WriteHeader(http.StatusOK)
	for _, ev := range providertest.Events([]byte(followUp("Who should receive it?", "stop"))) {
		before := rec.Body.Len()
		if _, err := rw.Write(ev); err != nil {
			t.Fatal(err)
		}
		if gjson.GetBytes(ev[6:], "choices.0.delta.content").Str != "" && rec.Body.Len() == before {
			t.Fatalf("a text delta was held back: %s", ev)
		}
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	checkOneEnd(t, rec.Body.Bytes())
}

func TestTurnStreamFollowUpHoldsAndPasses(t *testing.T) {
	h := providertest.NewHolder("delete_post").Refusing("send_email", refusal).Passing("update_post")
	second := followUp("I'll ask.", "tool_calls",
		chunkU(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "call_del", "delete_post")))),
		chunkU(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(0, `{"post":7}`)))),
		chunkU(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(1, "call_get2", "get_post")))),
		chunkU(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(1, `{"post":9}`)))),
		chunkU(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(2, "call_upd", "update_post")))),
		chunkU(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(2, `{"post":9,"title":"x"}`)))),
	)
	rec, _, err := runTurn(t, h, testRequest, sseUp(refusingStream()), sseUp(second))
	if err != nil {
		t.Fatal(err)
	}
	out := rec.Body.Bytes()
	checkOneEnd(t, out)
	checkNoRefusedCall(t, out)
	if bytes.Contains(out, []byte("call_del")) {
		t.Error("the held call reached the app")
	}
	calls := chattest.OutputCalls(t, out)
	if len(calls) != 3 {
		t.Errorf("output call indices = %v", calls)
	}
	acc := chattest.Accumulate(t, out)
	c := acc.Choices[0]
	if want := "Sure.\n\nI'll ask.\n\n" + waitText; c.Message.Content != want {
		t.Errorf("content = %q\nwant %q", c.Message.Content, want)
	}
	var got []string
	for _, tc := range c.Message.ToolCalls {
		got = append(got, tc.ID+" "+tc.Function.Name+" "+tc.Function.Arguments)
	}
	want := []string{`call_get get_post {"post":8}`, `call_get2 get_post {"post":9}`, `call_upd update_post {"post":9,"title":"x"}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tool calls = %q\nwant %q", got, want)
	}
	if c.FinishReason != "tool_calls" {
		t.Errorf("finish_reason = %q", c.FinishReason)
	}
	// The follow-up's Hold got its own message: its text and its calls.
	last := h.Holds()[len(h.Holds())-1]
	chattest.CheckMessage(t, last.Message, ptr("I'll ask."), [][3]string{
		{"call_del", "delete_post", `{"post":7}`}, {"call_get2", "get_post", `{"post":9}`}, {"call_upd", "update_post", `{"post":9,"title":"x"}`},
	})
}

func TestTurnStreamRefusedUpToTheLimit(t *testing.T) {
	h := providertest.NewHolder().Refusing("send_email", refusal)
	again := func(n int) string {
		return followUp(fmt.Sprintf("Try %d.", n), "tool_calls",
			chunkU(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, refusedID+strconv.Itoa(n), "send_email")))),
			chunkU(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(0, refusedArgs)))))
	}
	responses := []upstream{sseUp(refusingStream())}
	for n := 1; n <= provider.MaxContinuations; n++ {
		responses = append(responses, sseUp(again(n)))
	}
	rec, reqs, err := runTurn(t, h, testRequest, responses...)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != provider.MaxContinuations {
		t.Fatalf("follow-ups = %d", len(reqs))
	}
	for i, req := range reqs {
		if n := len(gjson.Get(req, "messages").Array()); n != 2+2*(i+1) {
			t.Errorf("follow-up %d has %d messages", i, n)
		}
	}
	if ids := gjson.Get(reqs[2], "messages.#.tool_call_id").Raw; ids != `["`+refusedID+`","`+refusedID+`1","`+refusedID+`2"]` {
		t.Errorf("tool results = %s", ids)
	}
	out := rec.Body.Bytes()
	checkOneEnd(t, out)
	acc := chattest.Accumulate(t, out)
	c := acc.Choices[0]
	// The last refusal, past the limit, is shown in place.
	if want := "Sure.\n\nTry 1.\n\nTry 2.\n\nTry 3.\n\n" + refusal; c.Message.Content != want {
		t.Errorf("content = %q\nwant %q", c.Message.Content, want)
	}
	if len(c.Message.ToolCalls) != 1 || c.FinishReason != "tool_calls" || acc.Usage.TotalTokens != 15+3*27 {
		t.Errorf("choice = %+v, usage %+v", c, acc.Usage)
	}
	if bytes.Contains(out, []byte(`"name":"send_email"`)) || bytes.Contains(out, []byte(refusedID)) {
		t.Error("a refused call reached the app")
	}
}

func TestTurnStreamFollowUpFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		up   upstream
		text string
	}{
		{"HTTP 500", upstream{500, "application/json", `{"error":{"message":"boom"}}`}, "Toolgate could not continue: the provider answered HTTP 500."},
		{"no answer", upstream{}, "Toolgate could not continue: the provider did not answer."},
		{"another type", jsonUp(`{"choices":[]}`), "Toolgate could not continue: the provider's answer could not be read."},
		{"cut short", sseUp(chunkU(chattest.DeltaChoice(0, `{"content":"Who"}`))), "Who\n\nToolgate could not continue: the provider's answer ended early."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := providertest.NewHolder().Refusing("send_email", refusal)
			rec, _, err := runTurn(t, h, testRequest, sseUp(refusingStream()), tc.up)
			if err != nil {
				t.Fatal(err)
			}
			out := rec.Body.Bytes()
			checkOneEnd(t, out)
			checkNoRefusedCall(t, out)
			if bytes.Contains(out, []byte("boom")) {
				t.Error("the follow-up's error body reached the app")
			}
			acc := chattest.Accumulate(t, out)
			c := acc.Choices[0]
			if want := "Sure.\n\n" + tc.text; c.Message.Content != want {
				t.Errorf("content = %q\nwant %q", c.Message.Content, want)
			}
			if c.FinishReason != "tool_calls" || acc.Usage.TotalTokens != 15 || len(rec.headers) != 1 || rec.Code != 200 {
				t.Errorf("finish %q, usage %d, headers %v", c.FinishReason, acc.Usage.TotalTokens, rec.headers)
			}
		})
	}
}

func TestTurnStreamNoFollowUpSent(t *testing.T) {
	// The handler may decline to continue: the refusal is shown in place.
	h := providertest.NewHolder().Refusing("send_email", refusal)
	rec := newRecorder()
	rw := Wrap(rec, chat.Chat{}, context.Background(), h, 0)
	rw.SetRequest([]byte(testRequest))
	rw.Header().Set("Content-Type", "text/event-stream")
	if _, err := rw.Write([]byte(refusingStream())); err != nil {
		t.Fatal(err)
	}
	if _, ok := rw.Continuation(); !ok {
		t.Fatal("no continuation")
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	out := rec.Body.Bytes()
	checkOneEnd(t, out)
	c := chattest.Accumulate(t, out).Choices[0]
	if c.Message.Content != "Sure.\n\n"+refusal || c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 {
		t.Errorf("choice = %+v", c)
	}
}

func TestTurnWithoutRequestShowsRefusalsInPlace(t *testing.T) {
	// No SetRequest, several choices, or n > 1: no continuation.
	for _, tc := range []struct {
		name, request string
	}{
		{"no request", ""},
		{"n 2", `{"n":2,"messages":[]}`},
		{"no messages", `{"model":"x"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := providertest.NewHolder("delete_post").Refusing("send_email", refusal)
			rec := newRecorder()
			rw := Wrap(rec, chat.Chat{}, context.Background(), h, 0)
			if tc.request != "" {
				rw.SetRequest([]byte(tc.request))
			}
			rw.Header().Set("Content-Type", "text/event-stream")
			if _, err := rw.Write([]byte(refusingStream(
				chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(2, "call_del", "delete_post")))),
				chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(2, `{}`))))))); err != nil {
				t.Fatal(err)
			}
			if _, ok := rw.Continuation(); ok {
				t.Fatal("continuation offered")
			}
			if err := rw.Close(); err != nil {
				t.Fatal(err)
			}
			out := rec.Body.Bytes()
			c := chattest.Accumulate(t, out).Choices[0]
			if want := "Sure.\n\n" + waitText + "\n\n" + refusal; c.Message.Content != want {
				t.Errorf("content = %q", c.Message.Content)
			}
			if bytes.Contains(out, []byte(refusedID)) || len(c.Message.ToolCalls) != 1 {
				t.Errorf("choice = %+v", c)
			}
		})
	}
}

// jsonCompletion is a chat.completion with one choice.
func jsonCompletion(id, message, finish string, total int) string {
	return fmt.Sprintf(`{"id":%q,"object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d},"system_fingerprint":"fp_x"}`,
		id, message, finish, total-1, total)
}

const (
	refusedCallJSON = `{"id":"` + refusedID + `","type":"function","function":{"name":"send_email","arguments":"{\"subject\":\"Q3 report\"}"}}`
	getCallJSON     = `{"id": "call_get", "type": "function", "function": {"name": "get_post", "arguments": "{\"post\":8}"}}`
)

func TestTurnJSONContinues(t *testing.T) {
	first := jsonCompletion("chatcmpl-A", `{"role":"assistant","content":"Sure \u00e9.","tool_calls":[`+refusedCallJSON+`,`+getCallJSON+`],"refusal":null}`, "tool_calls", 10)
	for _, tc := range []struct {
		name     string
		second   string
		content  string
		calls    []string
		finish   string
		holder   *providertest.Holder
		requests int
	}{
		{"text", jsonCompletion("chatcmpl-B", `{"role":"assistant","content":"Who should get it?"}`, "stop", 5),
			"Sure é.\n\nWho should get it?", []string{"call_get"}, "tool_calls", providertest.NewHolder().Refusing("send_email", refusal), 1},
		{"held and passed calls", jsonCompletion("chatcmpl-B", `{"role":"assistant","content":null,"tool_calls":[{"id":"call_del","type":"function","function":{"name":"delete_post","arguments":"{}"}},{"id":"call_upd","type":"function","function":{"name":"update_post","arguments":"{}"}}]}`, "tool_calls", 5),
			"Sure é.\n\n" + waitText, []string{"call_get", "call_upd"}, "tool_calls", providertest.NewHolder("delete_post").Refusing("send_email", refusal).Passing("update_post"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, reqs, err := runTurn(t, tc.holder, testRequest, jsonUp(first), jsonUp(tc.second))
			if err != nil {
				t.Fatal(err)
			}
			out := rec.Body.Bytes()
			if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(len(out)) || len(rec.headers) != 1 {
				t.Errorf("Content-Length %s for %d bytes, headers %v", cl, len(out), rec.headers)
			}
			if rec.Header().Get("X-Request-Id") != "req-0" || len(rec.Header().Values("Content-Type")) != 1 {
				t.Errorf("header = %v: want the first response's", rec.Header())
			}
			checkNoRefusedCall(t, out)
			c := chattest.DecodeCompletion(t, out)
			ch := c.Choices[0]
			if ch.Message.Content != tc.content || string(ch.FinishReason) != tc.finish {
				t.Errorf("content %q, finish %q", ch.Message.Content, ch.FinishReason)
			}
			var ids []string
			for _, call := range ch.Message.ToolCalls {
				ids = append(ids, call.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tc.calls) {
				t.Errorf("calls = %v, want %v", ids, tc.calls)
			}
			if c.ID != "chatcmpl-A" || c.Usage.TotalTokens != 15 || c.Usage.PromptTokens != 13 {
				t.Errorf("id %s, usage %+v", c.ID, c.Usage)
			}
			if !strings.Contains(string(out), getCallJSON) {
				t.Error("the passed call was not kept byte for byte")
			}
			if len(reqs) != tc.requests || gjson.Get(reqs[0], "messages.2.tool_calls.0").Raw != refusedCallJSON ||
				gjson.Get(reqs[0], "messages.2.content").Str != "Sure é." || gjson.Get(reqs[0], "messages.3.content").Str != refusal {
				t.Errorf("follow-up requests = %q", reqs)
			}
		})
	}
}

func TestTurnJSONRefusedUpToTheLimit(t *testing.T) {
	h := providertest.NewHolder().Refusing("send_email", refusal)
	resp := func(n int) upstream {
		return jsonUp(jsonCompletion(fmt.Sprint("chatcmpl-", n), fmt.Sprintf(`{"role":"assistant","content":"Try %d.","tool_calls":[%s]}`, n, refusedCallJSON), "tool_calls", 2))
	}
	responses := []upstream{resp(0)}
	for n := 1; n <= provider.MaxContinuations; n++ {
		responses = append(responses, resp(n))
	}
	rec, reqs, err := runTurn(t, h, testRequest, responses...)
	if err != nil {
		t.Fatal(err)
	}
	c := chattest.DecodeCompletion(t, rec.Body.Bytes())
	ch := c.Choices[0]
	if want := "Try 0.\n\nTry 1.\n\nTry 2.\n\nTry 3.\n\n" + refusal; ch.Message.Content != want || ch.FinishReason != "stop" || len(ch.Message.ToolCalls) != 0 {
		t.Errorf("choice = %+v", ch)
	}
	if len(reqs) != provider.MaxContinuations || c.Usage.TotalTokens != 8 {
		t.Errorf("requests %d, usage %+v", len(reqs), c.Usage)
	}
}

func TestTurnJSONFollowUpFails(t *testing.T) {
	first := jsonCompletion("chatcmpl-A", `{"role":"assistant","content":null,"tool_calls":[`+refusedCallJSON+`]}`, "tool_calls", 10)
	for _, tc := range []struct {
		name string
		up   upstream
		text string
	}{
		{"HTTP 429", upstream{429, "application/json", `{"error":{}}`}, "the provider answered HTTP 429."},
		{"invalid JSON", jsonUp(`{"choices":[{"message":{"tool_calls":[`), "the provider's answer could not be read."},
		{"no answer", upstream{}, "the provider did not answer."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, _, err := runTurn(t, providertest.NewHolder().Refusing("send_email", refusal), testRequest, jsonUp(first), tc.up)
			if err != nil {
				t.Fatal(err)
			}
			ch := chattest.DecodeCompletion(t, rec.Body.Bytes()).Choices[0]
			if ch.Message.Content != "Toolgate could not continue: "+tc.text || ch.FinishReason != "stop" || rec.Code != 200 {
				t.Errorf("choice = %+v, status %d", ch, rec.Code)
			}
			checkNoRefusedCall(t, rec.Body.Bytes())
		})
	}
}
