package policies

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// versionLen is how many hex digits of a sha256 a version keeps: 48 bits
// tell apart the versions of one file and of one action in it.
const versionLen = 12

// Version returns the policy's version: the first 12 hex digits of the
// sha256 of the file's bytes. Holds record the version they were made
// under; "" on a nil Policy.
func (p *Policy) Version() string {
	if p == nil || len(p.digest) < versionLen {
		return ""
	}
	return p.digest[:versionLen]
}

// Version returns the version of what decides the action's calls and where
// they go: its effect, schema, card (reason, record and rows), endpoint
// (method, URL, headers), MCP behaviour and what its forms ask, as 12 hex
// digits of a sha256. Words that decide nothing — the description, the
// reply, translations, titles, the TTL — are left out, so editing them
// leaves the version as it was. A hold made under another version of its
// policy runs only while its action's version is unchanged.
func (a *Action) Version() string {
	if a == nil {
		return ""
	}
	return a.version
}

// actionVersion computes Action.version once the action is read.
func actionVersion(a *Action) string {
	tmpl := func(t *Template) string {
		if t == nil {
			return ""
		}
		return t.String()
	}
	// Rows and choices by their default labels only: translations decide
	// nothing, and a version made before labels could be translated stays.
	type row struct{ Label, Path string }
	type choice struct {
		Value any
		Label string
	}
	type card struct {
		Reason   string
		Record   string
		Rows     []row
		Editable []string `json:",omitempty"` // omitted when none: versions made before it stay
	}
	type ask struct {
		Message               string
		Confirm, Textarea     []string
		Choices               map[string][]choice
		Defaults              map[string]any
		ChoicesFrom, DefaultF map[string]string
	}
	type rule struct {
		When, Then, Because string
		Approvers           *Approvers
		FourEyes            *bool
		TTL                 time.Duration
	}
	v := struct {
		Name              string
		Effect            Effect
		Schema            json.RawMessage
		Card              *card
		Method, URL       string
		Headers           map[string]string
		MCPConfirm        bool
		AskForMissing     bool
		RequiredForAgents []string
		Ask               *ask
		ForbiddenKeys     []string
		Mode              Mode
		Approvers         *Approvers
		FourEyes          bool
		// Rules and OfferWhen only when given: the versions of actions
		// without them stay as they were before rules.
		Rules     []rule `json:",omitempty"`
		OfferWhen string `json:",omitempty"`
	}{
		Name: a.Name, Effect: a.Effect, Schema: a.Schema,
		Method: a.Run.Method, URL: tmpl(a.Run.URL), Headers: a.Run.Headers,
		MCPConfirm: a.MCP.Confirm, AskForMissing: a.AskForMissing,
		RequiredForAgents: a.RequiredForAgents, ForbiddenKeys: a.ForbiddenKeys,
		Mode: a.Mode, Approvers: a.Approvers, FourEyes: a.FourEyes,
	}
	v.OfferWhen = a.OfferWhen
	for _, r := range a.Rules {
		v.Rules = append(v.Rules, rule{r.When, string(r.Then), r.Because, r.Approvers, r.FourEyes, r.TTL})
	}
	if a.Card != nil {
		v.Card = &card{Reason: a.Card.Reason, Record: tmpl(a.Card.Record), Editable: a.Card.Editable}
		for _, r := range a.Card.Rows {
			v.Card.Rows = append(v.Card.Rows, row{r.Label, r.Path})
		}
	}
	if k := a.Ask; k != nil {
		v.Ask = &ask{Message: k.Message, Confirm: k.Confirm, Textarea: k.Textarea, Defaults: k.Defaults,
			ChoicesFrom: map[string]string{}, DefaultF: map[string]string{}}
		if k.Choices != nil {
			v.Ask.Choices = map[string][]choice{}
			for f, cs := range k.Choices {
				for _, c := range cs {
					v.Ask.Choices[f] = append(v.Ask.Choices[f], choice{c.Value, c.Label})
				}
			}
		}
		for f, t := range k.ChoicesFrom {
			v.Ask.ChoicesFrom[f] = tmpl(t)
		}
		for f, t := range k.DefaultFrom {
			v.Ask.DefaultF[f] = tmpl(t)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Every part is a string, number, boolean, list or map of them.
		panic(fmt.Sprintf("encoding action %q for its version: %v", a.Name, err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:versionLen]
}

// Identity names the policy by what it says, not where it was read from:
// its app name ("policy" when the file gives none), "@", and its Version.
// A byte-identical file at another path (another replica's layout, a
// file moved) is the same policy; an edited file is another one. Holds
// and the keys that let one call stand for another carry it.
func (p *Policy) Identity() string {
	if p == nil {
		return ""
	}
	name := p.App
	if name == "" {
		name = "policy"
	}
	return name + "@" + p.Version()
}
