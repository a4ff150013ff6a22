package interceptor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/chat"
	"github.com/toolgate/toolgate/provider/chat/chattest"
	"github.com/toolgate/toolgate/provider/providertest"
)

// recorder is an httptest.ResponseRecorder that also records each
// WriteHeader and Flush, and the body length at each flush.
type recorder struct {
	*httptest.ResponseRecorder
	headers []int
	flushed []int
}

func newRecorder() *recorder { return &recorder{ResponseRecorder: httptest.NewRecorder()} }

func (r *recorder) WriteHeader(code int) {
	r.headers = append(r.headers, code)
	if code >= 200 {
		r.ResponseRecorder.WriteHeader(code)
	}
}

func (r *recorder) Flush() {
	r.flushed = append(r.flushed, r.Body.Len())
	r.ResponseRecorder.Flush()
}

// onlyReader hides every method of a reader but Read, as a plain
// io.Reader would come.
type onlyReader struct{ io.Reader }

func wrap(rec *recorder, h provider.Holder, contentType string, max int64) *ResponseWriter {
	rw := Wrap(rec, chat.Chat{}, context.Background(), h, max)
	rw.Header().Set("Content-Type", contentType)
	return rw
}

func TestWriterStreamsEventsAsTheyCome(t *testing.T) {
	in := fixture(t, "stream-text.sse")
	rec := newRecorder()
	rw := wrap(rec, providertest.NewHolder("delete_post"), "text/event-stream; charset=utf-8", 0)
	rw.Header().Set("Content-Length", "8761")
	rw.WriteHeader(http.StatusOK)
	if len(rec.headers) != 1 || rec.Header().Get("Content-Length") != "" {
		t.Fatalf("header not written at once, or Content-Length kept: %v %v", rec.headers, rec.Header())
	}
	evs := providertest.Events(in)
	for i, ev := range evs {
		if _, err := rw.Write(ev); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rec.Body.Bytes(), bytes.Join(evs[:i+1], nil)) {
			t.Fatalf("event %d not written through", i)
		}
		if len(rec.flushed) != i+1 || rec.flushed[i] != rec.Body.Len() {
			t.Fatalf("event %d: flushes at %v, want one after each event", i, rec.flushed)
		}
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.Body.Bytes(), in) {
		t.Error("output differs from input")
	}
	// reverse_proxy flushes through FlushError after each write too.
	if err := rw.FlushError(); err != nil {
		t.Error(err)
	}
}

func TestWriterStreamRewrites(t *testing.T) {
	rec := newRecorder()
	h := providertest.NewHolder("GetWeatherArgs")
	rw := wrap(rec, h, "text/event-stream", 0)
	rw.WriteHeader(http.StatusOK)
	if _, err := io.Copy(rw, onlyReader{bytes.NewReader(fixture(t, "stream-one-tool-1.sse"))}); err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if c := chattest.Accumulate(t, rec.Body.Bytes()).Choices[0]; c.Message.Content != waitText || len(c.Message.ToolCalls) != 0 {
		t.Errorf("choice = %+v", c)
	}
}

func TestWriterRewritesJSON(t *testing.T) {
	body := fixture(t, "json-one-tool.json")
	for _, tc := range []struct {
		name string
		copy func(rw *ResponseWriter) error
	}{
		{"Write", func(rw *ResponseWriter) error { _, err := rw.Write(body); return err }},
		{"io.Copy from a plain reader", func(rw *ResponseWriter) error {
			_, err := io.Copy(rw, onlyReader{bytes.NewReader(body)})
			return err
		}},
		{"ReadFrom", func(rw *ResponseWriter) error { _, err := rw.ReadFrom(strings.NewReader(string(body))); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			h := providertest.NewHolder("GetWeatherArgs")
			rw := wrap(rec, h, "application/json; charset=utf-8", 0)
			rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
			rw.WriteHeader(http.StatusOK)
			if err := tc.copy(rw); err != nil {
				t.Fatal(err)
			}
			if err := rw.FlushError(); err != nil {
				t.Fatal(err)
			}
			if len(rec.headers) != 0 || rec.Body.Len() != 0 || len(rec.flushed) != 0 {
				t.Fatalf("written before Close: headers %v, %d bytes, flushes %v", rec.headers, rec.Body.Len(), rec.flushed)
			}
			if err := rw.Close(); err != nil {
				t.Fatal(err)
			}
			out := rec.Body.Bytes()
			if got := rec.Header().Get("Content-Length"); got != strconv.Itoa(len(out)) {
				t.Errorf("Content-Length = %s, body is %d bytes", got, len(out))
			}
			if len(h.Holds()) != 1 {
				t.Fatalf("the rewriter was not reached: holds %d", len(h.Holds()))
			}
			if c := chattest.DecodeCompletion(t, out).Choices[0]; c.Message.Content != waitText || len(c.Message.ToolCalls) != 0 {
				t.Errorf("choice = %+v", c)
			}
		})
	}
}

