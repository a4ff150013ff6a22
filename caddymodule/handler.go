package caddymodule

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/internal/memo"
	"github.com/toolgate/toolgate/internal/reqbody"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/params"
	"github.com/toolgate/toolgate/wire/shape"
	"github.com/toolgate/toolgate/wire/stream"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler gates the model traffic of a route: put it in front of the
// reverse_proxy to the provider. Responses that carry a tool call the
// policy gates lose that call and read a sentence and a link instead;
// requests whose history carries such a link get the original call and
// its outcome back before they go upstream. Everything else passes byte
// for byte.
//
// Gated endpoints, by path unless Provider says otherwise: POST
// .../chat/completions (OpenAI Chat Completions and compatible servers),
// POST .../responses (OpenAI Responses) and POST .../messages (Anthropic
// Messages). Paths are matched as tolerant upstreams route them: in any
// case, with or without a trailing slash, with empty or dot segments or
// ";parameters", percent-decoded. Other requests on the route pass
// untouched, except a WebSocket upgrade on a gated path, which is refused
// (400): its traffic could not be checked; and the endpoints that return
// tool calls the gate never sees, which are refused unless Allow names
// them.
//
// A request body the provider would decode (gzip, deflate or zstd
// Content-Encoding, a byte-order mark, UTF-16) is decoded before the gate
// reads it, and the decoded UTF-8 is what goes on; one that cannot be
// decoded is refused: 415 for a coding or charset the gate does not decode
// (br among them), 400 for bytes that do not decode, 413 when it is larger
// than MaxRequestBody once decoded. Refusals carry a JSON error body
// ({"type":"error","error":{"type","code":"toolgate_refused","message"}})
// that the OpenAI and Anthropic SDKs read.
//
// The upstream is asked for an identity-encoded body (Accept-Encoding:
// identity); a compressed response on a gated endpoint cannot be checked
// and is refused with 502.
type Handler struct {
	// Policy is the path of the policy file (YAML or JSON) declaring the
	// actions this route gates. Required. It is loaded and checked when
	// the config loads: a mistake fails `caddy validate` and `caddy run`.
	Policy string `json:"policy,omitempty"`

	// Owner tells whose conversation a request belongs to: a placeholder
	// such as "{http.request.header.X-User-Id}" or "{http.auth.user.id}".
	// When it gives nothing, the body is not read in its place (an app's
	// user could name someone else there) unless OwnerFields is given: the
	// gated call has no owner and is refused. Without Owner, the body's
	// fields name the owner (see OwnerFields).
	Owner string `json:"owner,omitempty"`

	// OwnerFields are the request body's fields (dotted paths, such as
	// "metadata.user_id") that name the owner, tried in order: with Owner
	// set, only when it gives nothing; without Owner, always. Default: none
	// when Owner is set; without Owner, "safety_identifier" then "user"
	// for OpenAI and none for Anthropic (set "metadata.user_id"). A field
	// given twice, or also in another case ("User"), names nobody: servers
	// differ on which one they read.
	OwnerFields []string `json:"owner_fields,omitempty"`

	// Tenant optionally names the person's tenant, the same way (a
	// placeholder); it reaches the app in the X-Toolgate-Tenant header.
	Tenant string `json:"tenant,omitempty"`

	// Roles optionally gives the person's roles (a placeholder, split at
	// commas and spaces: "editor, finance"), for the policy's rules and
	// offer_when (person.roles). Use a header your sign-in sets itself,
	// never one the client can choose. Default: none, no roles.
	Roles string `json:"roles,omitempty"`

	// Provider fixes the wire protocol of the POSTs on the route whose
	// path does not end as a gated endpoint's: "openai-chat",
	// "openai-responses", "anthropic" or "gemini" (any name a provider
	// package registers; "gemini" needs owner or owner_fields, as its
	// requests name no end user, and on a route with neither a Gemini
	// request is refused with 403). A path that does is read as its
	// end says (an OpenAI-compatible server such as vLLM answers
	// /v1/messages in Anthropic's shape). Default ("" or "auto"): by the
	// path's end only, as listed above. Set it for an OpenAI-compatible
	// server whose paths differ.
	Provider string `json:"provider,omitempty"`

	// Allow lets through this route what returns tool calls the gate
	// never sees, each refused by default:
	//
	//   - "legacy_functions": Chat requests with the legacy functions or
	//     function_call parameters (refused with 400). Allowed, a response
	//     function_call naming a gated tool still fails closed.
	//   - "batches": the batch APIs, OpenAI's /v1/batches and the batch
	//     output read through /v1/files/{id}/content, Anthropic's
	//     /v1/messages/batches (refused with 403).
	//   - "stored_responses": reading stored model output back: GET
	//     /v1/responses/{id} and its input_items, POST
	//     /v1/responses/{id}/cancel, GET /v1/conversations/{id}/items,
	//     stored Chat completions (GET /v1/chat/completions and
	//     /v1/chat/completions/{id}); and Responses requests with
	//     background: true, whose output is read that way (403; the
	//     background request 400).
	//   - "realtime": the Realtime API under /v1/realtime, its WebSocket
	//     and its HTTP endpoints (calls, sessions, client secrets) (403).
	//   - "ambiguous_alt": a Gemini :streamGenerateContent request whose
	//     alt is given twice with different values ("alt=sse&alt=json") or
	//     is neither sse nor json, so that the gate cannot tell how the
	//     server will frame the answer (400). Allowed, it is still gated:
	//     its answer is read as its Content-Type says, and one the gate
	//     cannot read that may hold a call is refused (502).
	//
	// What else is allowed passes as it came, unchecked.
	Allow []string `json:"allow,omitempty"`

	// AllowPaths lets POSTs to these paths through this route. A POST is
	// refused (403) when its path is neither a gated endpoint nor one
	// known to answer without tool calls (embeddings, moderations, legacy
	// completions, audio, images, files and uploads, token counting,
	// conversations): its answer could be a provider's the gate has no
	// adapter for, such as Gemini's {model}:generateContent, the
	// Assistants API's threads and runs, Ollama's /api/chat and
	// /api/generate, Bedrock's invoke and converse. Those providers' paths
	// are refused even on a route whose Provider is fixed. Each entry is
	// an absolute path, compared as gated paths are (any case, no
	// trailing slash), or a prefix ending in "/*". An allowed path's
	// answer, like every answer on the route the gate does not read as a
	// provider's, is still refused (502, or cut if it is streamed and its
	// header has gone) when its bytes name a gated tool.
	AllowPaths []string `json:"allow_paths,omitempty"`

	// MaxRequestBody caps the request body read, in bytes, before and
	// after decoding. Default 32 MiB.
	MaxRequestBody int64 `json:"max_request_body,omitempty"`

	// MaxResponseBody caps a JSON (non-streamed) response held for
	// checking, in bytes; a larger one is refused with 502. Default 32 MiB.
	MaxResponseBody int64 `json:"max_response_body,omitempty"`

	// ResumeWait lets a streamed answer whose calls were held wait for the
	// person, up to this long, and go on in the same response. The app
	// reads the model's text and the waiting text with the link at once,
	// as without it; the stream then stays open, kept alive with SSE
	// comments (which every SDK skips). When the person has answered
	// every question of the link within the wait, the gate runs what was
	// confirmed (exactly once, as always), asks the provider again with the
	// history restored, and streams the model's reply into the same
	// answer, which then ends as usual. If the wait passes (or the link's
	// TTL, whichever comes first), the stream ends as it would have
	// without waiting, and the app's next request restores the history.
	// Only streams wait, and only an answer of which no call reached the
	// app (the app would have to answer that first) and whose held calls
	// are all new (a repeat of a call still waiting shows its old link and
	// does not wait). Default 0: off.
	ResumeWait caddy.Duration `json:"resume_wait,omitempty"`

	// ResumeKeepalive is how often a waiting stream gets an SSE comment
	// (": toolgate: waiting for the person's answer"), so that proxies and
	// clients do not take it for idle. Default 15s.
	ResumeKeepalive caddy.Duration `json:"resume_keepalive,omitempty"`

	// ResumeMaxStreams caps the streams of this route waiting at once
	// (each holds its connection and about 30 KB); a stream beyond it
	// ends at once, as without ResumeWait. Default 1000.
	ResumeMaxStreams int `json:"resume_max_streams,omitempty"`

	// ResumeMaxStreamsPerPerson caps the streams of one person (tenant
	// and owner) waiting at once on this route, so that no one person
	// takes the whole of ResumeMaxStreams from the others: their streams
	// beyond it end at once, as without ResumeWait. Default: half of
	// ResumeMaxStreams, at least 1 and at most 10 (1 for a cap of 3; 10
	// for the default 1000); never more than ResumeMaxStreams. Both caps
	// count this process's streams (each holds a connection here).
	ResumeMaxStreamsPerPerson int `json:"resume_max_streams_per_person,omitempty"`

	// ResumePoll is how often a waiting stream reads its step from the
	// store, to learn of answers another replica sharing the store took
	// (answers this process takes wake it at once). One read by id per
	// waiting stream per interval. Default 2s.
	ResumePoll caddy.Duration `json:"resume_poll,omitempty"`

	app        *App
	file       *policyFile // the policy file, as it reads now (policyfiles.go)
	allowPaths []string    // AllowPaths, canonical
	logger     *zap.Logger
	waiting    *streamShares           // streams of this route waiting for the person (ResumeWait)
	paths      *memo.Table[*pathFacts] // what the last few paths said (pathmemo.go); nil: computed each time
}

