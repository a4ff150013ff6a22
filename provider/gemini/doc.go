// Package gemini holds what Toolgate knows of Google's Gemini wire
// (generateContent on the Gemini API and on Vertex AI, wire-formats.md §4
// and §9) as pure functions: which paths carry calls and how their answers
// are framed (Classify), the streamed JSON array (ArrayReader,
// ArrayWriter), the functionCall parts of a response and how to take held
// ones out (Calls, Rewrite), the follow-up that sends refused calls back
// (Continuation, Merge), the history restored behind the gate's links
// (RewriteRequest) and the tools a request offers (RewriteTools,
// ToolSchema). The glue behind the Provider interface assembles them.
package gemini
