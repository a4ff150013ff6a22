package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/forms"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// Front is the gate as one model request sees it: the policy of the route,
// the person the conversation belongs to, and the wire protocol. It
// implements provider.Holder and provider.Restorer. Make one per
// request with Gate.Front.
type Front struct {
	g         *Gate
	policy    *policies.Policy
	policyKey string
	protocol  string
	who       func() Person
	once      sync.Once
	person    Person

	// toolSchema returns the parameters of a tool the request offers, for
	// an action whose policy gives no schema; nil when none.
	toolSchema func(name string) []byte

	stateTTL    time.Duration // MCP: how long a form's requestState lives
	confirmWait time.Duration // MCP: how long a confirmation's retry waits for the answer
}

// WithToolSchemas tells the gate where to find the tools' schemas the
// request offers the model.
func (f *Front) WithToolSchemas(fn func(name string) []byte) *Front {
	f.toolSchema = fn
	return f
}

// Front returns the gate for one model request. who tells whose
// conversation it is; it is called at most once, and only when a gated
// call or a link appears, so a request that needs no identity parses
// nothing to find one.
func (g *Gate) Front(p *policies.Policy, policyKey string, who func() Person, protocol string) *Front {
	return &Front{g: g, policy: p, policyKey: policyKey, who: who, protocol: protocol}
}

// Person is whose conversation this is ("" Owner when nobody could tell).
func (f *Front) Person() Person {
	f.once.Do(func() { f.person = f.who() })
	return f.person
}

var (
	_ provider.Holder        = (*Front)(nil)
	_ provider.Restorer      = (*Front)(nil)
	_ provider.StateRestorer = (*Front)(nil)
)

// Gated reports whether the policy declares this tool, so its calls are
// inspected: a map read. An action in shadow mode is not gated: its calls
// pass byte for byte, and Watcher sees them on the side.
func (f *Front) Gated(name string) bool {
	a := f.policy.Action(name)
	return a != nil && !a.Shadow()
}

// refusal is why one call cannot be held; text is what the model reads.
type refusal struct {
	reason string // metric label: a fixed word
	text   string
}

// plan is what becomes of one inspected call.
type plan struct {
	pass    bool
	refusal *refusal
	kind    store.Kind
	shown   []byte // the card, or the form's decision (formShown)
	print   string // the card's fingerprint
	form    []byte // the form (MCP's elicitation params), as built
	say     string // the card's sentence or the form's message, for the waiting text
	args    []byte
	rule    *policies.Rule // the rule that decided (rules.go); nil when none did
}