// streamShares counts the streams of a route that wait for the person,
// in all and per person.
type streamShares struct {
	mu       sync.Mutex
	total    int
	byPerson map[personKey]int
}

// personKey is a person as the stream caps count them.
type personKey struct{ tenant, owner string }

// enter counts a stream of who's unless that would take the route over
// max or who over perPerson; it reports whether it did.
func (s *streamShares) enter(who gate.Person, max, perPerson int) bool {
	k := personKey{who.Tenant, who.Owner}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total >= max || s.byPerson[k] >= perPerson {
		return false
	}
	s.total++
	s.byPerson[k]++
	return true
}

// leave uncounts a stream enter counted.
func (s *streamShares) leave(who gate.Person) {
	k := personKey{who.Tenant, who.Owner}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total--
	if s.byPerson[k]--; s.byPerson[k] <= 0 {
		delete(s.byPerson, k)
	}
}

// Defaults of the resume options.
const (
	DefaultResumeKeepalive  = 15 * time.Second
	DefaultResumeMaxStreams = 1000
)

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.toolgate", New: func() caddy.Module { return new(Handler) }}
}

// Provision loads the policy and joins the toolgate app.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	var err error
	if h.app, h.file, err = joinApp(ctx, h.Policy); err != nil {
		return err
	}
	if h.Provider != "" && h.Provider != "auto" && provider.Lookup(h.Provider) == nil {
		return fmt.Errorf("provider %q: want auto, %s", h.Provider, strings.Join(provider.Names(), ", "))
	}
	if p := provider.Lookup(h.Provider); p != nil && h.Owner == "" && len(h.OwnerFields) == 0 {
		if r, ok := p.(provider.OwnerRequirer); ok && r.RequiresOwner() {
			return fmt.Errorf("provider %q: its requests name no end user, so the route must set owner (a placeholder such as {http.request.header.X-User}) or owner_fields", h.Provider)
		}
	}
	if err := h.checkAllow(); err != nil {
		return err
	}
	if err := h.checkAllowPaths(); err != nil {
		return err
	}
	if h.MaxRequestBody <= 0 {
		h.MaxRequestBody = 32 << 20
	}
	if h.MaxResponseBody <= 0 {
		h.MaxResponseBody = 32 << 20
	}
	if h.ResumeWait < 0 || h.ResumeKeepalive < 0 || h.ResumeMaxStreams < 0 || h.ResumePoll < 0 {
		return errors.New("resume_wait, resume_keepalive, resume_max_streams and resume_poll must not be negative")
	}
	if h.ResumeKeepalive == 0 {
		h.ResumeKeepalive = caddy.Duration(DefaultResumeKeepalive)
	}
	if h.ResumeMaxStreams == 0 {
		h.ResumeMaxStreams = DefaultResumeMaxStreams
	}
	if h.ResumePoll == 0 {
		h.ResumePoll = caddy.Duration(gate.DefaultPoll)
	}
	if h.ResumeMaxStreamsPerPerson < 0 {
		return errors.New("resume_max_streams_per_person must not be negative")
	}
	if h.ResumeMaxStreamsPerPerson == 0 {
		h.ResumeMaxStreamsPerPerson = min(max(h.ResumeMaxStreams/2, 1), 10)
	}
	h.ResumeMaxStreamsPerPerson = min(h.ResumeMaxStreamsPerPerson, h.ResumeMaxStreams)
	h.waiting = &streamShares{byPerson: map[personKey]int{}}
	h.paths = new(memo.Table[*pathFacts])
	return nil
}