func TestWriterFailsClosed(t *testing.T) {
	body := fixture(t, "json-one-tool.json")
	for _, tc := range []struct {
		name, contentType, encoding string
		max                         int64
		want                        error
	}{
		{"gzip JSON", "application/json", "gzip", 0, ErrEncoded},
		{"br SSE", "text/event-stream", "identity, br", 0, ErrEncoded},
		{"too large", "application/json", "", 100, ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			rw := wrap(rec, providertest.NewHolder("GetWeatherArgs"), tc.contentType, tc.max)
			if tc.encoding != "" {
				rw.Header().Set("Content-Encoding", tc.encoding)
			}
			rw.WriteHeader(http.StatusOK)
			for p := body; len(p) > 0; p = p[min(50, len(p)):] {
				// Writes never fail here, so reverse_proxy does not abort
				// the connection before the caller can answer 502.
				if n, err := rw.Write(p[:min(50, len(p))]); err != nil || n != min(50, len(p)) {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if err := rw.Close(); !errors.Is(err, tc.want) {
				t.Errorf("Close = %v, want %v", err, tc.want)
			}
			if len(rec.headers) != 0 || rec.Body.Len() != 0 {
				t.Errorf("written: headers %v, body %q", rec.headers, rec.Body.Bytes())
			}
			if err := rw.Close(); !errors.Is(err, tc.want) {
				t.Errorf("second Close = %v", err)
			}
		})
	}

	t.Run("rewrite error", func(t *testing.T) {
		rec := newRecorder()
		rw := wrap(rec, providertest.NewHolder(), "application/json", 0)
		if _, err := rw.Write([]byte(`{"choices":[{"message":{"tool_calls":[`)); err != nil {
			t.Fatal(err)
		}
		if err := rw.Close(); err == nil || len(rec.headers) != 0 || rec.Body.Len() != 0 {
			t.Errorf("Close = %v, headers %v", err, rec.headers)
		}
	})
}

func TestWriterPassesOtherResponses(t *testing.T) {
	body := fixture(t, "json-one-tool.json")
	for _, tc := range []struct {
		name, contentType string
		status            int
	}{
		{"error status", "application/json", http.StatusBadRequest},
		{"server error", "text/event-stream", http.StatusBadGateway},
		{"no content", "application/json", http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			h := providertest.NewHolder("GetWeatherArgs")
			rw := wrap(rec, h, tc.contentType, 0)
			rw.WriteHeader(tc.status)
			if len(rec.headers) != 1 || rec.headers[0] != tc.status {
				t.Fatalf("header not passed at once: %v", rec.headers)
			}
			if tc.status != http.StatusNoContent {
				if _, err := io.Copy(rw, onlyReader{bytes.NewReader(body)}); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(rec.Body.Bytes(), body) {
					t.Error("body changed")
				}
			}
			if err := rw.Close(); err != nil || len(h.Holds()) != 0 {
				t.Errorf("Close = %v, holds %d", err, len(h.Holds()))
			}
		})
	}
}

