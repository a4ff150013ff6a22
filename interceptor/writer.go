package interceptor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/shape"
	"github.com/toolgate/toolgate/wire/stream"
)

var (
	// ErrEncoded is returned by Close for a JSON or SSE response with a
	// Content-Encoding other than identity: its calls cannot be read, so none
	// of it was written. Strip Accept-Encoding upstream to avoid it.
	ErrEncoded = errors.New("interceptor: response body is content-encoded and cannot be inspected")
	// ErrTooLarge is returned by Close for a JSON response over the size
	// limit; none of it was written.
	ErrTooLarge = errors.New("interceptor: JSON response body over the size limit")
)

// DefaultMaxJSON is the JSON body limit Wrap uses when given maxJSON <= 0.
const DefaultMaxJSON = 8 << 20

// ResponseWriter rewrites a provider's response on its way to the app with
// one Adapter. Make it with Wrap, give it the request body sent upstream
// with SetRequest, pass it to the next handler, then call Close; in between,
// Continuation and Continue drive follow-up requests (see Continuation).
//
// The decision is taken at WriteHeader, on the final status and headers:
//
//   - 1xx responses go through, and the decision waits for the final one.
//   - 4xx and 5xx responses, and those without a body (204, 205, 304), go
//     through untouched: every SDK reads them as an error, never a call.
//     Any other 2xx or 3xx is read: the Go SDKs decode every status under
//     400 (openai-go and anthropic-sdk-go, internal/requestconfig), and Go's
//     client hands over a redirect without a Location as it came.
//   - A body with a Content-Encoding other than identity is uninspectable:
//     nothing of it is written and Close returns ErrEncoded.
//   - An event stream (see kindOf for how the kind is decided):
//     Content-Length is dropped, the header is written at once
//     (caddyserver/caddy#6293), and the body goes through the adapter's
//     Turn as it comes.
//   - A stream framed as a JSON array (SetStreamsJSON: Gemini without
//     alt=sse), whatever its label: as an event stream, through the
//     turn's ArrayStream (provider.ArrayTurn), except that the header
//     waits for the first byte the turn writes, so that a body that is
//     not an array (a single JSON object) is refused with nothing
//     written. An adapter without ArrayStream fails it closed.
//   - JSON: the header and body are held (up to maxJSON bytes, else Close
//     returns ErrTooLarge), and Close rewrites the body, sets
//     Content-Length and writes both. A body that is not JSON fails there
//     when it may hold a call, however a client would read it. A body
//     that names a gated tool (GuardNames) and is not in the adapter's
//     shape (another provider's answer, or two at once) fails there too
//     (stream.ErrNamesGated): its client would read calls the adapter never saw.
//   - A stream labelled as newline-delimited JSON or an AWS event stream
//     (Ollama, Bedrock), which no adapter reads, goes through a
//     GuardWriter: refused, or cut, where it names a gated tool.
//
// When Close returns an error the response has not been written, except in
// stream mode, where the header and the events before the failure are out and
// the stream stops with an error event in the provider's format. The header map still holds the upstream's
// headers: a caller answering 502 should clear them first.
//
// Writes in the held modes never fail, even past the limit: reverse_proxy
// answers a Write error with panic(http.ErrAbortHandler) (reverseproxy.go,
// handleUpstreamResponse), which would cut the connection instead of letting
// the caller answer 502. The excess is discarded instead.
type ResponseWriter struct {
	*caddyhttp.ResponseWriterWrapper

	adapter provider.Adapter
	ctx     context.Context
	holder  provider.Holder
	maxJSON int64
	request []byte       // SetRequest; nil: no continuation
	streams streamsSaid  // SetStreams
	array   bool         // SetStreamsJSON
	resume  bool         // AllowResume
	names   *shape.Names // GuardNames
	guard   *GuardWriter // guarded mode

	mode     writerMode
	kind     bodyType        // the first response's: sseBody or jsonBody, once inspected
	status   int             // the held status (buffer mode)
	turn     provider.Turn   // streaming and buffering modes
	stream   provider.Stream // the current response's (stream mode)
	flushFn  func() error    // stream mode
	dst      io.Writer       // where a stream's turn writes (stream mode)
	lazy     *headerOnWrite  // the array stream's header, written with its first byte
	buf      *bytes.Buffer   // buffer mode, pooled
	body     bool            // a body byte arrived (buffer mode)
	tooLarge bool            // buffer mode went over maxJSON
	closed   bool
	closeErr error

	// Continuations.
	round   int         // 0: the first response; n: the n-th follow-up
	ended   bool        // the current response was ended by Continuation
	endErr  error       // why the first response could not be checked
	next    []byte      // the follow-up body Continuation reported
	saved   http.Header // the app's header, set aside while a follow-up's headers arrive
	failure string      // why the follow-up is unusable (discarding mode)
}

