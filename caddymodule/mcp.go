package caddymodule

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/wire/jsonedit"
	"github.com/toolgate/toolgate/wire/sse"
	"github.com/toolgate/toolgate/wire/stream"
)

func init() {
	caddy.RegisterModule(MCP{})
}

// MCP gates the tools/call requests of a route in front of an MCP server
// (Streamable HTTP): put it before the reverse_proxy to the server.
//
// Only POSTed tools/call requests for tools the policy declares are
// decided here; everything else passes as it came, streamed: legacy
// sessions (initialize, Mcp-Session-Id, SSE answers, the client's JSON-RPC
// responses, GET streams, DELETE, Last-Event-ID) and 2026-07-28 traffic
// (server/discover, subscriptions/listen, per-request _meta). A tools/list
// answer gets the policy's required-for-agents fields and the
// ask-for-missing hint on the declared tools.
//
// A gated call passes when complete and valid (read and write actions).
// Otherwise a 2026-07-28 client that declares form elicitation gets an
// input_required result with the form; one that declares URL elicitation
// gets a URL request to the card page, for destructive and external
// actions whose policy sets mcp.confirm. Its retry, with our signed
// requestState, is checked again before it reaches the server. Every other
// client gets a tool error (isError) naming what is missing or why. Before
// it asks, the gate makes sure the server takes the call's protocol
// version (a tools/list sent as the call was): a server that does not
// speak 2026-07-28 would refuse the call only after the person answered,
// so the client gets a tool error saying so instead, and nobody is asked.
//
// A POSTed body the server would decode (gzip, deflate or zstd
// Content-Encoding, a byte-order mark, UTF-16 by charset or byte-order
// mark) is decoded first and the decoded UTF-8 is what goes on, with the
// Content-Encoding removed and the charset utf-8. What cannot be read is
// refused with a JSON-RPC error and never reaches the server: 415 for a
// coding or charset the gate does not decode (br, utf-7, utf-32 among
// them) or two Content-Type headers, 400 for bytes that do not decode or
// a body that is not JSON, 413 for a message larger than MaxRequestBody
// before or after decoding.
type MCP struct {
	// Policy is the path of the policy file declaring the actions this
	// route gates. Required; loaded and checked when the config loads.
	Policy string `json:"policy,omitempty"`

	// Owner tells who is calling: a placeholder filled by the platform's
	// authentication. Default "{http.auth.user.id}". A gated call with no
	// caller is refused.
	Owner string `json:"owner,omitempty"`

	// Tenant optionally names the caller's tenant (a placeholder). A
	// requestState is bound to the tenant and the owner together.
	Tenant string `json:"tenant,omitempty"`

	// Roles optionally gives the caller's roles (a placeholder, split at
	// commas and spaces), for the policy's rules and offer_when
	// (person.roles). Use a header your sign-in sets itself. Default:
	// none, no roles.
	Roles string `json:"roles,omitempty"`

	// StateTTL is how long the requestState of a form may be redeemed,
	// to the millisecond. Default 10m. A confirmation's lives as long as its card waits (the
	// action's ttl).
	StateTTL caddy.Duration `json:"state_ttl,omitempty"`

	// ConfirmWait is how long a client's retry of a confirmation may wait
	// for the person's answer on the card page before it is asked to open
	// the page again; clients retry as soon as the page is open (their
	// accept is consent, not the answer). Default 60s; negative: no wait.
	ConfirmWait caddy.Duration `json:"confirm_wait,omitempty"`

	// MaxRequestBody caps a POSTed message, in bytes, as sent and once
	// decoded; a larger one is refused with 413 (it could not be
	// checked). Default 16 MiB.
	MaxRequestBody int64 `json:"max_request_body,omitempty"`

	// MaxResponseBody caps a JSON answer held for rewriting (tools/list,
	// or a gated call whose server asks for input), in bytes. Default 16
	// MiB.
	MaxResponseBody int64 `json:"max_response_body,omitempty"`

	app     *App
	file    *policyFile // the policy file, as it reads now (policyfiles.go)
	logger  *zap.Logger
	schemas *sync.Map // tool name → input schema the server listed last ([]byte)
}

