package gate

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/forms"
	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/wire/jsonedit"
)

// The MCP front. A gated tools/call is decided before it reaches the MCP
// server: it passes, gets a tool error, or gets an input_required result
// (2026-07-28) asking the client for a form, or for the person's
// confirmation on the card page (URL mode). The client's retry carries our
// requestState: signed, bound to the person, the tool, a digest of the
// arguments and a short TTL, and backed by a ticket in the store that one
// retry claims. Nothing runs here: a call that passes every check goes on
// to the MCP server, which runs the tool.

// ProtocolMCP is the protocol of holds made on an MCP route.
const ProtocolMCP = "mcp"

// Keys of the gate's input requests. They are namespaced so that they
// cannot collide with an MCP server's own keys, which pass as they are.
const (
	MCPFormKey    = "io.toolgate/form"
	MCPConfirmKey = "io.toolgate/confirm"
)

// DefaultMCPStateTTL is how long a form's requestState may be redeemed.
// A confirmation's lives as long as its card waits (the action's TTL).
const DefaultMCPStateTTL = 10 * time.Minute

// OutcomeMCPConfirmed is what a card confirmed over MCP reads until the
// client's retry runs it.
const OutcomeMCPConfirmed = "The person confirmed. It runs once, when the assistant's client continues the call."

// statePrefix marks a requestState of ours; anything else is the MCP
// server's own, carried inside ours.
const statePrefix = "tg1."

// MCPStatePrefix begins every requestState of the gate's (IsMCPState),
// for a byte search before any parsing.
const MCPStatePrefix = statePrefix

// maxState caps a requestState the gate will read.
const maxState = 64 << 10

// MCPCall is one gated tools/call as the MCP front read it.
type MCPCall struct {
	Name      string
	Arguments []byte // a JSON object
	// Schema is the tool's input schema as the server lists it; nil when
	// unknown (the policy's schema, when it gives one, wins anyway).
	Schema []byte
	Modern bool                    // the request speaks 2026-07-28
	Elicit interceptor.ElicitModes // what the request declares it can answer
	// Version is the protocol version the request speaks, as it says
	// ("" when it does not say), for the refusals that depend on it.
	Version string
	// ServerTakes reports, when the gate is about to ask the person,
	// whether the MCP server takes this call's protocol version: an error
	// says why not, or why it could not be told, and the person is not
	// asked for a call that could not run. Nil: the caller knows it does.
	ServerTakes func(context.Context) error
	// State is the requestState sent ("" none); Responses the
	// inputResponses, raw, by key.
	State     string
	Responses map[string][]byte
}

// MCPVerdict is what becomes of a call. With Result set the gate answers
// the client itself (a tool error or input_required) and nothing goes to
// the server. Otherwise the call goes on: unchanged unless Rewritten, in
// which case with Arguments, State and Responses as given.
type MCPVerdict struct {
	Result    []byte
	Rewritten bool
	Arguments []byte
	State     string
	Responses map[string][]byte
	// Relay is set when the server's own input_required must be wrapped in
	// our state (WrapMCP): the retry will carry the client's original
	// arguments, and must reach the server with these.
	Relay *MCPRelay
}

// MCPRelay is what WrapMCP needs to carry a server's round trip.
type MCPRelay struct {
	call    MCPCall
	args    []byte   // the arguments the server saw
	changed []string // the fields the person corrected, said before the server's result
}

// mcpState is the signed part of a requestState of ours.
type mcpState struct {
	Kind     string `json:"k"` // form, card or relay
	ID       string `json:"i"` // the ticket in the store
	Person   string `json:"p"` // a MAC of the caller's (tenant, owner), never the identity
	Tool     string `json:"t"`
	Digest   string `json:"d"` // of the arguments the client sends with the retry
	Expires  int64  `json:"e"` // unix milliseconds: a TTL of 1s is 1s, not 0 to 1s
	Upstream string `json:"u,omitempty"`
}