// Every 2xx and 3xx body is read, whatever its label: a label the SDKs
// do not take for JSON or an event stream does not stop them from reading
// the body (a streamed request's answer is read as an event stream
// whatever it says; the Go SDKs decode any status under 400). A body is
// read as the label says when every client reads it alike, else as the
// request asked.
func TestWriterReadsEveryLabel(t *testing.T) {
	jsonBody := fixture(t, "json-one-tool.json")
	sseBody := fixture(t, "stream-one-tool-1.sse")
	for _, tc := range []struct {
		name    string
		types   []string // the Content-Type headers; none when empty
		status  int
		stream  bool // the request asked for a stream
		wantSSE bool
	}{
		{"text/plain, JSON asked", []string{"text/plain"}, 200, false, false},
		{"text/plain, stream asked", []string{"text/plain; charset=utf-8"}, 200, true, true},
		{"no type, JSON asked", nil, 200, false, false},
		{"no type, stream asked", nil, 200, true, true},
		{"octet-stream", []string{"application/octet-stream"}, 200, true, true},
		{"+json", []string{"application/vnd.openai+json"}, 200, false, false},
		{"case", []string{"Application/JSON"}, 200, false, false},
		{"json-seq", []string{"application/json-seq"}, 200, false, false},
		{"two headers", []string{"application/json", "text/event-stream"}, 200, true, true},
		{"two types in one", []string{"text/plain, application/json"}, 200, false, false},
		{"does not parse", []string{"text/event-stream;;;"}, 200, true, true},
		{"event stream in capitals", []string{"Text/Event-Stream"}, 200, false, true},
		{"203", []string{"application/json"}, 203, false, false},
		{"300 without Location", []string{"application/json"}, 300, false, false},
		{"307", []string{"text/event-stream"}, 307, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			h := providertest.NewHolder("GetWeatherArgs")
			rw := Wrap(rec, chat.Chat{}, context.Background(), h, 0)
			rw.SetRequest([]byte(`{"model":"gpt-4o","stream":` + strconv.FormatBool(tc.stream) + `,"messages":[]}`))
			for _, ct := range tc.types {
				rw.Header().Add("Content-Type", ct)
			}
			rw.WriteHeader(tc.status)
			body := jsonBody
			if tc.wantSSE {
				body = sseBody
			}
			if _, err := io.Copy(rw, onlyReader{bytes.NewReader(body)}); err != nil {
				t.Fatal(err)
			}
			if err := rw.Close(); err != nil {
				t.Fatal(err)
			}
			if len(h.Holds()) != 1 {
				t.Fatalf("not read: held %d, wrote %s", len(h.Holds()), rec.Body.Bytes())
			}
			if tc.wantSSE {
				if c := chattest.Accumulate(t, rec.Body.Bytes()).Choices[0]; len(c.Message.ToolCalls) != 0 {
					t.Errorf("choice = %+v", c)
				}
			} else if c := chattest.DecodeCompletion(t, rec.Body.Bytes()).Choices[0]; len(c.Message.ToolCalls) != 0 {
				t.Errorf("choice = %+v", c)
			}
		})
	}
	// An event stream where JSON was expected, or JSON where a stream
	// was: no client finds a call in either, but one may read it the
	// other way, so a body that holds a call is refused.
	for _, tc := range []struct {
		name   string
		ct     string
		stream bool
		body   []byte
	}{
		{"events labelled JSON", "application/json", true, sseBody},
		{"events unlabelled, JSON asked", "", false, sseBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			rw := Wrap(rec, chat.Chat{}, context.Background(), providertest.NewHolder("GetWeatherArgs"), 0)
			rw.SetRequest([]byte(`{"stream":` + strconv.FormatBool(tc.stream) + `}`))
			if tc.ct != "" {
				rw.Header().Set("Content-Type", tc.ct)
			}
			rw.Write(tc.body)
			if err := rw.Close(); err == nil || rec.Body.Len() != 0 {
				t.Errorf("Close = %v, wrote %s", err, rec.Body.Bytes())
			}
		})
	}
}

func TestWriterPassesInformational(t *testing.T) {
	rec := newRecorder()
	rw := wrap(rec, providertest.NewHolder("GetWeatherArgs"), "application/json", 0)
	rw.WriteHeader(http.StatusEarlyHints)
	rw.WriteHeader(http.StatusOK)
	if len(rec.headers) != 1 || rec.headers[0] != http.StatusEarlyHints {
		t.Fatalf("headers = %v, want only the 103 so far", rec.headers)
	}
	if _, err := rw.Write(fixture(t, "json-one-tool.json")); err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if len(rec.headers) != 2 || rec.headers[1] != http.StatusOK || rec.Code != http.StatusOK {
		t.Errorf("headers = %v", rec.headers)
	}
}

func TestWriterWithoutBody(t *testing.T) {
	// A HEAD answer: the upstream's Content-Length stands.
	rec := newRecorder()
	rw := wrap(rec, providertest.NewHolder(), "application/json", 0)
	rw.Header().Set("Content-Length", "639")
	rw.WriteHeader(http.StatusOK)
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if rec.Header().Get("Content-Length") != "639" || len(rec.headers) != 1 {
		t.Errorf("headers %v, Content-Length %q", rec.headers, rec.Header().Get("Content-Length"))
	}
}