type writerMode uint8

const (
	undecided writerMode = iota
	passing
	streaming
	buffering
	uninspectable
	discarding // a follow-up that cannot continue the answer
	guarded    // a stream in a shape no adapter reads (foreignBody): through a GuardWriter
)

// Wrap returns w wrapped to rewrite JSON and SSE responses with a, asking h
// about calls. ctx is handed to the adapter (and so to h). JSON bodies are
// held up to maxJSON bytes (DefaultMaxJSON if maxJSON <= 0). Refusals are
// shown in place unless SetRequest is called.
func Wrap(w http.ResponseWriter, a provider.Adapter, ctx context.Context, h provider.Holder, maxJSON int64) *ResponseWriter {
	if maxJSON <= 0 {
		maxJSON = DefaultMaxJSON
	}
	return &ResponseWriter{
		ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w},
		adapter:               a,
		ctx:                   ctx,
		holder:                h,
		maxJSON:               maxJSON,
	}
}

// SetRequest gives the writer the request body sent upstream (after every
// rewrite), which enables continuations: up to MaxContinuations follow-ups
// that send refused calls back to the provider. Call it before the next
// handler runs; body must stay unchanged until Close.
func (rw *ResponseWriter) SetRequest(body []byte) { rw.request = body }

// streamsSaid is what SetStreams said: nothing, or whether the request
// asked for an event stream.
type streamsSaid uint8

const (
	streamsUnsaid streamsSaid = iota
	streamsYes
	streamsNo
)

// SetStreams tells the writer whether the request asked for an event
// stream (provider.Provider.Streams), which decides how an answer whose
// Content-Type does not say is read (see kindOf). Call it before the next
// handler runs. Without it the adapter, when it is a provider.Provider, is
// asked about the request body.
func (rw *ResponseWriter) SetStreams(streams bool) {
	rw.streams = streamsNo
	if streams {
		rw.streams = streamsYes
	}
}

// SetStreamsJSON tells the writer that the request asked for a stream
// framed as one JSON array (provider.JSONStreamer): its answer is read as
// that stream whatever its Content-Type (see kindOf). Call it before the
// next handler runs.
func (rw *ResponseWriter) SetStreamsJSON(yes bool) { rw.array = yes }

// GuardNames gives the writer the gated tools' names: a response it
// cannot read as its adapter's answer (a JSON body in another shape, a
// stream labelled as newline-delimited JSON or an AWS event stream) is
// refused when its bytes name one of them (see Guard, readsShape). Call
// it before the next handler runs; without it such a response passes as
// before.
func (rw *ResponseWriter) GuardNames(n *shape.Names) { rw.names = n }

