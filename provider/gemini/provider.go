package gemini

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/internal/memo"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/links"
	"github.com/toolgate/toolgate/wire/shape"
)

// The Provider glue: what the Caddy glue asks of the Gemini wire, answered
// from Classify and the package's functions.

func init() { provider.Register(Provider{}) }

// Provider is Gemini's generateContent wire (the Gemini API and Vertex
// AI) as the rest of the code asks about it. Its Adapter is the package's
// functions assembled into a provider.Turn (turn.go).
type Provider struct{}

// Name is "gemini".
func (Provider) Name() string { return "gemini" }

// Serves reports a path ending in :generatecontent or
// :streamgeneratecontent (paths are canonical, lower case).
func (Provider) Serves(path string) bool {
	return Classify(http.MethodPost, path, "").Kind == Generate
}

// aroundOf is the provider.Around of each Why Classify gives.
var aroundOf = map[string]*provider.Around{
	"batch":           provider.AroundBatches,
	"cached contents": {Allow: provider.AllowStoredResponses, Status: http.StatusForbidden, What: "Gemini's cached contents", Why: "a cache holds history the gate never sees, so a held call in it cannot be restored"},
	"live api":        {Allow: provider.AllowRealtime, Status: http.StatusForbidden, What: "the Gemini Live API", Why: "its tool calls travel over a WebSocket the gate cannot check"},
	"interactions":    {Allow: provider.AllowStoredResponses, Status: http.StatusForbidden, What: "the Gemini Interactions API", Why: "its output is stored and read back around the gate"},
	"raw predict":     {Allow: provider.AllowBatches, Status: http.StatusForbidden, What: "Vertex raw predict", Why: "partner models answer in their own wire, which the gate does not read"},
	"ambiguous alt":   aroundAmbiguousAlt,
}

// aroundAmbiguousAlt is a stream request whose alt the gate cannot read
// (given twice with different values, or a value other than sse and json).
var aroundAmbiguousAlt = &provider.Around{Allow: provider.AllowAmbiguousAlt, Status: http.StatusBadRequest,
	What: "a stream request whose alt parameter is given twice with different values, or is neither sse nor json",
	Why:  "the gate cannot tell how the server will frame the answer, so it cannot read the calls in it as the app will"}

// aroundStreamedArguments is a request asking for streamed function-call
// arguments: no allow name lets it through, since the gate cannot judge a
// call it gets in fragments and would fail its answer closed anyway.
var aroundStreamedArguments = &provider.Around{Status: http.StatusBadRequest,
	What: "streamed function-call arguments (toolConfig.functionCallingConfig.streamFunctionCallArguments)",
	Why:  "the gate judges a call on its whole arguments, which then arrive in fragments (partialArgs); ask for them whole"}

// Around names what Classify reads as around the gate, judged once, at
// the path's last segment: batches, cachedContents, the Live API,
// interactions, Vertex raw predict. Every request on every route asks
// it, so a path none of whose segments could be one of those
// (mayBeAround) is answered without joining the path and classifying it.
func (Provider) Around(method string, segs []string, i int) *provider.Around {
	if i != len(segs)-1 || !mayBeAround(segs) {
		return nil
	}
	e := Classify(method, "/"+strings.Join(segs, "/"), "")
	if e.Kind != AroundGate {
		return nil
	}
	if a := aroundOf[e.Why]; a != nil {
		return a
	}
	return provider.AroundBatches
}

// mayBeAround reports whether Classify could read a path of segs as
// around the gate: only when a segment holds a ':' (a method), is as long
// as "bidiGenerateContent" (the Live API's name is in one), is outside
// ASCII (strings.ToLower, which Classify uses then, maps some such runes
// onto letters), or is one of Classify's resource names in some case.
// FuzzAroundAsClassify holds it to Classify.
func mayBeAround(segs []string) bool {
	for _, s := range segs {
		if len(s) >= len("bidigeneratecontent") || strings.IndexByte(s, ':') >= 0 {
			return true
		}
		for j := 0; j < len(s); j++ {
			if s[j] >= 0x80 {
				return true
			}
		}
		for _, r := range aroundResources {
			if strings.EqualFold(s, r) {
				return true
			}
		}
	}
	return false
}

// aroundResources are the path segments Classify reads as around the
// gate (before a ':', in any case).
var aroundResources = []string{"cachedcontents", "batches", "batchpredictionjobs", "interactions"}

// AroundParam refuses a request asking for streamed function-call
// arguments (StreamsArguments), which no allow name lets through.
func (Provider) AroundParam(body []byte) *provider.Around {
	if StreamsArguments(body) {
		return aroundStreamedArguments
	}
	return nil
}