// Hold decides each inspected call of one model response: a complete,
// valid read or write call passes; an incomplete one gets a form when one
// can hold what is missing; a destructive or external one gets a card
// built from its record. A call that cannot be held properly is refused
// (fail closed): the model reads why at once, in a continuation. Holds of
// one response share a step and one link, stored before the app sees it.
func (f *Front) Hold(ctx context.Context, calls []provider.Call, message []byte, kept provider.Kept) provider.Verdict {
	g := f.g
	now := g.cfg.Now()
	f.Person()
	if v, ok := f.holdShadowed(ctx, calls, message, kept); ok {
		return v
	}
	v := provider.Verdict{Pass: make([]bool, len(calls))}
	stepID, err := store.NewID()
	if err != nil {
		return f.refuseAll(calls, "store", "the gate could not make a link")
	}
	var holds []store.Hold
	var says []string
	var refused []store.Event // kept with the step, or on their own when nothing waits
	var intents []string      // each hold's intent key ("" none)
	cards, others := false, false
	waiting := 0
	for i, c := range calls {
		p := f.plan(ctx, c, waiting)
		if p.pass {
			if p.rule != nil {
				g.log.Info("call allowed by a rule", zap.String("action", c.Name), zap.String("rule", p.rule.Label()),
					zap.String("owner", f.person.Owner), zap.String("tenant", f.person.Tenant))
			}
			v.Pass[i] = true
			continue
		}
		var primary store.Hold
		var intent string // the call's intent key, made once for attach and fileIntents
		if p.refusal == nil {
			var canonical []byte
			intent, canonical = f.intent(c.Name, p.args)
			if pr, ok := f.attach(ctx, c.Name, intent, canonical, p.print); ok {
				// One card per intent (intent.go): this call is a hold of
				// this step that shares the waiting card's decision — when
				// that card reads as this call's would now (a record that
				// changed since gets a card of its own).
				g.log.Info("call attached to a waiting hold", zap.String("primary", pr.ID), zap.String("step_id", stepID), zap.String("action", c.Name),
					zap.String("owner", f.person.Owner), zap.String("tenant", f.person.Tenant))
				primary = pr
				p.kind, p.shown, p.print, p.say = pr.Kind, withPrimary(pr.Shown, pr.ID), pr.Fingerprint, shownSay(pr)
			}
		}
		h := store.Hold{
			StepID: stepID, Owner: f.person.Owner, Tenant: f.person.Tenant,
			Policy: f.policyKey, Action: c.Name, Kind: store.KindCard, Protocol: f.protocol,
			CallID: c.ID, Call: c.Raw, Message: message, Position: c.Position,
			State: store.Waiting, Created: now,
		}
		stampVersions(&h, f.policy)
		if h.ID, err = store.NewID(); err != nil {
			return f.refuseAll(calls, "store", "the gate could not make a link")
		}
		ttl := g.cfg.TTL
		if a := f.policy.Action(c.Name); a != nil && a.TTL > 0 {
			ttl = a.TTL
		}
		if p.rule != nil && p.rule.Then == policies.RuleAsk && p.rule.TTL > 0 {
			ttl = p.rule.TTL
		}
		h.Expires = now.Add(ttl)
		if primary.ID != "" && primary.Expires.Before(h.Expires) {
			h.Expires = primary.Expires // it shares the card, and its TTL
		}
		if p.refusal != nil {
			// Kept, settled, so a restored history pairs this call with
			// its result too.
			h.State, h.Answer, h.Outcome = store.Settled, "refused", Outcome{Kind: outcomeRefusedHeld, Refusal: p.refusal.text}.encode()
			g.cfg.Observer.Refused(c.Name, p.refusal.reason)
			g.log.Warn("call refused", zap.String("action", c.Name), zap.String("owner", f.person.Owner), zap.String("reason", p.refusal.reason),
				zap.String("rule", p.rule.Label()), zap.String("why", p.refusal.text))
			v.Refusals = append(v.Refusals, provider.Refusal{CallID: c.ID, Content: p.refusal.text})
			refused = append(refused, f.ruleRefusedEvent(c.Name, p))
		} else {
			h.Kind, h.Shown, h.Fingerprint, h.Arguments = p.kind, p.shown, p.print, p.args
			cards = cards || p.kind == store.KindCard
			if p.kind == store.KindCard {
				_, fourEyes := ruleAsked(f.policy.Action(c.Name), p.rule)
				others = others || fourEyes
			}
			says = append(says, p.say)
			waiting++
		}
		holds = append(holds, h)
		intents = append(intents, intent)
	}
	if waiting == 0 {
		g.audit(refused...)
		return v
	}
	// The step's indexes go in its own write: one durable write holds the
	// calls, and a step is findable by every key exactly when it is stored.
	f.index(kept, holds)
	f.fileIntents(holds, intents)
	g.fileApprovals(holds)
	if err := g.cfg.Store.Put(ctx, holds, refused...); err != nil {
		if errors.Is(err, store.ErrLimit) {
			g.log.Warn("calls refused: too many holds waiting", zap.String("owner", f.person.Owner), zap.String("tenant", f.person.Tenant))
			return f.refuseAll(calls, "too_many_waiting", "too many of this person's requests are already waiting for their answer")
		}
		g.log.Error("storing holds", zap.Error(err), zap.String("owner", f.person.Owner))
		return f.refuseAll(calls, "store", "the gate could not store the question for the person")
	}
	g.notifyHeld(holds)
	for _, h := range holds {
		if h.State == store.Waiting {
			g.cfg.Observer.Held(h.Action)
			g.log.Info("call held",
				zap.String("hold_id", h.ID), zap.String("step_id", h.StepID), zap.String("action", h.Action),
				zap.String("kind", string(h.Kind)), zap.String("owner", h.Owner), zap.String("tenant", h.Tenant),
				zap.Time("expires", h.Expires), shownField(h))
		}
	}
	v.Text = waitingText(cards, others, says, g.Link(stepID))
	v.Step = stepID
	return v
}

