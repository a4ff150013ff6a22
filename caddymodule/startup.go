package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/toolgate/toolgate/policies"
)

// Startup is what `toolgate run` tells the operator about a config: where
// its routes answer, once it runs.
type Startup struct {
	// ModelRoutes are the origins of the servers with a toolgate handler
	// (http://localhost:8080): an app's model base URL points there.
	ModelRoutes []string
	// Upstreams are the reverse_proxy upstreams of those servers (the model
	// provider, or the demo's stand-in on localhost:9101).
	Upstreams []string
	// MCPRoutes are the URLs of the toolgate_mcp handlers.
	MCPRoutes []string
	// Pages is the pages' base URL (the toolgate app's pages), "" when no
	// handler uses the gate.
	Pages string
}

// Gated reports whether the config has a Toolgate handler at all.
func (s Startup) Gated() bool { return len(s.ModelRoutes)+len(s.MCPRoutes) > 0 || s.Pages != "" }

// Preflight checks a Caddy config (its JSON) with the checks provisioning
// runs on the toolgate app (App.Validate: the secret, pages, store) and
// loads each handler's policy file, without starting or opening anything
// and without logging. `toolgate run` calls it before Caddy loads the
// config so that a mistake is said as the first, plain line of its output
// and not only at the end of Caddy's JSON log; Caddy then loads the config
// anyway and fails with its own log. The error's text is the fix.
//
// A config Caddy cannot read is not Preflight's to judge: it returns no
// error, and Caddy says what is wrong.
func Preflight(cfg []byte) (Startup, error) {
	var c struct {
		Apps struct {
			Toolgate json.RawMessage `json:"toolgate"`
			HTTP     struct {
				Servers map[string]json.RawMessage `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		return Startup{}, nil
	}
	var st Startup
	var handlers []map[string]any
	for _, name := range slices.Sorted(maps.Keys(c.Apps.HTTP.Servers)) {
		var srv map[string]any
		if err := json.Unmarshal(c.Apps.HTTP.Servers[name], &srv); err != nil {
			return Startup{}, nil
		}
		origins := serverOrigins(srv)
		var found []foundHandler
		walkHandlers(srv["routes"], "", &found)
		model := false
		var upstreams []string
		for _, f := range found {
			switch f.h["handler"] {
			case "toolgate":
				model = true
			case "toolgate_mcp":
				for _, o := range origins {
					st.MCPRoutes = append(st.MCPRoutes, o+f.path)
				}
			case "reverse_proxy":
				ups, _ := f.h["upstreams"].([]any)
				for _, u := range ups {
					if m, ok := u.(map[string]any); ok {
						if d, ok := m["dial"].(string); ok && d != "" {
							upstreams = append(upstreams, d)
						}
					}
				}
			}
			if h, ok := f.h["handler"].(string); ok && strings.HasPrefix(h, "toolgate") {
				handlers = append(handlers, f.h)
			}
		}
		if model {
			st.ModelRoutes = append(st.ModelRoutes, origins...)
			st.Upstreams = append(st.Upstreams, upstreams...)
		}
	}
	if len(handlers) == 0 && len(c.Apps.Toolgate) == 0 {
		return Startup{}, nil // not a gate's config
	}
	// A handler without the app's config gets an app with none (ctx.App),
	// which then fails its Validate as here.
	a := new(App)
	if len(c.Apps.Toolgate) > 0 {
		if err := json.Unmarshal(c.Apps.Toolgate, a); err != nil {
			return Startup{}, nil
		}
	}
	a.resolve()
	if err := a.Validate(); err != nil {
		return Startup{}, err
	}
	st.Pages = a.Pages
	for _, h := range handlers {
		name, _ := h["handler"].(string)
		if name != "toolgate" && name != "toolgate_mcp" {
			continue
		}
		policy, _ := h["policy"].(string)
		if policy == "" {
			return Startup{}, fmt.Errorf("toolgate: a %s handler has no policy: give `policy <file>` in its block", name)
		}
		if _, err := policies.Load(caddy.NewReplacer().ReplaceAll(policy, "")); err != nil {
			if pe, ok := errors.AsType[*policies.Error](err); ok {
				return Startup{}, pe
			}
			return Startup{}, fmt.Errorf("toolgate: %w", err)
		}
	}
	return st, nil
}

// foundHandler is a handler of a server's routes and the path its route
// matches ("" for any).
type foundHandler struct {
	h    map[string]any
	path string
}

// walkHandlers collects the handlers under v (routes, subroutes, ...),
// each with the path of the innermost route that matches one.
func walkHandlers(v any, path string, out *[]foundHandler) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			walkHandlers(e, path, out)
		}
	case map[string]any:
		if p := matchPath(x["match"]); p != "" {
			path = p
		}
		if _, ok := x["handler"].(string); ok {
			*out = append(*out, foundHandler{x, path})
		}
		for k, e := range x {
			if k != "match" {
				walkHandlers(e, path, out)
			}
		}
	}
}

// matchPath is the first path of a route's matchers, without a trailing
// wildcard (/mcp* is /mcp), or "".
func matchPath(v any) string {
	sets, _ := v.([]any)
	for _, s := range sets {
		m, _ := s.(map[string]any)
		paths, _ := m["path"].([]any)
		for _, p := range paths {
			if s, ok := p.(string); ok && strings.HasPrefix(s, "/") {
				return strings.TrimRight(s, "*")
			}
		}
	}
	return ""
}

// serverOrigins are the URLs a server answers on: http://localhost:8080
// for :8080 (https for port 443 or a server with TLS).
func serverOrigins(srv map[string]any) []string {
	listen, _ := srv["listen"].([]any)
	_, tls := srv["tls_connection_policies"]
	var out []string
	for _, l := range listen {
		s, _ := l.(string)
		addr, err := caddy.ParseNetworkAddress(s)
		if err != nil || addr.IsUnixNetwork() || addr.StartPort != addr.EndPort {
			continue
		}
		host := addr.Host
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		scheme := "http"
		if tls || addr.StartPort == 443 {
			scheme = "https"
		}
		out = append(out, fmt.Sprintf("%s://%s", scheme, net.JoinHostPort(host, fmt.Sprint(addr.StartPort))))
	}
	return out
}

// envPlaceholder matches a value read whole from one environment variable.
var envPlaceholder = regexp.MustCompile(`^\{env\.([^{}]+)\}$`)

// secretProblem says what is wrong with a secret shorter than 16 bytes and
// how to fix it, naming the environment variable the config reads it from.
// It never says the secret's bytes, only how many there are.
func secretProblem(config string, resolved []byte) string {
	if m := envPlaceholder.FindStringSubmatch(config); m != nil {
		fix := fmt.Sprintf(`set it to at least 16 random bytes (e.g. export %s="$(openssl rand -base64 32)")`, m[1])
		if len(resolved) == 0 {
			return fmt.Sprintf("%s is empty: %s", m[1], fix)
		}
		return fmt.Sprintf("%s is %d bytes: %s", m[1], len(resolved), fix)
	}
	if strings.TrimSpace(config) == "" {
		return `the secret is not set: give the toolgate global option secret {env.TOOLGATE_SECRET} and set TOOLGATE_SECRET to at least 16 random bytes (e.g. export TOOLGATE_SECRET="$(openssl rand -base64 32)")`
	}
	return fmt.Sprintf("the secret is %d bytes: give at least 16 random bytes, read from the environment (secret {env.TOOLGATE_SECRET})", len(resolved))
}
