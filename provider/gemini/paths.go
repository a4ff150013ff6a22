package gemini

import (
	"bytes"
	"net/url"
	"strings"
)

// Framing is how the body of a response to a generate request is framed.
type Framing uint8

const (
	// Unary is one GenerateContentResponse as a JSON object
	// (:generateContent).
	Unary Framing = iota
	// SSE is data-only server-sent events, one GenerateContentResponse
	// each (:streamGenerateContent?alt=sse).
	SSE
	// JSONArray is a streamed JSON array of GenerateContentResponse
	// objects (:streamGenerateContent without alt=sse; see ArrayReader).
	JSONArray
)

func (f Framing) String() string {
	switch f {
	case SSE:
		return "sse"
	case JSONArray:
		return "json-array"
	}
	return "unary"
}

// Kind is what a request path is to a gated route.
type Kind uint8

const (
	// Other is a path that carries no model call: list models, embeddings,
	// files, countTokens (it counts contents and answers no call), tuned
	// model management. It passes untouched.
	Other Kind = iota
	// Generate is :generateContent or :streamGenerateContent: the gate
	// judges the calls in its response and restores history in its body.
	Generate
	// AroundGate is a path whose calls the gate cannot judge (see
	// Classify): a gated route refuses it unless the operator allows it.
	AroundGate
	// OpenAICompatible is Gemini's OpenAI-compatible endpoint
	// (…/openai/chat/completions): Chat Completions wire, for the Chat
	// adapter.
	OpenAICompatible
)

func (k Kind) String() string {
	switch k {
	case Generate:
		return "generate"
	case AroundGate:
		return "around-gate"
	case OpenAICompatible:
		return "openai-compatible"
	}
	return "other"
}

// Endpoint is what Classify reads from a request's method, path and query.
type Endpoint struct {
	Kind Kind
	// Framing is the response's framing, for Kind Generate.
	Framing Framing
	// Model is the model resource the path names, as written in it
	// ("models/gemini-2.5-flash", "tunedModels/x",
	// "projects/p/locations/l/publishers/google/models/m",
	// "projects/p/locations/l/endpoints/123"), for Kind Generate; ""
	// when the path holds no version segment before it.
	Model string
	// Why names, for Kind AroundGate, what the path is ("batch", "cached
	// contents", "live api", "interactions", "raw predict"), for the
	// refusal's message and the operator's allow list.
	Why string
}

// Streams reports whether the response is streamed (SSE or JSON array).
func (e Endpoint) Streams() bool { return e.Kind == Generate && e.Framing != Unary }

// The methods, after the last ':' of a path, that generate an answer the
// gate must judge. Compared without case: Google's front end may or may
// not fold it, and reading a path as a generate request when it is not
// only costs a look at its response.
const (
	methodGenerate = "generatecontent"
	methodStream   = "streamgeneratecontent"
)

// aroundMethods are the methods (after the last ':') whose answers carry
// model calls the gate never sees in a generate response
// (wire-formats.md §9.10). rawPredict and streamRawPredict are Vertex's
// door to partner models (Claude, Llama) in their own wire formats, calls
// included; predict on an endpoint can serve the same.
var aroundMethods = map[string]string{
	"batchgeneratecontent":   "batch",
	"asyncbatchgenerate":     "batch",
	"rawpredict":             "raw predict",
	"streamrawpredict":       "raw predict",
	"predict":                "raw predict",
	"serverstreamingpredict": "raw predict",
}

