package gate

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/store"
)

// What the person's page says became of a hold (Result.Kind). The page
// words each in the person's language; the model reads the outcome text.
const (
	ResultWaiting      = "waiting"       // not answered yet
	ResultPending      = "pending"       // answered; runs once the step's other held calls are answered
	ResultRunning      = "running"       // the app is being asked now
	ResultDone         = "done"          // the app answered 2xx
	ResultDoneUnread   = "done_unread"   // the app answered 2xx, but its answer could not be read in full
	ResultConfirmedMCP = "confirmed_mcp" // confirmed over MCP: runs once, when the client continues the call
	ResultDeclined     = "declined"      // nothing ran
	ResultClosed       = "closed"        // a form closed without answering ("Not now"); nothing ran
	ResultExpired      = "expired"       // not answered in time; nothing ran
	ResultMovedOn      = "moved_on"      // the person wrote a new message instead; nothing ran
	ResultChanged      = "changed"       // the record changed while waiting; nothing ran
	ResultUnchecked    = "unchecked"     // the record could not be read again (Why); nothing ran
	ResultRefused      = "refused"       // the app refused the action (Status); nothing ran
	ResultInvalid      = "invalid"       // the app refused the arguments (422); nothing ran
	ResultNotSent      = "not_sent"      // the app could not be reached; nothing ran
	ResultNotRun       = "not_run"       // the gate could not run it (its policy changed, the answer was lost); nothing ran
	ResultUnknown      = "unknown"       // it may or may not have run (Why, Status); nothing was retried
)

// Why an outcome is ResultUnchecked: the record could not be read again.
const (
	UncheckedNotFound   = uncheckedNotFound
	UncheckedForbidden  = uncheckedForbidden
	UncheckedDown       = uncheckedDown
	UncheckedUnreadable = uncheckedUnreadable
)

// Why an outcome is ResultNotRun, when the gate can say more.
const (
	NotRunPolicyChanged = "policy_changed" // the policy dropped or changed the action after the person was asked
)

// Why an outcome is ResultUnknown.
const (
	UnknownNoAnswer = "no_answer" // the app did not answer
	UnknownFailed   = "failed"    // the app failed (Status is its 5xx)
	UnknownLost     = "lost"      // the gate stopped before the app answered
)

// Result is what became of a hold, read from its state, its answer and the
// outcome text the model reads. It is derived, never stored: the texts are
// the record, and a text this function does not know reads as
// ResultUnknown ("it may or may not have run"), never as done.
type Result struct {
	Kind   string `json:"kind"`
	Status int    `json:"status,omitempty"` // the app's HTTP status, when the outcome names one
	// Why says more for ResultUnchecked (not found, not allowed,
	// unavailable, unreadable), ResultUnknown (UnknownNoAnswer, ...) and
	// ResultNotRun (NotRunPolicyChanged).
	Why string `json:"why,omitempty"`

	reply string // for ResultDone: the text the model read after the person's part
}

// resultOf reads what became of hold h, as stored now; complete says no
// hold of its step still waits.
func resultOf(h store.Hold, state store.State, complete bool) Result {
	switch state {
	case store.Waiting:
		return Result{Kind: ResultWaiting}
	case store.Expired:
		return Result{Kind: ResultExpired}
	}
	switch h.Answer {
	case store.AnswerDecline:
		return Result{Kind: ResultDeclined}
	case store.AnswerLater:
		return Result{Kind: ResultClosed}
	case store.AnswerMovedOn:
		return Result{Kind: ResultMovedOn}
	case store.AnswerTimedOut:
		return Result{Kind: ResultExpired}
	case store.AnswerConfirm, store.AnswerSubmit:
	default:
		// Nothing runs for any other answer (releaseHold runs only
		// confirm and submit).
		return Result{Kind: ResultNotRun}
	}
	if h.Answer == store.AnswerConfirm && h.Protocol == ProtocolMCP {
		// The page's confirm never runs an MCP call; the client's retry
		// does, once.
		return Result{Kind: ResultConfirmedMCP}
	}
	switch state {
	case store.Answered:
		if !complete {
			return Result{Kind: ResultPending}
		}
		return Result{Kind: ResultRunning}
	case store.Running:
		return Result{Kind: ResultRunning}
	}
	return readOutcome(h.Outcome)
}

