// Package interceptor holds, for now, one model protocol's adapter
// (OpenAI Responses; Chat is provider/chat, Anthropic Messages
// provider/anthropic), MCP's wire pieces, and the machinery that runs any adapter over an HTTP
// answer: the ResponseWriter that reads a JSON or SSE answer through the
// adapter's Turn, with its follow-ups, and the Guard that refuses an
// answer in a shape no adapter reads when it names a gated tool.
//
// The adapter registers itself as a provider.Provider from its own
// file's init (responsesprovider.go), as Caddy's encode/gzip does; what all of them share lives in wire/ (stream
// framing, shapes, tool-list edits, request parameters). MCP stays here:
// it is not a model provider.
//
// An adapter finds tool calls in model responses, takes the held ones out,
// puts the waiting text in their place, and restores history in the next
// request; it knows nothing of how cards or forms look: it asks a
// provider.Holder.
package interceptor
