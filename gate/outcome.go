package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/plaintext"
	"github.com/toolgate/toolgate/policies"
)

// What the model reads about a held call. The texts are fixed: the model
// never reads the person's values, and of the app's answer only a read's
// body, the policy's reply and a 422's field names and rule words.
const (
	OutcomeDeclined = "The person declined; nothing ran."
	OutcomeChanged  = "The record changed while waiting; nothing ran."
	OutcomeExpired  = "The person did not answer in time; nothing ran."
	OutcomeMovedOn  = "The person moved on without answering; nothing ran."
	// OutcomeWithdrawn: an operator withdrew the waiting hold (the admin
	// API's expire).
	OutcomeWithdrawn = "An operator withdrew the request before the person answered; nothing ran."
	OutcomeWaiting   = "Still waiting for the person's answer; nothing has run yet."
	OutcomeRunning   = "The person answered; the action is still running."
	// OutcomeAnswered: the person confirmed (or submitted) a hold whose
	// step releases its calls together, once the person has answered each.
	OutcomeAnswered = "The person answered; nothing has run yet: it runs once they have answered the other held calls."
)

// The person's part of a released call's sentence: what follows it is
// ". " and the reply when the app answered 2xx, else ", but " and a
// clause saying what went wrong (Outcome.sentence).
const (
	PersonConfirmed = "The person confirmed"
	PersonFilledIn  = "The person filled in: "
	// PersonConfirmedWith starts the person's part of a card confirmed
	// with corrections; the changed fields' names follow.
	PersonConfirmedWith = "The person confirmed with changes to: "
	PersonSubmitted     = "The person submitted the form without filling in a field"
	// personAnsweredPart stands in for a form's part when its answer
	// cannot be read back (personPart).
	personAnsweredPart = "The person answered"
)

// What the model reads when the gate itself could not run a confirmed or
// submitted call: nothing ran (Outcome.Why of ResultNotRun).
const (
	outcomePolicyGone = "The gate's policy no longer allows this action; nothing ran."
	outcomeNoEndpoint = "The gate's policy gives the action no endpoint; nothing ran."
	outcomeAnswerLost = "The gate lost the person's answer; nothing ran."
)

// What went wrong with a release, as a clause after the person's part.
// Only what the gate knows is said: a request that may have reached the
// app "may or may not have run", and it is never sent again.
const (
	clauseNotSent  = "the app could not be reached; nothing ran."
	clauseNoAnswer = "the app did not answer; it may or may not have run; nothing was retried."
	clauseLost     = "the gate stopped before the app answered; it may or may not have run; nothing was retried."
	// clausePolicyURL: the run URL cannot be expanded from the arguments.
	clausePolicyURL = "the gate's policy cannot name the action's endpoint; nothing ran."
	// clauseInvalid starts the clause of a 422: the refused fields follow.
	clauseInvalid = "the app refused the arguments"
)

// Why a confirmed card could not be checked against the record.
const (
	uncheckedNotFound   = "not found"
	uncheckedForbidden  = "not allowed"
	uncheckedDown       = "unavailable"
	uncheckedUnreadable = "unreadable"
)

// outcomeUnchecked is the outcome of a confirmed card whose record cannot
// be read again: nothing ran, and it is not said to have changed.
func uncheckedOutcome(why string) Outcome {
	return Outcome{Kind: ResultUnchecked, Person: personConfirmed, Why: why}
}

// ruleWord is what a 422 body may say of a field and still reach the
// model: a rule's name and short parameters ("required", "max:200"), never
// a sentence, which could carry the person's value.
var ruleWord = regexp.MustCompile(`^[a-z_]{1,30}(:[A-Za-z0-9_,.\-]{1,40})?$`)

// runOutcome maps the endpoint's answer to the release's outcome (the
// person's part left to the caller) and, for a read that answered 2xx
// with a body, that body: the app's words, which the model reads once and
// the store keeps only sealed (DESIGN.md, "Releasing the call").
func runOutcome(a *policies.Action, resp actions.Response, err error) (o Outcome, body string) {
	switch {
	case resp.Status == 0 && errors.Is(err, actions.ErrNotSent):
		return Outcome{Kind: ResultNotSent}, ""
	case resp.Status == 0:
		return Outcome{Kind: ResultUnknown, Why: UnknownNoAnswer}, ""
	case resp.Status >= 200 && resp.Status <= 299:
		if a.Effect == policies.Read {
			if err != nil {
				return Outcome{Kind: ResultDoneUnread, Status: resp.Status}, ""
			}
			if len(resp.Body) > 0 {
				return Outcome{Kind: ResultDone, Reply: replyApp}, plaintext.Clean(string(resp.Body), 4000)
			}
		}
		if a.Reply == "" {
			return Outcome{Kind: ResultDone}, ""
		}
		return Outcome{Kind: ResultDone, Reply: replyPolicy}, ""
	case resp.Status == 422:
		return Outcome{Kind: ResultInvalid, Status: 422, Fields: refusedFields(resp.Body)}, ""
	case resp.Status >= 500:
		return Outcome{Kind: ResultUnknown, Why: UnknownFailed, Status: resp.Status}, ""
	default:
		return Outcome{Kind: ResultRefused, Status: resp.Status}, ""
	}
}

