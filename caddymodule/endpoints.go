package caddymodule

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// What a request on a model route is, by its path and, for a few request
// parameters, its body: the gated endpoints, which the adapters check, and
// the endpoints that carry tool calls around the gate, which are refused
// unless the operator allows them (Handler.Allow).

// Allow names, the Caddyfile's and JSON's spelling.
const (
	allowLegacyFunctions = "legacy_functions"
	allowBatches         = "batches"
	allowStoredResponses = "stored_responses"
	allowRealtime        = "realtime"
)

var allowNames = []string{allowLegacyFunctions, allowBatches, allowStoredResponses, allowRealtime}

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
	for _, p := range pathProviders {
		if strings.HasSuffix(path, p.suffix) && adapters[p.provider] != nil {
			return p.provider
		}
	}
	if h.Provider != "" && h.Provider != "auto" {
		return h.Provider
	}
	return ""
}

// pathProviders map a path's end to its provider.
var pathProviders = []struct{ suffix, provider string }{
	{"/chat/completions", "openai-chat"},
	{"/responses", "openai-responses"},
	{"/messages", "anthropic"},
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

// knownPaths end the paths of endpoints known to answer without tool
// calls, any provider: embeddings, moderations, legacy completions, audio,
// images, files and uploads, token counting and tokenizing, response
// compaction, conversations and their items.
var knownPaths = []string{
	"/embeddings", "/moderations", "/completions",
	"/audio/speech", "/audio/transcriptions", "/audio/translations",
	"/images/generations", "/images/edits", "/images/variations",
	"/files", "/uploads", "/parts", "/complete",
	"/messages/count_tokens", "/responses/input_tokens", "/responses/compact",
	"/tokenize", "/detokenize", "/conversations", "/items",
}

// knownPath reports a canonical path that ends in one of knownPaths: its
// answer carries no tool call.
func knownPath(path string) bool {
	for _, k := range knownPaths {
		if strings.HasSuffix(path, k) {
			return true
		}
	}
	return false
}

// foreignPath reports a canonical path of a provider the gate has no
// adapter for, which a route with a fixed Provider must not read as its
// own: a segment with a ':' method (Gemini and Vertex AI,
// {model}:generateContent), Ollama's /api/chat and /api/generate,
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
	for _, s := range segs {
		if strings.IndexByte(s, ':') >= 0 || s == "threads" || s == "runs" {
			return true
		}
	}
	return false
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

// around is a kind of request that carries tool calls around the gate.
type around struct {
	allow  string // the name that lets it through
	status int    // the refusal's status
	what   string // what it is, for the refusal
	why    string // why it is refused
}

var (
	aroundBatches = &around{allowBatches, http.StatusForbidden,
		"the batch API", "a batch's results hold tool calls the gate never sees"}
	aroundStored = &around{allowStoredResponses, http.StatusForbidden,
		"reading stored model output back", "stored output holds tool calls the gate never checked"}
	aroundRealtime = &around{allowRealtime, http.StatusForbidden,
		"the Realtime API", "its tool calls travel over a WebSocket or WebRTC connection the gate cannot check"}
	aroundFunctions = &around{allowLegacyFunctions, http.StatusBadRequest,
		"the legacy functions and function_call parameters", "the gate checks tool calls only (use tools and tool_choice)"}
	aroundBackground = &around{allowStoredResponses, http.StatusBadRequest,
		"a background response (background: true)", "its output is read back later, around the gate"}
)

// refusal is the answer to a request of this kind to method and path.
func (a *around) refusal(method, path string) *refusal {
	return &refusal{a.status, fmt.Sprintf("%s (%s %s) is refused on this gated route: %s. The operator can allow it with `allow %s`.", a.what, method, path, a.why, a.allow)}
}

// endpointFor returns the kind of a request whose path (canonical) is an
// endpoint that returns tool calls the gate never rewrites, or nil:
//
//   - batches: anything under /batches (OpenAI) or /messages/batches
//     (Anthropic), and /files/{id}/content, where batch output is read;
//   - stored responses: anything under /responses/{id} but DELETE (the
//     stored response, its input items, cancel), except POST
//     /responses/input_tokens and /responses/compact; GET
//     /conversations/{id}/items[/{id}]; GET /chat/completions (the stored
//     list) and anything under /chat/completions/{id} but DELETE;
//   - realtime: anything under /realtime (the WebSocket, calls, sessions,
//     client secrets).
//
// method is compared in any case: Caddy forwards "get" as it came, and a
// tolerant upstream routes it as GET.
func endpointFor(method, path string) *around {
	method = upperMethod(method)
	var buf [16]string
	segs := splitPath(path, buf[:0])
	n := len(segs)
	for i, s := range segs {
		rest := n - i - 1 // segments after s
		switch s {
		case "realtime":
			return aroundRealtime
		case "batches":
			return aroundBatches
		case "files":
			if rest == 2 && segs[i+2] == "content" {
				return aroundBatches
			}
		case "responses":
			if rest >= 1 && method != http.MethodDelete && !(rest == 1 && method == http.MethodPost && (segs[i+1] == "input_tokens" || segs[i+1] == "compact")) {
				return aroundStored
			}
		case "conversations":
			if rest >= 2 && segs[i+2] == "items" && method == http.MethodGet {
				return aroundStored
			}
		case "completions":
			if i == 0 || segs[i-1] != "chat" {
				continue
			}
			if (rest == 0 && method == http.MethodGet) || (rest >= 1 && method != http.MethodDelete) {
				return aroundStored
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
// carries calls around the gate, or nil: legacy Chat functions (a
// non-empty functions, a function_call other than "none"), a background
// Responses request. Every top-level key counts, in any case: a key given
// twice or as "Functions" is what some server reads.
func paramFor(provider string, body []byte) *around {
	words := paramWords[provider]
	if words == nil || !mayName(body, words...) {
		return nil
	}
	return scanParams(provider, body)
}

// paramWords are the keys paramFor looks for, by provider.
var paramWords = map[string][]string{
	"openai-chat":      {"functions", "function_call"},
	"openai-responses": {"background"},
}

// scanParams is paramFor without the byte filter: it reads every
// top-level key.
func scanParams(provider string, body []byte) *around {
	var found *around
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		key := k.String()
		switch {
		case provider == "openai-chat" && strings.EqualFold(key, "functions"):
			if v.Type != gjson.Null && !(v.IsArray() && len(v.Array()) == 0) {
				found = aroundFunctions
			}
		case provider == "openai-chat" && strings.EqualFold(key, "function_call"):
			if v.Type != gjson.Null && v.String() != "none" {
				found = aroundFunctions
			}
		case provider == "openai-responses" && strings.EqualFold(key, "background"):
			if truthy(v) {
				found = aroundBackground
			}
		}
		return found == nil
	})
	return found
}

// mayName reports whether a JSON body may name one of the lower-case
// words as a key: its bytes hold one, in any case, between quotes, or a
// \u escape, which could spell one. It reads the bytes without
// allocating, so that the common request is not parsed for a key it cannot
// hold.
func mayName(body []byte, words ...string) bool {
	if bytes.Contains(body, []byte(`\u`)) {
		return true
	}
	for i := 0; ; {
		j := bytes.IndexByte(body[i:], '"')
		if j < 0 {
			return false
		}
		i += j + 1
		for _, w := range words {
			if len(body)-i > len(w) && foldEq(body[i:i+len(w)], w) && body[i+len(w)] == '"' {
				return true
			}
		}
	}
}

// foldEq reports whether b equals the lower-case ASCII word w in any case.
func foldEq(b []byte, w string) bool {
	for j := 0; j < len(w); j++ {
		if c := b[j]; c != w[j] && c+('a'-'A') != w[j] {
			return false
		}
	}
	return true
}

// truthy reports a value a lenient server (pydantic's lax mode) reads as
// true: true, a number other than 0, or "1", "on", "t", "true", "y", "yes".
func truthy(v gjson.Result) bool {
	switch v.Type {
	case gjson.True:
		return true
	case gjson.Number:
		return v.Num != 0
	case gjson.String:
		switch strings.ToLower(strings.TrimSpace(v.Str)) {
		case "1", "on", "t", "true", "y", "yes":
			return true
		}
	}
	return false
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
		for _, n := range allowNames {
			known = known || a == n
		}
		if !known {
			return fmt.Errorf("allow: unknown %q; want %s", a, strings.Join(allowNames, ", "))
		}
	}
	return nil
}