func TestWriterUnwrap(t *testing.T) {
	rec := newRecorder()
	rw := wrap(rec, providertest.NewHolder(), "text/plain", 0)
	if rw.Unwrap() != http.ResponseWriter(rec) {
		t.Error("Unwrap does not return the inner writer")
	}
	// http.ResponseController reaches the inner writer's Flush through
	// FlushError (of a response that passes).
	rw.WriteHeader(http.StatusBadRequest)
	if err := http.NewResponseController(rw).Flush(); err != nil || len(rec.flushed) != 1 {
		t.Errorf("flush: %v, %v", err, rec.flushed)
	}
}

// arrayAdapter is Chat whose turns also read a streamed JSON array: its
// ArrayStream passes the body through as it comes and fails on a body
// whose first byte that is not blank is not '['.
type arrayAdapter struct{ chat.Chat }

func (a arrayAdapter) NewTurn(ctx context.Context, h provider.Holder, request []byte, n int) provider.Turn {
	return arrayTurn{a.Chat.NewTurn(ctx, h, request, n)}
}

type arrayTurn struct{ provider.Turn }

func (arrayTurn) ArrayStream(dst io.Writer, flush func() error) provider.Stream {
	return &passArray{dst: dst, flush: flush}
}

type passArray struct {
	dst     io.Writer
	flush   func() error
	started bool
}

func (p *passArray) Write(b []byte) (int, error) {
	if !p.started {
		t := bytes.TrimLeft(b, " \r\n\t")
		if len(t) == 0 {
			return len(b), nil
		}
		if t[0] != '[' {
			return 0, errors.New("not an array")
		}
		p.started = true
	}
	if _, err := p.dst.Write(b); err != nil {
		return 0, err
	}
	return len(b), p.flush()
}

func (p *passArray) Close() error { return nil }

// TestWriterJSONLabelledStream: a request that asked for a stream framed
// as a JSON array (SetStreamsJSON) has its answer, labelled
// application/json, read as a stream through the turn's ArrayStream: each
// element written and flushed as it comes, the header with the first
// byte. A body that is not an array is refused with nothing written, its
// header included; so is any array stream when the adapter reads none.
func TestWriterJSONLabelledStream(t *testing.T) {
	parts := []string{"[{\"candidates\":[]}", "\n,\r\n{\"candidates\":[]}", "\n]"}
	rec := newRecorder()
	rw := Wrap(rec, arrayAdapter{}, context.Background(), providertest.NewHolder("delete_post"), 0)
	rw.SetStreamsJSON(true)
	rw.Header().Set("Content-Type", "application/json; charset=UTF-8")
	rw.Header().Set("Content-Length", "99")
	rw.WriteHeader(http.StatusOK)
	if len(rec.headers) != 0 {
		t.Fatalf("the header went before a byte of the body: %v", rec.headers)
	}
	for i, p := range parts {
		if _, err := rw.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
		if got := rec.Body.String(); got != strings.Join(parts[:i+1], "") || len(rec.flushed) != i+1 {
			t.Fatalf("part %d: body %q, flushes %v: want each part written and flushed as it comes", i, got, rec.flushed)
		}
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if len(rec.headers) != 1 || rec.headers[0] != 200 || rec.Header().Get("Content-Length") != "" {
		t.Errorf("headers %v, Content-Length %q", rec.headers, rec.Header().Get("Content-Length"))
	}

	for name, a := range map[string]provider.Adapter{"one object": arrayAdapter{}, "no ArrayStream": chat.Chat{}} {
		rec := newRecorder()
		rw := Wrap(rec, a, context.Background(), providertest.NewHolder("delete_post"), 0)
		rw.SetStreamsJSON(true)
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusOK)
		body := `[{"candidates":[]}]`
		if name == "one object" {
			body = `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete_post"}}]}}]}`
		}
		if n, err := rw.Write([]byte(body)); err != nil || n != len(body) {
			t.Errorf("%s: Write = %d, %v: want the body taken (a Write error makes reverse_proxy cut the connection)", name, n, err)
		}
		if err := rw.Close(); err == nil {
			t.Errorf("%s: Close passed", name)
		}
		if len(rec.headers) != 0 || rec.Body.Len() != 0 {
			t.Errorf("%s: written %v %q: want nothing, for the caller's 502", name, rec.headers, rec.Body.String())
		}
	}
}
