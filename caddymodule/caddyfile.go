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
	httpcaddyfile.RegisterHandlerDirective("toolgate_mcp", parseMCP)
	// After encode, so the gate sees the provider's plain body and encode
	// compresses what the gate wrote; before respond and reverse_proxy, so
	// it wraps them.
	httpcaddyfile.RegisterDirectiveOrder("toolgate", httpcaddyfile.After, "encode")
	// Same place on an MCP route: after the authentication handlers
	// (which come before encode), before reverse_proxy.
	httpcaddyfile.RegisterDirectiveOrder("toolgate_mcp", httpcaddyfile.After, "encode")
	// After the authentication handlers (basic_auth, forward_auth), which
	// set the answerer's id.
	httpcaddyfile.RegisterDirectiveOrder("toolgate_pages", httpcaddyfile.Before, "respond")
}

// parseGlobal sets up the toolgate app from the global options:
//
//	toolgate {
//		store          [badger] <path> | postgres <dsn>
//		secret         <secret>
//		previous_secrets <secret>...
//		pages          <base url>
//		ttl            <duration>
//		retention      <duration>
//		action_timeout <duration>
//		max_waiting    <count>
//		sweep_interval <duration>
//		audit_retention <duration>|forever
//		policy_poll    <duration>|off
//	}
//
// max_waiting 0 means no cap.
func parseGlobal(d *caddyfile.Dispenser, _ any) (any, error) {
	var a App
	err := eachKey(d, func(key string) error {
		switch key {
		case "store":
			args := d.RemainingArgs()
			switch {
			case len(args) == 2 && args[0] == "postgres":
				a.Postgres = args[1]
			case len(args) == 2 && args[0] == "badger":
				a.Store = args[1]
			case len(args) == 1 && args[0] != "postgres" && args[0] != "badger":
				a.Store = args[0]
			default:
				return d.Errf("store: want [badger] <path>, or postgres <dsn>")
			}
		case "secret":
			return oneArg(d, &a.Secret)
		case "previous_secrets":
			a.PreviousSecrets = d.RemainingArgs()
			if len(a.PreviousSecrets) == 0 {
				return d.ArgErr()
			}
		case "pages":
			return oneArg(d, &a.Pages)
		case "ttl":
			return durationArg(d, key, &a.TTL)
		case "retention":
			return durationArg(d, key, &a.Retention)
		case "action_timeout":
			return durationArg(d, key, &a.ActionTimeout)
		case "max_waiting":
			var s string
			if err := oneArg(d, &s); err != nil {
				return err
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return d.Errf("max_waiting: want a whole number, 0 for no cap, got %q", s)
			}
			a.MaxWaiting = n
			if n == 0 {
				a.MaxWaiting = -1 // no cap; in JSON, 0 is the default
			}
		case "sweep_interval":
			if err := durationArg(d, key, &a.SweepInterval); err != nil {
				return err
			}
			if a.SweepInterval == 0 {
				return d.Errf("sweep_interval: want a positive duration")
			}
		case "policy_poll":
			var s string
			if err := oneArg(d, &s); err != nil {
				return err
			}
			if s == "off" {
				a.PolicyPoll = -1 // not watched; in JSON, 0 is the default
				return nil
			}
			dur, err := caddy.ParseDuration(s)
			if err != nil || dur <= 0 {
				return d.Errf("policy_poll: want a positive duration, or off, got %q", s)
			}
			a.PolicyPoll = caddy.Duration(dur)
		case "audit_retention":
			var s string
			if err := oneArg(d, &s); err != nil {
				return err
			}
			if s == "forever" {
				a.AuditRetention = -1 // never pruned; in JSON, 0 is the default
				return nil
			}
			dur, err := caddy.ParseDuration(s)
			if err != nil || dur <= 0 {
				return d.Errf("audit_retention: want a positive duration, or forever, got %q", s)
			}
			a.AuditRetention = caddy.Duration(dur)
		default:
			return d.Errf("unrecognized subdirective %q", key)
		}
		return nil
	})
	if err != nil {
		return nil, err
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
//		provider          auto|openai-chat|openai-responses|anthropic|gemini
//		owner             <placeholder>
//		owner_fields      <gjson path>...
//		tenant            <placeholder>
//		roles             <placeholder>
//		allow             legacy_functions|batches|stored_responses|realtime|ambiguous_alt...
//		allow_paths       <path>|<prefix>/*...
//		max_request_body  <bytes>
//		max_response_body <bytes>
//		resume_wait        <duration>
//		resume_keepalive   <duration>
//		resume_max_streams <count>
//		resume_max_streams_per_person <count>
//		resume_poll        <duration>
//	}
//
// resume_wait 0 means off (the default).
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	err := eachKey(d, func(key string) error {
		switch key {
		case "policy":
			return oneArg(d, &h.Policy)
		case "owner":
			return oneArg(d, &h.Owner)
		case "provider":
			return oneArg(d, &h.Provider)
		case "owner_fields":
			h.OwnerFields = d.RemainingArgs()
			if len(h.OwnerFields) == 0 {
				return d.ArgErr()
			}
		case "tenant":
			return oneArg(d, &h.Tenant)
		case "roles":
			return oneArg(d, &h.Roles)
		case "allow":
			if h.Allow = d.RemainingArgs(); len(h.Allow) == 0 {
				return d.ArgErr()
			}
			if err := h.checkAllow(); err != nil {
				return d.Err(err.Error())
			}
		case "allow_paths":
			if h.AllowPaths = d.RemainingArgs(); len(h.AllowPaths) == 0 {
				return d.ArgErr()
			}
			if err := (&Handler{AllowPaths: h.AllowPaths}).checkAllowPaths(); err != nil {
				return d.Err(err.Error())
			}
		case "max_request_body":
			return bytesArg(d, key, &h.MaxRequestBody)
		case "max_response_body":
			return bytesArg(d, key, &h.MaxResponseBody)
		case "resume_wait":
			return durationArg(d, key, &h.ResumeWait)
		case "resume_keepalive":
			return positiveDurationArg(d, key, &h.ResumeKeepalive)
		case "resume_poll":
			return positiveDurationArg(d, key, &h.ResumePoll)
		case "resume_max_streams":
			var s string
			if err := oneArg(d, &s); err != nil {
				return err
			}
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return d.Errf("resume_max_streams: want a positive whole number, got %q", s)
			}
			h.ResumeMaxStreams = n
		case "resume_max_streams_per_person":
			var s string
			if err := oneArg(d, &s); err != nil {
				return err
			}
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return d.Errf("resume_max_streams_per_person: want a positive whole number, got %q", s)
			}
			h.ResumeMaxStreamsPerPerson = n
		default:
			return d.Errf("unrecognized subdirective %q", key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if h.Policy == "" {
		return d.Err("policy is required")
	}
	return nil
}

// positiveDurationArg reads a duration greater than zero.
func positiveDurationArg(d *caddyfile.Dispenser, key string, v *caddy.Duration) error {
	if err := durationArg(d, key, v); err != nil {
		return err
	}
	if *v == 0 {
		return d.Errf("%s: want a positive duration", key)
	}
	return nil
}

// durationArg reads a duration (1m30s, or whole seconds), not negative.
func durationArg(d *caddyfile.Dispenser, key string, v *caddy.Duration) error {
	var s string
	if err := oneArg(d, &s); err != nil {
		return err
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil {
		return d.Errf("%s: %v", key, err)
	}
	if dur < 0 {
		return d.Errf("%s: %q is negative", key, s)
	}
	*v = caddy.Duration(dur)
	return nil
}

// bytesArg reads a size in bytes, a positive whole number.
func bytesArg(d *caddyfile.Dispenser, key string, n *int64) error {
	var s string
	if err := oneArg(d, &s); err != nil {
		return err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		return d.Errf("%s: want a positive number of bytes, got %q", key, s)
	}
	*n = v
	return nil
}

func parseMCP(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	var m MCP
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return &m, err
}

// UnmarshalCaddyfile sets up the MCP handler from Caddyfile tokens:
//
//	toolgate_mcp {
//		policy            <path>
//		owner             <placeholder>
//		tenant            <placeholder>
//		roles             <placeholder>
//		state_ttl         <duration>
//		confirm_wait      <duration>
//		max_request_body  <bytes>
//		max_response_body <bytes>
//	}
func (h *MCP) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	err := eachKey(d, func(key string) error {
		switch key {
		case "policy":
			return oneArg(d, &h.Policy)
		case "owner":
			return oneArg(d, &h.Owner)
		case "tenant":
			return oneArg(d, &h.Tenant)
		case "roles":
			return oneArg(d, &h.Roles)
		case "state_ttl":
			if err := durationArg(d, key, &h.StateTTL); err != nil {
				return err
			}
			if h.StateTTL == 0 {
				return d.Errf("state_ttl: want a positive duration")
			}
		case "confirm_wait":
			if err := durationArg(d, key, &h.ConfirmWait); err != nil {
				return err
			}
			if h.ConfirmWait == 0 {
				h.ConfirmWait = -1 // none; in JSON, 0 is the default
			}
		case "max_request_body":
			return bytesArg(d, key, &h.MaxRequestBody)
		case "max_response_body":
			return bytesArg(d, key, &h.MaxResponseBody)
		default:
			return d.Errf("unrecognized subdirective %q", key)
		}
		return nil
	})
	if err != nil {
		return err
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
//		tenant   <placeholder>
//		roles    <placeholder>
//	}
func (p *PagesHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return eachKey(d, func(key string) error {
		switch key {
		case "answerer":
			return oneArg(d, &p.Answerer)
		case "tenant":
			return oneArg(d, &p.Tenant)
		case "roles":
			return oneArg(d, &p.Roles)
		}
		return d.Errf("unrecognized subdirective %q", key)
	})
}

// eachKey reads a directive that takes no arguments and a block, calling f
// for each subdirective; a subdirective given twice is an error.
func eachKey(d *caddyfile.Dispenser, f func(key string) error) error {
	d.Next() // the directive or option name
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
		if err := f(key); err != nil {
			return err
		}
	}
	return nil
}

// oneArg reads the single argument of a subdirective.
func oneArg(d *caddyfile.Dispenser, dst *string) error {
	if !d.AllArgs(dst) {
		return d.ArgErr()
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