// policy is the route's policy as it reads now.
func (h *MCP) policy() *policies.Policy { return h.file.current().policy }

// DefaultConfirmWait is how long a confirmation's retry waits for the
// person unless ConfirmWait says otherwise.
const DefaultConfirmWait = 60 * time.Second

// CaddyModule returns the Caddy module information.
func (MCP) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.toolgate_mcp", New: func() caddy.Module { return new(MCP) }}
}

// Provision loads the policy and joins the toolgate app.
func (h *MCP) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	var err error
	if h.app, h.file, err = joinApp(ctx, h.Policy); err != nil {
		return err
	}
	h.schemas = new(sync.Map)
	if h.Owner == "" {
		h.Owner = "{http.auth.user.id}"
	}
	if h.MaxRequestBody <= 0 {
		h.MaxRequestBody = 16 << 20
	}
	if h.MaxResponseBody <= 0 {
		h.MaxResponseBody = 16 << 20
	}
	return nil
}

// Validate checks the configuration.
func (h *MCP) Validate() error {
	if h.StateTTL < 0 {
		return errors.New("state_ttl must not be negative")
	}
	return nil
}

// ServeHTTP gates one MCP message.
func (h *MCP) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if r.Method != http.MethodPost {
		return next.ServeHTTP(w, r) // GET streams, DELETE: no tool calls
	}
	buf := stream.GetBuf()
	defer stream.PutBuf(buf)
	body, ref := readBody(r, buf, h.MaxRequestBody)
	if ref != nil {
		code := -32700 // parse error: the message could not be read
		if ref.status == http.StatusRequestEntityTooLarge {
			code = -32600
		}
		h.logger.Info("MCP message refused", zap.Int("status", ref.status), zap.String("why", ref.msg))
		return writeRPCError(w, nil, ref.status, code, "toolgate: "+ref.msg)
	}
	if i := firstNonSpace(body); i >= 0 && body[i] != '{' && body[i] != '[' {
		// Only JSON is read by MCP servers; anything else is not
		// forwarded unread.
		return writeRPCError(w, nil, http.StatusBadRequest, -32700, "toolgate: the message is not a JSON-RPC object or batch; it cannot be checked")
	}
	setBody(r, body)

	if interceptor.IsMCPBatch(body) {
		if jsonedit.DuplicateKey(body) {
			return writeRPCError(w, nil, http.StatusBadRequest, -32600, "toolgate: a message in the batch gives a key twice")
		}
		for _, name := range interceptor.MCPBatchCalls(body) {
			if h.policy().Action(name) != nil {
				return writeRPCError(w, nil, http.StatusBadRequest, -32600, "toolgate: a tools/call of a gated tool cannot be sent in a batch; send it on its own")
			}
		}
		return next.ServeHTTP(w, r)
	}
	method, tool, ok := interceptor.MCPMethod(body)
	if !ok {
		return writeRPCError(w, nil, http.StatusBadRequest, -32600, "toolgate: the message names its method, params or tool twice")
	}
	switch method {
	case "tools/list":
		return h.serveList(w, r, body, next)
	case "tools/call":
		if h.policy().Action(tool) == nil && !retriesGateState(body) {
			return next.ServeHTTP(w, r)
		}
		return h.serveCall(w, r, body, next)
	}
	return next.ServeHTTP(w, r)
}

// retriesGateState reports whether a tools/call carries a requestState of
// the gate's: the retry of a call the gate asked about, which the gate
// decides even when the policy, reloaded since, no longer declares its
// tool (it runs nothing then). A byte search comes first, so that other
// calls of undeclared tools pass unparsed.
func retriesGateState(body []byte) bool {
	return bytes.Contains(body, []byte(gate.MCPStatePrefix)) && gate.IsMCPState(gjson.GetBytes(body, "params.requestState").String())
}