var (
	unreadRe  = regexp.MustCompile(`^the app's answer \(HTTP (\d{3})\) could not be read in full\.$`)
	failedRe  = regexp.MustCompile(`^the app failed \(HTTP (\d{3})\); it may or may not have made changes; nothing was retried\.$`)
	refusedRe = regexp.MustCompile(`^the app refused the action \(HTTP (\d{3})\); nothing ran\.$`)
)

// readOutcome reads a released call's outcome text (see outcome.go): the
// person's part, then ". " and the reply, or ", but " and a clause. It
// reads from the left, so a reply or a read's body (the app's words)
// cannot pose as a failure clause.
func readOutcome(outcome string) Result {
	switch outcome {
	case OutcomeChanged:
		return Result{Kind: ResultChanged}
	case outcomePolicyGone, outcomeNoEndpoint, outcomeAnswerLost:
		return Result{Kind: ResultNotRun}
	case outcomePolicyDropped, outcomePolicyChanged:
		return Result{Kind: ResultNotRun, Why: NotRunPolicyChanged}
	case OutcomeDeclined:
		return Result{Kind: ResultDeclined}
	}
	rest, ok := afterPersonPart(outcome)
	if !ok {
		return Result{Kind: ResultUnknown}
	}
	if reply, ok := strings.CutPrefix(rest, ". "); ok {
		return Result{Kind: ResultDone, reply: reply}
	}
	clause, ok := strings.CutPrefix(rest, ", but ")
	if !ok {
		return Result{Kind: ResultUnknown}
	}
	switch clause {
	case clauseNotSent:
		return Result{Kind: ResultNotSent}
	case clauseNoAnswer:
		return Result{Kind: ResultUnknown, Why: UnknownNoAnswer}
	case clauseLost:
		return Result{Kind: ResultUnknown, Why: UnknownLost}
	case clausePolicyURL:
		return Result{Kind: ResultNotRun}
	}
	for _, why := range []string{uncheckedNotFound, uncheckedForbidden, uncheckedDown, uncheckedUnreadable} {
		if clause == "the record could not be checked ("+why+"); nothing ran." {
			return Result{Kind: ResultUnchecked, Why: why}
		}
	}
	if m := unreadRe.FindStringSubmatch(clause); m != nil {
		return Result{Kind: ResultDoneUnread, Status: atoi(m[1])}
	}
	if m := failedRe.FindStringSubmatch(clause); m != nil {
		return Result{Kind: ResultUnknown, Why: UnknownFailed, Status: atoi(m[1])}
	}
	if m := refusedRe.FindStringSubmatch(clause); m != nil {
		return Result{Kind: ResultRefused, Status: atoi(m[1])}
	}
	if strings.HasPrefix(clause, clauseInvalid) && strings.HasSuffix(clause, "; nothing ran.") {
		return Result{Kind: ResultInvalid, Status: 422}
	}
	return Result{Kind: ResultUnknown}
}

// afterPersonPart returns what follows the person's part of an outcome:
// "The person confirmed", "The person filled in: a, b", "The person
// submitted the form without filling in a field" or "The person answered"
// (personPart's fallback). A form's part lists field names joined by ", ";
// it ends where ". " or ", but " first follows.
func afterPersonPart(outcome string) (string, bool) {
	for _, part := range []string{PersonConfirmed, PersonSubmitted, personAnswered} {
		if rest, ok := strings.CutPrefix(outcome, part); ok && (strings.HasPrefix(rest, ". ") || strings.HasPrefix(rest, ", but ")) {
			return rest, true
		}
	}
	rest, ok := strings.CutPrefix(outcome, PersonFilledIn)
	if !ok {
		return "", false
	}
	dot, but := strings.Index(rest, ". "), strings.Index(rest, ", but ")
	switch {
	case but >= 0 && (dot < 0 || but < dot):
		return rest[but:], true
	case dot >= 0:
		return rest[dot:], true
	}
	return "", false
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