// WriteHeader decides how the response is handled; see ResponseWriter.
func (rw *ResponseWriter) WriteHeader(status int) {
	if rw.mode != undecided || rw.closed {
		return
	}
	if rw.round > 0 {
		rw.followUpHeader(status)
		return
	}
	if status >= 100 && status < 200 && status != http.StatusSwitchingProtocols {
		rw.ResponseWriter.WriteHeader(status) // informational: not the response yet
		return
	}
	h := rw.Header()
	kind := rw.kindOf(h)
	switch {
	case !readStatus(status):
		rw.mode = passing
		rw.ResponseWriter.WriteHeader(status)
	case encoded(h):
		rw.mode = uninspectable
	case kind == foreignBody:
		rw.mode, rw.kind = guarded, foreignBody
		rw.guard = Guard(rw.ResponseWriter, rw.names)
		rw.guard.WriteHeader(status)
	case kind == sseBody:
		rw.mode, rw.kind = streaming, sseBody
		h.Del("Content-Length")
		rw.ResponseWriter.WriteHeader(status)
		rw.flushFn = flusher(rw.ResponseWriter)
		rw.dst = rw.ResponseWriter
		rw.turn = rw.newTurn()
		rw.stream = rw.turn.Stream(rw.dst, rw.flushFn)
		guardStream(rw.stream, rw.adapter, rw.names)
	case kind == arrayBody:
		rw.mode, rw.kind = streaming, arrayBody
		h.Del("Content-Length")
		rw.lazy = &headerOnWrite{w: rw.ResponseWriter, status: status}
		rw.dst = rw.lazy
		flush := flusher(rw.ResponseWriter)
		rw.flushFn = func() error {
			if !rw.lazy.sent {
				return nil // a flush would send the header before a byte is known
			}
			return flush()
		}
		rw.turn = rw.newTurn()
		rw.stream = arrayStream(rw.turn, rw.dst, rw.flushFn)
		guardStream(rw.stream, rw.adapter, rw.names)
	default:
		rw.mode, rw.kind = buffering, jsonBody
		rw.status = status
		rw.buf = stream.GetBuf()
	}
}

func (rw *ResponseWriter) newTurn() provider.Turn {
	n := 0
	if rw.request != nil {
		n = provider.MaxContinuations
	}
	t := rw.adapter.NewTurn(rw.ctx, rw.holder, rw.request, n)
	if rw.resume {
		t.AllowResume()
	}
	return t
}

// followUpHeader decides how a follow-up response is handled. Its status is
// never written (the first response's stands); its headers, which arrived
// in a cleared map, are read and then replaced by the app's.
func (rw *ResponseWriter) followUpHeader(status int) {
	if status >= 100 && status < 200 && status != http.StatusSwitchingProtocols {
		return // informational: swallowed, the follow-up is still to come
	}
	h := rw.Header()
	kind, enc := rw.kindOf(h), encoded(h)
	rw.restoreHeader()
	switch {
	case !readStatus(status):
		rw.mode, rw.failure = discarding, "the provider answered HTTP "+strconv.Itoa(status)+"."
	case enc || kind != rw.kind:
		rw.mode, rw.failure = discarding, "the provider's answer could not be read."
	case kind == sseBody:
		rw.mode = streaming
		rw.stream = rw.turn.Stream(rw.dst, rw.flushFn)
		guardStream(rw.stream, rw.adapter, rw.names)
	case kind == arrayBody:
		rw.mode = streaming
		rw.stream = arrayStream(rw.turn, rw.dst, rw.flushFn)
		guardStream(rw.stream, rw.adapter, rw.names)
	default:
		rw.mode = buffering
		rw.buf, rw.body, rw.tooLarge = stream.GetBuf(), false, false
	}
}

// restoreHeader puts back the app's header map set aside by Continue.
func (rw *ResponseWriter) restoreHeader() {
	if rw.saved == nil {
		return
	}
	h := rw.Header()
	clear(h)
	for k, v := range rw.saved {
		h[k] = v
	}
	rw.saved = nil
}