// MCP decides one gated tools/call. See the file comment.
func (f *Front) MCP(ctx context.Context, c MCPCall) MCPVerdict {
	a := f.policy.Action(c.Name)
	retry := IsMCPState(c.State)
	switch {
	case retry:
		// Redeemed even when the policy no longer declares the tool, or
		// watches it in shadow: it was asked under one that gated it,
		// and goes on only under the same version of the action.
	case a == nil:
		return MCPVerdict{} // not gated
	case a.Shadow():
		f.toolSchema = func(string) []byte { return c.Schema }
		f.watch([]provider.Call{{Name: c.Name, Arguments: c.Arguments}})
		return MCPVerdict{} // passes; watched on the side (shadow.go)
	}
	p := f.Person()
	if p.Owner == "" {
		return f.mcpRefuse(c, "no_owner", "the gate could not tell who is calling; nothing ran.")
	}
	if retry {
		return f.mcpRetry(ctx, c, a)
	}
	call := provider.Call{Name: c.Name, Arguments: c.Arguments}
	if ref := f.offered(a); ref != nil {
		f.g.cfg.Observer.Refused(c.Name, ref.reason)
		f.g.audit(f.refusedEvent(c.Name, ref.reason, ref.text))
		return MCPVerdict{Result: interceptor.MCPToolError(ref.text, c.Modern)}
	}
	var pre *ruling
	if a.HasRules() {
		// The rules decide before the client is asked anything: an allowed
		// call passes to the server, a denied one is refused, whatever the
		// client can show (rules.go).
		f.toolSchema = func(string) []byte { return c.Schema }
		if d := decide(f.policy, call, f.toolSchema, f.protocol); ruled(d) {
			rl := f.rules(ctx, call, d)
			switch {
			case rl.refusal != nil:
				f.g.cfg.Observer.Refused(c.Name, rl.refusal.reason)
				f.g.audit(f.ruleRefusedEvent(c.Name, plan{refusal: rl.refusal, rule: rl.rule}))
				return MCPVerdict{Result: interceptor.MCPToolError(rl.refusal.text, c.Modern)}
			case rl.rule != nil && rl.rule.Then == policies.RuleAllow:
				f.g.log.Info("mcp call allowed by a rule", zap.String("action", c.Name), zap.String("rule", rl.rule.Label()))
				return MCPVerdict{}
			}
			pre = &rl
		}
	}
	if a.Effect.NeedsCard() {
		switch {
		case !a.MCP.Confirm:
			return f.mcpRefuse(c, "mcp_confirm", "it needs the person's confirmation, which this gate does not ask for over MCP; nothing ran. The person can do it in the app.")
		case !c.Modern:
			return f.mcpRefuse(c, "no_url_mode", "it needs the person's confirmation on a page, and this client cannot be asked to open one during a tool call: it speaks "+c.speaks()+", and that needs MCP 2026-07-28; nothing ran.")
		case !c.Elicit.URL:
			return f.mcpRefuse(c, "no_url_mode", "it needs the person's confirmation on a page, and this client cannot open one (it declares no URL-mode elicitation); nothing ran.")
		case f.g.cfg.Pages == "":
			return f.mcpRefuse(c, "policy", "the gate has no pages to confirm it on; nothing ran.")
		}
		if v, ok := f.serverTakes(ctx, c); !ok {
			return v // before the card is built: nobody is asked for a call that could not run
		}
	}
	f.toolSchema = func(string) []byte { return c.Schema }
	pl := f.planRuled(ctx, call, 0, pre)
	switch {
	case pl.refusal != nil:
		f.g.cfg.Observer.Refused(c.Name, pl.refusal.reason)
		f.g.audit(f.ruleRefusedEvent(c.Name, pl))
		return MCPVerdict{Result: interceptor.MCPToolError(pl.refusal.text, c.Modern)}
	case pl.pass:
		f.g.log.Debug("mcp call passes", zap.String("action", c.Name))
		return MCPVerdict{}
	case pl.kind == store.KindForm:
		if !c.Modern || !c.Elicit.Form {
			s, _ := readShown(pl.shown)
			why := "it declares no form elicitation"
			if !c.Modern {
				why = "it speaks " + c.speaks() + ", and a form during a tool call needs MCP 2026-07-28"
			}
			return f.mcpRefuse(c, "no_form", fmt.Sprintf("it is missing %s, and this client cannot show the person a form (%s). Nothing ran; call it again with them, or ask the person in words.", describeReasons(s.decision()), why))
		}
		if v, ok := f.serverTakes(ctx, c); !ok {
			return v
		}
		return f.mcpAskForm(ctx, c, pl.shown, pl.form, c.Arguments, c.State)
	default:
		return f.mcpAskConfirm(ctx, c, a, pl, c.State)
	}
}

// IsMCPState reports whether a tools/call's requestState is one of this
// gate's (signed or not): such a retry is the gate's to decide, whether or
// not the policy declares its tool now.
func IsMCPState(state string) bool {
	return strings.HasPrefix(state, statePrefix)
}

