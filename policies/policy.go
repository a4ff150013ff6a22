package policies

import (
	"cel.dev/cel-go/cel"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"sort"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Effect says what an action does to the world, and so whether a person must
// confirm it before it runs.
type Effect string

// The effects an action may declare in its effect key.
const (
	// Read looks things up and changes nothing. A complete call passes
	// through to the app; an incomplete one can become a form.
	Read Effect = "read"
	// Write changes the app's data. A complete call passes through to the
	// app; an incomplete one can become a form.
	Write Effect = "write"
	// Destructive cannot be taken back, such as deleting a post. Every call
	// waits for the person to confirm a card.
	Destructive Effect = "destructive"
	// External reaches outside the app, such as sending an email. Every call
	// waits for the person to confirm a card.
	External Effect = "external"
)

// NeedsCard reports whether calls of this effect wait for a confirmation card.
func (e Effect) NeedsCard() bool {
	return e == Destructive || e == External
}

// Policy is one loaded policy file. It is read-only after loading and safe
// for concurrent use.
type Policy struct {
	File    string             // the path it was loaded from
	App     string             // the app's name for pages ("" if not given)
	Actions map[string]*Action // by tool name
	// Mode is the file's mode key (Enforce when not given); each action
	// holds its own in Action.Mode.
	Mode Mode
	// Notify is the file's notify key (nil when not given); each action
	// holds its own in Action.Notify.
	Notify *Notify
	// DeclineNote is the file's decline_note key; each action holds its
	// own in Action.DeclineNote.
	DeclineNote bool

	digest string   // sha256 hex of the file's bytes
	shadow bool     // some action is in shadow mode
	offer  bool     // some action not in shadow mode has offer_when
	gated  []string // the tools whose calls are gated, sorted (GatedTools)
}

// HasOfferWhen reports whether an action not in shadow mode gives
// offer_when, so a route knows whether to look at a request's tool list
// for tools to take out (interceptor.DropTools).
func (p *Policy) HasOfferWhen() bool { return p != nil && p.offer }

// NotOffered reports whether the tool is declared, not in shadow mode,
// and its offer_when does not offer it to person (or cannot be evaluated).
func (p *Policy) NotOffered(tool string, person RulePerson) bool {
	a := p.Action(tool)
	if a == nil || a.Shadow() || !a.HasOfferWhen() {
		return false
	}
	ok, _ := a.Offers(person)
	return !ok
}

// askHint tells the model an ask-for-missing action may be called with
// what it knows.
const askHint = " If you do not know every field, call it with what you know: the person is asked for the rest."

// OfferTool returns a declared tool's definition as the policy offers it
// to the model: its parameters (JSON Schema) with the required-for-agents
// fields required and not nullable (Action.AgentSchema), and the suffix
// of its description (the ask hint, for an ask-for-missing action). It is
// the one rule every front applies to a declared tool's definition (a
// model request's tools, an MCP tools/list answer). ok is false when the
// definition is to stay as the app wrote it: the tool is not declared,
// its action is in shadow mode (shadow mode changes nothing the model or
// the app reads) or changes nothing of it, or it has no parameters.
func (p *Policy) OfferTool(name string, parameters []byte) (schema []byte, descriptionSuffix string, ok bool) {
	a := p.Action(name)
	if a == nil || a.Shadow() || (len(a.RequiredForAgents) == 0 && !a.AskForMissing) || parameters == nil {
		return nil, "", false
	}
	suffix := ""
	if a.AskForMissing {
		suffix = askHint
	}
	return a.AgentSchema(parameters), suffix, true
}

// HasShadow reports whether any action of the file is in shadow mode, so
// a route knows at once whether to watch its responses on the side.
func (p *Policy) HasShadow() bool { return p != nil && p.shadow }

// Load reads and checks the policy file at path. Every error names the file.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	return Parse(path, data)
}

// Parse checks the policy file contents data. file names the file in error
// messages and in Policy.File; nothing is read from it.
func Parse(file string, data []byte) (*Policy, error) {
	p, err := parse(file, data)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	p.digest = hex.EncodeToString(sum[:])
	for name, a := range p.Actions {
		a.version = actionVersion(a)
		if !a.Shadow() {
			p.gated = append(p.gated, name)
		}
	}
	sort.Strings(p.gated)
	return p, nil
}

// GatedTools returns the names of the tools whose calls the gate inspects
// (every declared action not in shadow mode), sorted. A response the gate
// cannot read as a provider's answer must not name any of them (see
// shape.Names). The slice is shared: do not change it.
func (p *Policy) GatedTools() []string {
	if p == nil {
		return nil
	}
	return p.gated
}

// Action returns the declared action for a tool name as the model calls it,
// or nil when the policy does not declare it (calls of undeclared tools are
// not the gate's business). It is safe on a nil Policy.
func (p *Policy) Action(tool string) *Action {
	if p == nil {
		return nil
	}
	return p.Actions[tool]
}

// Digest returns the sha256 of the file's bytes in hex: a stable key for
// caches of anything derived from the policy, so a reload of an unchanged
// file can reuse them.
func (p *Policy) Digest() string {
	return p.digest
}