// Write takes body bytes: passed on, streamed through the adapter, or held.
func (rw *ResponseWriter) Write(p []byte) (int, error) {
	if rw.mode == undecided && !rw.closed {
		rw.WriteHeader(http.StatusOK)
	}
	switch rw.mode {
	case streaming:
		if rw.ended {
			return 0, errors.New("interceptor: write after the response ended")
		}
		if _, err := rw.stream.Write(p); err != nil {
			if rw.round == 0 && rw.lazy != nil && !rw.lazy.sent {
				// Nothing of the array stream is out, its header
				// included: Close reports err and the caller answers
				// 502, where a Write error would make reverse_proxy cut
				// the connection.
				rw.mode, rw.ended, rw.endErr = discarding, true, err
				return len(p), nil
			}
			return 0, err
		}
		return len(p), nil
	case buffering:
		if rw.tooLarge || rw.ended {
			return len(p), nil
		}
		if int64(rw.buf.Len())+int64(len(p)) > rw.maxJSON {
			rw.tooLarge = true
			stream.PutBuf(rw.buf)
			rw.buf = nil
			return len(p), nil
		}
		rw.body = rw.body || len(p) > 0
		return rw.buf.Write(p)
	case uninspectable, discarding:
		return len(p), nil
	case passing:
		return rw.ResponseWriter.Write(p)
	case guarded:
		return rw.guard.Write(p)
	}
	return 0, errors.New("interceptor: write after close")
}

// ReadFrom routes io.Copy through Write. The promoted
// ResponseWriterWrapper.ReadFrom would copy straight to the inner writer and
// skip the rewrite (caddy-badger-notes.md §2(a), the file_server path).
func (rw *ResponseWriter) ReadFrom(r io.Reader) (int64, error) {
	if rw.mode == undecided && !rw.closed {
		rw.WriteHeader(http.StatusOK)
	}
	if rw.mode == passing {
		return rw.ResponseWriterWrapper.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{rw}, r)
}

// FlushError flushes the inner writer of a response that passes. While the
// response is held it does nothing: a flush then would send the header
// before the body is known (see caddyserver/caddy#6144). A stream flushes
// on its own after each Write that completed an event, so a second flush
// from the proxy would only repeat it; bytes of an unfinished event stay
// back either way.
func (rw *ResponseWriter) FlushError() error {
	if rw.mode == undecided && rw.round == 0 && !rw.closed {
		rw.WriteHeader(http.StatusOK)
	}
	switch rw.mode {
	case passing:
		return http.NewResponseController(rw.ResponseWriter).Flush()
	case guarded:
		return rw.guard.FlushError()
	}
	return nil
}

