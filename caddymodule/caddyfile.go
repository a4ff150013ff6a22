package caddymodule

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("toolgate", parseGlobal)
	httpcaddyfile.RegisterHandlerDirective("toolgate", parseHandler)
	httpcaddyfile.RegisterHandlerDirective("toolgate_pages", parsePages)
	// After encode, so the gate sees the provider's plain body and encode
	// compresses what the gate wrote; before respond and reverse_proxy, so
	// it wraps them.
	httpcaddyfile.RegisterDirectiveOrder("toolgate", httpcaddyfile.After, "encode")
	// After the authentication handlers (basic_auth, forward_auth), which
	// set the answerer's id.
	httpcaddyfile.RegisterDirectiveOrder("toolgate_pages", httpcaddyfile.Before, "respond")
}

// parseGlobal sets up the toolgate app from the global options:
//
//	toolgate {
//		store          [badger] <path>
//		secret         <secret>
//		pages          <base url>
//		ttl            <duration>
//		retention      <duration>
//		action_timeout <duration>
//	}
func parseGlobal(d *caddyfile.Dispenser, _ any) (any, error) {
	var a App
	d.Next() // the option name
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	seen := map[string]bool{}
	for d.NextBlock(0) {
		key := d.Val()
		if seen[key] {
			return nil, d.Errf("%s already specified", key)
		}
		seen[key] = true
		switch key {
		case "store":
			args := d.RemainingArgs()
			if len(args) == 2 && args[0] == "badger" {
				args = args[1:]
			}
			if len(args) != 1 {
				return nil, d.Errf("store: want [badger] <path>")
			}
			a.Store = args[0]
		case "secret":
			if !d.AllArgs(&a.Secret) {
				return nil, d.ArgErr()
			}
		case "pages":
			if !d.AllArgs(&a.Pages) {
				return nil, d.ArgErr()
			}
		case "ttl", "retention", "action_timeout":
			var s string
			if !d.AllArgs(&s) {
				return nil, d.ArgErr()
			}
			dur, err := caddy.ParseDuration(s)
			if err != nil {
				return nil, d.Errf("%s: %v", key, err)
			}
			switch key {
			case "ttl":
				a.TTL = caddy.Duration(dur)
			case "retention":
				a.Retention = caddy.Duration(dur)
			default:
				a.ActionTimeout = caddy.Duration(dur)
			}
		default:
			return nil, d.Errf("unrecognized subdirective %q", key)
		}
	}
	return httpcaddyfile.App{Name: "toolgate", Value: caddyconfig.JSON(a, nil)}, nil
}

func parseHandler(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	var t Handler
	err := t.UnmarshalCaddyfile(h.Dispenser)
	return &t, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens:
//
//	toolgate {
//		policy            <path>
//		owner             <placeholder>
//		tenant            <placeholder>
//		max_request_body  <bytes>
//		max_response_body <bytes>
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	for d.NextBlock(0) {
		key := d.Val()
		if seen[key] {
			return d.Errf("%s already specified", key)
		}
		seen[key] = true
		switch key {
		case "policy":
			if !d.AllArgs(&h.Policy) {
				return d.ArgErr()
			}
		case "owner":
			if !d.AllArgs(&h.Owner) {
				return d.ArgErr()
			}
		case "tenant":
			if !d.AllArgs(&h.Tenant) {
				return d.ArgErr()
			}
		case "max_request_body", "max_response_body":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n <= 0 {
				return d.Errf("%s: want a positive number of bytes, got %q", key, s)
			}
			if key == "max_request_body" {
				h.MaxRequestBody = n
			} else {
				h.MaxResponseBody = n
			}
		default:
			return d.Errf("unrecognized subdirective %q", key)
		}
	}
	if h.Policy == "" {
		return d.Err("policy is required")
	}
	return nil
}

func parsePages(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	var p PagesHandler
	err := p.UnmarshalCaddyfile(h.Dispenser)
	return &p, err
}

// UnmarshalCaddyfile sets up the pages handler from Caddyfile tokens:
//
//	toolgate_pages {
//		answerer <placeholder>
//	}
func (p *PagesHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	for d.NextBlock(0) {
		key := d.Val()
		if seen[key] {
			return d.Errf("%s already specified", key)
		}
		seen[key] = true
		switch key {
		case "answerer":
			if !d.AllArgs(&p.Answerer) {
				return d.ArgErr()
			}
		default:
			return d.Errf("unrecognized subdirective %q", key)
		}
	}
	return nil
}

// checkBaseURL accepts an absolute http(s) URL without query or fragment.
func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http or https URL", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return errors.New("must not have a query or fragment")
	}
	return nil
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*Handler)(nil)
	_ caddyfile.Unmarshaler = (*PagesHandler)(nil)
)