// speaks names the protocol version a client speaks, for a refusal.
func (c MCPCall) speaks() string {
	if c.Version == "" {
		return "an MCP version before 2026-07-28"
	}
	return "MCP " + c.Version
}

// serverTakes asks c.ServerTakes before the person is asked; ok is false,
// with the refusal, when the server does not take the call or cannot be
// told to.
func (f *Front) serverTakes(ctx context.Context, c MCPCall) (MCPVerdict, bool) {
	if c.ServerTakes == nil {
		return MCPVerdict{}, true
	}
	if err := c.ServerTakes(ctx); err != nil {
		f.g.log.Warn("mcp server does not take the call", zap.String("action", c.Name), zap.Error(err))
		return f.mcpRefuse(c, "server_version", err.Error()+", so the person was not asked; nothing ran."), false
	}
	return MCPVerdict{}, true
}

func (f *Front) mcpRefuse(c MCPCall, reason, why string) MCPVerdict {
	text := "Toolgate refused " + c.Name + ": " + why
	f.g.cfg.Observer.Refused(c.Name, reason)
	f.g.log.Info("mcp call refused", zap.String("action", c.Name), zap.String("reason", reason))
	f.g.audit(f.refusedEvent(c.Name, reason, text))
	return MCPVerdict{Result: interceptor.MCPToolError(text, c.Modern)}
}

// mcpAskForm answers input_required with the form, backed by a form
// ticket that keeps the decision and the arguments the form completes.
func (f *Front) mcpAskForm(ctx context.Context, c MCPCall, shown, form, args []byte, upstream string) MCPVerdict {
	now := f.g.cfg.Now()
	t := f.ticket(c, now.Add(f.stateTTL))
	t.Shown, t.Arguments = shown, args
	state, err := f.issue(ctx, t, "form", c, upstream)
	if err != nil {
		return f.mcpRefuse(c, "store", "the gate could not keep the question; nothing ran.")
	}
	f.g.cfg.Observer.Held(c.Name)
	f.g.log.Info("mcp call asks for a form", zap.String("ticket", t.ID), zap.String("action", c.Name), zap.String("person", t.Owner))
	return MCPVerdict{Result: interceptor.MCPInputRequired([]interceptor.MCPElicitation{{Key: MCPFormKey, Params: form}}, state)}
}

// mcpAskConfirm stores the card as a hold the person's page shows and
// answers input_required with a URL-mode request to that page.
func (f *Front) mcpAskConfirm(ctx context.Context, c MCPCall, a *policies.Action, pl plan, upstream string) MCPVerdict {
	g := f.g
	now := g.cfg.Now()
	ttl := g.cfg.TTL
	if a.TTL > 0 {
		ttl = a.TTL
	}
	h := store.Hold{
		Owner: f.person.Owner, Tenant: f.person.Tenant, Policy: f.policyKey, Action: c.Name,
		Kind: store.KindCard, Protocol: ProtocolMCP, Shown: pl.shown, Fingerprint: pl.print,
		Arguments: pl.args, State: store.Waiting, Created: now, Expires: now.Add(ttl),
	}
	stampVersions(&h, f.policy)
	var err error
	if h.ID, err = store.NewID(); err == nil {
		h.StepID, err = store.NewID()
	}
	held := []store.Hold{h}
	if err == nil {
		g.fileApprovals(held)
		err = g.cfg.Store.Put(ctx, held)
	}
	if err != nil {
		g.log.Error("storing mcp hold", zap.String("action", c.Name), zap.Error(err))
		return f.mcpRefuse(c, "store", "the gate could not keep the confirmation; nothing ran.")
	}
	g.notifyHeld([]store.Hold{h})
	g.cfg.Observer.Held(c.Name)
	g.log.Info("mcp call waits for confirmation", zap.String("hold_id", h.ID), zap.String("step_id", h.StepID), zap.String("action", c.Name), zap.String("owner", h.Owner))
	return f.mcpConfirmRequest(ctx, c, h, pl.say, upstream)
}

// mcpConfirmRequest issues a card ticket for a waiting card hold.
func (f *Front) mcpConfirmRequest(ctx context.Context, c MCPCall, h store.Hold, sentence string, upstream string) MCPVerdict {
	t := f.ticket(c, h.Expires)
	t.CallID, t.Arguments = h.ID, h.Arguments
	state, err := f.issue(ctx, t, "card", c, upstream)
	if err != nil {
		return f.mcpRefuse(c, "store", "the gate could not keep the confirmation; nothing ran.")
	}
	msg := "Please confirm in your browser: " + sentence
	return MCPVerdict{Result: interceptor.MCPInputRequired([]interceptor.MCPElicitation{{
		Key: MCPConfirmKey, Params: interceptor.MCPURLElicitation(msg, f.g.Link(h.StepID)),
	}}, state)}
}

