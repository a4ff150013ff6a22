package provider

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Provider is one wire protocol as the rest of the code asks about it.
// Its Adapter methods rewrite the protocol's bodies; the others tell the
// Caddy glue how to route, refuse and read a request. Paths are canonical:
// lower case, percent-decoded, each segment without ";parameters", no
// empty or dot segment, no trailing slash.
type Provider interface {
	Adapter

	// Name is the protocol's name as the configuration's provider option,
	// the gate's records and the policy's rules spell it
	// ("openai-chat").
	Name() string

	// Serves reports whether a POST to path is one of the protocol's
	// gated endpoints, by how the path ends (".../chat/completions"): the
	// upstream then answers in its shape, whatever the route's fixed
	// provider.
	Serves(path string) bool

	// Around returns the kind of a request to the path whose segments are
	// segs that carries tool calls around the gate, judged at segment
	// segs[i], or nil. The Caddy glue asks every provider at each segment
	// in turn, and the first answer stands; method is in upper case.
	Around(method string, segs []string, i int) *Around

	// AroundParam returns the kind of a gated request whose body asks for
	// what carries calls around the gate (Chat's legacy functions, a
	// background Responses request), or nil.
	AroundParam(body []byte) *Around

	// KnownPaths are the ends of the protocol's paths that answer without
	// tool calls (embeddings, token counting), which a route lets through.
	KnownPaths() []string

	// Streams reports whether the answer to a gated request is an event
	// stream when its Content-Type does not say: as the request asked for
	// it (in its body, or in its URL).
	Streams(method string, u *url.URL, body []byte) bool

	// OwnerFields are the request body's fields (dotted paths) that name
	// the conversation's owner when the route configures neither an owner
	// placeholder nor owner fields; nil for none.
	OwnerFields() []string

	// ToolParameters returns the JSON Schema a request body offers for the
	// tool name, or nil.
	ToolParameters(body []byte, name string) []byte

	// DropTools takes the tools drop names out of a request body (the
	// ones not offered to this person).
	DropTools(body []byte, drop func(name string) bool) ([]byte, error)
}

// Around is a kind of request that carries tool calls around the gate:
// refused on a gated route unless the operator allows it by name.
type Around struct {
	Allow  string // the name that lets it through (the allow option)
	Status int    // the refusal's status
	What   string // what it is, for the refusal
	Why    string // why it is refused
}

// The allow option's names, the Caddyfile's and JSON's spelling.
const (
	AllowLegacyFunctions = "legacy_functions"
	AllowBatches         = "batches"
	AllowStoredResponses = "stored_responses"
	AllowRealtime        = "realtime"
	AllowAmbiguousAlt    = "ambiguous_alt"
)

// AllowNames are the allow option's names, in the order the docs list them.
var AllowNames = []string{AllowLegacyFunctions, AllowBatches, AllowStoredResponses, AllowRealtime, AllowAmbiguousAlt}

// The kinds of requests around the gate the providers name; a provider
// may make its own.
var (
	AroundBatches = &Around{AllowBatches, http.StatusForbidden,
		"the batch API", "a batch's results hold tool calls the gate never sees"}
	AroundStored = &Around{AllowStoredResponses, http.StatusForbidden,
		"reading stored model output back", "stored output holds tool calls the gate never checked"}
	AroundRealtime = &Around{AllowRealtime, http.StatusForbidden,
		"the Realtime API", "its tool calls travel over a WebSocket or WebRTC connection the gate cannot check"}
	AroundFunctions = &Around{AllowLegacyFunctions, http.StatusBadRequest,
		"the legacy functions and function_call parameters", "the gate checks tool calls only (use tools and tool_choice)"}
	AroundBackground = &Around{AllowStoredResponses, http.StatusBadRequest,
		"a background response (background: true)", "its output is read back later, around the gate"}
)

// Message is the refusal's text for a request of this kind to method and
// path. A kind without an Allow name is refused on every gated route.
func (a *Around) Message(method, path string) string {
	if a.Allow == "" {
		return fmt.Sprintf("%s (%s %s) is refused on this gated route: %s.", a.What, method, path, a.Why)
	}
	return fmt.Sprintf("%s (%s %s) is refused on this gated route: %s. The operator can allow it with `allow %s`.", a.What, method, path, a.Why, a.Allow)
}

// The optional methods a Provider (or its Turn) may have, which the Caddy
// glue and the interceptor's ResponseWriter and Guard look for with a
// type assertion, as net/http's Flusher is: each is named here, so what a
// provider can answer is read in one place.

