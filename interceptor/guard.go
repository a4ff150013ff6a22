package interceptor

import (
	"errors"
	"io"
	"net/http"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/shape"
	"github.com/toolgate/toolgate/wire/stream"
)

// A response the gate does not read as a provider's answer must not carry
// a gated call (issue 15 §2): Gemini's generateContent, the Assistants
// API's runs, Ollama's /api/chat, Bedrock's invoke and converse, and any
// other shape an app may read calls from. The gate has no adapter for
// them, so it cannot tell a call from a mention: such a body (2xx, as a
// client reads it) whose bytes name a gated tool is refused, and one
// whose bytes do not is passed untouched, after a byte search only.

// errCut is what a Write returns once a response whose header has gone
// named a gated tool: reverse_proxy then aborts the connection, so the app
// reads a broken response, never the call.
var errCut = errors.New("interceptor: response cut: it names a gated tool in a shape the gate does not read")

// GuardWriter passes a response the gate has no adapter for (see Guard).
type GuardWriter struct {
	*caddyhttp.ResponseWriterWrapper

	names  *shape.Names
	mode   guardMode
	status int    // the held status (watching, header not yet written)
	header bool   // the status was written
	tail   []byte // the end of what was written, for a name cut between writes
	named  string // what the refused response named
}

type guardMode uint8

const (
	guardUndecided guardMode = iota
	guardPassing             // not read as an answer (an error, no body): untouched
	guardWatching            // searched, passed while it names nothing
	guardRefused             // named a gated tool before anything was written: nothing is
	guardCut                 // named one after the header went: the rest is dropped
	guardEncoded             // content-encoded: cannot be searched
)

// Guard wraps w for a response the gate reads as no provider's answer
// (a path without an adapter on a gated route, or a body in a shape its
// adapter does not read). A response a client reads as an answer (2xx,
// 3xx, see readStatus) whose bytes name one of names is refused: when
// nothing was written yet, nothing is and Close returns stream.ErrNamesGated
// (the caller answers 502); later, the write that completes the name
// fails, which makes reverse_proxy cut the connection, and the bytes
// naming it never reach the app. A content-encoded answer cannot be
// searched and is refused the same way (Close returns ErrEncoded): ask
// the upstream for identity. The status is held until the first body
// byte or flush, so that a body naming a gated tool in its first write
// is refused cleanly. Anything else goes through byte for byte.
func Guard(w http.ResponseWriter, names *shape.Names) *GuardWriter {
	return &GuardWriter{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}, names: names}
}

// WriteHeader decides how the response is handled; see Guard.
func (g *GuardWriter) WriteHeader(status int) {
	if g.mode != guardUndecided {
		return
	}
	if status >= 100 && status < 200 && status != http.StatusSwitchingProtocols {
		g.ResponseWriter.WriteHeader(status)
		return
	}
	switch {
	case !readStatus(status) || g.names == nil:
		g.mode = guardPassing
		g.ResponseWriter.WriteHeader(status)
	case encoded(g.Header()):
		g.mode = guardEncoded
	default:
		g.mode, g.status = guardWatching, status
	}
}

// Write passes p unless it (with the end of the last write) names a
// gated tool.
func (g *GuardWriter) Write(p []byte) (int, error) {
	if g.mode == guardUndecided {
		g.WriteHeader(http.StatusOK)
	}
	switch g.mode {
	case guardPassing:
		return g.ResponseWriter.Write(p)
	case guardRefused, guardEncoded:
		return len(p), nil // the caller answers 502; see ResponseWriter on why a held write never fails
	case guardCut:
		return 0, errCut
	}
	if name := g.search(p); name != "" {
		g.named = name
		if !g.header {
			g.mode = guardRefused
			return len(p), nil
		}
		g.mode = guardCut
		return 0, errCut
	}
	g.writeHeader()
	n, err := g.ResponseWriter.Write(p)
	g.keepTail(p[:n])
	return n, err
}

