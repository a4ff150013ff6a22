package caddymodule

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/toolgate/toolgate/gate"
)

func init() {
	caddy.RegisterModule(PagesHandler{})
}

// PagesHandler serves the person's pages: GET {pages}/h/<id> shows the
// card (HTML, or JSON to Accept: application/json) and POST answers it;
// GET {pages}/ lists what waits for the signed-in person's answer (the
// holds they may answer as an approver, in their tenant).
// Put it behind the platform's own sign-in (basic_auth, forward_auth, ...)
// on the URL the toolgate app's `pages` option names: the answerer must be
// the person the conversation belongs to, in its tenant.
type PagesHandler struct {
	// Answerer is the placeholder giving the signed-in person's id.
	// Default: "{http.auth.user.id}" (set by Caddy's authentication
	// handlers). It must match the owner the model route saw.
	Answerer string `json:"answerer,omitempty"`

	// Tenant is the placeholder giving the signed-in person's tenant, e.g.
	// "{http.request.header.X-Tenant}" set by forward_auth. It must name
	// tenants exactly as the model route's (and the MCP route's) `tenant`
	// does: (tenant, owner) is the identity, so a person sees and answers
	// only the holds of their own tenant. Default: none, the empty tenant,
	// which matches routes that set no tenant.
	Tenant string `json:"tenant,omitempty"`

	// Roles is the placeholder giving the signed-in person's roles, for
	// the policy's approvers (an action's `approvers: {roles: [...]}`),
	// e.g. "{http.request.header.X-Roles}" set by forward_auth's
	// copy_headers, or a map of "{http.auth.user.id}". Its value is split
	// at commas and spaces: "editor, moderator". Use a header your sign-in
	// sets itself (forward_auth's copy_headers replaces what the client
	// sent), never one a client can choose. Default: none, no roles;
	// approvers named by id still answer.
	Roles string `json:"roles,omitempty"`

	app *App
}

// CaddyModule returns the Caddy module information.
func (PagesHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.toolgate_pages", New: func() caddy.Module { return new(PagesHandler) }}
}

// Provision joins the toolgate app.
func (p *PagesHandler) Provision(ctx caddy.Context) error {
	if p.Answerer == "" {
		p.Answerer = "{http.auth.user.id}"
	}
	a, err := ctx.App("toolgate")
	if err != nil {
		return fmt.Errorf("getting toolgate app: %w", err)
	}
	p.app = a.(*App)
	return nil
}

// ServeHTTP serves a page; it is a terminal handler.
func (p *PagesHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	var who gate.Person
	if repl != nil {
		who.Owner = strings.TrimSpace(repl.ReplaceAll(p.Answerer, ""))
		if p.Tenant != "" {
			who.Tenant = strings.TrimSpace(repl.ReplaceAll(p.Tenant, ""))
		}
		if p.Roles != "" {
			who.Roles = splitRoles(repl.ReplaceAll(p.Roles, ""))
		}
	}
	p.app.pages.Serve(w, r, who)
	return nil
}

// splitRoles reads a roles value: names separated by commas and spaces.
func splitRoles(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

// Interface guards
var (
	_ caddy.Provisioner           = (*PagesHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*PagesHandler)(nil)
)