// serveList applies the policy to the listed tools and remembers their
// schemas for the forms of later calls.
func (h *MCP) serveList(w http.ResponseWriter, r *http.Request, body []byte, next caddyhttp.Handler) error {
	id := []byte(gjson.GetBytes(body, "id").Raw)
	r.Header.Set("Accept-Encoding", "identity")
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	rw := interceptor.NewMCPResultWriter(w, id, func(result []byte) []byte {
		out, err := interceptor.RewriteMCPTools(result, h.listTool)
		if err != nil {
			h.logger.Error("rewriting tools/list", zap.Error(err))
			return nil // as the server listed them; calls are checked anyway
		}
		if p := h.policy(); p.HasOfferWhen() {
			// offer_when: the tools not offered to this caller are taken out.
			person := gate.RulePerson(h.caller(repl))
			if out, err = interceptor.DropMCPTools(out, func(name string) bool { return p.NotOffered(name, person) }); err != nil {
				h.logger.Error("taking tools not offered out of tools/list", zap.Error(err))
				return nil
			}
		}
		return out
	}, h.MaxResponseBody)
	return h.finish(w, rw, next.ServeHTTP(rw, r))
}

// listTool is the tools/list rewrite of one tool; it remembers the
// schemas of declared tools for the forms of later calls.
func (h *MCP) listTool(name string, schema []byte) ([]byte, string, bool) {
	a := h.policy().Action(name)
	if a == nil {
		return nil, "", false
	}
	if len(schema) > 0 && gjson.ValidBytes(schema) {
		h.schemas.Store(name, append([]byte(nil), schema...))
	}
	// The server's own schema, as the model front takes the request's: it
	// carries the server's annotations (x-mcp-header), which clients need.
	return h.policy().OfferTool(name, schema)
}

// serveCall decides a gated tools/call.
func (h *MCP) serveCall(w http.ResponseWriter, r *http.Request, body []byte, next caddyhttp.Handler) error {
	req, err := interceptor.ParseMCPRequest(body)
	if err != nil {
		return writeRPCError(w, []byte(gjson.GetBytes(body, "id").Raw), http.StatusOK, -32602, "toolgate: "+err.Error())
	}
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	wait := time.Duration(h.ConfirmWait)
	if wait == 0 {
		wait = DefaultConfirmWait
	}
	pol := h.file.current()
	front := h.app.gate.MCPFront(pol.policy, pol.key, func() gate.Person { return h.caller(repl) }, time.Duration(h.StateTTL), wait)
	up := &upstream{h: h, r: r, body: body, next: next, version: req.Version}
	if up.version == "" {
		up.version = r.Header.Get(interceptor.MCPVersionHeader) // legacy clients say it here only
	}
	a := pol.policy.Action(req.Name)
	var schema []byte
	if a != nil { // nil: a retry of the gate's for a tool no longer declared, which the gate refuses
		schema = a.Schema
		if schema == nil {
			schema = up.toolSchema(req.Name)
		}
	}
	modern := req.Modern(r.Header.Get(interceptor.MCPVersionHeader))
	v := front.MCP(r.Context(), gate.MCPCall{
		Name: req.Name, Arguments: req.Arguments, Schema: schema, Modern: modern,
		Elicit: req.Elicit, Version: up.version, ServerTakes: up.serverTakes,
		State: req.State, Responses: req.Responses,
	})
	if v.Result != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, err := w.Write(interceptor.MCPResponse(req.ID, v.Result))
		return err
	}
	if v.Rewritten {
		nb, err := interceptor.RewriteMCPCall(body, v.Arguments, v.State, v.Responses)
		if err != nil {
			return writeRPCError(w, req.ID, http.StatusOK, -32603, "toolgate: the call could not be rewritten")
		}
		setBody(r, nb)
		// The server checks the Mcp-Param-* headers against the body, so
		// they are computed again from the arguments sent. Only the
		// server's own schema carries its x-mcp-header annotations (a
		// policy's does not); when it cannot be had, the client's headers
		// stay, right for every argument the client sent.
		listed := schema
		if a != nil && a.Schema != nil {
			listed = up.toolSchema(req.Name)
		}
		if modern && listed != nil {
			for k := range r.Header {
				if strings.HasPrefix(k, interceptor.MCPParamHeaderPrefix) {
					r.Header.Del(k)
				}
			}
			for k, val := range interceptor.MCPParamHeaders(listed, v.Arguments) {
				r.Header.Set(k, val)
			}
		}
	}
	if v.Relay == nil {
		return next.ServeHTTP(w, r)
	}
	r.Header.Set("Accept-Encoding", "identity")
	ctx := r.Context()
	rw := interceptor.NewMCPResultWriter(w, req.ID, func(result []byte) []byte {
		return front.WrapMCP(ctx, v.Relay, result)
	}, h.MaxResponseBody)
	return h.finish(w, rw, next.ServeHTTP(rw, r))
}