// OwnerRequirer is a Provider whose requests name no end user (Gemini's):
// a route that does not set the owner fails to load when it names the
// provider, and refuses the provider's requests (403) when it finds the
// provider by the path.
type OwnerRequirer interface {
	RequiresOwner() bool
}

// Refuser is a Provider whose SDKs read an error in a shape of its own
// (Gemini's {"error":{"code","message","status"}}). RefusalBody returns
// the gate's refusal of a request to path in that shape; ok is false for
// a path the provider does not serve. Without one, a refusal is written in
// the shape OpenAI's and Anthropic's SDKs both read.
type Refuser interface {
	RefusalBody(path string, status int, message string) (body []byte, ok bool)
}

// AnswerKeyer is a Provider that names the top-level key every answer of
// its own carries ("choices", "content", "output", "candidates"), so that
// a body in another protocol's shape naming a gated tool is refused
// instead of passed unread (shape.Reads).
type AnswerKeyer interface {
	AnswerKey() string
}

// EventOwner is a Provider that tells its own stream events from another
// protocol's (shape.EventMarks): a stream event in another shape naming a
// gated tool is refused (stream.Frame.GuardWith).
type EventOwner interface {
	OwnsEvent(data []byte) bool
}

// KeepAliveTurn is a Turn whose stream, while it waits for the person's
// answer, needs keep-alive bytes of its own: go-genai refuses an SSE
// comment, and a JSON-array stream takes only whitespace between
// elements. Without one, the ResponseWriter writes an SSE comment.
type KeepAliveTurn interface {
	KeepAlive() []byte
}

// JSONStreamer is a Provider whose stream, for some requests, is one JSON
// array of chunks sent as each is ready rather than an event stream
// (Gemini's :streamGenerateContent without alt=sse). Its clients read such
// an answer as a JSON array whatever its Content-Type, so the
// ResponseWriter reads it as the stream it is (its Turn's ArrayStream)
// instead of holding it as one JSON body.
type JSONStreamer interface {
	// StreamsJSON reports whether the answer to the request is a streamed
	// JSON array, as the request asks (its URL, or its body).
	StreamsJSON(method string, u *url.URL, body []byte) bool
}

// ArrayTurn is a Turn that rewrites a streamed JSON array (see
// JSONStreamer) as it arrives, as Stream does an event stream: chunks
// without a gated call pass as they come, held and refused calls are
// taken out, refusals go back and a held step may be waited for, exactly
// as on the event-stream path. A body that is not one JSON array of
// objects (a single object, an event stream) is an error: nothing of it
// is written.
type ArrayTurn interface {
	ArrayStream(dst io.Writer, flush func() error) Stream
}

// URLChecker is a Provider whose gated requests' URL (its query, beyond
// the path Around judges) can ask for what the gate cannot read: Gemini's
// alt given twice with different values, which leaves the framing of the
// answer to the server. AroundURL returns the kind of such a request, or
// nil; a gated route refuses it unless the operator allows its name, and
// an allowed one is gated as usual (its answer read as its Content-Type
// says, failing closed where it cannot be read).
type URLChecker interface {
	AroundURL(method string, u *url.URL) *Around
}

// The registry is written only from init functions, before any request is
// served, and read without a lock on every request.
var (
	byName = map[string]Provider{}
	sorted []Provider // by name
)

// Register makes a provider known by its name. Call it from the init of
// the provider's package; a second provider of one name panics.
func Register(p Provider) {
	name := p.Name()
	if name == "" || name == "auto" || strings.ContainsAny(name, " \t,") {
		panic(fmt.Sprintf("provider: invalid name %q", name))
	}
	if byName[name] != nil {
		panic(fmt.Sprintf("provider: %q registered twice", name))
	}
	byName[name] = p
	sorted = append(sorted, p)
	slices.SortFunc(sorted, func(a, b Provider) int { return strings.Compare(a.Name(), b.Name()) })
}

// Lookup returns the provider of that name, or nil.
func Lookup(name string) Provider {
	return byName[name]
}

// ForPath returns the provider that serves a canonical path (Serves), or
// nil; when several do, the first by name.
func ForPath(path string) Provider {
	for _, p := range sorted {
		if p.Serves(path) {
			return p
		}
	}
	return nil
}

// All returns the registered providers, by name. The slice is the
// registry's own, read on every request: do not change it.
func All() []Provider { return sorted }

// Names returns the registered providers' names, sorted.
func Names() []string {
	names := make([]string, len(sorted))
	for i, p := range sorted {
		names[i] = p.Name()
	}
	return names
}
