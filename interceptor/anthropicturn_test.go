package interceptor

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	anthropicadapter "github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/anthropic/anthropictest"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/wire/stream"
)

const anthRefusal = "Toolgate refused get_weather: the field units (celsius or fahrenheit) is not allowed here. Nothing ran."

// anthRunTurn drives a ResponseWriter with the Anthropic adapter the way
// the Caddy handler does: the first response, then while Continuation
// reports one, Continue and the next response. It returns the follow-up
// request bodies it was given.
func anthRunTurn(t *testing.T, h provider.Holder, request string, responses ...upstream) (rec *recorder, requests []string, closeErr error) {
	t.Helper()
	rec = newRecorder()
	rw := Wrap(rec, anthropicadapter.Anthropic{}, context.Background(), h, 0)
	if request != "" {
		rw.SetRequest([]byte(request))
	}
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
		rw.Header().Set("Request-Id", fmt.Sprint("req-", i))
		rw.WriteHeader(r.status)
		for p := []byte(r.body); len(p) > 0; p = p[min(97, len(p)):] {
			if _, err := rw.Write(p[:min(97, len(p))]); err != nil {
				t.Fatalf("response %d: Write: %v", i, err)
			}
		}
	}
	if _, ok := rw.Continuation(); ok && len(responses) > 0 {
		requests = append(requests, "(not sent)")
	}
	return rec, requests, rw.Close()
}

// anthCheckOneMessage checks that a stream holds one message: one
// message_start (the first response's id), one message_delta, one
// message_stop at the end.
func anthCheckOneMessage(t *testing.T, out []byte, firstID string) {
	t.Helper()
	for _, typ := range []string{"message_start", "message_delta", "message_stop"} {
		if n := bytes.Count(out, []byte("event: "+typ+"\n")); n != 1 {
			t.Errorf("%d %s events, want 1:\n%s", n, typ, out)
		}
	}
	if !bytes.HasSuffix(out, []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")) && !bytes.HasSuffix(out, []byte("message_stop\"       }\n\n")) {
		t.Errorf("the stream does not end with message_stop:\n%s", out[max(0, len(out)-200):])
	}
	if gjson.Get(string(out[bytes.Index(out, []byte("data: "))+6:]), "message.id").Str != firstID {
		t.Errorf("message_start is not the first response's")
	}
}

func TestAnthropicTurnStreamContinues(t *testing.T) {
	req := string(anthFixture(t, "request-1.json"))
	h := providertest.NewHolder().Refusing("get_weather", anthRefusal)
	rec, reqs, err := anthRunTurn(t, h, req, sseUp(string(anthFixture(t, "stream-1.sse"))), sseUp(string(anthFixture(t, "stream-2.sse"))))
	if err != nil {
		t.Fatal(err)
	}
	out := rec.Body.Bytes()
	anthCheckOneMessage(t, out, "msg_01H1pwRRkQxKbUGKi785gT4M")
	anthropictest.NoLeak(t, out, "msg_01Hh7yjeiaEaEREnpywjByCo", "toolu_01RaX2WYWRWCbaeFHssmGJXG", "input_json_delta", anthRefusal)
	m := anthropictest.Accumulate(t, out)
	want := []string{"I'll get the current weather in San Francisco for you in Fahrenheit.", "\n\nThe current weather in San Francisco is 68 degrees Fahrenheit."}
	if texts := anthropictest.Texts(m); len(m.Content) != 2 || strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("content = %q", texts)
	}
	if m.StopReason != "end_turn" || m.ID != "msg_01H1pwRRkQxKbUGKi785gT4M" {
		t.Errorf("stop_reason %q, id %q", m.StopReason, m.ID)
	}
	// Usage: each response's (start, delta over it) summed.
	if m.Usage.OutputTokens != 89+19 || m.Usage.InputTokens != 397+509 {
		t.Errorf("usage = %+v", m.Usage)
	}
	if len(rec.headers) != 1 || rec.Header().Get("Request-Id") != "req-0" {
		t.Errorf("headers %v %v: want the first response's, once", rec.headers, rec.Header())
	}

	// The follow-up request is the recorded second request, with the
	// refusal as the tool result.
	if len(reqs) != 1 {
		t.Fatalf("requests = %q", reqs)
	}
	follow := reqs[0]
	cut := strings.Index(req, `],"model"`)
	if !strings.HasPrefix(follow, req[:cut]) || !strings.HasSuffix(follow, req[cut:]) {
		t.Errorf("bytes outside the appended messages changed:\n%s", follow)
	}
	rec2 := string(anthFixture(t, "request-2.json"))
	got, wantMsgs := gjson.Get(follow, "messages").Array(), gjson.Get(rec2, "messages").Array()
	if len(got) != 3 || !jsonEqual(t, got[1].Raw, wantMsgs[1].Raw) {
		t.Errorf("assistant message = %s\nthe recorded one: %s", got[1].Raw, wantMsgs[1].Raw)
	}
	if r := got[2]; r.Get("role").Str != "user" || r.Get("content.#").Int() != 1 ||
		r.Get("content.0.type").Str != "tool_result" || r.Get("content.0.tool_use_id").Str != "toolu_01RaX2WYWRWCbaeFHssmGJXG" ||
		r.Get("content.0.content").Str != anthRefusal || !r.Get("content.0.is_error").Bool() {
		t.Errorf("user message = %s", r.Raw)
	}
	if err := anthropictest.HistoryError([]byte(follow)); err != nil {
		t.Error(err)
	}
}