// joinApp loads a handler's policy file and registers it with the
// toolgate app, which it returns, with the file the handler reads its
// policy through (watched for edits). Holds name the policy by its
// identity (name and content), not by the file's path; the log line ties
// the one to the other for operators.
func joinApp(ctx caddy.Context, policy string) (*App, *policyFile, error) {
	if policy == "" {
		return nil, nil, errors.New("policy is required")
	}
	path := caddy.NewReplacer().ReplaceAll(policy, "")
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("policy %q: %w", path, err)
	}
	clean := filepath.Clean(abs)
	p, err := policies.Load(clean)
	if err != nil {
		return nil, nil, err
	}
	appIface, err := ctx.App("toolgate")
	if err != nil {
		return nil, nil, fmt.Errorf("getting toolgate app: %w", err)
	}
	app := appIface.(*App)
	f := app.registerFile(clean, p)
	ctx.Logger().Info("policy loaded", zap.String("file", clean), zap.String("policy", p.Identity()), zap.Int("actions", len(p.Actions)))
	return app, f, nil
}

// ServeHTTP gates one model request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	pol := h.file.current() // one version for the whole request, whatever a swap does meanwhile
	prov, front, body, buf, err := h.prepare(w, r, next, pol)
	if buf == nil {
		return err // refused, passed on, or not a model request
	}
	defer stream.PutBuf(buf) // the body outlives the upstream round trip: back to the pool when ServeHTTP ends
	return h.answer(w, r, next, prov, front, body, pol.names)
}