// search looks for a name in p and across the end of the last write.
func (g *GuardWriter) search(p []byte) string {
	if name := g.names.Named(p); name != "" {
		return name
	}
	if len(g.tail) == 0 {
		return ""
	}
	w := g.names.Window()
	joined := make([]byte, 0, len(g.tail)+w)
	joined = append(append(joined, g.tail...), p[:min(len(p), w)]...)
	// Only a match that takes bytes from both sides is new; one inside the
	// tail alone was searched with the last write (and found nothing).
	return g.names.Named(joined)
}

// keepTail keeps the last window bytes written.
func (g *GuardWriter) keepTail(p []byte) {
	w := g.names.Window()
	if len(p) >= w {
		g.tail = append(g.tail[:0], p[len(p)-w:]...)
		return
	}
	g.tail = append(g.tail, p...)
	if len(g.tail) > w {
		g.tail = append(g.tail[:0], g.tail[len(g.tail)-w:]...)
	}
}

func (g *GuardWriter) writeHeader() {
	if g.mode == guardWatching && !g.header {
		g.header = true
		g.ResponseWriter.WriteHeader(g.status)
	}
}

// ReadFrom routes io.Copy through Write (the promoted one would go around
// the search).
func (g *GuardWriter) ReadFrom(r io.Reader) (int64, error) {
	if g.mode == guardPassing {
		return g.ResponseWriterWrapper.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{g}, r)
}

// FlushError sends what was written. A flush before the first body byte
// sends the held status: a stream's header goes at once, as
// reverse_proxy wants it (caddyserver/caddy#6293).
func (g *GuardWriter) FlushError() error {
	switch g.mode {
	case guardRefused, guardEncoded, guardCut:
		return nil
	case guardWatching:
		g.writeHeader()
	}
	return http.NewResponseController(g.ResponseWriter).Flush()
}

// Named is the gated tool a refused response named ("" when none).
func (g *GuardWriter) Named() string { return g.named }

// Close ends the response: the held status of an answer without a body
// goes out. It returns stream.ErrNamesGated when the response named a gated
// tool and ErrEncoded when it could not be searched; see Guard for what
// was written then.
func (g *GuardWriter) Close() error {
	switch g.mode {
	case guardWatching:
		g.writeHeader()
	case guardRefused, guardCut:
		return stream.ErrNamesGated
	case guardEncoded:
		return ErrEncoded
	}
	return nil
}

// Written reports whether anything of the response reached the client.
func (g *GuardWriter) Written() bool { return g.header || g.mode == guardPassing }

// readsShape reports whether a reads body as its own answer (shape.Reads
// with its AnswerKey); an adapter without one reads none.
func readsShape(a provider.Adapter, body []byte) bool {
	k, ok := a.(provider.AnswerKeyer)
	return ok && shape.Reads(k.AnswerKey(), body)
}

// checkShape refuses a body an adapter would pass as not its answer while
// it names a gated tool (stream.ErrNamesGated); see readsShape. The shape
// is asked first: a provider's usual answer is read by its top-level keys
// alone (a search per string, shape.Reads), where the name search goes
// over every byte of it, and a body in the adapter's shape passes whatever
// it names.
func checkShape(a provider.Adapter, names *shape.Names, body []byte) error {
	if names == nil || readsShape(a, body) || names.Named(body) == "" {
		return nil
	}
	return stream.ErrNamesGated
}

// eventShape is the adapter's OwnsEvent; nil for an adapter without one
// (its streams are not guarded).
func eventShape(a provider.Adapter) func([]byte) bool {
	if o, ok := a.(provider.EventOwner); ok {
		return o.OwnsEvent
	}
	return nil
}

// guardStream makes s refuse events in another protocol's shape naming
// one of names (see stream.Frame.GuardWith).
func guardStream(s provider.Stream, a provider.Adapter, names *shape.Names) {
	own := eventShape(a)
	if g, ok := s.(interface {
		GuardWith(*shape.Names, func([]byte) bool)
	}); ok && names != nil && own != nil {
		g.GuardWith(names, own)
	}
}

// Interface guards
var (
	_ http.ResponseWriter             = (*GuardWriter)(nil)
	_ io.ReaderFrom                   = (*GuardWriter)(nil)
	_ interface{ FlushError() error } = (*GuardWriter)(nil)
)