// refusedFields reads {"errors": {"field": ["rule", ...]}} and names the
// fields with the rules that are rule words.
func refusedFields(body []byte) []string {
	if !gjson.ValidBytes(body) {
		return nil
	}
	var parts []string
	gjson.GetBytes(body, "errors").ForEach(func(k, v gjson.Result) bool {
		field := plaintext.Clean(k.String(), 60)
		var rules []string
		v.ForEach(func(_, r gjson.Result) bool {
			if ruleWord.MatchString(r.String()) {
				rules = append(rules, r.String())
			}
			return true
		})
		if len(rules) > 0 {
			field += " (" + strings.Join(rules, ", ") + ")"
		}
		parts = append(parts, field)
		return len(parts) < 20
	})
	sort.Strings(parts)
	return parts
}

// Outcome is what became of a hold, as the store keeps it (Hold.Outcome,
// as JSON): its kind and what the sentences need, never a sentence. What
// the model reads (Outcome.sentence) and what the person's page says
// (Result) are rendered from it and never parsed back. It holds no value
// of the person's and none of the app's words: a read's body is kept
// apart, sealed, until the model has read it (Hold.Reply, seal.go); a
// 422's field names and rule words are all it keeps of an app's refusal.
type Outcome struct {
	// Kind is a Result kind (ResultDone, ResultDeclined, ...) or one of
	// the outcome-only kinds below (withdrawn, used, refused when held).
	Kind string `json:"kind"`
	// Person is what the person did, for a released call: confirmed, or
	// filled in a form (Filled names the fields they filled; none when
	// they submitted it as it was), or answered (their answer could not
	// be read back).
	Person string   `json:"person,omitempty"`
	Filled []string `json:"filled,omitempty"`
	// Changed names the arguments the person corrected before confirming
	// (card.editable); none when they confirmed the call as it was.
	Changed []string `json:"changed,omitempty"`
	Status  int      `json:"status,omitempty"` // the app's HTTP status
	// Why says more: why a card could not be checked (unchecked*), why an
	// outcome is unknown (Unknown*), why nothing ran (notRun*).
	Why string `json:"why,omitempty"`
	// Fields are a 422's refused fields with their rule words, or the
	// fields of a form the person declined or closed.
	Fields []string `json:"fields,omitempty"`
	// Form marks a declined or closed form (the sentence names its fields).
	Form bool `json:"form,omitempty"`
	// Reply says what the model reads after a run that answered 2xx:
	// replyApp (the app's body for a read, sealed in Hold.Reply),
	// replyPolicy (the action's reply, read from the policy) or "" (Done.).
	Reply string `json:"reply,omitempty"`
	// Refusal is the gate's own refusal, for a call refused when it was
	// held: the gate's words (the action, the fields, the rule), never a
	// value of the person's.
	Refusal string `json:"refusal,omitempty"`
	// Note says a declined card came with the person's note to their
	// assistant (note.go): noteGiven (sealed in Hold.Reply until the model
	// has read it) or noteElsewhere. The note itself is never here.
	Note string `json:"note,omitempty"`
}

// Kinds only an Outcome has (the page reads them through Result).
const (
	outcomeWithdrawn   = "withdrawn"    // an operator withdrew the waiting hold
	outcomeUsed        = "used"         // an MCP ticket redeemed
	outcomeRefusedHeld = "refused_held" // refused when it was held (Refusal)
	// outcomeSharedLost: an attached call whose card (the primary) is no
	// longer kept, or kept only as an earlier version's sentence: what
	// came of the person's answer cannot be told.
	outcomeSharedLost = "shared_lost"
)

// What the person did (Outcome.Person).
const (
	personConfirmed = "confirmed"
	personFilled    = "filled"
	personAnswered  = "answered"
)

// Where a done outcome's reply comes from (Outcome.Reply).
const (
	replyApp    = "app"
	replyPolicy = "policy"
	// replyElsewhere: a read's body that went to the conversation of the
	// card this call was attached to (intent.go), never to this one.
	replyElsewhere = "elsewhere"
)

// Why nothing ran (Outcome.Why of ResultNotRun).
const (
	notRunPolicyGone    = "policy_gone"    // the policy no longer allows the action
	notRunNoEndpoint    = "no_endpoint"    // the policy gives it no endpoint
	notRunAnswerLost    = "answer_lost"    // the person's answer cannot be read back
	notRunPolicyURL     = "policy_url"     // the run URL cannot be expanded
	notRunPolicyDropped = "policy_dropped" // the policy was changed and no longer declares it
	notRunRuleError     = "rule_error"     // a rule could not be evaluated at confirm time (gate/rules.go)
	notRunRuleDeny      = "rule_deny"      // a rule denies the call as the person filled it in (Refusal says why)
	// NotRunPolicyChanged (result.go): the action was changed since the
	// person was asked.
)