// prepare reads and rewrites a model request: the history restored, the
// tools offered as the policy says. A request it refuses, or that is not
// gated, it answers (or passes on) itself: buf is nil then and err is the
// outcome. Otherwise buf holds the body until the answer is written. It
// is a function of its own so that its frame is not on the stack of a
// stream that waits for the person (see answer).
func (h *Handler) prepare(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, pol *loadedPolicy) (provider.Provider, *gate.Front, []byte, *bytes.Buffer, error) {
	facts := h.pathFacts(r.Method, r.URL.Path)
	method := facts.upper // Caddy forwards "post" as it came; upstreams route it as POST
	around := facts.around
	if around != nil && h.allows(around.Allow) {
		return nil, nil, nil, nil, next.ServeHTTP(w, r)
	}
	protocol := facts.protocol
	if protocol != "" && (r.Header.Get("Upgrade") != "" || interceptor.IsWebSocketUpgrade(r)) {
		// The Responses API's WebSocket mode (and any other upgrade) would
		// carry tool calls around the gate.
		return nil, nil, nil, nil, h.refuse(w, r, &refusal{http.StatusBadRequest, "a WebSocket or other upgraded connection (" + r.URL.Path + ") cannot be gated; use HTTP (streaming works)"})
	}
	if around != nil {
		return nil, nil, nil, nil, h.refuse(w, r, aroundRefusal(around, r.Method, r.URL.Path))
	}
	if ref := facts.unknown; ref != nil {
		return nil, nil, nil, nil, h.refuse(w, r, ref)
	}
	if protocol == "" || method != http.MethodPost {
		// No adapter reads the answer: it passes unless it names a gated
		// tool (a Gemini or Assistants answer, say).
		return nil, nil, nil, nil, h.guarded(w, r, next, pol.names)
	}
	prov := provider.Lookup(protocol)
	if ref := h.ownerless(prov, r.Method, r.URL.Path); ref != nil {
		return nil, nil, nil, nil, h.refuse(w, r, ref)
	}
	if c, ok := prov.(provider.URLChecker); ok {
		if a := c.AroundURL(method, r.URL); a != nil && !h.allows(a.Allow) {
			return nil, nil, nil, nil, h.refuse(w, r, aroundRefusal(a, r.Method, r.URL.Path))
		}
	}
	buf := stream.GetBuf()
	fail := func(err error) (provider.Provider, *gate.Front, []byte, *bytes.Buffer, error) {
		stream.PutBuf(buf)
		return nil, nil, nil, nil, err
	}
	body, ref := readBody(r, buf, h.MaxRequestBody)
	if ref != nil {
		return fail(h.refuse(w, r, ref))
	}
	if a := prov.AroundParam(body); a != nil && !h.allows(a.Allow) {
		return fail(h.refuse(w, r, aroundRefusal(a, r.Method, r.URL.Path)))
	}
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	original := body
	front := h.app.gate.Front(pol.policy, pol.key, func() gate.Person { return h.person(repl, original, prov) }, protocol).
		WithToolSchemas(func(name string) []byte { return prov.ToolParameters(original, name) })

	body, err := prov.RewriteRequest(r.Context(), body, h.app.gate.LinkPrefix(), front)
	if err != nil {
		return fail(caddyhttp.Error(http.StatusBadRequest, fmt.Errorf("restoring history: %w", err)))
	}
	if body, err = prov.RewriteTools(body, pol.policy.OfferTool); err != nil {
		return fail(caddyhttp.Error(http.StatusBadRequest, fmt.Errorf("offering tools: %w", err)))
	}
	if pol.policy.HasOfferWhen() {
		// offer_when: the tools not offered to this person are taken out
		// (their calls are refused anyway, gate/rules.go).
		person := gate.RulePerson(front.Person())
		if body, err = prov.DropTools(body, func(name string) bool { return pol.policy.NotOffered(name, person) }); err != nil {
			return fail(caddyhttp.Error(http.StatusBadRequest, fmt.Errorf("offering tools: %w", err)))
		}
	}
	setBody(r, body)
	r.Header.Set("Accept-Encoding", "identity") // the response must be readable
	return prov, front, body, buf, nil
}