// anthRefusingStream: thinking, text, a refused send_email call, then a
// get_post call that passes unread.
func anthRefusingStream() string {
	return anthropictest.Start("msg_first") +
		anthropictest.Ev(`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`) +
		anthropictest.Ev(`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"`+anthThinking+`"}}`) +
		anthropictest.Ev(`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"`+anthSignature+`"}}`) +
		anthropictest.Ev(`{"type":"content_block_stop","index":0}`) +
		anthropictest.TextBlockEvs(1, "Sure.") +
		anthropictest.ToolEvs(2, "toolu_send", "send_email", `{"subject":`, `"Q3 report"}`) +
		anthropictest.ToolEvs(3, "toolu_get", "get_post", `{"post":8}`) + anthropictest.End("tool_use", 30)
}

func anthFollowUp(id, reason string, blocks ...string) string {
	s := anthropictest.Start(id)
	for _, b := range blocks {
		s += b
	}
	return s + anthropictest.End(reason, 7)
}

const anthRequest = `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},` +
	`"messages":[{"role":"user","content":"Send the Q3 report"}],` +
	`"tools":[{"name":"send_email","input_schema":{"type":"object"}},{"name":"get_post","input_schema":{"type":"object"}}]}`

func TestAnthropicTurnStreamPassedBesideRefused(t *testing.T) {
	h := providertest.NewHolder().Refusing("send_email", refusal)
	rec, reqs, err := anthRunTurn(t, h, anthRequest, sseUp(anthRefusingStream()),
		sseUp(anthFollowUp("msg_second", "end_turn", anthropictest.TextBlockEvs(0, "Who should", " receive it?"))))
	if err != nil {
		t.Fatal(err)
	}
	out := rec.Body.Bytes()
	anthCheckOneMessage(t, out, "msg_first")
	anthropictest.NoLeak(t, out, "msg_second", "toolu_send", "send_email", "Q3 report", refusal)
	m := anthropictest.Accumulate(t, out)
	var got []string
	for _, b := range m.Content {
		got = append(got, b.Type+":"+b.ID+b.Text)
	}
	if want := "thinking: text:Sure. tool_use:toolu_get text:\n\nWho should receive it?"; strings.Join(got, " ") != want {
		t.Errorf("content = %q, want %q", strings.Join(got, " "), want)
	}
	if m.StopReason != "tool_use" {
		t.Errorf("stop_reason = %q, want tool_use: get_post reached the app", m.StopReason)
	}
	if m.Usage.OutputTokens != 37 || m.Usage.InputTokens != 200 {
		t.Errorf("usage = %+v", m.Usage)
	}
	// The follow-up's assistant message: thinking kept with the refused
	// call, get_post (no result to give) left out.
	asst := gjson.Get(reqs[0], "messages.1.content").Raw
	want := `[{"type":"thinking","thinking":"` + anthThinking + `","signature":"` + anthSignature + `"},{"type":"text","text":"Sure."},` +
		`{"type":"tool_use","id":"toolu_send","name":"send_email","input":{"subject":"Q3 report"}}]`
	if asst != want {
		t.Errorf("assistant content =\n%s\nwant\n%s", asst, want)
	}
	if err := anthropictest.HistoryError([]byte(reqs[0])); err != nil {
		t.Error(err)
	}
}

