package differential

import (
	"bytes"
	"compress/gzip"
	"net/http"
)

// Content-Type (and Content-Encoding) variants: the same body under the
// labels SDKs still parse, or might.

type label struct {
	name   string
	stream bool // for SSE bodies (else JSON)
	header http.Header
	gzip   bool // the body is gzip-encoded (Content-Encoding: gzip)
}

// apply gives the base's body under the label. An ungated case may be
// refused: a gate may refuse what it cannot label with certainty, except
// the plain forms any provider sends (parameters, case).
func (l label) apply(b base) modelCase {
	c := newCase(b, "label-"+l.name, b.body)
	c.Header = l.header.Clone()
	if l.gzip {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write(b.body)
		w.Close()
		c.Pieces = [][]byte{z.Bytes()}
	}
	c.MayRefuse = !b.gated && !plainLabels[l.name]
	return c
}

// plainLabels are labels a gate must read as what they say.
var plainLabels = map[string]bool{
	"sse-charset":   true,
	"sse-uppercase": true,
	"json-charset":  true,
	"json-upper":    true,
	"json-vnd+json": true,
}

func ct(values ...string) http.Header {
	if values == nil {
		return http.Header{} // none at all
	}
	return http.Header{"Content-Type": values}
}

var labels = []label{
	{name: "sse-charset", stream: true, header: ct("text/event-stream; charset=utf-8")},
	{name: "sse-uppercase", stream: true, header: ct("Text/Event-Stream")},
	{name: "text-plain", stream: true, header: ct("text/plain")},
	{name: "none", stream: true, header: ct()},
	{name: "octet-stream", stream: true, header: ct("application/octet-stream")},
	{name: "json-on-sse", stream: true, header: ct("application/json")},
	{name: "two-json-then-sse", stream: true, header: ct("application/json", "text/event-stream")},
	{name: "two-sse-then-json", stream: true, header: ct("text/event-stream", "application/json")},
	{name: "gzip", stream: true, header: http.Header{"Content-Type": {"text/event-stream"}, "Content-Encoding": {"gzip"}}, gzip: true},

	{name: "json-charset", header: ct("application/json; charset=utf-8")},
	{name: "json-upper", header: ct("Application/JSON")},
	{name: "json-vnd+json", header: ct("application/vnd.foo+json")},
	{name: "text-plain", header: ct("text/plain")},
	{name: "none", header: ct()},
	{name: "octet-stream", header: ct("application/octet-stream")},
	{name: "sse-on-json", header: ct("text/event-stream")},
	{name: "two-plain-then-json", header: ct("text/plain", "application/json")},
	{name: "two-json-then-plain", header: ct("application/json", "text/plain")},
	{name: "gzip", header: http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}}, gzip: true},
}
