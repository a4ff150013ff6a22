package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/policies"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "policy",
		Usage: "check <file>... | explain <file> <tool> <arguments-json> | test <cases.yaml> | schema",
		Short: "Checks Toolgate policy files and explains what the gate does with a call",
		Long: `
check loads each policy file with the same checks as caddy validate and
caddy run, without a Caddyfile: one line per file with a mistake, naming the
file, the action and the key. It exits 1 when any file has a mistake.

explain says what the gate would do with one call of a tool on a model
route: pass it to the app, hold it for a card (which rows, read from which
record) or a form (which fields), or refuse it and why, from the policy and
the arguments alone. Nothing is read, stored or run. When the action's rules
decide, it names the rule and the values it read (the arguments, and the
record and person given with --record, --person, --tenant, --roles).

test runs a cases file (policies/cases.schema.json): each case gives a
tool, arguments, an optional record and person, and the outcome expected.
One line per case; it exits 1 when any case fails, naming it.

schema prints the policy file's JSON Schema, for editors that read a
"# yaml-language-server: $schema=" line.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.AddCommand(&cobra.Command{
				Use:   "check <file>...",
				Short: "Checks policy files as the gate loads them",
				Args:  cobra.MinimumNArgs(1),
				RunE: func(cmd *cobra.Command, args []string) error {
					return quiet(cmd, policyCheck(cmd.OutOrStdout(), cmd.ErrOrStderr(), args))
				},
			})
			cmd.AddCommand(&cobra.Command{
				Use:   "schema",
				Short: "Prints the policy file's JSON Schema, for editors",
				Args:  cobra.NoArgs,
				RunE: func(cmd *cobra.Command, _ []string) error {
					_, err := cmd.OutOrStdout().Write(policies.FileSchema())
					return quiet(cmd, err)
				},
			})
			explain := &cobra.Command{
				Use:   "explain <file> <tool> <arguments-json>",
				Short: "Says what the gate would do with one call",
				Args:  cobra.ExactArgs(3),
				RunE: func(cmd *cobra.Command, args []string) error {
					if msg := notAnObject(args[2]); msg != "" {
						// The operator's own input, not a model's call to
						// judge: a usage error, as for a wrong flag.
						fmt.Fprintln(cmd.ErrOrStderr(), "policy explain: "+msg)
						return exitStatus(cmd, 2)
					}
					in, msg := explainInput(cmd)
					if msg != "" {
						fmt.Fprintln(cmd.ErrOrStderr(), "policy explain: "+msg)
						return exitStatus(cmd, 2)
					}
					return quiet(cmd, policyExplainWith(cmd.OutOrStdout(), args[0], args[1], args[2], in))
				},
			}
			explain.Flags().String("record", "", "the record the rules read, as JSON (the running gate reads it as the person)")
			explain.Flags().String("person", "", "the person's id, for the rules and offer_when")
			explain.Flags().String("tenant", "", "the person's tenant")
			explain.Flags().String("roles", "", "the person's roles, separated by commas or spaces")
			explain.Flags().String("protocol", "openai-chat", "the front: openai-chat, openai-responses, anthropic or mcp")
			cmd.AddCommand(explain)
			cmd.AddCommand(&cobra.Command{
				Use:   "test <cases.yaml>",
				Short: "Checks that a policy decides each listed call as expected",
				Args:  cobra.ExactArgs(1),
				RunE: func(cmd *cobra.Command, args []string) error {
					return quiet(cmd, policyTest(cmd.OutOrStdout(), args[0]))
				},
			})
		},
	})
}

// errPolicyMistakes ends toolgate policy check with exit status 1 once the
// mistakes are printed.
var errPolicyMistakes = errors.New("the policy files have mistakes")

// quiet returns err, keeping cobra from printing the usage (the arguments
// were right) and from repeating what was already printed.
func quiet(cmd *cobra.Command, err error) error {
	cmd.SilenceUsage = true
	if errors.Is(err, errPolicyMistakes) {
		cmd.SilenceErrors = true
	}
	return err
}

// exitStatus ends the command with status once its message is printed
// (Caddy's Main exits with the status its command wrapper carries).
func exitStatus(cmd *cobra.Command, status int) error {
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return caddycmd.WrapCommandFuncForCobra(func(caddycmd.Flags) (int, error) { return status, nil })(cmd, nil)
}

// notAnObject says why arguments given to explain are not one JSON
// object, with an example of what is, or "" when they are. A key given
// twice is left to the gate, which refuses such a call from a model.
func notAnObject(args string) string {
	const want = `: give the call's arguments as one JSON object, quoted for the shell, e.g. '{"post": 7}'`
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return fmt.Sprintf("the arguments %q are not JSON (%v)%s", cut(args, 40), err, want)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Sprintf("the arguments %q are JSON but not an object%s", cut(args, 40), want)
	}
	return ""
}

// cut shortens s to at most n bytes, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// policyCheck loads each file as the handlers do. The loader stops at a
// file's first mistake, so each file with a mistake gives one line.
func policyCheck(stdout, stderr io.Writer, files []string) error {
	bad := 0
	actions := 0
	for _, file := range files {
		p, err := policies.Load(file)
		if err != nil {
			bad++
			fmt.Fprintln(stderr, err)
			continue
		}
		actions += len(p.Actions)
		fmt.Fprintf(stdout, "%s: ok, %s\n", file, actionSummary(p))
	}
	if bad > 0 {
		fmt.Fprintf(stderr, "%d of %d policy files have a mistake\n", bad, len(files))
		return errPolicyMistakes
	}
	fmt.Fprintf(stdout, "%d policy %s, %d %s, no mistakes\n", len(files), plural(len(files), "file", "files"), actions, plural(actions, "action", "actions"))
	return nil
}

