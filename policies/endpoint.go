package policies

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/http/httpguts"
)

// maxTTL bounds how long a call may wait for a person: holds are meant for
// someone at the screen, not for a queue.
const maxTTL = 24 * time.Hour

// run reads an action's run key. An action without one is released only
// by an MCP server behind an MCP route (the server runs the tool); the
// model front refuses to hold its calls.
func (l *loader) run(n *yaml.Node, fields *fieldSet) (Endpoint, error) {
	var e Endpoint
	if isNull(n) {
		return e, nil
	}
	f, err := l.fields(n, "run", runKeys...)
	if err != nil {
		return e, err
	}
	method, err := l.str(f["method"], "run.method")
	if err != nil {
		return e, err
	}
	switch e.Method = strings.ToUpper(method); e.Method {
	case "":
		e.Method = http.MethodPost
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return e, l.errf(f["method"], "run.method", "unsupported method %q; want GET, POST, PUT, PATCH or DELETE", method)
	}
	if isNull(f["url"]) {
		return e, l.errf(n, "run.url", "required")
	}
	if e.URL, err = l.template(f["url"], "run.url", fields); err != nil {
		return e, err
	}
	if !isNull(f["headers"]) {
		if e.Headers, err = l.headers(f["headers"]); err != nil {
			return e, err
		}
	}
	return e, nil
}

// headers reads run.headers. The gate owns the headers that identify a run
// (Idempotency-Key, X-Toolgate-*) and the ones that frame the request, so a
// policy cannot forge or break them.
func (l *loader) headers(n *yaml.Node) (map[string]string, error) {
	pairs, err := l.pairs(n, "run.headers")
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(pairs))
	for _, kv := range pairs {
		name := kv.key.Value
		key := "run.headers." + name
		if !httpguts.ValidHeaderFieldName(name) {
			return nil, l.errf(kv.key, "run.headers", "%q is not a valid header name", name)
		}
		canon := http.CanonicalHeaderKey(name)
		switch {
		case canon == "Idempotency-Key", canon == "Host", canon == "Content-Length",
			canon == "Transfer-Encoding", strings.HasPrefix(canon, "X-Toolgate-"):
			return nil, l.errf(kv.key, key, "is set by the gate; a policy may not set it")
		}
		if _, dup := out[canon]; dup {
			return nil, l.errf(kv.key, key, "given twice (header names ignore case)")
		}
		value, err := l.str(kv.value, key)
		if err != nil {
			return nil, err
		}
		if !httpguts.ValidHeaderFieldValue(value) {
			return nil, l.errf(kv.value, key, "holds a character a header cannot carry")
		}
		out[canon] = value
	}
	return out, nil
}

// mcp reads an action's mcp key: {confirm: true|false}.
func (l *loader) mcp(a *Action, n *yaml.Node) (MCP, error) {
	var m MCP
	if isNull(n) {
		return m, nil
	}
	f, err := l.fields(n, "mcp", mcpKeys...)
	if err != nil {
		return m, err
	}
	if m.Confirm, err = l.boolean(f["confirm"], "mcp.confirm"); err != nil {
		return m, err
	}
	if m.Confirm && !a.Effect.NeedsCard() {
		return m, l.errf(f["confirm"], "mcp.confirm", "only destructive and external actions are confirmed; %s calls get a form or pass", a.Effect)
	}
	return m, nil
}

// ttl reads an action's ttl: whole seconds (1800) or a Go duration (30m).
// Absent or 0 leaves the gate's default.
func (l *loader) ttl(n *yaml.Node) (time.Duration, error) {
	s, err := l.str(n, "ttl")
	if err != nil || s == "" {
		return 0, err
	}
	var d time.Duration
	if secs, perr := strconv.ParseInt(s, 10, 64); perr == nil {
		if secs < 0 || secs > int64(maxTTL/time.Second) {
			return 0, l.errf(n, "ttl", "%q is out of range; want 1s to 24h, or 0 for the gate's default", s)
		}
		d = time.Duration(secs) * time.Second
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, l.errf(n, "ttl", "%q is not a duration; want whole seconds (1800) or a Go duration (30m)", s)
	}
	// Stores keep expiry in whole seconds, so less than 1s would not hold.
	if d < 0 || d > maxTTL || d > 0 && d < time.Second {
		return 0, l.errf(n, "ttl", "%q is out of range; want 1s to 24h, or 0 for the gate's default", s)
	}
	return d, nil
}