// AroundURL refuses a stream request whose alt Classify cannot read
// (twice with different values, or neither sse nor json) unless the
// route allows ambiguous_alt; see provider.URLChecker. The path alone
// (Around) cannot tell: it is judged without the query.
func (Provider) AroundURL(method string, u *url.URL) *provider.Around {
	if u == nil {
		return nil
	}
	if e := classifyURL(method, u); e.Kind == AroundGate && e.Why == "ambiguous alt" {
		return aroundAmbiguousAlt
	}
	return nil
}

// classified remembers Classify's answers for the last few requests'
// URLs: the glue asks AroundURL, Streams and StreamsJSON of each request,
// and Classify lowers the path and reads the query each time. Classify is
// a function of its three arguments alone, which are the key in full.
var classified memo.Table[Endpoint]

// classifyURL is Classify of a request's method and URL (see classified).
// Only the queries the SDKs send (none, or alt alone) are kept: any other
// may carry the API key (?key=), which is not to outlive its request in
// the memo; those are classified each time, as before the memo.
func classifyURL(method string, u *url.URL) Endpoint {
	switch u.RawQuery {
	case "", "alt=sse", "alt=json":
		return classified.Get(memo.Key{A: method, B: u.Path, C: u.RawQuery}, classifyKey)
	}
	return Classify(method, u.Path, u.RawQuery)
}

func classifyKey(k memo.Key) Endpoint { return Classify(k.A, k.B, k.C) }

// KnownPaths: token counting, embeddings, the model list.
func (Provider) KnownPaths() []string {
	return []string{":counttokens", ":embedcontent", ":batchembedcontents", "/models"}
}

// Streams reads the URL, never the body: :streamGenerateContent streams
// (SSE with alt=sse, else a JSON array). A nil URL does not stream.
func (Provider) Streams(method string, u *url.URL, _ []byte) bool {
	if u == nil {
		return false
	}
	return classifyURL(method, u).Streams()
}

// StreamsJSON reports a :streamGenerateContent request without alt=sse,
// whose answer is a streamed JSON array (see provider.JSONStreamer).
func (Provider) StreamsJSON(method string, u *url.URL, _ []byte) bool {
	if u == nil {
		return false
	}
	e := classifyURL(method, u)
	return e.Kind == Generate && e.Framing == JSONArray
}

// OwnerFields: none. A Gemini request names no end user, so a gated
// Gemini route needs an owner placeholder (RequiresOwner).
func (Provider) OwnerFields() []string { return nil }

// RequiresOwner reports that a route must name the owner itself: no field
// of a Gemini request does.
func (Provider) RequiresOwner() bool { return true }

// ToolParameters returns the declared schema of the function name, as
// JSON Schema (ToolSchema), or nil.
func (Provider) ToolParameters(body []byte, name string) []byte { return ToolSchema(body, name) }

