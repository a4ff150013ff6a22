package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile" // the Caddyfile adapter
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/toolgate/toolgate/caddymodule"
)

// startGate runs the gate in this process: Caddy with Toolgate, on the
// Caddyfile at path, as `toolgate run --config path` would, but with the
// admin endpoint off (nothing here needs it) and the log written to
// logFile instead of the terminal. stop shuts it down, closing the store.
func startGate(path, logFile string) (stop func(), err error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the gate's Caddyfile (run the demo from the repository's root, or give -config): %w", err)
	}
	adapted, _, err := caddyconfig.GetAdapter("caddyfile").Adapt(body, map[string]any{"filename": path})
	if err != nil {
		return nil, fmt.Errorf("adapting %s: %w", path, err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(adapted, &cfg); err != nil {
		return nil, fmt.Errorf("reading the adapted config: %w", err)
	}
	cfg["admin"] = map[string]any{"disabled": true}
	cfg["logging"] = map[string]any{"logs": map[string]any{"default": map[string]any{
		"writer": map[string]any{"output": "file", "filename": logFile},
		"level":  "INFO",
	}}}
	out, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if err := caddy.Load(out, true); err != nil {
		return nil, fmt.Errorf("starting the gate (is another toolgate running, holding its ports or its store?): %w", err)
	}
	return func() { _ = caddy.Stop() }, nil
}

// storeDir is where the gate keeps its holds when the Caddyfile names no
// store: "toolgate" in Caddy's data directory.
func storeDir() string {
	return filepath.Join(caddy.AppDataDir(), "toolgate")
}