// answer sends the model request upstream and writes the answer through
// the adapter, with its follow-ups. A stream waiting for the person (see
// ResumeWait) waits in it: its frame, and those it calls while waiting,
// are kept small, as they stay on the stack of every waiting stream.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, prov provider.Provider, front *gate.Front, body []byte, names *shape.Names) error {
	rw := interceptor.Wrap(w, prov, r.Context(), front, h.MaxResponseBody)
	rw.SetRequest(body)
	streams := prov.Streams(r.Method, r.URL, body)
	array := streamsJSON(prov, r, body)
	rw.SetStreams(streams)
	rw.SetStreamsJSON(array)
	rw.GuardNames(names)
	if h.ResumeWait > 0 {
		rw.AllowResume()
	}
	out, watched := teeShadow(rw, r.Context(), prov, front.Watcher(), h.MaxResponseBody, h.logger, func(watch *interceptor.ResponseWriter) {
		watch.SetStreams(streams)
		watch.SetStreamsJSON(array)
	})
	nextErr := next.ServeHTTP(out, r)
	watched()
	// A refused call goes back to the provider at once, with a tool result
	// naming the fields, and the model's answer continues the same message;
	// with ResumeWait, so does the model's reply once the person answered
	// held calls (bounded by provider.MaxContinuations together).
	for round := 1; nextErr == nil; round++ {
		follow, ok := rw.Continuation()
		if !ok {
			follow, ok = h.resume(r, rw, prov, front)
		}
		if !ok || !h.followUp(r, rw, next, follow, round) {
			break
		}
	}
	return h.closed(w, r, rw, nextErr)
}

