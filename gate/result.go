package gate

import (
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

// Result is what became of a hold, for the person's page: read from its
// state, its answer and its stored Outcome (whose kinds it shares). It is
// derived, never stored; an outcome it does not know reads as
// ResultUnknown ("it may or may not have run"), never as done.
type Result struct {
	Kind   string `json:"kind"`
	Status int    `json:"status,omitempty"` // the app's HTTP status, when the outcome names one
	// Why says more for ResultUnchecked (not found, not allowed,
	// unavailable, unreadable), ResultUnknown (UnknownNoAnswer, ...) and
	// ResultNotRun (NotRunPolicyChanged).
	Why string `json:"why,omitempty"`

	reply string // for ResultDone: where the model's reply came from (Outcome.Reply; legacy: its text)
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
	return storedResult(h.Outcome)
}

// storedResult is the Result of a settled hold's stored outcome.
func storedResult(stored string) Result {
	o, ok := decodeOutcome(stored)
	if !ok {
		return legacyResult(stored)
	}
	return o.result()
}

// result is what the page says of an outcome.
func (o Outcome) result() Result {
	switch o.Kind {
	case ResultDone:
		return Result{Kind: ResultDone, reply: o.Reply}
	case ResultDoneUnread, ResultRefused, ResultInvalid:
		return Result{Kind: o.Kind, Status: o.Status}
	case ResultUnknown:
		return Result{Kind: ResultUnknown, Why: o.Why, Status: o.Status}
	case ResultUnchecked:
		return Result{Kind: ResultUnchecked, Why: o.Why}
	case ResultNotRun:
		if o.Why == NotRunPolicyChanged || o.Why == notRunPolicyDropped {
			return Result{Kind: ResultNotRun, Why: NotRunPolicyChanged}
		}
		return Result{Kind: ResultNotRun}
	case ResultNotSent, ResultChanged, ResultDeclined, ResultClosed, ResultExpired, ResultMovedOn, ResultConfirmedMCP:
		return Result{Kind: o.Kind}
	case outcomeWithdrawn, outcomeUsed, outcomeRefusedHeld:
		return Result{Kind: ResultNotRun}
	case outcomeSharedLost:
		return Result{Kind: ResultUnknown}
	}
	return Result{Kind: ResultUnknown}
}
