package chat

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
	"github.com/toolgate/toolgate/wire/turn"
)

// NewTurn returns the rewriter of the answer to one Chat Completions request
// (see Turn). Each response is rewritten as by NewStream or RewriteJSON, and:
//
// When Hold refuses calls of the only choice (index 0) of a response, all
// with ids, and the request asked for one choice (n absent or 1) and fewer
// than continuations follow-ups were made, the refused calls are taken out
// without text and Continuation gives the follow-up request: the last request
// body with two kinds of messages appended to "messages" (every other byte
// kept, stream_options included): {"role":"assistant","content":<the
// model's own text of that response, or null>,"tool_calls":[<the refused
// calls, raw>]} and one {"role":"tool","tool_call_id":…,"content":<the
// refusal's content>} per refused call.
//
// Streams. The response's finish chunk (its finish_reason set to null, or
// dropped if it carried nothing else), its usage and [DONE] are withheld.
// The follow-up's chunks then continue the same message: rewritten to the
// first response's id (openai-go rejects another), role removed from deltas
// (chunks left with nothing are dropped), a blank line put before its first
// text when text was shown before, tool call indices dense after the calls
// already written, its calls judged again (same rules, recursively), and
// finish_reason "tool_calls" if any call of the turn reached the app, else
// "stop". Usage is summed: one usage chunk, the last response's, carries the
// sum of every response's usage. Exactly one finish chunk and one [DONE]
// end the stream. Text deltas flow as they arrive. If the turn finishes
// while the end is still withheld it is written then: after the refusals'
// contents as text when no follow-up was sent, after the Fail text, or after
// "Toolgate could not continue: the provider's answer ended early." when the
// follow-up stream ended without finishing the message.
//
// JSON. The follow-up's choice 0 is merged into the answer: content = the
// answer's content + "\n\n" + the follow-up's (either alone when the other
// is empty), tool_calls = the answer's + the follow-up's (after their
// verdicts), finish_reason from the follow-up ("tool_calls" if the merged
// message has calls, "stop" instead of "tool_calls" if it has none), usage
// summed; every other byte of the answer stays.
func (Chat) NewTurn(ctx context.Context, h provider.Holder, request []byte, continuations int) provider.Turn {
	t := &chatTurn{ctx: ctx, h: h, Core: turn.Core[chatStep]{Request: request, Max: continuations}}
	t.s.ctx, t.s.h, t.s.t = ctx, h, t
	return t
}

// chatTurn is a Chat Turn. Its stream is held by value: a turn is one
// allocation.
type chatTurn struct {
	ctx context.Context
	h   provider.Holder

	turn.Core[chatStep]
	check int8       // whether the request allows a continuation: 0 not read yet, 1 yes, -1 no
	s     chatStream // stream mode

	// Stream mode, across responses.
	idRaw     string // the turn's chunk id (raw JSON), set when a continuation is first pending
	endEnv    []byte // the envelope of the withheld end's chunks: `"id":…,"object":…,`
	endReason string // the upstream finish_reason of the withheld end
	doneSeen  bool   // a [DONE] was withheld
	carry     string // the usage (raw JSON, summed) of responses whose usage was withheld
}

// chatStep is the refused calls of one response, to send back to the model.
type chatStep struct {
	content  string             // the model's own text in that message ("": null)
	calls    [][]byte           // the refused calls, raw, in message order
	results  []provider.Refusal // their tool results, in the same order
	fallback string             // the text shown in their place if no follow-up is sent
}

// allowed reports whether a response's refusals may go back to the model.
func (t *chatTurn) allowed() bool {
	if t.Done >= t.Max || t.Request == nil {
		return false
	}
	if t.check == 0 {
		t.check = -1
		if gjson.ValidBytes(t.Request) {
			r := gjson.ParseBytes(t.Request)
			n := r.Get("n")
			if r.Get("messages").IsArray() && (jsonedit.IsNull(n) || n.Type == gjson.Number && n.Raw == "1") {
				t.check = 1
			}
		}
	}
	return t.check > 0
}

// Stream implements Turn.
func (t *chatTurn) Stream(dst io.Writer, flush func() error) provider.Stream {
	t.Streaming = true
	t.s.Attach(dst, flush, "chat stream", &t.s)
	return &t.s
}

// JSON implements Turn.
func (t *chatTurn) JSON(body []byte) error {
	// Whether a continuation may follow is read from the request only when
	// the answer holds a tool call: a pass-through answer parses nothing.
	out, step, err := rewriteChatJSON(t.ctx, body, t.h, hasToolCalls(body) && t.allowed())
	if err != nil {
		return err
	}
	return t.TakeJSON(out, step, mergeChatJSON)
}

// Continuation implements Turn.
func (t *chatTurn) Continuation() ([]byte, bool) {
	return t.FollowUp(!t.Streaming || t.s.Err() == nil && t.s.ending, appendStep)
}

// Resume implements Turn: the follow-up request is the last request with
// {"role":"assistant","content":<the waiting text>} appended to messages,
// history then restored by restore; its response continues the message as
// a continuation's does.
func (t *chatTurn) Resume(restore func([]byte) ([]byte, error)) ([]byte, bool) {
	return t.ResumeWith(appendAssistantText, restore)
}

// Continue implements Turn.
func (t *chatTurn) Continue() {
	if t.Advance() && t.Streaming {
		t.s.continueResponse()
	}
}

