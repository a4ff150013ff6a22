package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/policies"
)

// policyCases is a `toolgate policy test` file: a policy and the calls it
// must decide as each case expects (policies/cases.schema.json).
type policyCases struct {
	// Policy is the policy file, relative to the cases file.
	Policy string       `yaml:"policy"`
	Cases  []policyCase `yaml:"cases"`
}

type policyCase struct {
	Name     string         `yaml:"name"`
	Tool     string         `yaml:"tool"`
	Args     map[string]any `yaml:"args"`
	Record   any            `yaml:"record"`
	Person   casePerson     `yaml:"person"`
	Protocol string         `yaml:"protocol"`
	// Expect is pass, card, form or refuse.
	Expect string `yaml:"expect"`
	// Rule, when given, is the index of the rule that must decide (-1:
	// none).
	Rule *int `yaml:"rule"`
}

type casePerson struct {
	ID     string   `yaml:"id"`
	Tenant string   `yaml:"tenant"`
	Roles  []string `yaml:"roles"`
}

// policyTest runs a cases file: a line per case, and errPolicyMistakes
// (exit status 1) when any case fails, naming it.
func policyTest(w io.Writer, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var cs policyCases
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&cs); err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	if cs.Policy == "" || len(cs.Cases) == 0 {
		return fmt.Errorf("reading %s: it needs policy and cases", file)
	}
	path := cs.Policy
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(file), path)
	}
	p, err := policies.Load(path)
	if err != nil {
		return err
	}
	failed := 0
	for i, c := range cs.Cases {
		name := c.Name
		if name == "" {
			name = fmt.Sprintf("case %d", i+1)
		}
		if why := runCase(p, c); why != "" {
			failed++
			fmt.Fprintf(w, "FAIL %s: %s\n", name, why)
			continue
		}
		fmt.Fprintf(w, "ok   %s\n", name)
	}
	if failed > 0 {
		fmt.Fprintf(w, "%d of %d cases failed\n", failed, len(cs.Cases))
		return errPolicyMistakes
	}
	fmt.Fprintf(w, "%d cases passed\n", len(cs.Cases))
	return nil
}

// runCase returns why a case fails, "" when it passes.
func runCase(p *policies.Policy, c policyCase) string {
	switch c.Expect {
	case "pass", "card", "form", "refuse":
	default:
		return fmt.Sprintf("expect is %q; want pass, card, form or refuse", c.Expect)
	}
	args, err := json.Marshal(c.Args)
	if err != nil || c.Args == nil {
		args = []byte("{}")
	}
	in := gate.ExplainInput{Person: policies.RulePerson{ID: c.Person.ID, Tenant: c.Person.Tenant, Roles: c.Person.Roles}, Protocol: c.Protocol, Now: time.Now()}
	if in.Protocol == "" {
		in.Protocol = "openai-chat"
	}
	if c.Record != nil {
		if in.Record, err = json.Marshal(c.Record); err != nil {
			return "the record is not JSON: " + err.Error()
		}
	}
	e := gate.ExplainWith(p, c.Tool, args, in)
	if e.NeedsRecord {
		return fmt.Sprintf("rules[%d] reads the record; give the case a record", e.Rule.Index)
	}
	got := e.Outcome
	if got != c.Expect {
		why := fmt.Sprintf("got %s, want %s", got, c.Expect)
		if e.Refusal != "" {
			why += " (the model reads: " + e.Refusal + ")"
		}
		if e.Rule != nil {
			why += fmt.Sprintf(" (decided by rules[%d])", e.Rule.Index)
		}
		return why
	}
	if c.Rule != nil {
		idx := -1
		if e.Rule != nil {
			idx = e.Rule.Index
		}
		if idx != *c.Rule {
			return fmt.Sprintf("decided by rule %d, want %d (-1: none)", idx, *c.Rule)
		}
	}
	return ""
}
