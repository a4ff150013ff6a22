package anthropic

import (
	"context"
	"io"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/turn"
)

// NewTurn returns the rewriter of the answer to one Messages request (see
// Turn). Each response is rewritten as by NewStream or RewriteJSON, and:
//
// When Hold refuses calls of a response, all with ids, and fewer than
// continuations follow-ups were made (and request is valid JSON with a
// "messages" array), the refused calls are taken out without text and
// Continuation gives the follow-up request: the last request body with two
// messages appended to "messages" (every other byte kept):
// {"role":"assistant","content":[the response's content blocks up to and
// including the last refused tool_use, thinking and redacted_thinking
// blocks included; tool_use blocks that were not refused are left out, as
// the API refuses a tool_use without its tool_result]} and
// {"role":"user","content":[{"type":"tool_result","tool_use_id":…,
// "content":<the refusal's content>,"is_error":true}, one per refused
// call]}.
//
// Streams. The response's message_delta and message_stop are withheld. The
// follow-up's events then continue the same message: its message_start is
// dropped (the first response's id and model stand), its blocks are
// numbered after those already written, its first text comes after a blank
// line when text was shown before, its calls are judged again (same rules,
// recursively), and its message_delta ends the message, with stop_reason
// "tool_use" if any tool_use block of the turn reached the app (else
// "end_turn" for a "tool_use"; other reasons stay) and usage summed: every
// response's usage (its message_start usage with its message_delta usage
// over it) added member by member, input_tokens and output_tokens
// included, so the app reads what the turn cost. One message_delta and one
// message_stop end the stream; event: lines are kept. If the turn
// finishes while the end is still withheld, it is written then: after the
// refusals' contents as a text block when no follow-up was sent, after the
// Fail text, or after "Toolgate could not continue: the provider's answer
// ended early." when the follow-up stream ended before its message_delta
// (closing any block it left open).
//
// JSON. The follow-up's content blocks are appended to the answer's (its
// first text after a blank line when the answer has text), usage summed
// member by member, stop_reason and stop_sequence from the follow-up
// (stop_reason as for streams); every other byte of the answer stays.
func (Anthropic) NewTurn(ctx context.Context, h provider.Holder, request []byte, continuations int) provider.Turn {
	t := &anthTurn{ctx: ctx, h: h, Core: turn.Core[anthStep]{Request: request, Max: continuations}}
	t.s.ctx, t.s.h, t.s.t, t.s.hold = ctx, h, t, -1
	return t
}

// anthTurn is a Messages Turn. Its stream is held by value: a turn is one
// allocation.
type anthTurn struct {
	ctx context.Context
	h   provider.Holder

	turn.Core[anthStep]
	check int8       // whether the request allows a continuation: 0 not read yet, 1 yes, -1 no
	s     anthStream // stream mode

	// Stream mode, across responses.
	endData string // the withheld message_delta's data
	carry   string // the summed usage (raw JSON) of responses whose end was withheld
}

// allowed reports whether a response's refusals may go back to the model.
func (t *anthTurn) allowed() bool {
	if t.Done >= t.Max || t.Request == nil {
		return false
	}
	if t.check == 0 {
		t.check = -1
		if gjson.ValidBytes(t.Request) && gjson.GetBytes(t.Request, "messages").IsArray() {
			t.check = 1
		}
	}
	return t.check > 0
}

// Stream implements Turn.
func (t *anthTurn) Stream(dst io.Writer, flush func() error) provider.Stream {
	t.Streaming = true
	t.s.Attach(dst, flush, "anthropic stream", &t.s)
	return &t.s
}

// JSON implements Turn.
func (t *anthTurn) JSON(body []byte) error {
	out, step, err := rewriteAnthJSON(t.ctx, body, t.h, t.allowed)
	if err != nil {
		return err
	}
	return t.TakeJSON(out, step, mergeAnthJSON)
}

// Continuation implements Turn.
func (t *anthTurn) Continuation() ([]byte, bool) {
	return t.FollowUp(!t.Streaming || t.s.Err() == nil && t.s.ending, appendAnthStep)
}

// Resume implements Turn: the follow-up request is the last request with
// {"role":"assistant","content":[{"type":"text","text":<the waiting
// text>}]} appended to messages, history then restored by restore; its
// response continues the message as a continuation's does.
func (t *anthTurn) Resume(restore func([]byte) ([]byte, error)) ([]byte, bool) {
	return t.ResumeWith(func(req []byte, text string) ([]byte, error) {
		b := append([]byte(`{"role":"assistant","content":[{"type":"text","text":`), gjson.AppendJSONString(nil, text)...)
		return turn.AppendMessages(req, append(b, "}]}"...))
	}, restore)
}

// Continue implements Turn.
func (t *anthTurn) Continue() {
	if t.Advance() && t.Streaming {
		t.s.continueResponse()
	}
}

// Finish implements Turn.
func (t *anthTurn) Finish() ([]byte, error) {
	return t.FinishWith(&t.s, func(s *anthStep) string { return s.fallback }, appendAnthText)
}

// Ending implements turn.Ender: the response's end is withheld.
func (s *anthStream) Ending() bool { return s.ending }

// Continued implements turn.Ender: a follow-up's stream whose
// message_delta never came.
func (s *anthStream) Continued() bool { return s.inCont && !s.finished }

// continueResponse readies the stream for the follow-up response, which
// continues the same message.
func (s *anthStream) continueResponse() {
	s.blocks = nil
	s.hold, s.heldBytes = -1, 0
	s.startUsage = ""
	s.inCont, s.slowAll = true, true
	s.ending, s.finished = false, false
	s.sep = s.texted
}
