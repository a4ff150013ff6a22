package caddymodule

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/toolgate/toolgate/provider"
)

// What a request on a model route is, by its path and, for a few request
// parameters, its body: the gated endpoints, which the adapters check, and
// the endpoints that carry tool calls around the gate, which are refused
// unless the operator allows them (Handler.Allow). Each provider names its
// own (provider.Provider); this file asks them all and keeps what is no
// provider's: the canonical path, the paths of providers the gate has no
// adapter for, the operator's allow_paths.

// canonicalPath is a request path as a tolerant upstream routes it: lower
// case, each segment without its path parameters (";x=1"), empty and "."
// segments dropped, ".." resolved, no trailing slash. The path comes
// percent-decoded (r.URL.Path). A path that is already canonical comes back
// as it is, without allocating.
func canonicalPath(p string) string {
	if isCanonical(p) {
		return p
	}
	segs := strings.Split(p, "/")
	out := segs[:0]
	for _, s := range segs {
		if i := strings.IndexByte(s, ';'); i >= 0 {
			s = s[:i]
		}
		switch s {
		case "", ".":
			continue
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			continue
		}
		out = append(out, strings.ToLower(s))
	}
	return "/" + strings.Join(out, "/")
}

// isCanonical reports a path canonicalPath would not change: it starts
// with a slash and has no upper case, no byte beyond ASCII, no ';', no
// "//", no segment starting with '.', and no trailing slash.
func isCanonical(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	if p == "/" {
		return true
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c >= 'A' && c <= 'Z', c == ';', c >= 0x80:
			return false
		case c == '/' && (i+1 == len(p) || p[i+1] == '/' || p[i+1] == '.'):
			return false
		}
	}
	return true
}

// providerFor names the protocol of a canonical path ("" when the route
// does not gate it): by the path's end when it is a gated endpoint's (the
// upstream answers in that endpoint's shape, whatever the route's
// Provider: vLLM serves /v1/chat/completions, /v1/responses and
// /v1/messages side by side), else the one the route fixes.
func (h *Handler) providerFor(path string) string {
	if p := provider.ForPath(path); p != nil {
		return p.Name()
	}
	if h.Provider != "" && h.Provider != "auto" {
		return h.Provider
	}
	return ""
}

// unknownPost returns the refusal of a POST to a canonical path that is
// neither a gated endpoint (protocol, from providerFor) nor one of those
// known to answer without tool calls (knownPaths), or nil: its answer may
// be a provider's the gate has no adapter for (Gemini's
// {model}:generateContent, the Assistants API's runs, Ollama's /api/chat,
// Bedrock's invoke and converse), whose calls would reach the app
// unchecked. The paths of those other providers (foreignPath) are refused
// on every route, even where a gated endpoint's end or a fixed Provider
// would read them as another's; on a route whose Provider is fixed every
// other POST is read as that provider's. The
// operator lets a path through with AllowPaths; its answer is then still
// refused when it names a gated tool (interceptor.Guard).
//
// sent is the path as the request had it, which the refusal names.
func (h *Handler) unknownPost(method, path, sent, protocol string) *refusal {
	if method != http.MethodPost || h.allowsPath(path) {
		return nil
	}
	if !foreignPath(path) && (protocol != "" || knownPath(path)) {
		return nil
	}
	return &refusal{http.StatusForbidden, fmt.Sprintf("POST %s is not an endpoint the gate reads: its answer could carry tool calls in a shape the gate does not check. The operator can allow the path with `allow_paths %s`; an answer naming a gated tool is refused even then.", sent, sent)}
}

// knownPath reports a canonical path that ends as one of the paths a
// provider knows to answer without tool calls (provider.Provider.KnownPaths,
// any provider's: embeddings, moderations, legacy completions, audio,
// images, files and uploads, token counting and tokenizing, response
// compaction, conversations and their items).
func knownPath(path string) bool {
	for _, p := range provider.All() {
		for _, k := range p.KnownPaths() {
			if strings.HasSuffix(path, k) {
				return true
			}
		}
	}
	return false
}