// streamsJSON reports whether the answer to a gated request is a streamed
// JSON array, as its provider says (provider.JSONStreamer).
func streamsJSON(prov provider.Provider, r *http.Request, body []byte) bool {
	j, ok := prov.(provider.JSONStreamer)
	return ok && j.StreamsJSON(r.Method, r.URL, body)
}

// ownerless returns the refusal of a request to a provider whose requests
// name no end user (RequiresOwner) on a route that reads the owner from
// the body alone (neither Owner nor OwnerFields set: an auto route, whose
// other providers' requests name one), or nil. No gated call of it could
// be held for anyone, so it is refused before it goes upstream. A fixed
// provider's route is refused at load instead (Provision).
func (h *Handler) ownerless(prov provider.Provider, method, path string) *refusal {
	if h.Owner != "" || len(h.OwnerFields) > 0 {
		return nil
	}
	if ro, ok := prov.(provider.OwnerRequirer); !ok || !ro.RequiresOwner() {
		return nil
	}
	return &refusal{http.StatusForbidden, fmt.Sprintf("%s %s is a %s request, which names no end user, and this route reads the conversation's owner from the request body only; the operator must set owner (a placeholder such as {http.request.header.X-User-Id}) or owner_fields on the route", method, path, prov.Name())}
}

// guarded passes a request no adapter reads, and its answer unless that
// names a gated tool (see interceptor.Guard): refused with 502 when
// nothing of it was written, cut otherwise. A policy without gated tools
// has nothing to search for, and the request passes unwrapped.
func (h *Handler) guarded(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, names *shape.Names) error {
	if names == nil {
		return next.ServeHTTP(w, r)
	}
	r.Header.Set("Accept-Encoding", "identity") // the answer must be searchable
	g := interceptor.Guard(w, names)
	if err := next.ServeHTTP(g, r); err != nil {
		return err
	}
	err := g.Close()
	if err == nil {
		return nil
	}
	if g.Written() {
		h.logger.Error("response cut", zap.String("path", r.URL.Path), zap.Error(err))
		return nil
	}
	clear(w.Header()) // the upstream's, e.g. a Content-Length that no longer holds
	why := "it is content-encoded, so the gate cannot search it for gated calls"
	if errors.Is(err, stream.ErrNamesGated) {
		why = fmt.Sprintf("it names the gated tool %s in a shape the gate does not read as a provider's answer, so the call could reach the app unchecked", g.Named())
	}
	return h.refuse(w, r, &refusal{http.StatusBadGateway, fmt.Sprintf("the answer to %s %s is refused: %s", r.Method, r.URL.Path, why)})
}

// followUp sends one follow-up request (a continuation, or a resume) and
// reports whether it was answered.
func (h *Handler) followUp(r *http.Request, rw *interceptor.ResponseWriter, next caddyhttp.Handler, follow []byte, round int) bool {
	rw.Continue()
	r2 := r.Clone(r.Context())
	setBody(r2, follow)
	if err := next.ServeHTTP(rw, r2); err != nil {
		// The app already has the start of the answer: end it with the
		// failure said in words, not a second status.
		h.logger.Error("continuation failed", zap.Int("round", round), zap.Error(err))
		return false
	}
	return true
}

