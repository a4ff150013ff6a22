package caddymodule

import (
	"github.com/toolgate/toolgate/internal/memo"
	"github.com/toolgate/toolgate/provider"
)

// pathFacts is what a request's method and path alone say to a route,
// read on its canonical path: whether it is an endpoint that carries calls
// around the gate (endpointFor), the protocol that reads it (providerFor)
// and the refusal of a POST no adapter reads (unknownPost). Each is a function of
// the method and path as sent, the route's configuration and the
// providers registered at init; nothing of the body, the query, the person
// or the policy. A pathFacts is shared by the requests that find it in
// the memo and never changed.
type pathFacts struct {
	upper    string // upperMethod(method)
	around   *provider.Around
	protocol string
	unknown  *refusal
}

// pathFacts returns the facts of a request's method and path, from the
// route's memo (Handler.paths) when it has them. Every request on a route
// asks them, and finding them takes the canonical path (a Gemini path's
// upper-case method is lowered segment by segment), each provider asked at
// each segment, and the foreign-path checks: microseconds a request,
// where a route serves the same few paths over and over. The memo belongs
// to one Handler, so one route's configuration (allow_paths, provider)
// never answers for another's; its key is the method and path as sent, in
// full (the refusal names the path as sent).
func (h *Handler) pathFacts(method, path string) *pathFacts {
	return h.paths.Get(memo.Key{A: method, B: path}, h.computePathFacts)
}

// computePathFacts finds the facts of a method and path (see pathFacts).
func (h *Handler) computePathFacts(k memo.Key) *pathFacts {
	method, path := k.A, k.B
	canon := canonicalPath(path)
	f := &pathFacts{upper: upperMethod(method)}
	f.around = endpointFor(f.upper, canon)
	f.protocol = h.providerFor(canon)
	f.unknown = h.unknownPost(f.upper, canon, path, f.protocol)
	return f
}