// foreignPath reports a canonical path of a provider the gate has no
// adapter for, which a route with a fixed Provider must not read as its
// own: a segment with a ':' method that no provider serves or knows
// (Vertex AI's other methods), Ollama's /api/chat and /api/generate,
// Bedrock's invoke and converse (and their streams), the Assistants API's
// threads and runs.
func foreignPath(path string) bool {
	var buf [16]string
	segs := splitPath(path, buf[:0])
	last := segs[len(segs)-1]
	if strings.HasSuffix(path, "/api/chat") || strings.HasSuffix(path, "/api/generate") {
		return true
	}
	switch last {
	case "invoke", "invoke-with-response-stream", "converse", "converse-stream":
		return true
	}
	colon := false
	for _, s := range segs {
		if s == "threads" || s == "runs" {
			return true
		}
		colon = colon || strings.IndexByte(s, ':') >= 0
	}
	// A ':' method is foreign unless a provider serves the path (Gemini's
	// :generateContent) or knows it answers without calls (:countTokens).
	return colon && provider.ForPath(path) == nil && !knownPath(path)
}

// allowsPath reports whether the operator lets POSTs to a canonical path
// through (AllowPaths): the path itself, or one under a "/*" entry.
func (h *Handler) allowsPath(path string) bool {
	for _, p := range h.allowPaths {
		if prefix, ok := strings.CutSuffix(p, "/*"); ok {
			if path == prefix || strings.HasPrefix(path, prefix+"/") {
				return true
			}
		} else if path == p {
			return true
		}
	}
	return false
}

// checkAllowPaths reads AllowPaths: each an absolute path, optionally
// ending in "/*", kept canonical (as requests' paths are compared).
func (h *Handler) checkAllowPaths() error {
	h.allowPaths = h.allowPaths[:0]
	for _, p := range h.AllowPaths {
		if !strings.HasPrefix(p, "/") || strings.Contains(strings.TrimSuffix(p, "/*"), "*") {
			return fmt.Errorf("allow_paths: %q: want an absolute path, optionally ending in /*", p)
		}
		if prefix, ok := strings.CutSuffix(p, "/*"); ok {
			h.allowPaths = append(h.allowPaths, canonicalPath(prefix)+"/*")
		} else {
			h.allowPaths = append(h.allowPaths, canonicalPath(p))
		}
	}
	return nil
}

// aroundRefusal is the answer to a request of kind a to method and path.
func aroundRefusal(a *provider.Around, method, path string) *refusal {
	return &refusal{a.Status, a.Message(method, path)}
}

// endpointFor returns the kind of a request whose path (canonical) is an
// endpoint that returns tool calls the gate never rewrites, or nil: each
// provider is asked at each segment in turn (provider.Provider.Around),
// and the first answer stands.
//
// method is compared in any case: Caddy forwards "get" as it came, and a
// tolerant upstream routes it as GET.
func endpointFor(method, path string) *provider.Around {
	method = upperMethod(method)
	var buf [16]string
	segs := splitPath(path, buf[:0])
	providers := provider.All()
	for i := range segs {
		for _, p := range providers {
			if a := p.Around(method, segs, i); a != nil {
				return a
			}
		}
	}
	return nil
}

// upperMethod is method in upper case, without allocating for one that
// already is.
func upperMethod(method string) string {
	for i := 0; i < len(method); i++ {
		if c := method[i]; 'a' <= c && c <= 'z' {
			return strings.ToUpper(method)
		}
	}
	return method
}

// splitPath appends the segments of a path to segs (on the caller's
// stack for the usual few).
func splitPath(p string, segs []string) []string {
	p = strings.TrimPrefix(p, "/")
	for {
		seg, rest, more := strings.Cut(p, "/")
		segs = append(segs, seg)
		if !more {
			return segs
		}
		p = rest
	}
}

// paramFor returns the kind of a gated request whose body asks for what
// carries calls around the gate (provider.Provider.AroundParam), or nil.
func paramFor(protocol string, body []byte) *provider.Around {
	if p := provider.Lookup(protocol); p != nil {
		return p.AroundParam(body)
	}
	return nil
}

// allows reports whether the operator lets a kind through.
func (h *Handler) allows(name string) bool {
	for _, a := range h.Allow {
		if a == name {
			return true
		}
	}
	return false
}

// checkAllow refuses an Allow name the handler does not know.
func (h *Handler) checkAllow() error {
	for _, a := range h.Allow {
		known := false
		for _, n := range provider.AllowNames {
			known = known || a == n
		}
		if !known {
			return fmt.Errorf("allow: unknown %q; want %s", a, strings.Join(provider.AllowNames, ", "))
		}
	}
	return nil
}