// shownField logs what the person is shown without any argument value: a
// card's rows (built from the record), or the names of a form's fields.
func shownField(h store.Hold) zap.Field {
	if h.Kind == store.KindForm {
		s, _ := readShown(h.Shown)
		return zap.Strings("form_fields", s.Fields)
	}
	return zap.Any("card", json.RawMessage(h.Shown))
}

// index files a step under the provider's response and conversation that
// keep its calls (the Responses API's previous_response_id and
// conversation), so a request that continues from them, carrying no link,
// still gets the held calls' results. The keys go in the first hold's
// Filed: Put files them with the step.
func (f *Front) index(kept provider.Kept, holds []store.Hold) {
	for _, key := range []string{responseKey(f.person, kept.ResponseID), conversationKey(f.person, kept.ConversationID)} {
		if key != "" {
			holds[0].Filed = append(holds[0].Filed, key)
		}
	}
}

// Index keys are scoped to the person, (tenant, owner): another person,
// or the same owner id in another tenant, naming the same response
// restores nothing. Without a tenant the key is the one used before
// tenants took part, so indexes stored then still resolve; with one, each
// part is length-prefixed so no two (tenant, owner, id) give one key.
func indexKey(kind string, p Person, id string) string {
	if id == "" {
		return ""
	}
	if p.Tenant == "" {
		return kind + "\x00" + p.Owner + "\x00" + id
	}
	return kind + "\x01" + strconv.Itoa(len(p.Tenant)) + ":" + p.Tenant + strconv.Itoa(len(p.Owner)) + ":" + p.Owner + id
}

func responseKey(p Person, id string) string     { return indexKey("resp", p, id) }
func conversationKey(p Person, id string) string { return indexKey("conv", p, id) }

// plan checks one call and builds its card or form. waiting is how many
// calls of the response already wait.
func (f *Front) plan(ctx context.Context, c provider.Call, waiting int) plan {
	return f.planRuled(ctx, c, waiting, nil)
}

// planRuled is plan with the call's rules already run (pre; nil: plan
// runs them when they apply), so the MCP front can decide on them before
// it asks anything of the client.
func (f *Front) planRuled(ctx context.Context, c provider.Call, waiting int, pre *ruling) plan {
	refuse := func(reason, format string, args ...any) plan {
		return plan{refusal: &refusal{reason, fmt.Sprintf("Toolgate refused %s: "+format, append([]any{c.Name}, args...)...)}}
	}
	d := decide(f.policy, c, f.toolSchema, f.protocol)
	if d.askMisfit != nil {
		f.g.log.Error("policy error: ask does not fit the tool's schema", zap.String("action", c.Name), zap.Error(d.askMisfit))
	}
	if ref := f.offered(d.action); ref != nil {
		return plan{refusal: ref}
	}
	var rl ruling
	switch {
	case pre != nil:
		rl = *pre
	case ruled(d):
		rl = f.rules(ctx, c, d)
	}
	switch {
	case d.refusal != nil:
		return plan{refusal: d.refusal}
	case rl.refusal != nil:
		return plan{refusal: rl.refusal, rule: rl.rule}
	case rl.rule != nil && rl.rule.Then == policies.RuleAllow:
		return plan{pass: true, rule: rl.rule}
	case d.pass:
		return plan{pass: true}
	}
	a, schema, args := d.action, d.schema, d.args
	if waiting >= MaxHeld {
		return refuse("too_many", "at most %d calls can wait for the person at once; nothing ran. Call it again after they answer.", MaxHeld)
	}
	if f.person.Owner == "" {
		return refuse("no_owner", "the gate could not tell whose conversation this is; nothing ran.")
	}
	if d.form.Outcome == forms.Ask {
		form, err := f.g.buildForm(ctx, a, schema, d.form, "", f.person)
		if err != nil {
			f.g.log.Error("building form", zap.String("action", c.Name), zap.Error(err))
			return refuse("form", "the form for %s cannot be built; nothing ran.", describeReasons(d.form))
		}
		var kept json.RawMessage
		if a.Schema == nil {
			kept = schema
		}
		shown, _ := json.Marshal(formShown{Fields: d.form.Fields, Reasons: d.form.Reasons, Accepted: d.form.Accepted, Schema: kept, Message: form.Message, Roles: formRoles(a, f.person)})
		params, _ := json.Marshal(form)
		return plan{kind: store.KindForm, shown: shown, form: params, say: form.Message, args: args}
	}
	card, ref := f.card(ctx, a, args, rl)
	if ref != nil {
		return plan{refusal: ref}
	}
	shown, _ := json.Marshal(card)
	if a.HasRules() {
		shown = withRule(shown, rl.rule, f.person.Roles)
	}
	return plan{kind: store.KindCard, shown: shown, print: card.Fingerprint(), say: card.Sentence, args: args, rule: rl.rule}
}