// ticket is a single-use record behind one requestState.
func (f *Front) ticket(c MCPCall, expires time.Time) store.Hold {
	now := f.g.cfg.Now()
	id, _ := store.NewID()
	t := store.Hold{
		ID: id, StepID: id, Owner: f.person.Owner, Tenant: f.person.Tenant, Policy: f.policyKey,
		Action: c.Name, Kind: store.KindTicket, Protocol: ProtocolMCP, State: store.Waiting,
		Created: now, Expires: expires,
	}
	stampVersions(&t, f.policy) // what its retry is checked against (versionsMoved)
	return t
}

// issue stores a ticket and signs the requestState that redeems it.
func (f *Front) issue(ctx context.Context, t store.Hold, kind string, c MCPCall, upstream string) (string, error) {
	if t.ID == "" {
		return "", errors.New("no ticket id")
	}
	digest, err := argsDigest(c.Arguments)
	if err != nil {
		return "", err
	}
	if err := f.g.cfg.Store.Put(ctx, []store.Hold{t}); err != nil {
		f.g.log.Error("storing mcp ticket", zap.String("action", c.Name), zap.Error(err))
		return "", err
	}
	return f.g.signState(mcpState{
		Kind: kind, ID: t.ID, Person: f.g.personMAC(Person{Owner: t.Owner, Tenant: t.Tenant}), Tool: c.Name, Digest: digest,
		Expires: t.Expires.UnixMilli(), Upstream: upstream,
	}), nil
}

// mcpRetry redeems a requestState of ours: every binding of the state and
// of the ticket it names is checked, and only then is the ticket claimed,
// once, before anything else happens. A state that fails any check uses
// nothing up.
func (f *Front) mcpRetry(ctx context.Context, c MCPCall, a *policies.Action) MCPVerdict {
	g := f.g
	st, key, ok := g.readStateKey(c.State)
	if !ok {
		return f.mcpRefuse(c, "bad_state", "its requestState is not one this gate signed; nothing ran.")
	}
	now := g.cfg.Now()
	switch {
	case st.Kind != "form" && st.Kind != "card" && st.Kind != "relay":
		return f.mcpRefuse(c, "bad_state", "its requestState is of an unknown kind; nothing ran.")
	case now.UnixMilli() >= st.Expires:
		return f.mcpRefuse(c, "expired", "its requestState expired; nothing ran. Call it again to start over.")
	case !hmac.Equal([]byte(st.Person), []byte(g.personMACWith(key, f.person))):
		return f.mcpRefuse(c, "other_person", "its requestState was issued to someone else; nothing ran.")
	case st.Tool != c.Name:
		return f.mcpRefuse(c, "bad_state", "its requestState was issued for another tool; nothing ran.")
	}
	if d, err := argsDigest(c.Arguments); err != nil || d != st.Digest {
		return f.mcpRefuse(c, "bad_state", "its requestState was issued for other arguments; nothing ran.")
	}
	t, err := g.cfg.Store.Get(ctx, st.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return f.mcpRefuse(c, "bad_state", "its requestState is unknown to this gate; nothing ran.")
	case err != nil:
		g.log.Error("reading mcp ticket", zap.String("action", c.Name), zap.Error(err))
		return f.mcpRefuse(c, "store", "the gate's store is unavailable; nothing ran.")
	case !f.issuedFor(t, st.Kind, c):
		return f.mcpRefuse(c, "bad_state", "its requestState does not match the gate's record; nothing ran.")
	}
	if st.Kind == "card" && f.confirmWait > 0 {
		if ans, err := interceptor.ReadElicitAnswer(c.Responses[MCPConfirmKey]); err == nil && ans.Action == "accept" {
			f.waitForAnswer(ctx, t)
		}
	}
	claimed, err := g.cfg.Store.Claim(ctx, st.ID, store.Answer{Choice: store.AnswerUsed, By: f.person.Owner})
	switch {
	case errors.Is(err, store.ErrAnswered):
		return f.mcpRefuse(c, "replayed", "its requestState was already used; nothing ran.")
	case errors.Is(err, store.ErrExpired):
		return f.mcpRefuse(c, "expired", "its requestState expired; nothing ran. Call it again to start over.")
	case errors.Is(err, store.ErrNotFound):
		return f.mcpRefuse(c, "bad_state", "its requestState is unknown to this gate; nothing ran.")
	case err != nil:
		g.log.Error("claiming mcp ticket", zap.String("action", c.Name), zap.Error(err))
		return f.mcpRefuse(c, "store", "the gate's store is unavailable; nothing ran.")
	}
	t = claimed.Hold
	if err := g.cfg.Store.Settle(ctx, t.ID, Outcome{Kind: outcomeUsed}.encode()); err != nil {
		g.log.Warn("settling mcp ticket", zap.String("ticket", t.ID), zap.Error(err))
	}
	rest := map[string][]byte{}
	for k, v := range c.Responses {
		if k != MCPFormKey && k != MCPConfirmKey {
			rest[k] = v
		}
	}
	switch {
	case a == nil:
		moved := g.versionsMoved(t)
		if moved.Kind == "" {
			moved = Outcome{Kind: ResultNotRun, Why: notRunPolicyDropped} // a ticket from before versions were recorded
		}
		return f.mcpPolicyMoved(c, moved)
	case st.Kind == "form":
		return f.mcpFormAnswer(ctx, c, t, st.Upstream, rest)
	case st.Kind == "card":
		return f.mcpCardRetry(ctx, c, a, t, st.Upstream, rest)
	}
	if moved := g.versionsMoved(t); moved.Kind != "" {
		return f.mcpPolicyMoved(c, moved)
	}
	g.log.Info("mcp call continues the server's round trip", zap.String("ticket", t.ID), zap.String("action", c.Name))
	return MCPVerdict{Rewritten: true, Arguments: t.Arguments, State: st.Upstream, Responses: rest, Relay: &MCPRelay{call: c, args: t.Arguments}}
}

