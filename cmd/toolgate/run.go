package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/caddymodule"
)

// runCommand runs Caddy's own run command (its flags, its log), with two plain
// lines of Toolgate's around it. Before Caddy loads the config, a mistake
// the module would refuse (caddymodule.Preflight: the secret, pages, a
// policy file) is said on one line of stderr with its fix, ahead of Caddy's
// JSON log, which says it again at the end of a long chain. Once the config
// runs, one line on stdout says where the routes answer and what to do
// next: a gate has no model behind it until something answers upstream.
func runCommand(args []string) int {
	c, ok := caddycmd.Commands()["run"]
	if !ok || c.CobraFunc == nil && c.Func == nil {
		caddycmd.Main()
		return 0
	}
	cmd := &cobra.Command{Use: "toolgate run " + c.Usage, Short: c.Short, Long: c.Long, SilenceUsage: true}
	if c.CobraFunc != nil {
		c.CobraFunc(cmd)
	} else {
		cmd.RunE = caddycmd.WrapCommandFuncForCobra(c.Func)
		cmd.Flags().AddGoFlagSet(c.Flags)
	}
	caddyRun := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if st, err := preflight(cmd); err != nil {
			fmt.Fprintln(os.Stderr, err)
		} else if st.Gated() {
			go sayReady(os.Stdout, st)
		}
		return caddyRun(cmd, args)
	}
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		return caddy.ExitCodeFailedStartup
	}
	return 0
}

// preflight reads the config `run` will load, as Caddy's run reads it
// (--config, else an adjacent Caddyfile; the caddyfile adapter for a file
// named Caddyfile*), but without Caddy's log, and checks it. What it cannot
// read or see the same way (stdin, --resume, --envfile, another adapter's
// mistakes) it leaves to Caddy, which says it.
func preflight(cmd *cobra.Command) (caddymodule.Startup, error) {
	flags := cmd.Flags()
	file, _ := flags.GetString("config")
	adapter, _ := flags.GetString("adapter")
	resume, _ := flags.GetBool("resume")
	envfiles, _ := flags.GetStringSlice("envfile")
	if resume || len(envfiles) > 0 || file == "-" || adapter != "" && file == "" {
		return caddymodule.Startup{}, nil
	}
	if file == "" {
		file = "Caddyfile"
		if _, err := os.Stat(file); err != nil {
			return caddymodule.Startup{}, nil
		}
	}
	body, err := os.ReadFile(file)
	if err != nil {
		return caddymodule.Startup{}, nil
	}
	base := strings.ToLower(filepath.Base(file))
	if adapter == "" && filepath.Ext(base) != ".json" && (strings.HasPrefix(base, "caddyfile") || strings.HasSuffix(base, ".caddyfile")) {
		adapter = "caddyfile"
	}
	if adapter != "" {
		a := caddyconfig.GetAdapter(adapter)
		if a == nil {
			return caddymodule.Startup{}, nil
		}
		if body, _, err = a.Adapt(body, map[string]any{"filename": file}); err != nil {
			return caddymodule.Startup{}, nil
		}
	}
	return caddymodule.Preflight(body)
}

// sayReady waits for Caddy to run the config and prints the ready line.
// A config that fails to load never runs: then nothing is said (the
// process ends with Caddy's error).
func sayReady(w io.Writer, st caddymodule.Startup) {
	for caddy.ActiveContext().Context == nil {
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Fprintln(w, readyLine(st))
}

// readyLine says, on one line, where the gate answers and what to do next.
func readyLine(st caddymodule.Startup) string {
	var b strings.Builder
	b.WriteString("toolgate: ready.")
	if len(st.ModelRoutes) > 0 {
		fmt.Fprintf(&b, " Model route: %s (an app's OpenAI base URL: %s/v1)", strings.Join(st.ModelRoutes, ", "), st.ModelRoutes[0])
		if len(st.Upstreams) > 0 {
			fmt.Fprintf(&b, ", forwarding to %s", strings.Join(st.Upstreams, ", "))
		}
		b.WriteString(".")
	}
	if len(st.MCPRoutes) > 0 {
		fmt.Fprintf(&b, " MCP route: %s.", strings.Join(st.MCPRoutes, ", "))
	}
	if st.Pages != "" {
		fmt.Fprintf(&b, " The person answers under %s/.", strings.TrimSuffix(st.Pages, "/"))
	}
	if len(st.ModelRoutes) > 0 {
		b.WriteString(" Next: a model must answer upstream, else the model route answers 502: from the repository, in a second terminal with the same TOOLGATE_SECRET, `go run ./examples/demo -gate=false` starts the demo's stand-in model and app; or point the upstream at your provider and your app's base URL at the model route.")
	}
	return b.String()
}
