// Package provider is what every wire protocol's adapter shares with the
// rest of the code: the calls an adapter finds and the Holder that judges
// them, the history a Restorer gives back, the Adapter and Turn that
// rewrite one protocol's bodies, and the Provider interface that answers
// every question the gate's Caddy glue asks of a protocol (its name, the
// paths it serves, the endpoints that carry calls around the gate, whether
// an answer streams, where the owner and a tool's schema are). Each
// protocol's package registers its Provider from init (Register), as
// Caddy's modules do; the Caddy glue imports those packages for that side
// effect and looks providers up by name or by path.
package provider

import (
	"context"
	"io"
)

// Call is one complete tool call found in a model response.
type Call struct {
	Choice    int    // the choice it belongs to (Chat: choices[].index); 0 elsewhere
	Position  int    // its index among the message's tool calls, as the provider sent it
	ID        string // the provider's call id (Chat: tool_calls[].id)
	Type      string // "function" or "custom"
	Name      string // the tool name, as the policy is keyed
	Arguments []byte // the arguments as sent: the decoded JSON text of "arguments" (function) or "input" (custom); may be invalid JSON
	Raw       []byte // the call as one JSON object, as it appears in a complete (non-streamed) message
}

// Holder is what an adapter asks about calls. The gate implements it.
type Holder interface {
	// Gated reports whether the policy declares this tool, so its calls
	// are inspected. It is a map read, called for every call seen. An
	// inspected call never reaches the app before Hold has judged it (a
	// stream buffers its fragments until its choice finishes).
	Gated(name string) bool
	// Hold takes the inspected calls of one choice, complete, and the
	// assistant message they came from as it would be sent back in a
	// request (role, content, every tool call, raw JSON), and judges each
	// call. A call it does not explicitly pass or refuse is held: removed,
	// with Verdict.Text shown in its place (fail closed). kept says where
	// the provider keeps the response the calls came in (the zero Kept:
	// nowhere, as for every protocol but the Responses API).
	Hold(ctx context.Context, calls []Call, message []byte, kept Kept) Verdict
}

// Kept says where the provider keeps the response whose calls a Holder
// judges: the Responses API stores a response (unless the request said
// store:false) and a conversation's items, and a later request that
// continues from them by previous_response_id or conversation carries none
// of the earlier output, so no link. The Holder files the held calls'
// step under these ids so that a StateRestorer can give their results
// back. The zero Kept keeps nothing.
type Kept struct {
	ResponseID     string // the provider's response id ("resp_…"); "" when it did not say
	ConversationID string // the request's conversation ("conv_…"); "" for none
}

// StateRestorer is a Restorer that also knows the steps held in responses
// the provider keeps (see Kept). Only the gate can tell which of the calls
// the provider holds still wait for a result.
type StateRestorer interface {
	Restorer
	// RestoreState returns, oldest first, the steps whose calls the
	// provider holds without their results: those held in the response
	// responseID (a request's previous_response_id), or, when responseID is
	// "", those held in the conversation conversationID whose results were
	// not yet given back. Their Results are added to the request's input;
	// Message is read only for the calls' types. userFollows is as for
	// Restore.
	RestoreState(ctx context.Context, responseID, conversationID string, userFollows bool) []Restored
}

// Verdict is the Holder's judgement on the inspected calls of one choice.
// Each call is passed (it reaches the app untouched), refused (removed; the
// model gets the Refusal as its tool result at once, in a continuation, and
// the app reads the model's follow-up), or held (removed; Text is shown in
// its place). A call named by a Refusal is refused even if Pass says true.
type Verdict struct {
	// Text is what the app reads in place of the held calls ("" when none
	// is held). It follows the model's own text after a blank line.
	Text string
	// Step is the id of the step every held call waits in, when they all
	// wait in one step made for this response ("" otherwise: none held, or
	// some attached to a step that was already waiting). A stream that
	// waits for the person's answer (ResponseWriter.Held) waits for it.
	Step string
	// Pass says, per call (same order as the calls given to Hold), whether
	// it goes to the app untouched. Missing entries are false.
	Pass []bool
	// Refusals are the refused calls, by call id, with the tool result the
	// model reads (the fields and their rules, never the values). When no
	// continuation can be made (no request body known, more than one
	// choice, a call without an id, or MaxContinuations reached) the
	// contents are shown in place instead, after Text.
	Refusals []Refusal
}

// Refusal is one refused call and the tool result the model reads for it.
type Refusal struct{ CallID, Content string }

// Restored is what the gate gives back for one link found in history.
type Restored struct {
	// Message is the original assistant message (raw JSON), to put in
	// place of the one carrying the waiting text.
	Message []byte
	// Results pairs each held call id with the tool result the model
	// reads, in the order the calls were made.
	Results []Result
}

// Result is one tool result to add after the restored message.
type Result struct {
	CallID  string
	Content string
}

