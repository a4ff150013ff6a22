// Package interceptor holds one adapter per wire protocol. An adapter finds
// tool calls in model responses (JSON and SSE), takes the held ones out,
// puts the waiting text in their place, and restores history in the next
// request. It knows nothing of how cards or forms look: it asks a Holder.
package interceptor

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
	// Gated reports whether the policy declares this tool. It is a map
	// read, called for every call seen.
	Gated(name string) bool
	// Hold takes the gated calls of one choice, complete, and the
	// assistant message they came from as it would be sent back in a
	// request (role, content, every tool call, raw JSON). It returns the
	// text the app reads in their place. Hold never lets a call through:
	// if it cannot hold them it returns the refusal text.
	Hold(ctx context.Context, calls []Call, message []byte) string
}

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

// Adapter is one wire protocol's rewriter. Every method takes the body as
// bytes and returns it unchanged (the same slice) when there is nothing to do.
// An error means the body could not be checked: the caller fails closed (502
// for a response, a refused request for a request body).
type Adapter interface {
	// RewriteJSON takes held calls out of a complete response body.
	RewriteJSON(ctx context.Context, body []byte, h Holder) ([]byte, error)
	// NewStream returns a Stream that rewrites an SSE response body on its
	// way to dst, calling flush whenever complete events have been written.
	NewStream(ctx context.Context, dst io.Writer, flush func() error, h Holder) Stream
	// RewriteRequest restores the history behind this gate's links in the
	// next request's body.
	RewriteRequest(ctx context.Context, body []byte, linkPrefix string, r Restorer) ([]byte, error)
}

// Stream is an SSE rewriter. Write takes the upstream body in any split;
// Close finishes it. A Stream is used by one goroutine. After an error every
// later call returns that error and writes nothing.
type Stream interface {
	io.Writer
	Close() error
}