func TestAnthropicTurnStreamFollowUpHolds(t *testing.T) {
	h := providertest.NewHolder("delete_post").Refusing("send_email", refusal)
	rec, _, err := anthRunTurn(t, h, anthRequest, sseUp(anthRefusingStream()),
		sseUp(anthFollowUp("msg_second", "tool_use", anthropictest.TextBlockEvs(0, "Then I'll delete it."),
			anthropictest.ToolEvs(1, "toolu_del", "delete_post", `{"post":7}`))))
	if err != nil {
		t.Fatal(err)
	}
	out := rec.Body.Bytes()
	anthCheckOneMessage(t, out, "msg_first")
	anthropictest.NoLeak(t, out, "toolu_del", "delete_post", "toolu_send")
	m := anthropictest.Accumulate(t, out)
	if n := len(m.Content); n != 5 || m.Content[3].Text != "\n\nThen I'll delete it." || m.Content[4].Text != "\n\n"+waitText || m.StopReason != "tool_use" {
		t.Errorf("content = %+v, stop %q", m.Content, m.StopReason)
	}
	// The second Hold got the follow-up's own message.
	if len(h.Holds()) != 2 || string(h.Holds()[1].Message) != `{"role":"assistant","content":[{"type":"text","text":"Then I'll delete it."},{"type":"tool_use","id":"toolu_del","name":"delete_post","input":{"post":7}}]}` {
		t.Errorf("holds = %d, second message %s", len(h.Holds()), h.Holds()[len(h.Holds())-1].Message)
	}
}

func TestAnthropicTurnStreamRefusedUpToTheLimit(t *testing.T) {
	h := providertest.NewHolder().Refusing("send_email", refusal)
	again := func(id string) upstream {
		return sseUp(anthFollowUp(id, "tool_use", anthropictest.ToolEvs(0, "toolu_s"+id, "send_email", `{}`)))
	}
	rec, reqs, err := anthRunTurn(t, h, anthRequest, sseUp(anthRefusingStream()), again("1"), again("2"), again("3"))
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != provider.MaxContinuations {
		t.Fatalf("%d follow-ups, want %d", len(reqs), provider.MaxContinuations)
	}
	out := rec.Body.Bytes()
	anthCheckOneMessage(t, out, "msg_first")
	m := anthropictest.Accumulate(t, out)
	last := m.Content[len(m.Content)-1]
	if last.Text != "\n\n"+refusal || m.StopReason != "tool_use" || len(anthropictest.ToolUses(m)) != 1 {
		t.Errorf("content = %+v, stop %q", m.Content, m.StopReason)
	}
	// Each follow-up extends the last: 1 + 2 per round messages.
	if n := gjson.Get(reqs[2], "messages.#").Int(); n != 7 {
		t.Errorf("third follow-up has %d messages", n)
	}
	if err := anthropictest.HistoryError([]byte(reqs[2])); err != nil {
		t.Error(err)
	}
}

func TestAnthropicTurnStreamFollowUpFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		follow upstream
		want   string
	}{
		{"status", upstream{http.StatusInternalServerError, "application/json", `{"type":"error"}`}, "the provider answered HTTP 500."},
		{"no answer", upstream{}, "the provider did not answer."},
		{"ended early", sseUp(anthropictest.Start("msg_second") + anthropictest.Ev(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
			anthropictest.Ev(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Who"}}`)), "the provider's answer ended early."},
		// Found by FuzzAnthropicContinuation: the last event lacks its blank
		// line, and the end written after it must not join it.
		{"unterminated last event", sseUp(anthropictest.Start("msg_second") + anthropictest.TextBlockEvs(0, "Who?") + "event: ping\ndata: {\"type\":\"ping\"}\n"), "the provider's answer ended early."},
		{"data-less event", sseUp("event: message_start\n"), "the provider's answer ended early."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := providertest.NewHolder().Refusing("send_email", refusal)
			rec, _, err := anthRunTurn(t, h, anthRequest, sseUp(anthRefusingStream()), tc.follow)
			if err != nil {
				t.Fatal(err)
			}
			out := rec.Body.Bytes()
			anthCheckOneMessage(t, out, "msg_first")
			m := anthropictest.Accumulate(t, out)
			if last := m.Content[len(m.Content)-1]; last.Text != "\n\nToolgate could not continue: "+tc.want {
				t.Errorf("last block = %+v", last)
			}
			if m.StopReason != "tool_use" {
				t.Errorf("stop_reason = %q", m.StopReason)
			}
		})
	}
}

func TestAnthropicTurnStreamNoFollowUpSent(t *testing.T) {
	h := providertest.NewHolder().Refusing("send_email", refusal)
	rec := newRecorder()
	rw := Wrap(rec, anthropicadapter.Anthropic{}, context.Background(), h, 0)
	rw.SetRequest([]byte(anthRequest))
	rw.Header().Set("Content-Type", "text/event-stream")
	if _, err := rw.Write([]byte(anthRefusingStream())); err != nil {
		t.Fatal(err)
	}
	if _, ok := rw.Continuation(); !ok {
		t.Fatal("no continuation")
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	out := rec.Body.Bytes()
	anthCheckOneMessage(t, out, "msg_first")
	m := anthropictest.Accumulate(t, out)
	if last := m.Content[len(m.Content)-1]; last.Text != "\n\n"+refusal || m.StopReason != "tool_use" || m.Usage.OutputTokens != 30 {
		t.Errorf("last block %+v, stop %q, usage %+v", last, m.StopReason, m.Usage)
	}
}

func TestAnthropicTurnWithoutRequestShowsRefusalsInPlace(t *testing.T) {
	h := providertest.NewHolder().Refusing("send_email", refusal)
	rec, reqs, err := anthRunTurn(t, h, "", sseUp(anthRefusingStream()))
	if err != nil || len(reqs) != 0 {
		t.Fatal(err, reqs)
	}
	m := anthropictest.Accumulate(t, rec.Body.Bytes())
	if m.Content[2].Text != "\n\n"+refusal || m.Content[3].ID != "toolu_get" {
		t.Errorf("content = %+v", m.Content)
	}
}

// JSON.

func anthJSONMessage(id, content, stop string, output int) string {
	return `{"id":"` + id + `","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":` + content +
		`,"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":` + strconv.Itoa(output) + `}}`
}

const anthRefusingContent = `[{"type":"thinking","thinking":"` + anthThinking + `","signature":"` + anthSignature + `"},{"type":"text","text":"Sure."},` +
	`{"type":"tool_use","id":"toolu_send","name":"send_email","input":{"subject":"Q3 report"}},` +
	`{"type":"tool_use","id":"toolu_get","name":"get_post","input":{"post":8}}]`

func TestAnthropicTurnJSONContinues(t *testing.T) {
	h := providertest.NewHolder().Refusing("send_email", refusal)
	rec, reqs, err := anthRunTurn(t, h, strings.Replace(anthRequest, `"stream":true,`, "", 1),
		jsonUp(anthJSONMessage("msg_first", anthRefusingContent, "tool_use", 30)),
		jsonUp(anthJSONMessage("msg_second", `[{"type":"text","text":"Who should receive it?"}]`, "end_turn", 7)))
	if err != nil {
		t.Fatal(err)
	}
	out := rec.Body.Bytes()
	if rec.Header().Get("Content-Length") != strconv.Itoa(len(out)) {
		t.Errorf("Content-Length %s for %d bytes", rec.Header().Get("Content-Length"), len(out))
	}
	var m anthropic.Message
	if err := m.UnmarshalJSON(out); err != nil {
		t.Fatal(err)
	}
	anthropictest.NoLeak(t, out, "msg_second", "toolu_send", "send_email", refusal)
	if m.ID != "msg_first" || len(m.Content) != 4 || m.Content[2].ID != "toolu_get" || m.Content[3].Text != "\n\nWho should receive it?" {
		t.Errorf("message = %s", out)
	}
	if m.StopReason != "tool_use" || m.Usage.OutputTokens != 37 || m.Usage.InputTokens != 200 {
		t.Errorf("stop %q, usage %+v", m.StopReason, m.Usage)
	}
	asst := gjson.Get(reqs[0], "messages.1.content").Raw
	if want := anthRefusingContent[:strings.Index(anthRefusingContent, `,{"type":"tool_use","id":"toolu_get"`)] + "]"; asst != want {
		t.Errorf("assistant content = %s\nwant %s", asst, want)
	}
	if err := anthropictest.HistoryError([]byte(reqs[0])); err != nil {
		t.Error(err)
	}
}

func TestAnthropicTurnJSONFollowUpFails(t *testing.T) {
	h := providertest.NewHolder().Refusing("send_email", refusal)
	rec, _, err := anthRunTurn(t, h, anthRequest,
		jsonUp(anthJSONMessage("msg_first", anthRefusingContent, "tool_use", 30)),
		jsonUp(`{"type":"message","content":`))
	if err != nil {
		t.Fatal(err)
	}
	var m anthropic.Message
	if err := m.UnmarshalJSON(rec.Body.Bytes()); err != nil {
		t.Fatal(err)
	}
	if last := m.Content[len(m.Content)-1]; last.Text != "\n\nToolgate could not continue: the provider's answer could not be read." || m.StopReason != "tool_use" {
		t.Errorf("content = %+v", m.Content)
	}

	// Refused alone, no follow-up sent: the refusal in place, end_turn.
	h = providertest.NewHolder().Refusing("send_email", refusal)
	rec = newRecorder()
	rw := Wrap(rec, anthropicadapter.Anthropic{}, context.Background(), h, 0)
	rw.SetRequest([]byte(anthRequest))
	rw.Header().Set("Content-Type", "application/json")
	only := `[{"type":"text","text":"Sure."},{"type":"tool_use","id":"toolu_send","name":"send_email","input":{}}]`
	rw.Write([]byte(anthJSONMessage("msg_first", only, "tool_use", 30)))
	if _, ok := rw.Continuation(); !ok {
		t.Fatal("no continuation")
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.UnmarshalJSON(rec.Body.Bytes()); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 2 || m.Content[1].Text != "\n\n"+refusal || m.StopReason != "end_turn" {
		t.Errorf("message = %s", rec.Body.Bytes())
	}
}

func TestAnthropicWriterPassesStream(t *testing.T) {
	in := anthFixture(t, "stream-1.sse")
	rec := newRecorder()
	rw := Wrap(rec, anthropicadapter.Anthropic{}, context.Background(), providertest.NewHolder("delete_post"), 0)
	rw.SetRequest(anthFixture(t, "request-1.json"))
	rw.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	for _, ev := range providertest.Events(in) {
		if _, err := rw.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := rw.Close(); err != nil || !bytes.Equal(rec.Body.Bytes(), in) {
		t.Errorf("err %v; output differs", err)
	}
}

// FuzzAnthropicContinuation fuzzes the follow-up stream of a turn whose
// first response refused a call: no held or refused call reaches the app,
// the follow-up's message_start never does, and splits change nothing.
// anthToolUseID reports whether a stream carries a tool_use block with id.
func anthToolUseID(out []byte, id string) bool {
	var s stream.Frame
	for _, ev := range providertest.Events(out) {
		data, ok := s.Data(ev)
		if !ok || !gjson.ValidBytes(data) {
			continue
		}
		r := gjson.ParseBytes(data)
		blocks := []gjson.Result{r.Get("content_block")}
		if r.Get("type").Str == "message_start" {
			blocks = r.Get("message.content").Array()
		}
		for _, cb := range blocks {
			if cb.Get("type").Str == "tool_use" && cb.Get("id").Str == id {
				return true
			}
		}
	}
	return false
}

func FuzzAnthropicContinuation(f *testing.F) {
	f.Add(anthFixture(f, "stream-2.sse"), []byte{0})
	f.Add(anthFixture(f, "stream-1.sse"), []byte{40})
	f.Add([]byte(anthFollowUp("msg_second", "tool_use", anthropictest.TextBlockEvs(0, "Then."),
		anthropictest.ToolEvs(1, "toolu_del", "delete_post", `{"post":7}`), anthropictest.ToolEvs(2, "toolu_j", "json", `{}`))), []byte{5, 1})
	first := anthFixture(f, "stream-1.sse")
	run := func(t *testing.T, follow []byte, sizes []int) ([]byte, *providertest.Holder, error) {
		h := anthFuzzHolder()
		h.Refusing("get_weather", anthRefusal)
		out, err := followUpRun(t, anthropicadapter.Anthropic{}, h, anthFixture(t, "request-1.json"), first, follow, sizes)
		return out, h, err
	}
	f.Fuzz(func(t *testing.T, follow []byte, splits []byte) {
		sizes := make([]int, len(splits))
		for i, b := range splits {
			sizes[i] = int(b) + 1
		}
		whole, h, werr := run(t, follow, nil)
		split, _, serr := run(t, follow, sizes)
		if !bytes.Equal(whole, split) || (werr == nil) != (serr == nil) {
			t.Fatalf("splits changed the output:\n%q (%v)\n%q (%v)", whole, werr, split, serr)
		}
		// The refused call must not come back as a tool_use block. Its
		// id may still show inside a block the mutation made into another
		// type (no client runs those), as the first response's fast path
		// lets such blocks pass unread.
		if anthBlocked(h, whole) || anthToolUseID(whole, "toolu_01RaX2WYWRWCbaeFHssmGJXG") {
			t.Fatalf("a held or refused call got through:\n%q", whole)
		}
		// What the SDK reads: one message_start.
		var s stream.Frame
		starts := 0
		for _, ev := range providertest.Events(whole) {
			if data, ok := s.Data(ev); ok && gjson.ValidBytes(data) && gjson.GetBytes(data, "type").Str == "message_start" {
				starts++
			}
		}
		if starts != 1 {
			t.Fatalf("%d message_start events:\n%q", starts, whole)
		}
	})
}