// finish closes a result writer; an answer that could not be checked is
// refused whole (fail closed).
func (h *MCP) finish(w http.ResponseWriter, rw *interceptor.MCPResultWriter, nextErr error) error {
	closeErr := rw.Close()
	if nextErr != nil {
		return nextErr
	}
	if closeErr != nil {
		h.logger.Error("MCP answer refused", zap.Error(closeErr))
		for k := range w.Header() {
			delete(w.Header(), k)
		}
		return caddyhttp.Error(http.StatusBadGateway, fmt.Errorf("checking MCP answer: %w", closeErr))
	}
	return nil
}

// caller is who is calling, from the configured placeholders.
func (h *MCP) caller(repl *caddy.Replacer) gate.Person {
	var p gate.Person
	if repl == nil {
		return p
	}
	p.Owner = strings.TrimSpace(repl.ReplaceAll(h.Owner, ""))
	if h.Tenant != "" {
		p.Tenant = strings.TrimSpace(repl.ReplaceAll(h.Tenant, ""))
	}
	if h.Roles != "" {
		p.Roles = splitRoles(repl.ReplaceAll(h.Roles, ""))
	}
	return p
}

// upstream asks the MCP server what a gated call needs to know, with the
// caller's own headers (session, protocol version, credentials) and _meta.
type upstream struct {
	h       *MCP
	r       *http.Request
	body    []byte
	next    caddyhttp.Handler
	version string // the protocol version the call speaks
	took    bool   // the server answered a request of this call's version
}

// toolSchema returns the input schema the server lists for a tool: the
// one seen last in a tools/list answer, else asked for now.
func (u *upstream) toolSchema(name string) []byte {
	if s, ok := u.h.schemas.Load(name); ok {
		return s.([]byte)
	}
	cursor := ""
	for page := 0; page < 10; page++ {
		result, rpcErr, err := u.listTools(u.r.Context(), cursor)
		if err != nil || rpcErr.Exists() {
			u.h.logger.Warn("listing tools for a form", zap.String("action", name), zap.String("error", rpcErr.Raw), zap.Error(err))
			return nil
		}
		var found []byte
		gjson.GetBytes(result, "tools").ForEach(func(_, t gjson.Result) bool {
			n := t.Get("name").String()
			if s := t.Get("inputSchema"); s.IsObject() && u.h.policy().Action(n) != nil {
				u.h.schemas.Store(n, []byte(s.Raw))
				if n == name {
					found = []byte(s.Raw)
				}
			}
			return true
		})
		if found != nil {
			return found
		}
		if cursor = gjson.GetBytes(result, "nextCursor").String(); cursor == "" {
			return nil
		}
	}
	return nil
}

// serverTakes tells whether the server takes calls of this call's
// protocol version, before the person is asked for one (gate.MCPCall's
// ServerTakes). A request's version is the server's to accept: a
// 2026-07-28 client may skip server/discover and call at once, and a
// server that does not speak 2026-07-28 would refuse the call only after
// the person answered. The answer to a tools/list sent as the call was is
// the proof: a result, it takes it; the error -32022 (unsupported protocol
// version), it does not; anything else, it cannot be told, and the gate
// fails closed.
func (u *upstream) serverTakes(ctx context.Context) error {
	if u.took {
		return nil
	}
	_, rpcErr, err := u.listTools(ctx, "")
	switch {
	case err != nil:
		return fmt.Errorf("the gate could not learn whether the MCP server takes MCP %s calls (%v)", u.version, err)
	case rpcErr.Get("code").Int() == -32022:
		return fmt.Errorf("the MCP server does not take MCP %s calls (it answered %q)", u.version, clip(rpcErr.Get("message").String(), 200))
	case rpcErr.Exists():
		return fmt.Errorf("the gate could not learn whether the MCP server takes MCP %s calls (it answered %q)", u.version, clip(rpcErr.Get("message").String(), 200))
	}
	return nil
}

