package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/policies"
)

// validate runs Caddy's own validate command (its flags, its checks, its
// log) and then, when a policy file is what failed, says the policy's
// one-line message on a line of its own: Caddy logs it only at the end of
// a JSON chain of "loading ... provision ..." prefixes.
func validate(args []string) int {
	c, ok := caddycmd.Commands()["validate"]
	if !ok || c.CobraFunc == nil {
		caddycmd.Main()
		return 0
	}
	cmd := &cobra.Command{Use: "toolgate validate " + c.Usage, Short: c.Short, Long: c.Long, SilenceUsage: true}
	c.CobraFunc(cmd)
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		if msg := policyMessage(err); msg != "" {
			fmt.Fprintln(os.Stderr, msg)
		}
		return err
	}
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		return 1
	}
	return 0
}

// policyMessage is the policy mistake in an error from Caddy's validate,
// or "". The handlers return a *policies.Error as it is; Caddy's chain
// keeps only its text (it wraps with %v), which ends the chain after the
// handler's "provision <module>: " prefix.
func policyMessage(err error) string {
	if err == nil {
		return ""
	}
	if pe, ok := errors.AsType[*policies.Error](err); ok {
		return pe.Error()
	}
	msg := err.Error()
	for _, mod := range []string{"http.handlers.toolgate", "http.handlers.toolgate_mcp"} {
		prefix := "provision " + mod + ": "
		if i := strings.LastIndex(msg, prefix); i >= 0 {
			if rest := msg[i+len(prefix):]; strings.HasPrefix(rest, "policy ") {
				return rest
			}
		}
	}
	return ""
}