// mcpPolicyMoved answers a retry whose question was asked under a version
// of the action the policy no longer has: nothing goes on, the client
// reads moved (policyversion.go), and the refusal is audited.
func (f *Front) mcpPolicyMoved(c MCPCall, moved Outcome) MCPVerdict {
	text := moved.sentence("")
	f.g.audit(f.refusedEvent(c.Name, "policy_changed", text))
	return MCPVerdict{Result: interceptor.MCPToolError(text, c.Modern)}
}

// issuedFor reports whether t is a ticket the gate issued to the caller,
// for c's tool under this front's policy, behind a requestState of kind.
// It reads only, so a state naming any other record (someone else's
// ticket, a card hold, another kind of ticket) is refused before anything
// is claimed.
func (f *Front) issuedFor(t store.Hold, kind string, c MCPCall) bool {
	if t.Kind != store.KindTicket || t.Owner != f.person.Owner || t.Tenant != f.person.Tenant || t.Action != c.Name || !f.samePolicy(t.Policy) {
		return false
	}
	return ticketKind(t) == kind
}

// samePolicy reports whether a record made under the policy key is this
// front's policy: the same identity, or an earlier version of the policy
// file this front reads now (the version checks then decide,
// policyversion.go).
func (f *Front) samePolicy(key string) bool {
	return key == f.policyKey || f.g.cfg.Policy(key) == f.policy
}

// ticketKind is the kind of requestState a ticket backs, read from what it
// keeps (see issue's callers): a card's ticket names its card hold, a
// form's keeps the form's decision, a relay's neither.
func ticketKind(t store.Hold) string {
	switch {
	case t.CallID != "":
		return "card"
	case len(t.Shown) > 0:
		return "form"
	}
	return "relay"
}