// actionSummary counts a policy's actions by effect: "3 actions (1 read,
// 2 destructive)".
func actionSummary(p *policies.Policy) string {
	by := map[policies.Effect]int{}
	for _, a := range p.Actions {
		by[a.Effect]++
	}
	var parts []string
	for _, e := range []policies.Effect{policies.Read, policies.Write, policies.Destructive, policies.External} {
		if by[e] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", by[e], e))
		}
	}
	return fmt.Sprintf("%d %s (%s)", len(p.Actions), plural(len(p.Actions), "action", "actions"), strings.Join(parts, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// explainInput reads explain's flags; msg is a usage error.
func explainInput(cmd *cobra.Command) (gate.ExplainInput, string) {
	f := cmd.Flags()
	record, _ := f.GetString("record")
	id, _ := f.GetString("person")
	tenant, _ := f.GetString("tenant")
	roles, _ := f.GetString("roles")
	protocol, _ := f.GetString("protocol")
	in := gate.ExplainInput{Person: policies.RulePerson{ID: id, Tenant: tenant, Roles: splitRoles(roles)}, Protocol: protocol, Now: time.Now()}
	if record != "" {
		if !json.Valid([]byte(record)) {
			return in, "--record is not JSON"
		}
		in.Record = []byte(record)
	}
	return in, ""
}

// policyExplainWith prints gate.ExplainWith of one call: what decides it
// and, when a rule did, which and what it read (the arguments, record and
// person given; never a person's form values, which explain has none of).
func policyExplainWith(w io.Writer, file, tool, args string, in gate.ExplainInput) error {
	p, err := policies.Load(file)
	if err != nil {
		return err
	}
	e := gate.ExplainWith(p, tool, []byte(args), in)
	defer explainRule(w, e, args, in)
	switch e.Outcome {
	case "pass":
		if !e.Gated {
			fmt.Fprintf(w, "pass: %s is not in the policy; the gate does not inspect its calls\n", tool)
			return nil
		}
		if e.Rule != nil {
			fmt.Fprintln(w, "pass: allowed by a rule; the app runs it as before")
			return nil
		}
		fmt.Fprintf(w, "pass: a complete %s call; the app runs it as before\n", p.Action(tool).Effect)
		return nil
	case "refuse":
		fmt.Fprintln(w, "refuse: nothing runs and nobody is asked; the model reads:")
		fmt.Fprintf(w, "  %s\n", e.Refusal)
		return nil
	case "form":
		fmt.Fprintln(w, "form: held until the person fills in")
		for _, f := range e.Fields {
			if r := e.Reasons[f]; r != "" {
				fmt.Fprintf(w, "  field %s (%s)\n", f, r)
			} else {
				fmt.Fprintf(w, "  field %s (shown for review)\n", f)
			}
		}
	case "card":
		fmt.Fprintln(w, "card: held until the person confirms")
		fmt.Fprintf(w, "  reason: %s\n", e.Card.Reason)
		if e.Record != "" {
			fmt.Fprintf(w, "  record: GET %s (read as the person, and again before the run)\n", e.Record)
		}
		for _, r := range e.Card.Rows {
			fmt.Fprintf(w, "  row %s: %s\n", r.Label, r.Path)
		}
	}
	switch {
	case e.RunError != "":
		fmt.Fprintf(w, "  run: %s fails after the answer: %s\n", e.Method, e.RunError)
	case e.Run != "":
		fmt.Fprintf(w, "  run: %s %s\n", e.Method, e.Run)
	}
	if e.TTL > 0 {
		fmt.Fprintf(w, "  waits: %s\n", e.TTL)
	} else {
		fmt.Fprintln(w, "  waits: the gate's default TTL")
	}
	if slices.Contains([]string{"card", "form"}, e.Outcome) {
		fmt.Fprintln(w, "  needs: the person's id (owner); without it the call is refused")
	}
	return nil
}

// explainRule says which rule decided and on what.
func explainRule(w io.Writer, e gate.Explanation, args string, in gate.ExplainInput) {
	name := ""
	if e.Rule != nil {
		name = fmt.Sprintf("rules[%d]", e.Rule.Index)
		if e.Rule.Name != "" {
			name += " (" + e.Rule.Name + ")"
		}
	}
	switch {
	case e.NeedsRecord:
		fmt.Fprintf(w, "  rules: %s reads the record, which was not given (--record); the running gate reads it as the person, and that rule or a later one decides\n", name)
	case e.Rule != nil && e.RuleError != "":
		fmt.Fprintf(w, "  rule: %s could not be evaluated: %s\n", name, e.RuleError)
	case e.Rule != nil:
		fmt.Fprintf(w, "  rule: %s decided %s (when: %s)\n", name, e.Rule.Then, e.Rule.When)
	default:
		return
	}
	fmt.Fprintf(w, "  read: args %s\n", args)
	if in.Record != nil {
		fmt.Fprintf(w, "  read: record %s\n", in.Record)
	}
	fmt.Fprintf(w, "  read: person {id: %q, tenant: %q, roles: %q}, protocol %s\n", in.Person.ID, in.Person.Tenant, in.Person.Roles, in.Protocol)
}
