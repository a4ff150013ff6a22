package pages

import (
	"fmt"

	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/store"
)

// status is what the page says became of a hold, what happened first:
// a head ("Done.", "Declined."), then a detail ("The post was removed.",
// "Nothing ran."). Each is one or two sentences, in sentence case, ending
// with a full stop.
type status struct {
	Head       string
	Detail     string
	DetailLang string // the detail's language when it is the policy's (a reply), else ""
}

// personStatus words the hold's result (gate.Result, read from its state,
// answer and outcome) for the person. It says only what the gate knows: an
// outcome it cannot read says the call may or may not have run.
func (w *words) personStatus(h gate.HoldView) status {
	answered := w.Confirmed
	if h.Answer == store.AnswerSubmit {
		answered = w.Submitted
	}
	r := h.Result
	switch r.Kind {
	case gate.ResultWaiting:
		return status{}
	case gate.ResultPending:
		return status{Head: answered, Detail: w.RunsAfterOthers}
	case gate.ResultRunning:
		return status{Head: answered, Detail: w.Running}
	case gate.ResultConfirmedMCP:
		return status{Head: w.Confirmed, Detail: w.RunsWhenAssistantContinues}
	case gate.ResultDone:
		s := status{Head: w.Done}
		if l := h.Localized; l != nil && l.Reply != "" {
			s.Detail, s.DetailLang = l.Reply, l.ReplyLang
		}
		return s
	case gate.ResultDoneUnread:
		return status{Head: w.DoneUnread}
	case gate.ResultDeclined:
		return status{Head: w.Declined, Detail: w.NothingRan}
	case gate.ResultClosed:
		return status{Head: w.ClosedUnanswered, Detail: w.NothingRan}
	case gate.ResultExpired:
		return status{Head: w.Expired, Detail: w.NothingRan}
	case gate.ResultMovedOn:
		return status{Head: w.MovedOn, Detail: w.MovedOnDetail}
	case gate.ResultChanged:
		return status{Head: w.NotRun, Detail: w.Changed}
	case gate.ResultUnchecked:
		detail := map[string]string{
			gate.UncheckedNotFound:  w.UncheckedNotFound,
			gate.UncheckedForbidden: w.UncheckedForbidden,
			gate.UncheckedDown:      w.UncheckedDown,
		}[r.Why]
		if detail == "" {
			detail = w.UncheckedUnreadable
		}
		return status{Head: w.NotRun, Detail: detail}
	case gate.ResultRefused:
		return status{Head: w.NotRun, Detail: fmt.Sprintf(w.AppRefused, r.Status)}
	case gate.ResultInvalid:
		return status{Head: w.NotRun, Detail: w.AppRefusedValues}
	case gate.ResultNotSent:
		return status{Head: w.NotRun, Detail: w.AppUnreachable}
	case gate.ResultNotRun:
		if r.Why == gate.NotRunPolicyChanged {
			return status{Head: w.NotRun, Detail: w.PolicyChanged}
		}
		return status{Head: w.NotRun, Detail: w.GateCouldNotRun}
	}
	// gate.ResultUnknown, and any kind this page does not know.
	switch r.Why {
	case gate.UnknownNoAnswer:
		return status{Head: w.MayHaveRun, Detail: w.NoAnswer}
	case gate.UnknownFailed:
		return status{Head: w.MayHaveRun, Detail: fmt.Sprintf(w.AppFailed, r.Status)}
	case gate.UnknownLost:
		return status{Head: w.MayHaveRun, Detail: w.GateStopped}
	}
	return status{Head: w.MayHaveRun, Detail: w.CannotTell}
}