// waitForAnswer holds a confirmation's retry while its card waits for the
// person, up to the front's confirmWait (and the card's expiry): a client
// that retries as soon as it opened the page (its accept is consent, not
// the answer) then gets the outcome in one round instead of being asked to
// open the page again. t is the card's ticket (issuedFor checked it).
// Nothing is claimed while it waits.
func (f *Front) waitForAnswer(ctx context.Context, t store.Hold) {
	g := f.g
	deadline := g.cfg.Now().Add(f.confirmWait)
	tick := time.NewTicker(mcpPoll)
	defer tick.Stop()
	for {
		h, err := g.cfg.Store.Get(ctx, t.CallID)
		if err != nil || h.Owner != f.person.Owner || h.Tenant != f.person.Tenant || h.StateAt(g.cfg.Now()) != store.Waiting || !g.cfg.Now().Before(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// mcpPoll is how often a held confirmation retry looks at its card.
const mcpPoll = 200 * time.Millisecond

// mcpFormAnswer checks the client's answer to our form as the forms issue
// checks a page's: against the form as it reads now, then the tool's full
// schema on the merged arguments.
func (f *Front) mcpFormAnswer(ctx context.Context, c MCPCall, t store.Hold, upstream string, rest map[string][]byte) MCPVerdict {
	g := f.g
	raw, ok := c.Responses[MCPFormKey]
	var ans interceptor.ElicitAnswer
	if ok {
		var err error
		if ans, err = interceptor.ReadElicitAnswer(raw); err != nil {
			return f.mcpRefuse(c, "answer", "the answer to its form is not readable; nothing ran.")
		}
	}
	if ans.Action != "decline" && ans.Action != "cancel" {
		// The call would go on, or the form be asked again: only under
		// the action it was asked under. A refusal needs no check.
		if moved := g.versionsMoved(t); moved.Kind != "" {
			return f.mcpPolicyMoved(c, moved)
		}
	}
	form, a, err := g.formOf(ctx, t, "")
	if err != nil {
		g.log.Error("rebuilding form", zap.String("ticket", t.ID), zap.String("action", c.Name), zap.Error(err))
		return f.mcpRefuse(c, "form", "the form cannot be built now; nothing ran.")
	}
	if !ok {
		// The retry lacks our answer: ask again (the spec's SHOULD), with
		// a fresh ticket.
		params, _ := json.Marshal(form)
		return f.mcpAskForm(ctx, c, t.Shown, params, t.Arguments, upstream)
	}
	var keys []string
	for _, fd := range form.Fields() {
		keys = append(keys, fd.Key)
	}
	fields := strings.Join(keys, ", ")
	answered := store.Event{Kind: store.EventAnswered, HoldID: t.ID, By: f.person.Owner, Answer: store.AnswerSubmit}
	switch ans.Action {
	case "decline":
		g.audit(withAnswer(answered, store.AnswerDecline))
		g.cfg.Observer.Decided(c.Name, store.AnswerDecline)
		return MCPVerdict{Result: interceptor.MCPToolError("The person declined to fill in "+fields+"; nothing ran.", c.Modern)}
	case "cancel":
		g.audit(withAnswer(answered, store.AnswerLater))
		g.cfg.Observer.Decided(c.Name, store.AnswerLater)
		return MCPVerdict{Result: interceptor.MCPToolError("The person closed the form without answering ("+fields+"); nothing ran.", c.Modern)}
	}
	content := ans.Content
	if content == nil {
		content = []byte("{}")
	}
	values, errs := forms.CheckJSON(form, content)
	if len(errs) > 0 {
		return f.mcpRefuse(c, "answer", "the person's answer was refused ("+FieldErrors(errs).Error()+"); nothing ran.")
	}
	args, err := forms.Merge(form, t.Arguments, values)
	if err != nil {
		return f.mcpRefuse(c, "answer", "the answer cannot be merged with the call; nothing ran.")
	}
	s, _ := readShown(t.Shown)
	if err := a.CheckArgumentsWith(s.Schema, args); err != nil {
		return f.mcpRefuse(c, "answer", "the answer does not fit the tool's schema ("+err.Error()+"); nothing ran.")
	}
	if refused := g.filledRules(t, a, args, f.person.Roles); refused != "" {
		g.audit(answered)
		return f.mcpRefuse(c, "rule_deny", refused)
	}
	g.cfg.Observer.Decided(c.Name, store.AnswerSubmit)
	g.audit(answered, store.Event{Kind: store.EventReleased, HoldID: t.ID, Endpoint: "mcp tools/call " + c.Name})
	g.log.Info("mcp form answered", zap.String("ticket", t.ID), zap.String("action", c.Name), zap.String("answered_by", f.person.Owner))
	return MCPVerdict{Rewritten: true, Arguments: args, State: upstream, Responses: rest, Relay: &MCPRelay{call: c, args: args}}
}

// mcpCardRetry runs a confirmed card's call once: only when the person
// confirmed that card, unchanged, within the TTL.
func (f *Front) mcpCardRetry(ctx context.Context, c MCPCall, a *policies.Action, t store.Hold, upstream string, rest map[string][]byte) MCPVerdict {
	g := f.g
	h, err := g.cfg.Store.Get(ctx, t.CallID)
	if err != nil || h.Protocol != ProtocolMCP || h.Owner != f.person.Owner || h.Tenant != f.person.Tenant || h.Action != c.Name {
		return f.mcpRefuse(c, "bad_state", "its confirmation is unknown to this gate; nothing ran.")
	}
	now := g.cfg.Now()
	if raw, ok := c.Responses[MCPConfirmKey]; ok && h.StateAt(now) == store.Waiting {
		if ans, err := interceptor.ReadElicitAnswer(raw); err == nil && ans.Action != "accept" {
			// The client turned the page down: no confirmation can follow.
			if _, err := g.cfg.Store.Claim(ctx, h.ID, store.Answer{Choice: store.AnswerDecline, By: f.person.Owner}); err == nil {
				declined := Outcome{Kind: ResultDeclined}.encode()
				if g.cfg.Store.Settle(ctx, h.ID, declined) == nil {
					h.Answer, h.AnsweredBy = store.AnswerDecline, f.person.Owner
					g.notifySettled(h, declined)
				}
			}
			g.cfg.Observer.Decided(c.Name, store.AnswerDecline)
			return MCPVerdict{Result: interceptor.MCPToolError("The person declined to open the confirmation; nothing ran.", c.Modern)}
		}
	}
	switch h.StateAt(now) {
	case store.Waiting, store.Answered:
		// Not answered yet (the client's accept is consent to open the
		// page, not the answer): ask again, with a fresh ticket.
		var card struct {
			Sentence string `json:"sentence"`
		}
		_ = json.Unmarshal(h.Shown, &card)
		return f.mcpConfirmRequest(ctx, c, h, card.Sentence, upstream)
	case store.Expired:
		return MCPVerdict{Result: interceptor.MCPToolError("The confirmation expired before the person answered; nothing ran.", c.Modern)}
	}
	if h.Answer != store.AnswerConfirm || !confirmedOverMCP(h) {
		text := g.outcomeText(h)
		if o, _ := decodeOutcome(h.Outcome); text == "" || h.Answer == store.AnswerDecline && o.Note == "" {
			text = OutcomeDeclined
		}
		g.replyRead(ctx, []store.Hold{h}) // note.go: a decline's note is given once
		return MCPVerdict{Result: interceptor.MCPToolError(text, c.Modern)}
	}
	if moved := g.policyMoved(h); moved.Kind != "" {
		return f.mcpPolicyMoved(c, moved) // reloaded after the person confirmed
	}
	if !confirmedByRightPerson(h, a) {
		return f.mcpRefuse(c, "other_person", "it was confirmed by someone else; nothing ran.")
	}
	args, print := h.Arguments, h.Fingerprint
	var changed []string
	if o, _ := decodeOutcome(h.Outcome); len(o.Changed) > 0 {
		// Confirmed with corrections: exactly those arguments go on, once.
		// A retry that finds them gone (used by an earlier retry, or
		// unreadable) runs nothing rather than the model's arguments.
		e, ok, err := g.editOf(h)
		if err != nil || !ok {
			g.log.Warn("mcp confirmed call's edits are gone", zap.String("hold_id", h.ID), zap.String("action", c.Name), zap.Error(err))
			return f.mcpRefuse(c, "edit_gone", "the person's corrections are no longer kept (the call went on once already, or they cannot be read); nothing ran.")
		}
		args, print, changed = e.Args, e.Print, e.Changed
	}
	if out := g.recheckWith(ctx, h, a, args, print); out.Kind != "" {
		text := OutcomeChanged
		if out.Kind == ResultNotRun && out.Why == notRunRuleError {
			text = outcomeRuleError // as the model routes read it (rules.go)
		}
		return MCPVerdict{Result: interceptor.MCPToolError(text, c.Modern)}
	}
	if len(changed) > 0 {
		if err := g.cfg.Store.DropReply(ctx, h.ID); err != nil {
			g.log.Error("dropping the used edits of an mcp confirmation; nothing ran", zap.String("hold_id", h.ID), zap.Error(err))
			return f.mcpRefuse(c, "store", "the gate's store is unavailable; nothing ran.")
		}
	}
	g.log.Info("mcp confirmed call goes to the server", zap.String("hold_id", h.ID), zap.String("action", c.Name), zap.String("answered_by", h.AnsweredBy), zap.Strings("changed", changed))
	g.audit(store.Event{Kind: store.EventReleased, HoldID: h.ID, Endpoint: "mcp tools/call " + c.Name})
	return MCPVerdict{Rewritten: true, Arguments: args, State: upstream, Responses: rest, Relay: &MCPRelay{call: c, args: args, changed: changed}}
}

// WrapMCP carries the MCP server's own input_required through: its
// requestState goes inside ours (with the arguments the server saw), its
// inputRequests pass as they are. It returns the result the client gets.
func (f *Front) WrapMCP(ctx context.Context, r *MCPRelay, result []byte) []byte {
	upstream, keys, ok := interceptor.MCPUpstreamInput(result)
	if !ok {
		if len(r.changed) == 0 {
			return nil
		}
		// The model reads which fields the person changed, never the
		// values, before what the server answered (edit.go).
		out, err := interceptor.MCPPrependText(result, Outcome{Person: personConfirmed, Changed: r.changed}.person()+".")
		if err != nil {
			return nil
		}
		return out
	}
	c := r.call
	for _, k := range keys {
		if k == MCPFormKey || k == MCPConfirmKey {
			return f.mcpRefuse(c, "collision", "the MCP server asked under a key the gate reserves; nothing more ran.").Result
		}
	}
	t := f.ticket(c, f.g.cfg.Now().Add(f.stateTTL))
	t.Arguments = r.args
	state, err := f.issue(ctx, t, "relay", c, upstream)
	if err != nil {
		return f.mcpRefuse(c, "store", "the gate could not keep the server's question; nothing more ran.").Result
	}
	out, err := interceptor.SetMCPState(result, state)
	if err != nil {
		return f.mcpRefuse(c, "relay", "the server's question could not be relayed; nothing more ran.").Result
	}
	return out
}

// MCPFront returns the gate for one request on an MCP route. stateTTL is
// how long a form's requestState may be redeemed (DefaultMCPStateTTL when
// zero); confirmWait how long a confirmation's retry may wait for the
// person's answer (none when zero).
func (g *Gate) MCPFront(p *policies.Policy, policyKey string, who func() Person, stateTTL, confirmWait time.Duration) *Front {
	f := g.Front(p, policyKey, who, ProtocolMCP)
	f.stateTTL = stateTTL
	if f.stateTTL <= 0 {
		f.stateTTL = DefaultMCPStateTTL
	}
	f.confirmWait = confirmWait
	return f
}

// stateKey is the HMAC key of request states, derived from the secret so
// that no other signature of the gate can stand in for one.
func (g *Gate) stateKey() []byte { return stateKeyOf(g.cfg.Secret) }

func stateKeyOf(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("toolgate mcp requestState v1"))
	return m.Sum(nil)
}

// personMAC binds a requestState to who is calling, tenant and owner,
// before any ticket is claimed: a retry from anyone else, in any tenant,
// uses nothing up.
func (g *Gate) personMAC(p Person) string { return g.personMACWith(g.stateKey(), p) }

// personMACWith is personMAC under a given state key: a state signed
// before a rotation binds its person under the key that signed it.
func (g *Gate) personMACWith(key []byte, p Person) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "person\x00%q\x00%q", p.Tenant, p.Owner)
	return hex.EncodeToString(m.Sum(nil)[:16])
}

