package gemini

import (
	"bytes"
	"errors"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/wire/jsonedit"
)

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

// StopChunk is the chunk that ends a stream the gate stops after err:
// Google's error shape, {"error":{"code":502,"message":"Toolgate stopped
// this response: …","status":"UNAVAILABLE"}}. In a data event all three
// clients report it as an error (go-genai an APIError with the code,
// @google/genai an ApiError, @ai-sdk/google an error part; see
// docs/gemini-clients.md); @ai-sdk/google reads on, so nothing may follow
// it.
func StopChunk(err error) []byte {
	b := []byte(`{"error":{"code":502,"message":`)
	b = gjson.AppendJSONString(b, "Toolgate stopped this response: "+err.Error())
	return append(b, `,"status":"UNAVAILABLE"}}`...)
}

// Streams continued by a follow-up (a refusal sent back, or a resume once
// the person answered) read as one answer: the end of each response but
// the last is withheld, and the follow-up's chunks continue it.

// WithholdFinish returns a chunk without its candidates' finishReason and
// finishMessage, and whether it had one: the end of a response whose
// answer a follow-up may continue. A chunk left with nothing to say (no
// part with content, as Gemini 3's {"text": ""} finish chunk) is reported
// empty, so the caller may drop it. usageMetadata stays: SumUsage adds it
// to the follow-up's.
func WithholdFinish(chunk []byte) (out []byte, had, empty bool, err error) {
	cands, err := candidates(gjson.ParseBytes(chunk))
	if err != nil {
		return nil, false, false, err
	}
	out = chunk
	empty = true
	var edits []jsonedit.Edit
	for _, c := range cands {
		for _, p := range c.parts {
			if p.call || p.text || p.thought || !isEmptyText(p.raw) {
				empty = false
			}
		}
		cand := c.raw.Raw
		for _, k := range []string{"finishreason", "finishmessage"} {
			if name := keyOf(c.raw, k, ""); name != "" {
				had = true
				if cand, err = sjson.Delete(cand, name); err != nil {
					return nil, false, false, err
				}
			}
		}
		if cand != c.raw.Raw {
			e, err := jsonedit.Of(chunk, c.raw, cand)
			if err != nil {
				return nil, false, false, err
			}
			edits = append(edits, e)
		}
	}
	if len(edits) > 0 {
		out = jsonedit.Apply(chunk, edits)
	}
	return out, had, empty, nil
}

// isEmptyText reports whether a part is {"text": ""} and nothing else.
func isEmptyText(p gjson.Result) bool {
	n := 0
	only := true
	p.ForEach(func(k, v gjson.Result) bool {
		n++
		only = fold(k.Str) == "text" && v.Type == gjson.String && v.Str == ""
		return only
	})
	return n == 1 && only
}

// ContinueChunk makes a follow-up response's chunk read as the
// continuation of the first response: its responseId and modelVersion made
// the first's (first is any chunk of the first response), its
// usageMetadata summed with carry (the usage of the responses before,
// SumUsage; "" for none), and, when sep, its first visible text after a
// blank line (the answer already showed text). done reports whether that
// text was found (the caller stops asking for sep then).
func ContinueChunk(chunk, first []byte, carry string, sep bool) (out []byte, done bool, err error) {
	if !gjson.ValidBytes(chunk) {
		return nil, false, errors.New("gemini response: the follow-up chunk is not valid JSON")
	}
	out = chunk
	fr := gjson.ParseBytes(first)
	for _, k := range []string{"responseid", "modelversion"} {
		v, _, _ := member(fr, k)
		if !v.Exists() {
			continue
		}
		if _, name, _ := member(gjson.ParseBytes(out), k); name != "" {
			if out, err = sjson.SetRawBytes(out, gjson.Escape(name), []byte(v.Raw)); err != nil {
				return nil, false, err
			}
		}
	}
	if carry != "" {
		u, name, _ := member(gjson.ParseBytes(out), "usagemetadata")
		if name == "" {
			name = "usageMetadata"
		}
		if out, err = sjson.SetRawBytes(out, gjson.Escape(name), []byte(SumUsage(carry, u.Raw))); err != nil {
			return nil, false, err
		}
	}
	if !sep {
		return out, false, nil
	}
	cands, err := candidates(gjson.ParseBytes(out))
	if err != nil || len(cands) == 0 {
		return out, false, err
	}
	for _, p := range cands[0].parts {
		if !p.text {
			continue
		}
		t, k, _ := member(p.raw, "text")
		np, err := sjson.Set(p.raw.Raw, gjson.Escape(k), "\n\n"+t.Str)
		if err != nil {
			return nil, false, err
		}
		e, err := jsonedit.Of(out, p.raw, np)
		if err != nil {
			return nil, false, err
		}
		return jsonedit.Apply(out, []jsonedit.Edit{e}), true, nil
	}
	return out, false, nil
}

// FinishChunk is the chunk the gate writes to end a continued stream
// itself (the refusals shown in place when no follow-up was sent, or the
// text of a follow-up that failed): candidate 0 with text (when not "")
// and finishReason STOP, usage the summed usage ("" for none), and the
// first response's responseId and modelVersion.
func FinishChunk(first []byte, text, usage string) []byte {
	b := []byte(`{"candidates":[{"content":{"parts":[`)
	if text != "" {
		b = append(b, textPart(text, false)...)
	}
	b = append(b, `],"role":"model"},"finishReason":"STOP","index":0}]`...)
	if usage != "" && gjson.Valid(usage) {
		b = append(b, `,"usageMetadata":`...)
		b = append(b, usage...)
	}
	fr := gjson.ParseBytes(first)
	for _, k := range []string{"modelVersion", "responseId"} {
		if v, _, _ := member(fr, strings.ToLower(k)); v.Type == gjson.String {
			b = append(b, `,"`+k+`":`...)
			b = append(b, v.Raw...)
		}
	}
	return append(b, '}')
}
