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
// admin endpoint off (nothing here needs it), its store of holds in
// dir/store and its log in dir/gate.log instead of Caddy's data directory
// and the terminal: the demo's holds and audit entries are not added to
// those of a gate the operator runs. stop shuts it down, closing the store.
func startGate(path, dir string) (stop func(), err error) {
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
	apps, _ := cfg["apps"].(map[string]any)
	tg, _ := apps["toolgate"].(map[string]any)
	if tg == nil {
		return nil, fmt.Errorf("%s has no toolgate global option", path)
	}
	if tg["postgres"] == nil {
		tg["store"] = storeDir(dir)
	}
	cfg["logging"] = map[string]any{"logs": map[string]any{"default": map[string]any{
		"writer": map[string]any{"output": "file", "filename": logFile(dir)},
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

// storeDir is where the demo's gate keeps its holds, in the demo's folder.
func storeDir(dir string) string { return filepath.Join(dir, "store") }

// logFile is the demo's gate's log, in the demo's folder.
func logFile(dir string) string { return filepath.Join(dir, "gate.log") }