// Action is one declared tool: what it does, what the person is asked, and
// where it runs once released.
type Action struct {
	// Name is the tool name, exactly as the model calls it.
	Name string
	// Effect decides whether calls wait for a card (see Effect.NeedsCard).
	Effect Effect
	// Schema is the JSON Schema of the tool's arguments, as compact JSON
	// with the file's key order kept (forms list fields in that order);
	// nil when the policy gives none.
	Schema json.RawMessage
	// Card is what the person confirms; nil for read and write actions.
	Card *Card
	// Run is the action's HTTP endpoint; its URL is nil when the policy
	// gives none (the action is then released only by an MCP server).
	Run Endpoint
	// MCP is how an MCP route treats the action.
	MCP MCP
	// Reply is what the model reads after a successful run ("" when not
	// given): the plain string, or the en entry of a reply given per
	// language. The person's page says it in their language (Replies).
	Reply string
	// Replies is the reply per language when the file gives one
	// ({en: Removed., de: Gelöscht.}); nil for a plain string.
	Replies Texts
	// TTL is how long a held call waits for the person; 0 means the gate's
	// default.
	TTL time.Duration

	// AskForMissing turns a read or write call that leaves out required
	// fields, or gives values the schema refuses, into a form for the
	// person instead of a refusal, when a form can hold every such field.
	// Never set on destructive and external actions.
	AskForMissing bool
	// RequiredForAgents are fields agents must give although the schema
	// leaves them optional: AgentSchema makes them required and not
	// nullable, and calls are checked against that.
	RequiredForAgents []string
	// Titles are field labels by locale: field → BCP 47 tag → title. The
	// schema's own title stands in for any other locale.
	Titles map[string]map[string]string
	// Ask shapes the forms of an AskForMissing action; nil when the file
	// gives none (every form then uses the defaults).
	Ask *Ask
	// ForbiddenKeys are keys no form ever asks for, like secrets: the
	// action's forbidden_keys and then the file's, each once.
	ForbiddenKeys []string

	// Mode is the action's mode key, else the file's: Enforce or Shadow.
	Mode Mode
	// Notify is where notices about the action's holds go: the action's
	// notify key, else the file's; nil for none (or notify: false).
	Notify *Notify
	// Approvers may answer the action's card besides the owner; nil when
	// only the owner may (the default). Destructive and external only.
	Approvers *Approvers
	// FourEyes forbids the owner to confirm their own call: one of the
	// Approvers must. The owner may still decline it. Needs Approvers.
	FourEyes bool
	// DeclineNote lets the person write a short note to their assistant
	// with Decline (the action's decline_note key, else the file's).
	// Destructive and external only.
	DeclineNote bool
	// Rules decide a call on what it does (rules.go): the first whose
	// expression holds decides; none, and Effect decides. Nil without
	// rules.
	Rules []*Rule
	// OfferWhen is the offer_when expression, over person only: the tool
	// is offered to (and its calls accepted from) the persons for whom it
	// holds. "" offers it to everyone.
	OfferWhen string

	offer          cel.Program // OfferWhen compiled; nil without one
	rulesUseRecord bool        // some rule reads record

	schema *jsonschema.Schema // Schema compiled once at load; nil without one
	agent  *jsonschema.Schema // AgentSchema(Schema) compiled at load; nil when it is Schema
	cache  *schemaCache       // schemas from requests, compiled once each

	version string // Version, computed at load
}

// MCP is an action's behaviour on an MCP route.
type MCP struct {
	// Confirm lets a destructive or external call from an MCP client that
	// declares URL-mode elicitation wait for the person's confirmation of
	// its card, opened from the client. Off (the default), such calls are
	// refused over MCP with a tool error, as the reference package does.
	Confirm bool
}

// Endpoint is where a released call goes. The gate sends the final arguments
// as a JSON body.
type Endpoint struct {
	// Method is GET, POST, PUT, PATCH or DELETE (POST when the file gives none).
	Method string
	// URL may name top-level arguments, e.g. http://blog.internal/posts/{post}.
	URL *Template
	// Headers are static headers sent with every run, keyed by their
	// canonical name (http.CanonicalHeaderKey). They may not set the
	// headers the gate owns: Idempotency-Key, X-Toolgate-*, Host,
	// Content-Length and Transfer-Encoding.
	Headers map[string]string
}

// Card is what a person confirms before a destructive or external call runs.
// The person sees only the reason and rows read on the server from the
// record, never the model's words or arguments.
type Card struct {
	// Reason is the sentence the person answers, as plain text: the plain
	// string, or the en entry of a reason given per language. It is what
	// the card is built and fingerprinted from, and what the model and the
	// app's chat read in the waiting text.
	Reason string
	// Reasons is the reason per language when the file gives one
	// ({en: Delete this post?, de: Diesen Beitrag löschen?}): the person's
	// page shows the one matching their Accept-Language. Nil for a plain
	// string.
	Reasons Texts
	// Record is the GET URL of the record the call acts on, read to fill
	// the rows and read again before the run to see it has not changed;
	// nil when the card has no record.
	Record *Template
	// Rows are shown under the reason, in the order of the file.
	Rows []Row
	// Editable are the arguments the person may correct before
	// confirming, in the file's order: top-level properties of the
	// action's schema that a form can hold, none of them named by the
	// record or run URL (Action.PinnedFields). Nil: the call runs as the
	// model gave it.
	Editable []string
}

// Row is one line of a card: a label and the gjson path of its value in the
// record's JSON, or the validated argument it shows.
type Row struct {
	// Label is the plain label, or the en entry of one given per
	// language: what the card is built and fingerprinted from.
	Label string
	Path  string // as the file writes it (args.<field> for an argument)
	// Arg is the top-level argument the row shows, when its path is
	// args.<field> (a card without record only); "" for a record's value.
	Arg string
	// Labels is the label per language when the file gives one ({en:
	// Post, de: Beitrag}): the person's page shows the one matching their
	// Accept-Language. Nil for a plain label.
	Labels Texts
}
