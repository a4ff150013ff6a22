package interceptor

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider/chat"
	"github.com/toolgate/toolgate/provider/chat/chattest"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/wire/stream"
)

// FuzzChatContinuation fuzzes the follow-up stream of a turn whose first
// response refused a call: no held or refused call reaches the app, every
// chunk carries the first response's id, and splits change nothing.
func FuzzChatContinuation(f *testing.F) {
	f.Add([]byte(followUp("Who should receive it?", "stop")), []byte{0})
	f.Add([]byte(followUp("I'll ask.", "tool_calls",
		chunkU(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(0, "c1", "delete_post")))),
		chunkU(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(1, "c2", "get_weather")))),
		chunkU(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolHeader(2, "c3", "get_stock_price")))),
		chunkU(chattest.DeltaChoice(0, chattest.ToolDelta(chattest.ToolArgs(2, "{}"), chattest.ToolArgs(1, "{}")))),
	)), []byte{5, 1})
	f.Add(fixture(f, "stream-parallel-tools.sse"), []byte{40})
	f.Add(fixture(f, "json-parallel-tools.json"), []byte{1})
	first := []byte(refusingStream())
	run := func(t *testing.T, follow []byte, sizes []int) ([]byte, *providertest.Holder, error) {
		h := fuzzHolder().Refusing("send_email", refusal)
		out, err := followUpRun(t, chat.Chat{}, h, []byte(testRequest), first, follow, sizes)
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
		if chattest.BlockedInStream(h, whole) || bytes.Contains(whole, []byte(refusedID)) {
			t.Fatalf("a held or refused call got through:\n%q", whole)
		}
		checkJSONContinuation(t, follow)
		var s stream.Frame
		for _, ev := range providertest.Events(whole) {
			data, ok := s.Data(ev)
			if !ok || !gjson.ValidBytes(data) {
				continue
			}
			if id := gjson.GetBytes(data, "id"); gjson.ParseBytes(data).IsObject() && id.Exists() && id.Raw != `"chatcmpl-T"` {
				t.Fatalf("a chunk with id %s reached the app:\n%q", id.Raw, whole)
			}
		}
	})
}

// checkJSONContinuation runs body as the JSON follow-up of a turn whose
// first response refused a call: the answer is valid JSON, with the right
// Content-Length, and no held or refused call.
func checkJSONContinuation(t *testing.T, body []byte) {
	h := fuzzHolder().Refusing("send_email", refusal)
	rec := newRecorder()
	rw := Wrap(rec, chat.Chat{}, context.Background(), h, 0)
	rw.SetRequest([]byte(testRequest))
	rw.Header().Set("Content-Type", "application/json")
	first := jsonCompletion("chatcmpl-A", `{"role":"assistant","content":"Sure.","tool_calls":[`+refusedCallJSON+`,`+getCallJSON+`]}`, "tool_calls", 10)
	if _, err := rw.Write([]byte(first)); err != nil {
		t.Fatal(err)
	}
	if _, ok := rw.Continuation(); !ok {
		t.Fatal("no continuation")
	}
	rw.Continue()
	rw.Header().Set("Content-Type", "application/json")
	if _, err := rw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatalf("Close: %v", err) // the first response was fine: a bad follow-up is text, not an error
	}
	out := rec.Body.Bytes()
	if !gjson.ValidBytes(out) || rec.Header().Get("Content-Length") != strconv.Itoa(len(out)) {
		t.Fatalf("invalid answer (Content-Length %s): %q", rec.Header().Get("Content-Length"), out)
	}
	if bytes.Contains(out, []byte(refusedID)) {
		t.Fatalf("the refused call got through: %s", out)
	}
	gjson.GetBytes(out, "choices.0.message.tool_calls").ForEach(func(_, tc gjson.Result) bool {
		if slices.ContainsFunc(chattest.CallNames(tc), h.Blocks) {
			t.Fatalf("a held or refused call got through: %s", out)
		}
		return true
	})
}