// card builds a call's card from the record, read as the person (or as
// the rules read it: rl). Any failure is a refusal.
func (f *Front) card(ctx context.Context, a *policies.Action, args []byte, rl ruling) (cards.Card, *refusal) {
	refuse := func(reason, format string, v ...any) (cards.Card, *refusal) {
		return cards.Card{}, &refusal{reason, fmt.Sprintf("Toolgate refused %s: "+format, append([]any{a.Name}, v...)...)}
	}
	if a.Card == nil {
		return refuse("policy", "the policy gives it no card; nothing ran.")
	}
	record := rl.record
	if a.Card.Record != nil && !rl.read {
		body, ref := f.readRecord(ctx, a, args)
		if ref != nil {
			return cards.Card{}, ref
		}
		record = body
	}
	card, err := cards.Build(a.Card, record, args)
	if err != nil {
		return refuse("record", "the record is not JSON; nothing ran.")
	}
	return card, nil
}

func (f *Front) refuseAll(calls []provider.Call, reason, why string) provider.Verdict {
	v := provider.Verdict{Pass: make([]bool, len(calls))}
	var refused []store.Event
	for _, c := range calls {
		f.g.cfg.Observer.Refused(c.Name, reason)
		v.Refusals = append(v.Refusals, provider.Refusal{CallID: c.ID, Content: fmt.Sprintf("Toolgate refused %s: %s; nothing ran.", c.Name, why)})
		refused = append(refused, f.refusedEvent(c.Name, reason, v.Refusals[len(v.Refusals)-1].Content))
	}
	f.g.audit(refused...)
	return v
}

// waitingText is what the app shows in place of the held calls. others
// says a card waits for an approver: under four_eyes its owner may not
// confirm it.
func waitingText(cards, others bool, says []string, link string) string {
	var b strings.Builder
	switch {
	case others:
		b.WriteString("Waiting for an approver's confirmation: ")
	case cards:
		b.WriteString("Waiting for your confirmation: ")
	default:
		b.WriteString("Waiting for your answer: ")
	}
	var uniq []string
	for _, s := range says {
		if !slices.Contains(uniq, s) {
			uniq = append(uniq, s)
		}
	}
	b.WriteString(strings.Join(uniq, " / "))
	if len(says) > 1 {
		fmt.Fprintf(&b, " (%d questions)", len(says))
	}
	b.WriteString(" Answer here: ")
	b.WriteString(link)
	return b.String()
}

// describeReasons names the failing fields and their rules, never values.
func describeReasons(d forms.Decision) string {
	var parts []string
	for _, f := range d.Fields {
		parts = append(parts, f+" ("+d.Reasons[f]+")")
	}
	if r, ok := d.Reasons[""]; ok {
		parts = append(parts, "the arguments ("+r+")")
	}
	if len(parts) == 0 {
		return "its arguments"
	}
	return "fields " + strings.Join(parts, ", ")
}
