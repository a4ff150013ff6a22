package gemini

import "bytes"

// Writing Gemini's SSE. Gemini sends data-only events, one line of JSON
// each, framed "data: {…}\r\n\r\n": CRLF (wire-formats.md §9.3). The
// readers disagree on what else they take:
//
//   - go-genai (api_client.go, scan and iterateResponseStream, read at
//     v1.77.0) cuts the body into tokens at the first "\n\n" anywhere in
//     what it has buffered, else at the first "\r\n\r\n"; drops one CR at
//     a token's end; skips an empty token; and splits each token at its
//     first ':'. Prefix "data": the rest is one JSON value (several data
//     lines in one event make it invalid). Any other prefix, an "event:"
//     or "id:" line or a ": comment", is an error ("invalid stream chunk")
//     unless the whole token parses as {"error":…}, which becomes an
//     APIError. So: only data events, one data line each; and one line
//     ending style for the whole stream. An LF-framed event written into
//     a CRLF stream makes go-genai read the CRLF events before it, up to
//     its "\n\n", as one token ("data: {…}\r\n\r\ndata: {…}"), which is
//     invalid JSON — whenever both sit in its buffer at once.
//   - @google/genai splits at the earliest "\n\n", "\r\r" or "\r\n\r\n",
//     trims, and drops any event that does not start with "data:".
//   - @ai-sdk/google reads the stream with a standard SSE parser.
//
// What every one of them ignores while a stream waits (resume's
// keep-alive) is a blank event in the stream's own line ending: "\r\n\r\n"
// in a CRLF stream, "\n\n" in an LF one (go-genai reads an empty token
// and skips it; the others read a blank line). A ": comment", the usual
// SSE keep-alive, breaks go-genai. In a JSON-array stream, whitespace
// between elements is the keep-alive: every JSON reader skips it.

// EOL returns the line ending an upstream event uses: "\r\n" when it ends
// with a CRLF, else "\n". The gate writes its own events with it, so that
// the stream keeps one style (see above).
func EOL(ev []byte) string {
	if bytes.HasSuffix(ev, []byte("\r\n")) {
		return "\r\n"
	}
	return "\n"
}

// AppendEvent appends one data event holding data, a JSON value, on one
// line, ended with eol twice. A CR or LF in data (data that came in
// several data lines, joined) is whitespace between JSON tokens, since a
// JSON string cannot hold one raw, so it is written as a space: go-genai
// and @google/genai read one data line only.
func AppendEvent(dst, data []byte, eol string) []byte {
	dst = append(dst, "data: "...)
	at := len(dst)
	dst = append(dst, data...)
	for i := at; i < len(dst); i++ {
		if dst[i] == '\r' || dst[i] == '\n' {
			dst[i] = ' '
		}
	}
	dst = append(dst, eol...)
	return append(dst, eol...)
}

// KeepAlive is what a waiting stream writes to keep the connection open,
// in the framing given (eol as EOL gives it, for SSE): bytes every SDK
// reader skips.
func KeepAlive(f Framing, eol string) []byte {
	if f == JSONArray {
		return []byte("\n")
	}
	return []byte(eol + eol)
}