// Classify reads a request: method, its decoded path (http.Request's
// URL.Path: "%3A" already read as ':', as Google's front end reads it) and
// raw query. It answers which kind of path it is and, for a generate
// request, how its response is framed. The stream framing comes from the
// URL, never the body (wire-formats.md §9.3): alt=sse (or $alt=sse, the
// system parameter's other spelling) is SSE, anything else a JSON array. A
// query that names alt more than once with different values, or an alt
// value other than sse or json (proto is a binary framing), is read as
// AroundGate ("ambiguous alt"): the gate cannot tell which framing the
// server will pick, or cannot read it.
//
// Paths that carry calls around the gate (Kind AroundGate), after §9.10:
//
//   - ":batchGenerateContent" (its results come back hours later, from
//     GET batches/…), and "batches/…" and Vertex "batchPredictionJobs";
//   - "cachedContents" (a cache's contents are history the gate never
//     sees in later requests, so a held call in it cannot be restored);
//   - the Live API's WebSocket, "…BidiGenerateContent…" (calls as
//     toolCall messages on a socket);
//   - the Interactions API, "…/interactions…";
//   - Vertex ":rawPredict", ":streamRawPredict", ":predict",
//     ":serverStreamingPredict" (partner models in their own wire).
//
// ":countTokens" is Other: it reads contents and answers a number.
func Classify(method, path, rawQuery string) Endpoint {
	last := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		last = path[i+1:]
	}
	// Lowered into buffers on the stack (lower): the glue asks several
	// questions of each request's path, and strings.ToLower allocates
	// for any path with a capital, as every generate path has.
	var pb, mb [128]byte
	lower := appendLower(pb[:0], path)
	if bytes.Contains(lower, []byte("bidigeneratecontent")) {
		return Endpoint{Kind: AroundGate, Why: "live api"}
	}
	if i := strings.LastIndexByte(last, ':'); i >= 0 {
		m := appendLower(mb[:0], last[i+1:])
		switch {
		case string(m) == methodGenerate || string(m) == methodStream:
			e := Endpoint{Kind: Generate, Model: modelOf(path[:len(path)-len(last)+i])}
			if string(m) == methodStream {
				f, ok := streamFraming(rawQuery)
				if !ok {
					return Endpoint{Kind: AroundGate, Why: "ambiguous alt"}
				}
				e.Framing = f
			}
			return e
		default:
			if why, ok := aroundMethods[string(m)]; ok {
				return Endpoint{Kind: AroundGate, Why: why}
			}
		}
	}
	for rest := lower; ; {
		seg := rest
		j := bytes.IndexByte(rest, '/')
		if j >= 0 {
			seg, rest = rest[:j], rest[j+1:]
		}
		if i := bytes.IndexByte(seg, ':'); i >= 0 {
			seg = seg[:i]
		}
		switch string(seg) {
		case "cachedcontents":
			return Endpoint{Kind: AroundGate, Why: "cached contents"}
		case "batches", "batchpredictionjobs":
			return Endpoint{Kind: AroundGate, Why: "batch"}
		case "interactions":
			return Endpoint{Kind: AroundGate, Why: "interactions"}
		}
		if j < 0 {
			break
		}
	}
	if bytes.HasSuffix(lower, []byte("/openai/chat/completions")) || bytes.HasSuffix(lower, []byte("/openapi/chat/completions")) {
		return Endpoint{Kind: OpenAICompatible}
	}
	return Endpoint{}
}

// appendLower appends strings.ToLower(s) to dst: byte by byte when s is
// ASCII, so that a buffer on the caller's stack takes it.
func appendLower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return append(dst, strings.ToLower(s)...)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// modelOf returns the model resource in a generate path (the path up to
// the ':' of its method): what follows the version segment.
func modelOf(p string) string {
	p = strings.Trim(p, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 && isVersion(p[:i]) {
		return p[i+1:]
	}
	return ""
}

// isVersion reports whether seg is an API version segment: v1, v1beta,
// v1alpha, v1beta1, v2…
func isVersion(seg string) bool {
	return len(seg) >= 2 && seg[0] == 'v' && seg[1] >= '0' && seg[1] <= '9'
}

// streamFraming reads alt (and $alt) from a stream request's query.
func streamFraming(rawQuery string) (Framing, bool) {
	switch rawQuery { // what the SDKs send, read as ParseQuery reads them
	case "alt=sse":
		return SSE, true
	case "":
		return JSONArray, true
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		// Google's front end may read a query Go refuses; only alt matters
		// and it cannot be told apart for sure.
		if !strings.Contains(strings.ToLower(rawQuery), "alt") {
			return JSONArray, true
		}
		return 0, false
	}
	var alt string
	for _, k := range []string{"alt", "$alt"} {
		for _, v := range q[k] {
			v = strings.ToLower(v)
			if alt != "" && v != alt {
				return 0, false
			}
			alt = v
		}
	}
	switch alt {
	case "sse":
		return SSE, true
	case "", "json":
		return JSONArray, true
	}
	return 0, false
}