// closed ends the answer (rw.Close) and returns the handler's outcome.
func (h *Handler) closed(w http.ResponseWriter, r *http.Request, rw *interceptor.ResponseWriter, nextErr error) error {
	closeErr := rw.Close()
	if nextErr != nil {
		return nextErr
	}
	if closeErr != nil && r.Context().Err() != nil {
		// The app closed the connection (while the stream waited, say):
		// there is nobody left to answer.
		h.logger.Debug("client left", zap.Error(closeErr))
		return nil
	}
	if closeErr != nil {
		// Fail closed: the response could not be checked, so none of it
		// (or nothing more of it, for a stream) reaches the app.
		h.logger.Error("response refused", zap.Error(closeErr))
		for k := range w.Header() {
			delete(w.Header(), k) // the upstream's, e.g. a Content-Length that no longer holds
		}
		if errors.Is(closeErr, stream.ErrNamesGated) {
			return h.refuse(w, r, &refusal{http.StatusBadGateway, fmt.Sprintf("the answer to %s %s is refused: it names a gated tool but is not in the shape this path is read as (another provider's answer, or two at once), so the call could reach the app unchecked", r.Method, r.URL.Path)})
		}
		return caddyhttp.Error(http.StatusBadGateway, fmt.Errorf("checking response: %w", closeErr))
	}
	return nil
}

// resume waits, when the streamed answer's calls were held, for the
// person's answers (see ResumeWait), keeping the stream alive, and returns
// the follow-up request with the history restored as the app's next
// request would have it. ok is false when the answer does not wait or the
// wait ended unanswered; the stream then ends as without waiting.
func (h *Handler) resume(r *http.Request, rw *interceptor.ResponseWriter, prov provider.Provider, front *gate.Front) ([]byte, bool) {
	if h.ResumeWait <= 0 {
		return nil, false
	}
	step := rw.Held()
	who := front.Person()
	if step == "" || !h.enterWait(step, who) {
		return nil, false
	}
	defer h.waiting.leave(who)
	answered, err := front.Await(r.Context(), step, h.awaitOptions(rw))
	if !answered {
		h.unanswered(r, step, err)
		return nil, false
	}
	return rw.Resume(func(b []byte) ([]byte, error) {
		return prov.RewriteRequest(r.Context(), b, h.app.gate.LinkPrefix(), front)
	})
}

// enterWait counts a stream that waits, unless ResumeMaxStreams of the
// route, or ResumeMaxStreamsPerPerson of who's, already do.
func (h *Handler) enterWait(step string, who gate.Person) bool {
	if h.waiting.enter(who, h.ResumeMaxStreams, h.ResumeMaxStreamsPerPerson) {
		return true
	}
	h.logger.Warn("stream not kept waiting: resume_max_streams or resume_max_streams_per_person reached", zap.String("step_id", step),
		zap.Int("resume_max_streams", h.ResumeMaxStreams), zap.Int("resume_max_streams_per_person", h.ResumeMaxStreamsPerPerson))
	return false
}

func (h *Handler) awaitOptions(rw *interceptor.ResponseWriter) gate.AwaitOptions {
	return gate.AwaitOptions{
		Wait:  time.Duration(h.ResumeWait),
		Poll:  time.Duration(h.ResumePoll),
		Every: time.Duration(h.ResumeKeepalive),
		Tick:  rw.KeepAlive,
	}
}

// unanswered logs why a wait ended without the answers, unless the app
// left or the time was up.
func (h *Handler) unanswered(r *http.Request, step string, err error) {
	if err != nil && r.Context().Err() == nil {
		h.logger.Warn("waiting for the person's answer", zap.String("step_id", step), zap.Error(err))
	}
}

// refusal is a request the gate answers itself, before anything goes on:
// the status and what the client reads.
type refusal struct {
	status int
	msg    string
}

