// Package testkit runs the parts of a Toolgate test that are real (Caddy
// with the module, loaded from a Caddyfile) and fakes the two that lie
// outside the product: the model provider and the app's action endpoint.
package testkit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/freeport"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile" // the Caddyfile adapter
)

// FreePort returns a loopback port that is free and that no other caller
// in this process was given.
func FreePort(t testing.TB) int { return freeport.Get(t) }

// Adapt turns a Caddyfile into Caddy's JSON config.
func Adapt(t testing.TB, caddyfile string) []byte {
	t.Helper()
	cfg, warn, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		t.Fatalf("adapting Caddyfile: %v\n%s", err, caddyfile)
	}
	for _, w := range warn {
		if !strings.Contains(w.Message, "formatted") {
			t.Logf("caddyfile warning: %s:%d: %s", w.File, w.Line, w.Message)
		}
	}
	return cfg
}

// Run loads a Caddyfile into the process's Caddy (one config at a time)
// and stops it when the test ends. Use "admin off" in the global options.
func Run(t testing.TB, caddyfile string) {
	t.Helper()
	cfg := Adapt(t, caddyfile)
	if err := caddy.Load(cfg, true); err != nil {
		t.Fatalf("loading config: %v", err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })
}

// Stop stops the process's Caddy, closing every app (and so the store).
func Stop(t testing.TB) {
	t.Helper()
	if err := caddy.Stop(); err != nil {
		t.Fatalf("stopping caddy: %v", err)
	}
}

// Load loads a config and returns the error instead of failing.
func Load(t testing.TB, caddyfile string) error {
	t.Helper()
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		return fmt.Errorf("adapting: %w", err)
	}
	return caddy.Load(cfg, true)
}