// Finish implements Turn.
func (t *chatTurn) Finish() ([]byte, error) {
	return t.FinishWith(&t.s, func(s *chatStep) string { return s.fallback }, appendChoiceText)
}

// Ending implements turn.Ender: the response's end is withheld.
func (s *chatStream) Ending() bool { return s.ending }

// Continued implements turn.Ender: a follow-up's stream that did not
// finish choice 0.
func (s *chatStream) Continued() bool { return s.inCont && !s.finished }

// continueResponse readies the stream for the follow-up response, which
// continues the same message.
func (s *chatStream) continueResponse() {
	for _, st := range s.choices {
		st.shown = st.shown || len(st.content) > 0
		st.sep = st.shown
		st.content = st.content[:0]
		st.calls = nil
		st.held = 0
	}
	s.waiting = 0
	s.inCont, s.slowAll = true, true
	s.ending, s.finished = false, false
}

// appendStep returns the follow-up request body: req with the step's
// assistant message and tool results appended to its messages.
func appendStep(req []byte, step *chatStep) ([]byte, error) {
	b := []byte(`{"role":"assistant","content":`)
	if step.content != "" {
		b = gjson.AppendJSONString(b, step.content)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"tool_calls":[`...)
	for i, c := range step.calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, c...)
	}
	b = append(b, "]}"...)
	for _, r := range step.results {
		b = append(b, `,{"role":"tool","tool_call_id":`...)
		b = gjson.AppendJSONString(b, r.CallID)
		b = append(b, `,"content":`...)
		b = gjson.AppendJSONString(b, r.Content)
		b = append(b, '}')
	}
	return turn.AppendMessages(req, b)
}

// appendAssistantText returns req with {"role":"assistant","content":text}
// appended to its messages: the message the app read in place of held
// calls, as its next request would send it back.
func appendAssistantText(req []byte, text string) ([]byte, error) {
	b := append([]byte(`{"role":"assistant","content":`), gjson.AppendJSONString(nil, text)...)
	return turn.AppendMessages(req, append(b, '}'))
}

// mergeChatJSON merges the follow-up body next (already rewritten) into the
// answer acc; see NewTurn.
func mergeChatJSON(acc, next []byte) ([]byte, error) {
	if !gjson.ValidBytes(next) {
		return nil, errors.New("chat response: follow-up is not valid JSON")
	}
	a0, n0 := gjson.GetBytes(acc, "choices.0"), gjson.GetBytes(next, "choices.0")
	if !a0.IsObject() || !n0.IsObject() {
		return nil, errors.New("chat response: no choice to continue")
	}
	am, nm := a0.Get("message"), n0.Get("message")
	msg := am.Raw
	if msg == "" {
		msg = "{}"
	}
	var err error
	if ac, nc := am.Get("content"), nm.Get("content"); nc.Type == gjson.String && nc.Str != "" {
		c := nc.Raw
		if ac.Type == gjson.String && ac.Str != "" {
			c = ac.Raw[:len(ac.Raw)-1] + `\n\n` + nc.Raw[1:]
		}
		if msg, err = sjson.SetRaw(msg, "content", c); err != nil {
			return nil, err
		}
	}
	var calls []string
	forEachCall(am, func(tc gjson.Result) { calls = append(calls, tc.Raw) })
	n := len(calls)
	forEachCall(nm, func(tc gjson.Result) { calls = append(calls, tc.Raw) })
	if len(calls) > n {
		if msg, err = sjson.SetRaw(msg, "tool_calls", "["+strings.Join(calls, ",")+"]"); err != nil {
			return nil, err
		}
	}
	choice, err := sjson.SetRaw(a0.Raw, "message", msg)
	if err != nil {
		return nil, err
	}
	if fr := n0.Get("finish_reason"); fr.Type == gjson.String {
		if choice, err = sjson.SetRaw(choice, "finish_reason", strconv.Quote(finishReason(fr.Str, len(calls) > 0, true))); err != nil {
			return nil, err
		}
	}
	e, err := jsonedit.Of(acc, a0, choice)
	if err != nil {
		return nil, err
	}
	out := jsonedit.Apply(acc, []jsonedit.Edit{e})
	if nu := gjson.GetBytes(next, "usage"); !jsonedit.IsNull(nu) {
		if out, err = sjson.SetRawBytes(out, "usage", []byte(turn.SumUsage(gjson.GetBytes(out, "usage").Raw, nu.Raw))); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendChoiceText appends text to the content of choice 0 of body, after
// a blank line if there is any.
func appendChoiceText(body []byte, text string) ([]byte, error) {
	c0 := gjson.GetBytes(body, "choices.0")
	if !c0.IsObject() {
		return nil, errors.New("chat response: no choice")
	}
	msg := c0.Get("message").Raw
	if msg == "" {
		msg = "{}"
	}
	msg, err := sjson.SetRaw(msg, "content", string(appendText(nil, c0.Get("message.content"), text)))
	if err != nil {
		return nil, err
	}
	choice, err := sjson.SetRaw(c0.Raw, "message", msg)
	if err != nil {
		return nil, err
	}
	e, err := jsonedit.Of(body, c0, choice)
	if err != nil {
		return nil, err
	}
	return jsonedit.Apply(body, []jsonedit.Edit{e}), nil
}

var _ provider.Turn = (*chatTurn)(nil)