// readBody reads a gated request's body, up to max bytes, as the server
// behind the gate would read it: a body that is not plain UTF-8 JSON
// (compressed, with a byte-order mark, in UTF-16) is decoded, and the
// request's headers made to describe the decoded bytes, which are what
// goes on (see package reqbody). What cannot be decoded is refused.
func readBody(r *http.Request, buf *bytes.Buffer, max int64) ([]byte, *refusal) {
	if r.ContentLength > 0 && r.ContentLength <= max {
		buf.Grow(int(r.ContentLength) + 1) // +1: the read that sees EOF needs room
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, max+1))
	r.Body.Close()
	if err != nil {
		return nil, &refusal{http.StatusBadRequest, fmt.Sprintf("reading the request body: %v", err)}
	}
	body := buf.Bytes()
	if int64(len(body)) > max {
		return nil, &refusal{http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over %d bytes; it cannot be checked", max)}
	}
	if reqbody.Plain(r.Header, body) {
		return body, nil
	}
	d, err := reqbody.Decode(r.Header, body, max)
	if err != nil {
		status := http.StatusBadRequest
		switch {
		case errors.Is(err, reqbody.ErrCoding), errors.Is(err, reqbody.ErrCharset):
			status = http.StatusUnsupportedMediaType
		case errors.Is(err, reqbody.ErrTooLarge):
			status = http.StatusRequestEntityTooLarge
		}
		return nil, &refusal{status, "the request body cannot be checked: " + err.Error() + "; send it as plain UTF-8 JSON, or compressed with gzip, deflate or zstd"}
	}
	d.SetHeaders(r.Header)
	return d.Body, nil
}

// refuse answers a model request with an error that OpenAI's and
// Anthropic's SDKs both read: OpenAI's reads error.message, Anthropic's
// the type "error" and error.type and message.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, ref *refusal) error {
	h.logger.Info("request refused", zap.Int("status", ref.status), zap.String("why", ref.msg))
	// A provider whose SDKs read another error shape (Gemini's) gives its
	// own body for its paths.
	path := canonicalPath(r.URL.Path)
	for _, p := range provider.All() {
		if rb, ok := p.(provider.Refuser); ok {
			if b, ok := rb.RefusalBody(path, ref.status, "toolgate: "+ref.msg); ok {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(ref.status)
				_, err := w.Write(b)
				return err
			}
		}
	}
	typ := "invalid_request_error"
	switch ref.status {
	case http.StatusForbidden:
		typ = "permission_error"
	case http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case http.StatusBadGateway:
		typ = "api_error"
	}
	b := []byte(`{"type":"error","error":{"type":"` + typ + `","code":"toolgate_refused","message":`)
	b = gjson.AppendJSONString(b, "toolgate: "+ref.msg)
	b = append(b, "}}"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ref.status)
	_, err := w.Write(b)
	return err
}

// setBody makes body the request's body.
func setBody(r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Del("Content-Length")
}

// person resolves the conversation's owner and tenant: the configured
// placeholders, then the body's owner fields where configured (see
// OwnerFields): never a silent fallback from a configured Owner.
func (h *Handler) person(repl *caddy.Replacer, body []byte, prov provider.Provider) gate.Person {
	var p gate.Person
	if repl != nil {
		if h.Owner != "" {
			p.Owner = strings.TrimSpace(repl.ReplaceAll(h.Owner, ""))
		}
		if h.Tenant != "" {
			p.Tenant = strings.TrimSpace(repl.ReplaceAll(h.Tenant, ""))
		}
		if h.Roles != "" {
			p.Roles = splitRoles(repl.ReplaceAll(h.Roles, ""))
		}
	}
	if p.Owner != "" {
		return p
	}
	fields := h.OwnerFields
	if fields == nil && h.Owner == "" && prov != nil {
		fields = prov.OwnerFields()
	}
	p.Owner = params.Owner(body, fields)
	return p
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
