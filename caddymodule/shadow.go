package caddymodule

import (
	"context"
	"io"
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/provider"
)

// Shadow mode on the model route: the gate's own writer does not inspect
// the calls of actions in shadow mode (gate.Front.Gated), so they reach
// the app byte for byte. A second interceptor reads a copy of the same
// bytes as they go by, with the gate's Watcher as its Holder, and writes
// nothing anywhere: it finds the shadow calls as the adapter would find
// any call (JSON or SSE) and the Watcher works out, on the side, what
// enforce mode would have done. Only routes whose policy has an action in
// shadow mode pay for the second reading; the first response is watched,
// not the continuations that follow refusals.

// shadowTee hands what the upstream writes to the gate's writer, then a
// copy to the watching interceptor.
type shadowTee struct {
	*caddyhttp.ResponseWriterWrapper
	watch  *interceptor.ResponseWriter
	sink   *sink
	header bool // the watching interceptor has its header
}

// teeShadow returns w, or, when watcher is not nil, a writer that also
// lets watcher see what is written; done closes the watching side. like
// is given the watching side's writer before anything is written, to be
// told what the gate's writer is told of the request (SetStreams,
// SetStreamsJSON): without it the watching side would read a streamed
// JSON array as one JSON body, which it cannot read.
func teeShadow(w http.ResponseWriter, ctx context.Context, adapter provider.Adapter, watcher provider.Holder, max int64, log *zap.Logger, like func(*interceptor.ResponseWriter)) (http.ResponseWriter, func()) {
	if watcher == nil {
		return w, func() {}
	}
	s := &sink{h: http.Header{}}
	t := &shadowTee{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}, sink: s}
	t.watch = interceptor.Wrap(s, adapter, ctx, watcher, max)
	if like != nil {
		like(t.watch)
	}
	return t, func() {
		if err := t.watch.Close(); err != nil {
			log.Debug("shadow: reading the response", zap.Error(err))
		}
	}
}

func (t *shadowTee) WriteHeader(status int) {
	t.copyHeader(status)
	t.ResponseWriterWrapper.WriteHeader(status)
}

// copyHeader gives the watching side the response's header as the
// upstream set it, before the gate's writer sees it.
func (t *shadowTee) copyHeader(status int) {
	if t.header || status >= 100 && status < 200 {
		return
	}
	t.header = true
	for k, v := range t.Header() {
		t.watch.Header()[k] = append([]string(nil), v...)
	}
	t.watch.WriteHeader(status)
}

func (t *shadowTee) Write(p []byte) (int, error) {
	t.copyHeader(http.StatusOK)
	n, err := t.ResponseWriterWrapper.Write(p)
	if n > 0 {
		// The watching side never fails the app's response.
		_, _ = t.watch.Write(p[:n])
	}
	return n, err
}

// ReadFrom copies through Write, so the watching side sees the bytes too
// (the wrapper's own ReadFrom would hand them past it).
func (t *shadowTee) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(writeOnly{t}, r)
}

// writeOnly hides a writer's ReadFrom from io.Copy.
type writeOnly struct{ io.Writer }

// sink is where the watching interceptor writes: nowhere.
type sink struct{ h http.Header }

func (s *sink) Header() http.Header         { return s.h }
func (s *sink) Write(p []byte) (int, error) { return len(p), nil }
func (s *sink) WriteHeader(int)             {}
func (s *sink) Flush()                      {}