func (g *Gate) signState(s mcpState) string {
	payload, _ := json.Marshal(s)
	p := base64.RawURLEncoding.EncodeToString(payload)
	m := hmac.New(sha256.New, g.stateKey())
	m.Write([]byte(p))
	return statePrefix + p + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// readState checks a requestState's signature and reads it.
func (g *Gate) readState(token string) (mcpState, bool) {
	s, _, ok := g.readStateKey(token)
	return s, ok
}

// readStateKey is readState that also returns the state key that
// verified it: the secret's, or during a rotation a previous secret's
// (a state signed before it), which its person MAC was made under.
func (g *Gate) readStateKey(token string) (mcpState, []byte, bool) {
	var s mcpState
	if len(token) > maxState || len(g.cfg.Secret) == 0 {
		return s, nil, false
	}
	p, sig, ok := strings.Cut(strings.TrimPrefix(token, statePrefix), ".")
	if !ok {
		return s, nil, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return s, nil, false
	}
	var key []byte
	for _, secret := range append([][]byte{g.cfg.Secret}, g.cfg.PreviousSecrets...) {
		key = stateKeyOf(secret)
		m := hmac.New(sha256.New, key)
		m.Write([]byte(p))
		if ok = hmac.Equal(got, m.Sum(nil)); ok {
			break
		}
	}
	if !ok {
		return s, nil, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil || json.Unmarshal(payload, &s) != nil || s.ID == "" {
		return mcpState{}, nil, false
	}
	return s, key, true
}

// argsDigest digests arguments in canonical form, so a client that
// re-encodes the same arguments on its retry still matches.
func argsDigest(args []byte) (string, error) {
	c, err := jsonedit.Canonical(args)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
