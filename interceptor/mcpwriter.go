package interceptor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/wire/stream"
)

// MCPResultWriter rewrites the result of one JSON-RPC request on its way
// back from an MCP server, in whichever form the server answers: one JSON
// body, or an SSE stream that may carry the request's notifications (and,
// on legacy sessions, the server's own requests, such as elicitation/create)
// before the response. Every other event goes out as it comes, flushed at
// once, so a legacy flow that waits on the client mid-stream never stalls.
// Any other status or content type passes untouched.
type MCPResultWriter struct {
	http.ResponseWriter
	id      []byte
	rewrite func(result []byte) []byte
	max     int64

	mode   bodyType
	buf    *bytes.Buffer // JSON: the body, until Close
	header bool
	frame  stream.Frame // SSE: the event begun and not yet complete; the sticky error of either mode
}

// NewMCPResultWriter wraps w so that rewrite sees the result of the
// response to id; max caps a buffered JSON body (and one SSE event).
func NewMCPResultWriter(w http.ResponseWriter, id []byte, rewrite func(result []byte) []byte, max int64) *MCPResultWriter {
	rw := &MCPResultWriter{ResponseWriter: w, id: id, rewrite: rewrite, max: max}
	rw.frame.Attach(w, flusher(w), "mcp stream", nil)
	return rw
}

// errMCPTooLarge is a JSON answer over the cap: it cannot be rewritten and
// is not passed unread either (the gate fails closed).
var errMCPTooLarge = errors.New("mcp: upstream answer over the size limit")

var (
	errMCPEventLarge = fmt.Errorf("mcp stream: event over %d bytes", stream.MaxEvent)
	errMCPClosed     = errors.New("mcp stream: write after close")
)

// WriteHeader picks the mode from the status and content type.
func (w *MCPResultWriter) WriteHeader(status int) {
	if w.header {
		return
	}
	w.header = true
	if status >= 200 && status <= 299 && !encoded(w.Header()) {
		switch bodyKind(w.Header().Get("Content-Type")) {
		case jsonBody:
			w.mode = jsonBody
			w.buf = stream.GetBuf()
			w.Header().Del("Content-Length")
			return // the status goes out with the body, in Close
		case sseBody:
			w.mode = sseBody
			w.Header().Del("Content-Length")
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *MCPResultWriter) Write(p []byte) (int, error) {
	if !w.header {
		w.WriteHeader(http.StatusOK)
	}
	switch w.mode {
	case jsonBody:
		if int64(w.buf.Len()+len(p)) > w.max {
			w.frame.SetErr(errMCPTooLarge)
			return 0, w.frame.Err()
		}
		return w.buf.Write(p)
	case sseBody:
		return w.frame.WriteEvents((*mcpEvents)(w), p, errMCPEventLarge, errMCPClosed)
	}
	return w.ResponseWriter.Write(p)
}

// ReadFrom keeps io.Copy going through Write, never around it.
func (w *MCPResultWriter) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{w}, r)
}

// Flush flushes what went out; a buffered JSON body waits for Close.
func (w *MCPResultWriter) Flush() {
	if w.mode != jsonBody {
		http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap lets http.ResponseController reach the writer below.
func (w *MCPResultWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Close finishes the answer: a JSON body is rewritten and written now. A
// JSON body that could not be held (over the cap) fails with an error
// and nothing written, so the caller can answer 502. An event stream's
// last event, left without its blank line, is read like any other (the
// go-sdk client dispatches it at the end of the body).
func (w *MCPResultWriter) Close() error {
	defer func() {
		if w.buf != nil {
			stream.PutBuf(w.buf)
			w.buf = nil
		}
	}()
	w.frame.MarkClosed()
	switch w.mode {
	case jsonBody:
		if w.frame.Err() != nil {
			return w.frame.Err()
		}
		body := w.message(w.buf.Bytes())
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.ResponseWriter.WriteHeader(http.StatusOK)
		_, err := w.ResponseWriter.Write(body)
		return err
	case sseBody:
		w.frame.CloseEvents((*mcpEvents)(w))
		return w.frame.Err()
	}
	return nil
}

// message rewrites one JSON-RPC message when it is the response to our id
// with a result; anything else comes back as it was.
func (w *MCPResultWriter) message(m []byte) []byte {
	if !gjson.ValidBytes(m) {
		return m
	}
	root := gjson.ParseBytes(m)
	res := root.Get("result")
	if !res.IsObject() || !sameID([]byte(root.Get("id").Raw), w.id) || root.Get("method").Exists() {
		return m
	}
	nr := w.rewrite([]byte(res.Raw))
	if nr == nil {
		return m
	}
	out := make([]byte, 0, len(m)+len(nr)-len(res.Raw))
	out = append(out, m[:res.Index]...)
	out = append(out, nr...)
	return append(out, m[res.Index+len(res.Raw):]...)
}

// mcpEvents is the stream.Sink of an MCPResultWriter's event stream (a
// type of its own, so the writer's exported methods stay its own).
type mcpEvents MCPResultWriter

func (w *mcpEvents) Passes(ev []byte) bool {
	return !bytes.Contains(ev, []byte(`"result"`))
}

func (w *mcpEvents) Slow(ev []byte) {
	data, ok := w.frame.Data(ev)
	if !ok {
		w.frame.Emit(ev)
		return
	}
	nd := (*MCPResultWriter)(w).message(data)
	if bytes.Equal(nd, data) {
		w.frame.Emit(ev)
		return
	}
	// The event again with its other fields (id, event, retry) in place.
	w.frame.WriteReplaced(ev, nd, false)
}