// Unwrap returns the inner writer, for http.ResponseController.
func (rw *ResponseWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// Continuation is called after the next handler returned. It ends the
// current response (its stream, or its held JSON body, is judged) and
// reports whether refused calls wait to go back to the provider; body is
// then the follow-up request body. To send it, call Continue, then the next
// handler again with the same writer and a request carrying body; the
// follow-up's status and headers are swallowed and its body continues the
// same answer (see Turn and Chat.NewTurn). Not sending it is fine too:
// Close then shows the refusals in place. Calling it again returns the same.
func (rw *ResponseWriter) Continuation() (body []byte, ok bool) {
	if rw.closed {
		return nil, false
	}
	if rw.ended {
		return rw.next, rw.next != nil
	}
	rw.ended = true
	switch rw.mode {
	case streaming:
		if err := rw.stream.Close(); err != nil {
			rw.endErr = err
			return nil, false
		}
	case buffering:
		if !rw.judgeJSON() {
			return nil, false
		}
	default:
		return nil, false
	}
	rw.next, ok = rw.turn.Continuation()
	if !ok {
		rw.next = nil
	}
	return rw.next, ok
}

// judgeJSON hands the held JSON body to the turn. For the first response a
// failure is Close's error (fail closed); for a follow-up it ends the
// continuation with the text that it could not be read.
func (rw *ResponseWriter) judgeJSON() bool {
	if rw.round == 0 {
		switch {
		case rw.tooLarge:
			rw.endErr = ErrTooLarge
			return false
		case !rw.body:
			return false // no body (a HEAD, say): Close writes the header
		}
		if err := checkShape(rw.adapter, rw.names, rw.buf.Bytes()); err != nil {
			rw.endErr = err
			return false
		}
		rw.turn = rw.newTurn()
		if err := rw.turn.JSON(rw.buf.Bytes()); err != nil {
			rw.endErr = err
			return false
		}
		return true
	}
	if rw.tooLarge || !rw.body || checkShape(rw.adapter, rw.names, rw.buf.Bytes()) != nil || rw.turn.JSON(rw.buf.Bytes()) != nil {
		rw.mode, rw.failure = discarding, "the provider's answer could not be read."
		return false
	}
	return true
}

// AllowResume lets a streamed answer whose calls were held wait for the
// person's answers and go on in the same response (see Held). Call it
// before the next handler runs. It costs nothing until a call is held.
func (rw *ResponseWriter) AllowResume() { rw.resume = true }

// Held reports, once Continuation has reported no follow-up, the step whose
// held calls the streamed answer may wait for ("" for none; see
// Turn.Held). Its header and every event so far are out; its end (finish
// chunk, message_delta and message_stop, response.completed, [DONE]) is
// withheld until Close, or until a follow-up made by Resume ends it.
func (rw *ResponseWriter) Held() string {
	if rw.closed || !rw.ended || rw.endErr != nil || rw.mode != streaming || rw.next != nil {
		return ""
	}
	return rw.turn.Held()
}

// keepAlive is an SSE comment line: every event-stream reader skips it (the
// SSE rule for a line starting with a colon), as do the SDKs' own decoders
// (openai-go's and anthropic-sdk-go's ssestream, the Node SDKs'
// SSEDecoder); the blank line after it ends no event, as no field came.
var keepAlive = []byte(": toolgate: waiting for the person's answer\n\n")

// KeepAlive writes and flushes an SSE comment (or what the turn's
// KeepAlive method gives, when it has one) to a stream whose end is
// withheld for held calls (see Held), so that the connection is not taken
// for idle while the person answers. An error means the client cannot be
// reached.
func (rw *ResponseWriter) KeepAlive() error {
	if rw.Held() == "" {
		return errors.New("interceptor: keep-alive on a stream that is not waiting")
	}
	ka := keepAlive
	if k, ok := rw.turn.(provider.KeepAliveTurn); ok {
		ka = k.KeepAlive() // the protocol's own
	}
	if _, err := rw.dst.Write(ka); err != nil {
		return err
	}
	return rw.flushFn()
}

// Resume makes the follow-up request for the held step, once the person
// has answered every hold of it (see Turn.Resume: restore restores the
// history behind the step's link). To send it, call Continue, then the
// next handler again with the same writer and a request carrying body, as
// for a continuation; the model's reply continues the same message. ok is
// false when there is nothing to resume; Close then ends the stream as it
// would have ended without waiting.
func (rw *ResponseWriter) Resume(restore func(body []byte) ([]byte, error)) (body []byte, ok bool) {
	if rw.Held() == "" {
		return nil, false
	}
	if body, ok = rw.turn.Resume(restore); ok {
		rw.next = body
	}
	return body, ok
}

// Continue readies the writer for the follow-up response that Continuation
// reported: call it just before sending the follow-up request. It does
// nothing when no follow-up is pending. Until the follow-up's WriteHeader the
// header map is empty, so that its headers do not mix with the app's.
func (rw *ResponseWriter) Continue() {
	if rw.closed || rw.next == nil {
		return
	}
	rw.turn.Continue()
	rw.round++
	rw.mode, rw.ended, rw.next, rw.stream = undecided, false, nil, nil
	rw.buf = nil // not pooled: the turn may still refer to its bytes
	h := rw.Header()
	rw.saved = h.Clone()
	clear(h)
}

// Close finishes the response: it ends the current response if Continuation
// did not, and writes what the turn still holds (the JSON answer; a
// stream's withheld end). It returns ErrEncoded, ErrTooLarge or the
// adapter's error when the first response could not be checked; see
// ResponseWriter for what was written then. A follow-up that brought no
// usable answer (no response, a non-2xx status, another type, an unreadable
// body) is no error: the app reads "Toolgate could not continue: …". Close
// after Close returns the first result.
func (rw *ResponseWriter) Close() error {
	if rw.closed {
		return rw.closeErr
	}
	rw.closeErr = rw.finish()
	rw.closed = true
	stream.PutBuf(rw.buf)
	rw.buf = nil
	return rw.closeErr
}

func (rw *ResponseWriter) finish() error {
	if !rw.ended {
		rw.Continuation()
	}
	if rw.round > 0 {
		rw.restoreHeader()
		switch rw.mode {
		case undecided:
			rw.turn.Fail("the provider did not answer.")
		case discarding:
			rw.turn.Fail(rw.failure)
		}
	}
	if rw.endErr != nil {
		return rw.endErr
	}
	switch {
	case rw.mode == uninspectable:
		return ErrEncoded
	case rw.mode == guarded:
		return rw.guard.Close()
	case rw.kind == sseBody:
		_, err := rw.turn.Finish()
		return err
	case rw.kind == arrayBody:
		if _, err := rw.turn.Finish(); err != nil {
			return err
		}
		rw.lazy.send() // a body the turn wrote nothing of (none is Gemini's)
		return nil
	case rw.kind == jsonBody:
		if rw.turn == nil {
			// No body (a HEAD, say): the upstream's headers stand.
			rw.ResponseWriter.WriteHeader(rw.status)
			return nil
		}
		out, err := rw.turn.Finish()
		if err != nil {
			return err
		}
		rw.Header().Set("Content-Length", strconv.Itoa(len(out)))
		rw.ResponseWriter.WriteHeader(rw.status)
		_, err = rw.ResponseWriter.Write(out)
		return err
	}
	return nil
}

type bodyType uint8

const (
	otherBody bodyType = iota
	jsonBody
	sseBody
	foreignBody // a stream no adapter reads: newline-delimited JSON, an AWS event stream
	arrayBody   // a stream framed as one JSON array (SetStreamsJSON)
)

// arrayStream returns the turn's rewriter of a streamed JSON array, or,
// when the adapter reads none, one that fails at its first byte.
func arrayStream(t provider.Turn, dst io.Writer, flush func() error) provider.Stream {
	if a, ok := t.(provider.ArrayTurn); ok {
		return a.ArrayStream(dst, flush)
	}
	return failStream{errors.New("interceptor: the answer is a streamed JSON array, which this adapter does not read")}
}

// failStream is a Stream that takes nothing.
type failStream struct{ err error }

func (f failStream) Write([]byte) (int, error) { return 0, f.err }
func (f failStream) Close() error              { return f.err }

// headerOnWrite writes the held status header before the first byte of the
// body, or when send is called: an array stream refused before any byte of
// it is written still gets its 502.
type headerOnWrite struct {
	w      http.ResponseWriter
	status int
	sent   bool
}

func (h *headerOnWrite) send() {
	if !h.sent {
		h.sent = true
		h.w.WriteHeader(h.status)
	}
}

func (h *headerOnWrite) Write(p []byte) (int, error) {
	h.send()
	return h.w.Write(p)
}

// flusher flushes w for a stream. A writer that cannot flush still gets
// every byte, later: that is not an error.
func flusher(w http.ResponseWriter) func() error {
	rc := http.NewResponseController(w)
	return func() error {
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		return nil
	}
}

// readStatus reports whether a client reads the body of a final response
// with this status as an answer: 2xx and 3xx with a body. The Go SDKs
// treat every status under 400 as success (requestconfig.go: an APIError
// only from 400 on), and Go's client returns a 3xx without a Location as
// it came.
func readStatus(status int) bool {
	switch status {
	case http.StatusNoContent, http.StatusResetContent, http.StatusNotModified:
		return false
	}
	return status >= 200 && status < 400
}

// kindOf decides how a response body is read: as an event stream or as
// JSON. A label every client reads alike decides: one Content-Type naming
// text/event-stream, or one the SDKs take for JSON (its media type holds
// application/json or ends in +json: openai-go and anthropic-sdk-go,
// internal/requestconfig/requestconfig.go; the Node SDKs,
// src/internal/parse.ts, which do not fold case). Any other label — none,
// text/plain, application/octet-stream, two Content-Type headers (Go reads
// the first, fetch joins them), one that does not parse — does not stop a
// client from reading the body: the SDKs read the answer to a streamed
// request as an event stream whatever its label (ssestream.NewDecoder,
// parse.ts with options.stream), and the Node SDKs hand any other back as
// text. So it is read as the request asked: as an event stream when the
// request asked for one (SetStreams), else as JSON, which refuses a body that may
// hold a call and is no JSON.
//
// A request that asked for a stream framed as a JSON array (SetStreamsJSON)
// is answered with one whatever the label: its clients (python-api-core's
// response iterator, llm-gemini's ijson, a fetch and JSON.parse) read the
// array without looking at the Content-Type, Gemini labels it
// application/json, and reading it as one JSON body would hold every chunk
// back until the end.
func (rw *ResponseWriter) kindOf(h http.Header) bodyType {
	if rw.array {
		return arrayBody
	}
	if v := h.Values("Content-Type"); len(v) == 1 {
		if k := bodyKind(v[0]); k != otherBody {
			return k
		}
	}
	if rw.asksStream() {
		return sseBody
	}
	return jsonBody
}

// asksStream reports whether the request asked for an event stream: as
// SetStreams said, else as the adapter reads the request body.
func (rw *ResponseWriter) asksStream() bool {
	switch rw.streams {
	case streamsYes:
		return true
	case streamsNo:
		return false
	}
	p, ok := rw.adapter.(provider.Provider)
	return ok && rw.request != nil && p.Streams(http.MethodPost, nil, rw.request)
}

// bodyKind reads the media type of a Content-Type value, parameters
// ignored, case folded: sseBody for text/event-stream, jsonBody for one
// the SDKs take for JSON (it holds application/json or ends in +json),
// else otherBody.
func bodyKind(ct string) bodyType {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.ToLower(strings.TrimSpace(ct))
	switch {
	case ct == "text/event-stream":
		return sseBody
	case foreignStreams[ct]:
		return foreignBody
	case strings.Contains(ct, "application/json") || strings.HasSuffix(ct, "+json"):
		return jsonBody
	}
	return otherBody
}

// foreignStreams are the media types of streams in shapes no adapter reads,
// which Ollama's /api/chat (application/x-ndjson) and Bedrock's
// invoke-with-response-stream and converse-stream
// (application/vnd.amazon.eventstream) send: their clients read them
// whatever the request said, so they are not read as SSE.
var foreignStreams = map[string]bool{
	"application/x-ndjson":               true,
	"application/ndjson":                 true,
	"application/jsonl":                  true,
	"application/x-jsonlines":            true,
	"application/vnd.amazon.eventstream": true,
}

// encoded reports whether any Content-Encoding coding is other than
// identity.
func encoded(h http.Header) bool {
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return true
			}
		}
	}
	return false
}

// Interface guards
var (
	_ http.ResponseWriter                       = (*ResponseWriter)(nil)
	_ io.ReaderFrom                             = (*ResponseWriter)(nil)
	_ interface{ FlushError() error }           = (*ResponseWriter)(nil)
	_ interface{ Unwrap() http.ResponseWriter } = (*ResponseWriter)(nil)
)