// Restorer answers for the step ids in links found in a request's history.
type Restorer interface {
	// Restore returns what to put back for the step; ok is false when the
	// step is unknown or not this conversation owner's, and then nothing
	// is restored. userFollows tells whether a user message comes after
	// the message carrying the link (a still-waiting hold is then settled
	// as moved on).
	Restore(ctx context.Context, stepID string, userFollows bool) (r Restored, ok bool)
}

// MaxContinuations bounds the continuations of one request: after that many
// follow-up responses, refusals are shown in place as text.
const MaxContinuations = 3

// ToolRewrite is asked about each function tool of a request: name and its
// raw JSON Schema "parameters" (nil when absent). When ok it returns the
// schema to send instead (nil: keep it) and text to append to the tool's
// description ("": none), as given, so it should start with its own
// separator (a space or a newline).
type ToolRewrite func(name string, parameters []byte) (newParameters []byte, descriptionSuffix string, ok bool)

// Adapter is one wire protocol's rewriter. Every method takes the body as
// bytes and returns it unchanged (the same slice) when there is nothing to do.
// An error means the body could not be checked: the caller fails closed (502
// for a response, a refused request for a request body).
type Adapter interface {
	// NewTurn starts rewriting the answer to one request, which may take
	// several upstream responses: when one ends with refused calls, the
	// turn gives the body of a follow-up request that sends them back to
	// the provider with their tool results, and the app receives the
	// model's follow-up as the continuation of the same message. request
	// is the body sent upstream (nil: no continuation); continuations
	// bounds the follow-ups (0: refusals are shown in place).
	NewTurn(ctx context.Context, h Holder, request []byte, continuations int) Turn
	// RewriteRequest restores the history behind this gate's links in the
	// next request's body.
	RewriteRequest(ctx context.Context, body []byte, linkPrefix string, r Restorer) ([]byte, error)
	// RewriteTools rewrites the tool definitions of a request body on its
	// way to the provider, asking rewrite about each one.
	RewriteTools(body []byte, rewrite ToolRewrite) ([]byte, error)
}

// Turn rewrites the upstream responses that answer one request into one
// answer for the app. It is used by one goroutine, in this order: for each
// response, Stream (then the body through its Write and Close) or JSON;
// then Continuation, or when it reports none, Held and (once the person
// answered) Resume; if either gives a follow-up and the caller sends it,
// Continue and the next response (or Fail when it brings no usable
// answer); finally Finish, once.
type Turn interface {
	// Stream returns the rewriter of the current response's SSE body,
	// writing to dst (flush as in Chat.NewStream). Every response of a turn
	// goes to the same dst. Its Close ends the response, not the turn.
	Stream(dst io.Writer, flush func() error) Stream
	// JSON takes the current response's complete body. An error means it
	// could not be checked; nothing of it will be written.
	JSON(body []byte) error
	// Continuation reports, once the current response has ended, whether
	// its refused calls go back to the provider, and the body of that
	// follow-up request: the last request body with the assistant message
	// holding the refused calls and one tool result each appended to its
	// messages. While it is true, the end of a stream (finish chunk, usage,
	// [DONE]) is withheld.
	Continuation() (body []byte, ok bool)
	// Continue tells the turn the follow-up was sent: the next response
	// continues the same message. It does nothing unless Continuation
	// reported one.
	Continue()
	// AllowResume lets a stream wait for the person's answers to held
	// calls and go on (see Held). Call it before the first response.
	AllowResume()
	// Held reports, once the current response has ended and Continuation
	// reports none, the step whose held calls the answer may wait for ("" for
	// none): resume allowed, a stream, every held call of the response in
	// one step, no call of the turn that reached the app (the app would
	// answer it first) and a follow-up left. While it is not "", the
	// stream's end is withheld, as for a continuation.
	Held() string
	// Resume returns the follow-up request for the held step, once the
	// person has answered it: the last request body with the assistant
	// message the app read appended (its text holding the step's link),
	// passed through restore, which restores the history behind the link
	// as for the app's next request (RewriteRequest with the gate). Send it
	// as a continuation (Continue, then the response): the model's reply
	// continues the same message. ok is false when there is nothing to
	// resume or restore changed nothing.
	Resume(restore func(body []byte) ([]byte, error)) (body []byte, ok bool)
	// Fail ends a follow-up that brought no usable answer: the app reads
	// "Toolgate could not continue: " + reason, and the withheld end.
	Fail(reason string)
	// Finish ends the turn and returns the JSON body to write (nil for a
	// stream). A stream whose end is still withheld gets it now, after
	// the refusals' contents as text (no follow-up was sent), or after
	// the Fail text.
	Finish() ([]byte, error)
}

// Stream is an SSE rewriter. Write takes the upstream body in any split;
// Close finishes it. A Stream is used by one goroutine. After an error every
// later call returns that error and writes nothing.
type Stream interface {
	io.Writer
	Close() error
}
