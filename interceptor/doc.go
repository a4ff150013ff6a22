// Package interceptor holds MCP's wire pieces and the machinery that runs
// any model protocol's adapter over an HTTP answer: the ResponseWriter
// that reads a JSON or SSE answer through the adapter's Turn, with its
// follow-ups, and the Guard that refuses an answer in a shape no adapter
// reads when it names a gated tool. The adapters are provider/chat,
// provider/anthropic, provider/responses and provider/gemini; what they
// share lives in wire/ (stream framing, shapes, tool-list edits, request
// parameters). MCP stays here: it is not a model provider.
//
// An adapter finds tool calls in model responses, takes the held ones out,
// puts the waiting text in their place, and restores history in the next
// request; it knows nothing of how cards or forms look: it asks a
// provider.Holder.
package interceptor
