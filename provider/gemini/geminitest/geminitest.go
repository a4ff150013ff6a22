// Package geminitest is a fake Gemini provider for tests: it replays
// responses in the recorded wire formats (a unary JSON body, data-only SSE
// with CRLF framing, a streamed JSON array) and checks each request's
// history as strictly as Gemini does (Check), answering a violation with
// Gemini's 400 error body.
package geminitest

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// Response is one answer the fake gives, in order of the requests.
type Response struct {
	// Chunks are the GenerateContentResponse objects of the answer: a
	// unary request gets the first (Unary, when set, wins), a stream all
	// of them, framed as its URL asks.
	Chunks [][]byte
	// Unary, when set, is the body of a unary answer.
	Unary []byte
	// Raw, when set, is written as the body as it is, whatever the
	// request (a stream already framed, for instance).
	Raw []byte
	// Status, when set, is the status; the body is then Unary or Raw.
	Status int
}

// Request is one request the fake received.
type Request struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
	// Err is what Check said of its history (nil: accepted).
	Err error
}

// Server is the fake provider.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	answers  []Response
	requests []Request
}

// New starts a fake provider that answers requests with answers, in
// order; past the last it answers the last again.
func New(answers ...Response) *Server {
	s := &Server{answers: answers}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := r.URL.Path
	method := path[strings.LastIndexByte(path, ':')+1:]
	model := path[:strings.LastIndexByte(path, ':')+1]
	err := Check(model, body)
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, Request{Method: r.Method, Path: path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Err: err})
	var a Response
	if len(s.answers) > 0 {
		a = s.answers[min(n, len(s.answers)-1)]
	}
	s.mu.Unlock()
	if err != nil {
		WriteError(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
		return
	}
	if a.Status != 0 {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(a.Status)
		w.Write(append(a.Unary, a.Raw...))
		return
	}
	stream := method == "streamGenerateContent"
	sse := r.URL.Query().Get("alt") == "sse"
	switch {
	case stream && sse:
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Disposition", "attachment")
	default:
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	}
	if a.Raw != nil {
		w.Write(a.Raw)
		return
	}
	if !stream {
		if a.Unary != nil {
			w.Write(a.Unary)
		} else if len(a.Chunks) > 0 {
			w.Write(a.Chunks[0])
		}
		return
	}
	chunks := a.Chunks
	if chunks == nil && a.Unary != nil {
		chunks = [][]byte{a.Unary}
	}
	f, _ := w.(http.Flusher)
	for i, c := range chunks {
		switch {
		case sse:
			fmt.Fprintf(w, "data: %s\r\n\r\n", c)
		case i == 0:
			fmt.Fprintf(w, "[%s", c)
		default:
			fmt.Fprintf(w, "\n,\r\n%s", c)
		}
		if f != nil {
			f.Flush()
		}
	}
	if !sse {
		if len(chunks) == 0 {
			io.WriteString(w, "[")
		}
		io.WriteString(w, "\n]")
	}
}

// WriteError writes Gemini's error body (stream-error-400.json's shape):
// {"error":{"code","message","status"}}, as plain JSON whatever the
// request's framing.
func WriteError(w http.ResponseWriter, code int, status, message string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, "{\n  \"error\": {\n    \"code\": %d,\n    \"message\": %s,\n    \"status\": %q\n  }\n}\n", code, quote(message), status)
}

func quote(s string) string { return string(gjson.AppendJSONString(nil, s)) }

