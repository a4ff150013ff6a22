package gate

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/cards"
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

// The person's part of a released call's outcome: what follows it is
// ". " and the reply when the app answered 2xx, else ", but " and a
// clause saying what went wrong (Ran.After).
const (
	PersonConfirmed = "The person confirmed"
	PersonFilledIn  = "The person filled in: "
	PersonSubmitted = "The person submitted the form without filling in a field"
	// personAnswered stands in for a form's part when its answer cannot
	// be read back (personPart).
	personAnswered = "The person answered"
)

// What the model reads when the gate itself could not run a confirmed or
// submitted call: nothing ran.
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

// outcomeUnchecked is what the model reads when the record a confirmed
// card was built from cannot be read again: nothing ran, and it is not
// said to have changed.
func outcomeUnchecked(why string) string {
	return PersonConfirmed + ", but the record could not be checked (" + why + "); nothing ran."
}

// Ran is what came of one release.
type Ran struct {
	OK   bool   // the app answered 2xx; Text is its reply
	Text string // the reply, or a clause starting lower-case
}

// After joins the person's part and the release's outcome.
func (r Ran) After(person string) string {
	if r.OK {
		return person + ". " + r.Text
	}
	return person + ", but " + r.Text
}

// ranLost is a release whose answer the gate never recorded.
var ranLost = Ran{Text: clauseLost}

// ruleWord is what a 422 body may say of a field and still reach the
// model: a rule's name and short parameters ("required", "max:200"), never
// a sentence, which could carry the person's value.
var ruleWord = regexp.MustCompile(`^[a-z_]{1,30}(:[A-Za-z0-9_,.\-]{1,40})?$`)

// runOutcome maps the endpoint's answer to what the model reads after the
// person's part (DESIGN.md, "Releasing the call").
func runOutcome(a *policies.Action, resp actions.Response, err error) Ran {
	switch {
	case resp.Status == 0 && errors.Is(err, actions.ErrNotSent):
		return Ran{Text: clauseNotSent}
	case resp.Status == 0:
		return Ran{Text: clauseNoAnswer}
	case resp.Status >= 200 && resp.Status <= 299:
		if a.Effect == policies.Read {
			if err != nil {
				return Ran{Text: fmt.Sprintf("the app's answer (HTTP %d) could not be read in full.", resp.Status)}
			}
			if len(resp.Body) > 0 {
				return Ran{OK: true, Text: cards.Clean(string(resp.Body), 4000)}
			}
		}
		if a.Reply == "" {
			return Ran{OK: true, Text: "Done."}
		}
		return Ran{OK: true, Text: a.Reply}
	case resp.Status == 422:
		return Ran{Text: clauseInvalid + refusedFields(resp.Body) + "; nothing ran."}
	case resp.Status >= 500:
		return Ran{Text: fmt.Sprintf("the app failed (HTTP %d); it may or may not have made changes; nothing was retried.", resp.Status)}
	default:
		return Ran{Text: fmt.Sprintf("the app refused the action (HTTP %d); nothing ran.", resp.Status)}
	}
}

// refusedFields reads {"errors": {"field": ["rule", ...]}} and names the
// fields with the rules that are rule words.
func refusedFields(body []byte) string {
	if !gjson.ValidBytes(body) {
		return ""
	}
	var parts []string
	gjson.GetBytes(body, "errors").ForEach(func(k, v gjson.Result) bool {
		field := cards.Clean(k.String(), 60)
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
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return ": " + strings.Join(parts, "; ")
}