// listTools sends one tools/list page and returns its result, or the
// JSON-RPC error the server answered with, or why there was no answer.
func (u *upstream) listTools(ctx context.Context, cursor string) (result []byte, rpcErr gjson.Result, err error) {
	list := []byte(`{"jsonrpc":"2.0","id":"toolgate-tools-list","method":"tools/list","params":{}}`)
	if meta := gjson.GetBytes(u.body, "params._meta"); meta.IsObject() {
		list, _ = sjson.SetRawBytes(list, "params._meta", []byte(meta.Raw))
	}
	if cursor != "" {
		list, _ = sjson.SetBytes(list, "params.cursor", cursor)
	}
	r2 := u.r.Clone(ctx)
	setBody(r2, list)
	r2.Header.Set("Accept-Encoding", "identity")
	for k := range r2.Header {
		if strings.HasPrefix(k, interceptor.MCPParamHeaderPrefix) {
			r2.Header.Del(k)
		}
	}
	r2.Header.Del(interceptor.MCPNameHeader)
	if r2.Header.Get(interceptor.MCPMethodHeader) != "" {
		r2.Header.Set(interceptor.MCPMethodHeader, "tools/list")
	}
	rec := &capture{header: http.Header{}}
	if err := u.next.ServeHTTP(rec, r2); err != nil {
		return nil, gjson.Result{}, err
	}
	result, rpcErr = rpcAnswer(rec.body.Bytes(), "toolgate-tools-list", rec.header.Get("Content-Type"))
	switch {
	case rpcErr.Exists():
		return nil, rpcErr, nil
	case rec.status/100 != 2 || result == nil:
		return nil, gjson.Result{}, fmt.Errorf("HTTP %d without a tools/list result", rec.status)
	}
	u.took = true
	return result, gjson.Result{}, nil
}

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// rpcAnswer finds the answer to id in a JSON or SSE body: its result, or
// its error object. An event stream is read as its clients read it
// (package sse).
func rpcAnswer(body []byte, id, contentType string) ([]byte, gjson.Result) {
	match := func(m []byte) ([]byte, gjson.Result, bool) {
		if gjson.GetBytes(m, "id").String() != id {
			return nil, gjson.Result{}, false
		}
		if res := gjson.GetBytes(m, "result"); res.IsObject() {
			return []byte(res.Raw), gjson.Result{}, true
		}
		if e := gjson.GetBytes(m, "error"); e.IsObject() {
			return nil, e, true
		}
		return nil, gjson.Result{}, false
	}
	if !strings.HasPrefix(strings.TrimSpace(contentType), "text/event-stream") {
		res, e, _ := match(body)
		return res, e
	}
	for _, ev := range sse.Parse(body) {
		// Each event's data as every reader reads it (see package sse): its
		// data lines joined, whatever ends them.
		if res, e, ok := match([]byte(ev.Data)); ok {
			return res, e
		}
	}
	return nil, gjson.Result{}
}

// capture records an answer the gate asked for itself.
type capture struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *capture) Header() http.Header { return c.header }
func (c *capture) WriteHeader(s int) {
	if c.status == 0 {
		c.status = s
	}
}
func (c *capture) Flush() {}
func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if c.body.Len()+len(p) > 16<<20 {
		return 0, errors.New("tools/list answer too large")
	}
	return c.body.Write(p)
}

// firstNonSpace is the index of the first byte of b that is not JSON
// whitespace, or -1.
func firstNonSpace(b []byte) int {
	for i, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return i
	}
	return -1
}

// writeRPCError answers with a JSON-RPC error.
func writeRPCError(w http.ResponseWriter, id []byte, status, code int, msg string) error {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	if len(id) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, id...)
	}
	b = append(b, `,"error":{"code":`...)
	b = fmt.Appendf(b, "%d", code)
	b = append(b, `,"message":`...)
	b = gjson.AppendJSONString(b, msg)
	b = append(b, "}}"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err := w.Write(b)
	return err
}

// Interface guards
var (
	_ caddy.Provisioner           = (*MCP)(nil)
	_ caddy.Validator             = (*MCP)(nil)
	_ caddyhttp.MiddlewareHandler = (*MCP)(nil)
)