// Check checks a generateContent request body's history as Gemini does
// (wire-formats.md §9.5, §9.8), for the model the path names (model is the
// path up to the method):
//
//   - contents is a non-empty array; each role is "user" or "model" (or
//     absent: user);
//   - a model content with functionCall parts is followed at once by a
//     user content with exactly as many functionResponse parts; each
//     response names the call at its position, and where both carry an id
//     the ids agree (a response's id must name a call of the turn);
//   - a user content with functionResponse parts follows a model content
//     with calls;
//   - for a Gemini 3 model ("gemini-3" in the path), the first
//     functionCall part of each function-calling turn since the person's
//     last words carries a thoughtSignature that decodes as base64 (std or
//     url, as python google-genai re-encodes it) or is the documented
//     "skip_thought_signature_validator".
//
// Both key spellings are read (functionCall and function_call, as the API
// does). The error's text is what the fake sends in its 400.
func Check(model string, body []byte) error {
	if !gjson.ValidBytes(body) {
		return Violation{"Invalid JSON payload received."}
	}
	contents := get(gjson.ParseBytes(body), "contents")
	if !contents.IsArray() || len(contents.Array()) == 0 {
		return Violation{"* GenerateContentRequest.contents: contents is not specified"}
	}
	list := contents.Array()
	gemini3 := strings.Contains(model, "gemini-3")
	lastWords := -1
	for i, c := range list {
		if role(c) == "user" && hasWords(c) {
			lastWords = i
		}
	}
	for i, c := range list {
		r := role(c)
		if r != "user" && r != "model" {
			return Violation{"Please use a valid role: user, model."}
		}
		calls := partsWith(c, "functionCall", "function_call")
		resps := partsWith(c, "functionResponse", "function_response")
		if r == "model" && len(resps) > 0 || r == "user" && len(calls) > 0 {
			return violation("content %d: role %s cannot hold that part", i, r)
		}
		if len(resps) > 0 {
			if i == 0 || len(partsWith(list[i-1], "functionCall", "function_call")) == 0 || role(list[i-1]) != "model" {
				return Violation{"Please ensure that function response turn comes immediately after a function call turn."}
			}
		}
		if len(calls) == 0 {
			continue
		}
		if i+1 >= len(list) || role(list[i+1]) != "user" {
			return violation("Please ensure that function call turn comes immediately after a user turn or after a function response turn. (content %d has %d calls and no response turn after it)", i, len(calls))
		}
		got := partsWith(list[i+1], "functionResponse", "function_response")
		if len(got) != len(calls) {
			return violation("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn. (content %d: %d calls, %d responses)", i, len(calls), len(got))
		}
		ids := make(map[string]bool)
		for _, fc := range calls {
			if id := get(fc, "id").Str; id != "" {
				ids[id] = true
			}
		}
		for k, fr := range got {
			if !get(fr, "response").IsObject() {
				return violation("content %d: functionResponse %d: response must be an object", i+1, k)
			}
			if id := get(fr, "id").Str; id != "" {
				if !ids[id] {
					return violation("content %d: functionResponse %d: id %q names no call of the turn", i+1, k, id)
				}
				continue
			}
			if n, want := get(fr, "name").Str, get(calls[k], "name").Str; n != want {
				return violation("content %d: functionResponse %d is named %q, the call at its position %q", i+1, k, n, want)
			}
		}
		if gemini3 && i > lastWords {
			first := firstPartWith(c, "functionCall", "function_call")
			sig := get(first, "thoughtSignature")
			if !validSignature(sig.Str) {
				return violation("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s`, position %d.", get(get(first, "functionCall"), "name").Str, i)
			}
		}
	}
	return nil
}

// get reads key from obj in camelCase or snake_case.
func get(obj gjson.Result, key string) gjson.Result {
	if v := obj.Get(key); v.Exists() {
		return v
	}
	return obj.Get(snake(key))
}

func snake(k string) string {
	var b strings.Builder
	for _, r := range k {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func role(c gjson.Result) string {
	if r := c.Get("role").Str; r != "" {
		return r
	}
	return "user"
}

// partsWith returns the values under key (either spelling) of c's parts.
func partsWith(c gjson.Result, keys ...string) []gjson.Result {
	var out []gjson.Result
	for _, p := range c.Get("parts").Array() {
		for _, k := range keys {
			if v := p.Get(k); v.Exists() {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

// firstPartWith returns the first part of c holding key.
func firstPartWith(c gjson.Result, keys ...string) gjson.Result {
	for _, p := range c.Get("parts").Array() {
		for _, k := range keys {
			if p.Get(k).Exists() {
				return p
			}
		}
	}
	return gjson.Result{}
}

func hasWords(c gjson.Result) bool {
	for _, p := range c.Get("parts").Array() {
		if !p.Get("functionResponse").Exists() && !p.Get("function_response").Exists() {
			return true
		}
	}
	return false
}

func validSignature(s string) bool {
	if s == "skip_thought_signature_validator" {
		return true
	}
	if s == "" {
		return false
	}
	if _, err := base64.StdEncoding.DecodeString(s); err == nil {
		return true
	}
	_, err := base64.URLEncoding.DecodeString(s)
	return err == nil
}

// Violation is a history Gemini refuses; its text is the API's message.
type Violation struct{ Message string }

func (v Violation) Error() string { return v.Message }

func violation(format string, args ...any) error { return Violation{fmt.Sprintf(format, args...)} }
