package interceptor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
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
// one Adapter. Make it with Wrap, pass it to the next handler, then call
// Close.
//
// The decision is taken at WriteHeader, on the final status and headers:
//
//   - 1xx responses go through, and the decision waits for the final one.
//   - Anything but a 2xx with a body, and any type but text/event-stream or
//     application/json, goes through untouched.
//   - A JSON or SSE body with a Content-Encoding other than identity is
//     uninspectable: nothing of it is written and Close returns ErrEncoded.
//   - text/event-stream: Content-Length is dropped, the header is written at
//     once (caddyserver/caddy#6293), and the body goes through the adapter's
//     Stream as it comes.
//   - application/json: the header and body are held (up to maxJSON bytes,
//     else Close returns ErrTooLarge), and Close rewrites the body, sets
//     Content-Length and writes both.
//
// When Close returns an error the response has not been written, except in
// stream mode, where the header and the events before the failure are out and
// the stream simply stops. The header map still holds the upstream's
// headers: a caller answering 502 should clear them first.
//
// Writes in the held modes never fail, even past the limit: reverse_proxy
// answers a Write error with panic(http.ErrAbortHandler) (reverseproxy.go,
// handleUpstreamResponse), which would cut the connection instead of letting
// the caller answer 502. The excess is discarded instead.
type ResponseWriter struct {
	*caddyhttp.ResponseWriterWrapper

	adapter Adapter
	ctx     context.Context
	holder  Holder
	maxJSON int64

	mode     writerMode
	status   int           // the held status (buffer mode)
	stream   Stream        // stream mode
	buf      *bytes.Buffer // buffer mode, pooled
	body     bool          // a body byte arrived (buffer mode)
	tooLarge bool          // buffer mode went over maxJSON
	closed   bool
	closeErr error
}

type writerMode uint8

const (
	undecided writerMode = iota
	passing
	streaming
	buffering
	uninspectable
)

// Wrap returns w wrapped to rewrite JSON and SSE responses with a, asking h
// about calls. ctx is handed to the adapter (and so to h). JSON bodies are
// held up to maxJSON bytes (DefaultMaxJSON if maxJSON <= 0).
func Wrap(w http.ResponseWriter, a Adapter, ctx context.Context, h Holder, maxJSON int64) *ResponseWriter {
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

// WriteHeader decides how the response is handled; see ResponseWriter.
func (rw *ResponseWriter) WriteHeader(status int) {
	if rw.mode != undecided || rw.closed {
		return
	}
	if status >= 100 && status < 200 && status != http.StatusSwitchingProtocols {
		rw.ResponseWriter.WriteHeader(status) // informational: not the response yet
		return
	}
	h := rw.Header()
	kind := bodyKind(h.Get("Content-Type"))
	switch {
	case status < 200 || status > 299 || status == http.StatusNoContent ||
		status == http.StatusResetContent || kind == otherBody:
		rw.mode = passing
		rw.ResponseWriter.WriteHeader(status)
	case encoded(h):
		rw.mode = uninspectable
	case kind == sseBody:
		rw.mode = streaming
		h.Del("Content-Length")
		rw.ResponseWriter.WriteHeader(status)
		rc := http.NewResponseController(rw.ResponseWriter)
		flush := func() error {
			// A writer that cannot flush still gets every byte, later.
			if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
				return err
			}
			return nil
		}
		rw.stream = rw.adapter.NewStream(rw.ctx, rw.ResponseWriter, flush, rw.holder)
	default:
		rw.mode = buffering
		rw.status = status
		rw.buf = getBuf()
	}
}

// Write takes body bytes: passed on, streamed through the adapter, or held.
func (rw *ResponseWriter) Write(p []byte) (int, error) {
	if rw.mode == undecided {
		rw.WriteHeader(http.StatusOK)
	}
	switch rw.mode {
	case streaming:
		if _, err := rw.stream.Write(p); err != nil {
			return 0, err
		}
		return len(p), nil
	case buffering:
		if rw.tooLarge {
			return len(p), nil
		}
		if int64(rw.buf.Len())+int64(len(p)) > rw.maxJSON {
			rw.tooLarge = true
			putBuf(rw.buf)
			rw.buf = nil
			return len(p), nil
		}
		rw.body = rw.body || len(p) > 0
		return rw.buf.Write(p)
	case uninspectable:
		return len(p), nil
	case passing:
		return rw.ResponseWriter.Write(p)
	}
	return 0, errors.New("interceptor: write after close")
}

// ReadFrom routes io.Copy through Write. The promoted
// ResponseWriterWrapper.ReadFrom would copy straight to the inner writer and
// skip the rewrite (caddy-badger-notes.md §2(a), the file_server path).
func (rw *ResponseWriter) ReadFrom(r io.Reader) (int64, error) {
	if rw.mode == undecided {
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
	if rw.mode == undecided {
		rw.WriteHeader(http.StatusOK)
	}
	if rw.mode == passing {
		return http.NewResponseController(rw.ResponseWriter).Flush()
	}
	return nil
}

// Unwrap returns the inner writer, for http.ResponseController.
func (rw *ResponseWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// Close finishes the response: it closes the Stream, or rewrites and writes
// the held JSON body. It returns ErrEncoded, ErrTooLarge or the adapter's
// error when the response could not be checked; see ResponseWriter for what
// was written then. Close after Close returns the first result.
func (rw *ResponseWriter) Close() error {
	if rw.closed {
		return rw.closeErr
	}
	rw.closed = true
	rw.closeErr = rw.finish()
	putBuf(rw.buf)
	rw.buf = nil
	return rw.closeErr
}

func (rw *ResponseWriter) finish() error {
	switch rw.mode {
	case streaming:
		return rw.stream.Close()
	case uninspectable:
		return ErrEncoded
	case buffering:
		if rw.tooLarge {
			return ErrTooLarge
		}
		if !rw.body {
			// No body (a HEAD, say): the upstream's headers stand.
			rw.ResponseWriter.WriteHeader(rw.status)
			return nil
		}
		out, err := rw.adapter.RewriteJSON(rw.ctx, rw.buf.Bytes(), rw.holder)
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

// bufPool holds the buffers of JSON bodies, partial SSE events and content
// logs. Buffers that grew past maxPooled are left to the garbage collector
// rather than kept for every later response (STYLE.md: cap before Put).
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooled = 1 << 20

func getBuf() *bytes.Buffer {
	b := bufPool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

func putBuf(b *bytes.Buffer) {
	if b == nil || b.Cap() > maxPooled {
		return
	}
	b.Reset()
	bufPool.Put(b)
}

type bodyType uint8

const (
	otherBody bodyType = iota
	jsonBody
	sseBody
)

// bodyKind reads the media type of a Content-Type value, parameters ignored.
func bodyKind(ct string) bodyType {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	switch {
	case strings.EqualFold(ct, "text/event-stream"):
		return sseBody
	case strings.EqualFold(ct, "application/json"):
		return jsonBody
	}
	return otherBody
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
	_ Adapter                                   = Chat{}
)