// DropTools takes the function declarations drop names out of the
// request; a tool object left without declarations and nothing else goes,
// and with it toolConfig when no tool is left.
func (Provider) DropTools(body []byte, drop func(string) bool) ([]byte, error) {
	if !containsFoldBytes(body, []byte("tools")) || !gjson.ValidBytes(body) {
		return body, nil
	}
	root := gjson.ParseBytes(body)
	tools, toolsKey, err := member(root, "tools")
	if err != nil {
		return nil, fmt.Errorf("gemini request: %w", err)
	}
	if !tools.IsArray() {
		return body, nil
	}
	var kept []string
	dropped := false
	tools.ForEach(func(_, tool gjson.Result) bool {
		decls, dk, e := member(tool, "functiondeclarations")
		if e != nil {
			err = e
			return false
		}
		if !decls.IsArray() {
			kept = append(kept, tool.Raw)
			return true
		}
		var keep []string
		decls.ForEach(func(_, d gjson.Result) bool {
			name, _, _ := member(d, "name")
			if name.Type == gjson.String && drop(name.Str) {
				dropped = true
				return true
			}
			keep = append(keep, d.Raw)
			return true
		})
		if len(keep) == len(decls.Array()) {
			kept = append(kept, tool.Raw)
			return true
		}
		out, e := sjson.Delete(tool.Raw, gjson.Escape(dk))
		if e != nil {
			err = e
			return false
		}
		if len(keep) > 0 {
			if out, e = sjson.SetRaw(out, gjson.Escape(dk), "["+strings.Join(keep, ",")+"]"); e != nil {
				err = e
				return false
			}
		}
		if len(gjson.Parse(out).Map()) > 0 {
			kept = append(kept, out)
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("gemini request: %w", err)
	}
	if !dropped {
		return body, nil
	}
	if len(kept) > 0 {
		return sjson.SetRawBytes(body, gjson.Escape(toolsKey), []byte("["+strings.Join(kept, ",")+"]"))
	}
	out, err := sjson.DeleteBytes(body, gjson.Escape(toolsKey))
	if err != nil {
		return nil, err
	}
	if _, ck, _ := member(gjson.ParseBytes(out), "toolconfig"); ck != "" {
		return sjson.DeleteBytes(out, gjson.Escape(ck))
	}
	return out, nil
}

// RewriteRequest restores the history behind the gate's links (see the
// package's RewriteRequest), links found as wire/links finds them.
func (Provider) RewriteRequest(ctx context.Context, body []byte, linkPrefix string, r provider.Restorer) ([]byte, error) {
	if !links.Has(body, linkPrefix) {
		return body, nil // what RewriteRequest answers, without boxing the prefix
	}
	return RewriteRequest(ctx, body, linkSet(linkPrefix), r)
}

// RewriteTools rewrites the function declarations (see the package's
// RewriteTools).
func (Provider) RewriteTools(body []byte, rewrite provider.ToolRewrite) ([]byte, error) {
	return RewriteTools(body, rewrite)
}

// AnswerKey is the top-level key a Gemini answer carries its calls under:
// the Caddy glue refuses a body that names a gated tool without it (or
// with another provider's call key beside it), as not Gemini's shape.
func (Provider) AnswerKey() string { return "candidates" }

// OwnsEvent reports whether a stream chunk's data (an SSE event's, or a
// streamed array's element) is a Gemini chunk and no other protocol's
// (asked only of a chunk naming a gated tool): an object whose only call
// key is candidates, an array, in any case (shape.Reads), with no mark of
// Chat's, Responses' or Anthropic's events (shape.EventMarks; candidates
// is itself a call key, so its mark is MarkOther).
func (Provider) OwnsEvent(data []byte) bool {
	return shape.EventMarks(data) == shape.MarkOther && shape.Reads("candidates", data)
}

// RefusalBody is the gate's refusal of a request to a Gemini path
// (generate, or around the gate) in Google's error shape,
// {"error":{"code","message","status"}}: go-genai reads code as a number
// and shows message only from that shape. ok is false for other paths.
func (Provider) RefusalBody(path string, status int, message string) ([]byte, bool) {
	if !googlePath(path) {
		return nil, false
	}
	st, ok := googleStatus[status]
	if !ok {
		st = "UNKNOWN"
	}
	b := []byte(`{"error":{"code":` + strconv.Itoa(status) + `,"message":`)
	b = gjson.AppendJSONString(b, message)
	return append(b, `,"status":"`+st+`"}}`...), true
}

// googlePath reports a path only Google's APIs have: a generate request,
// or one around the gate that is not another provider's too (/v1/batches
// is OpenAI's, /v1/messages/batches Anthropic's): a ':' method, cached
// contents, the Live API, interactions, or any path under v1beta,
// v1alpha or a Vertex project.
func googlePath(path string) bool {
	switch Classify(http.MethodPost, path, "").Kind {
	case Generate:
		return true
	case AroundGate:
		return strings.Contains(path, ":") || strings.HasPrefix(path, "/v1beta/") || strings.HasPrefix(path, "/v1alpha/") ||
			strings.Contains(path, "/projects/") || strings.Contains(path, "cachedcontents") || strings.Contains(path, "interactions")
	}
	return false
}

// googleStatus is the google.rpc.Code name Google's APIs send with an
// HTTP status.
var googleStatus = map[int]string{
	http.StatusBadRequest:            "INVALID_ARGUMENT",
	http.StatusUnauthorized:          "UNAUTHENTICATED",
	http.StatusForbidden:             "PERMISSION_DENIED",
	http.StatusNotFound:              "NOT_FOUND",
	http.StatusRequestEntityTooLarge: "INVALID_ARGUMENT",
	http.StatusTooManyRequests:       "RESOURCE_EXHAUSTED",
	http.StatusBadGateway:            "UNAVAILABLE",
	http.StatusServiceUnavailable:    "UNAVAILABLE",
}

// linkSet finds the gate's links (prefix and a step id) as wire/links does.
type linkSet string

func (p linkSet) Has(b []byte) bool             { return links.Has(b, string(p)) }
func (p linkSet) Steps(s string) []string       { return links.StepsIn(s, string(p)) }
func (p linkSet) After(s string) (string, bool) { return links.AfterLast(s, string(p)) }

// Interface guards
var (
	_ provider.Provider      = Provider{}
	_ provider.JSONStreamer  = Provider{}
	_ provider.URLChecker    = Provider{}
	_ provider.OwnerRequirer = Provider{}
	_ provider.Refuser       = Provider{}
	_ provider.AnswerKeyer   = Provider{}
	_ provider.EventOwner    = Provider{}
)
