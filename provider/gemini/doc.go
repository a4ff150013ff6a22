// Package gemini holds what Toolgate knows of Google's Gemini wire
// (generateContent on the Gemini API and on Vertex AI, wire-formats.md §4
// and §9) as pure functions, for the Provider glue to assemble:
//
//   - paths: Classify tells a generate request (and how its answer is
//     framed: unary, SSE by alt=sse, else a streamed JSON array) from the
//     paths that carry calls around the gate (batch, cachedContents, the
//     Live API's WebSocket, interactions, Vertex rawPredict) and from
//     Gemini's OpenAI-compatible endpoint (the Chat adapter's). The URL
//     says whether a request streams, never the body.
//   - framing: ArrayReader and ArrayWriter for the JSON-array stream;
//     AppendEvent, EOL and KeepAlive for SSE (see stream.go for what
//     go-genai tolerates).
//   - responses: MayHoldCall (the byte search before any JSON work;
//     MayHoldCallAfter, the same of a chunk where it differs from the last
//     one without a call), Calls
//     (the functionCall parts of a response or of one chunk), Fate (what
//     becomes of a call: provider.Fate, read by provider.Verdict.Fates), Rewrite (held and refused calls out, the
//     waiting text in place), Content/Parts/ContentOf (the model content
//     Hold gets and the store keeps).
//   - streams: Stream (NewStream) rewrites one streamed response as it
//     arrives, in any byte split: chunks without a call pass byte for
//     byte, a candidate with a gated call waits for its finishReason and
//     Hold; Withheld, Settlements, First, Usage, EOL, Tail and Elements
//     are what a turn needs to continue it, and Follow makes a follow-up
//     response's stream continue the answer.
//   - refusals and continuation: Continuation (the follow-up request),
//     Merge and AppendText (a JSON answer made of several responses),
//     SumUsage, AppendResumeContent, StreamsArguments.
//   - requests: RewriteRequest (history behind the gate's links),
//     RewriteTools and ToolSchema (functionDeclarations).
//
// Decisions, and why:
//
// thoughtSignature. Only the first call part of a parallel set carries the
// signature, and Gemini 3 refuses a function-calling turn whose first call
// has none (§9.8). When the gate takes that call out and passes a later
// one, the signature moves to the first call part that stays, in the
// app's view (Rewrite) and in a continuation's model content
// (Continuation): every history the app or the gate sends then has it on
// the turn's first call. The store keeps the model content as the model
// sent it, and RewriteRequest puts it back verbatim, so the provider gets
// the signature back exactly where it issued it. (Recorded leniency backs
// the app's view: ruby_llm sent one signature copied onto every parallel
// call and Gemini answered 200.) The waiting text never carries one.
//
// Calls without ids. Gemini 2.x sends none; Gemini pairs results by
// position. Calls gives such a call the id SyntheticID(position)
// ("gemini-position-N") so the gate can name it in refusals and results;
// that id never reaches the provider: functionResponse parts get an "id"
// only when the model gave the call one, and the app's own response to a
// passed call gets the stored call's id (dropped when it has none, since
// @ai-sdk/google and llm-gemini invent ids).
//
// Streamed arguments. Vertex's streamFunctionCallArguments sends a call
// as fragments (partialArgs, willContinue, a closing {}), which the gate
// cannot judge part by part: Calls fails closed with ErrStreamedArguments
// on any such part, and the Provider's AroundParam refuses the request
// that asks for them (StreamsArguments) before it goes upstream.
//
// The JSON-array stream. Its readers take it as an array whatever its
// Content-Type (application/json), so the Provider says so (StreamsJSON)
// and the turn's ArrayStream reads it as a stream in that framing only:
// chunks pass, wait, are held and refused as SSE events are, and a body
// that is not an array fails closed rather than being sniffed as SSE.
//
// A stream's calls. Gemini sends whole calls, but a candidate's parallel
// calls may come in separate chunks (Vertex), so a Stream holds every
// chunk from a candidate's first gated call to its finishReason and asks
// Hold once, positions and synthetic ids counted over the candidate. An
// ungated call before the first gated one has passed already (or passes
// with the chunk it shares with it): the gate does not inspect it, and
// holding text and calls back for a gated call that may never come would
// delay every answer; Hold still sees it in the model content. A body
// that ends before a waiting candidate's finishReason is an error, its
// calls never written.
//
// Keys. Google writes camelCase; the API and python's SDK also take
// snake_case, and go-genai matches keys without case. The gate reads every
// key in each of those spellings, refuses an object that names one twice,
// and writes new parts in the spelling the body uses.
package gemini