// replyGone is what the model reads in place of a read's body once it has
// read it (the reply is dropped then) or when it cannot be unsealed.
const replyGone = "The app's answer was given earlier in this conversation and is not kept."

// replyOther is what the model reads in place of a read's body for a call
// that shared another conversation's card: the body went there.
const replyOther = "The app's answer went to the conversation where the person answered; it is not repeated here."

// encode is the Outcome as the store keeps it.
func (o Outcome) encode() string {
	b, err := json.Marshal(o)
	if err != nil {
		// Strings, ints, a bool and lists of strings.
		panic("encoding outcome: " + err.Error())
	}
	return string(b)
}

// decodeOutcome reads a stored outcome; ok is false for an outcome stored
// as a sentence by an earlier version (legacyoutcome.go).
func decodeOutcome(stored string) (o Outcome, ok bool) {
	if !strings.HasPrefix(stored, "{") || json.Unmarshal([]byte(stored), &o) != nil || o.Kind == "" {
		return Outcome{}, false
	}
	return o, true
}

// person is the person's part of a released call's sentence.
func (o Outcome) person() string {
	switch o.Person {
	case personFilled:
		if len(o.Filled) == 0 {
			return PersonSubmitted
		}
		return PersonFilledIn + strings.Join(o.Filled, ", ")
	case personAnswered:
		return personAnsweredPart
	}
	if len(o.Changed) > 0 {
		return PersonConfirmedWith + strings.Join(o.Changed, ", ")
	}
	return PersonConfirmed
}

// sentence is what the model reads. reply is the text after the person's
// part of a done outcome (see Gate.replyText).
func (o Outcome) sentence(reply string) string {
	but := func(clause string) string { return o.person() + ", but " + clause }
	switch o.Kind {
	case ResultDone:
		return o.person() + ". " + reply
	case ResultDoneUnread:
		return but(fmt.Sprintf("the app's answer (HTTP %d) could not be read in full.", o.Status))
	case ResultNotSent:
		return but(clauseNotSent)
	case ResultUnknown:
		switch o.Why {
		case UnknownFailed:
			return but(fmt.Sprintf("the app failed (HTTP %d); it may or may not have made changes; nothing was retried.", o.Status))
		case UnknownNoAnswer:
			return but(clauseNoAnswer)
		}
		return but(clauseLost)
	case ResultRefused:
		return but(fmt.Sprintf("the app refused the action (HTTP %d); nothing ran.", o.Status))
	case ResultInvalid:
		fields := ""
		if len(o.Fields) > 0 {
			fields = ": " + strings.Join(o.Fields, "; ")
		}
		return but(clauseInvalid + fields + "; nothing ran.")
	case ResultUnchecked:
		return o.person() + ", but the record could not be checked (" + o.Why + "); nothing ran."
	case ResultChanged:
		return OutcomeChanged
	case ResultNotRun:
		switch o.Why {
		case notRunPolicyGone:
			return outcomePolicyGone
		case notRunNoEndpoint:
			return outcomeNoEndpoint
		case notRunPolicyURL:
			return but(clausePolicyURL)
		case notRunPolicyDropped:
			return outcomePolicyDropped
		case NotRunPolicyChanged:
			return outcomePolicyChanged
		case notRunRuleError:
			return outcomeRuleError
		case notRunRuleDeny:
			return "The person filled in the form, but " + o.Refusal
		}
		return outcomeAnswerLost
	case ResultDeclined:
		switch {
		case o.Note == noteGiven && reply != "":
			return declinedWithNote(reply)
		case o.Note == noteGiven:
			return outcomeNoteGone
		case o.Note != "":
			return outcomeNoteElsewhere
		}
		if o.Form {
			return "The person declined to fill in " + o.formFields() + "; nothing ran."
		}
		return OutcomeDeclined
	case ResultClosed:
		return "The person closed the form without answering (" + o.formFields() + "); nothing ran."
	case ResultExpired:
		return OutcomeExpired
	case ResultMovedOn:
		return OutcomeMovedOn
	case outcomeWithdrawn:
		return OutcomeWithdrawn
	case ResultConfirmedMCP:
		return OutcomeMCPConfirmed
	case outcomeUsed:
		return "used"
	case outcomeRefusedHeld:
		return o.Refusal
	case outcomeSharedLost:
		return "The person answered this call's card in another conversation; what came of it can no longer be read, and it may or may not have run."
	}
	// A kind this version does not know: never said to have run.
	return "The outcome is unknown to this gate; it may or may not have run; nothing was retried."
}

func (o Outcome) formFields() string {
	if len(o.Fields) == 0 {
		return "the form"
	}
	return strings.Join(o.Fields, ", ")
}

// summary is the outcome for operators (the admin API, the audit log):
// the Outcome itself, which holds no reply and no value.
func (o Outcome) summary() string {
	return o.encode()
}
