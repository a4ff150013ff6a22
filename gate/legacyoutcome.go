package gate

import (
	"regexp"
	"strconv"
	"strings"
)

// Outcomes stored before they were structured data (Outcome) are the
// sentence the model read. Such a record still reads as it did: the model
// reads the sentence as stored, and the page's Result is read from it by
// legacyResult below, the one place a sentence is parsed. Nothing writes
// sentences any more; records are deleted at their Expires plus the
// store's retention (default 24 h), so after an upgrade this code reads
// only records made before it, and can go once every store has passed
// one retention period since. The admin API and the audit log never show
// a legacy sentence (it may carry a read's reply): only its Result kind.

var (
	unreadRe  = regexp.MustCompile(`^the app's answer \(HTTP (\d{3})\) could not be read in full\.$`)
	failedRe  = regexp.MustCompile(`^the app failed \(HTTP (\d{3})\); it may or may not have made changes; nothing was retried\.$`)
	refusedRe = regexp.MustCompile(`^the app refused the action \(HTTP (\d{3})\); nothing ran\.$`)
)

// legacyResult reads a released call's outcome text (see outcome.go): the
// person's part, then ". " and the reply, or ", but " and a clause. It
// reads from the left, so a reply or a read's body (the app's words)
// cannot pose as a failure clause.
func legacyResult(outcome string) Result {
	switch outcome {
	case OutcomeChanged:
		return Result{Kind: ResultChanged}
	case OutcomeMCPConfirmed:
		return Result{Kind: ResultConfirmedMCP}
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
		return Result{Kind: ResultDone, reply: legacyReply(reply)}
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
	for _, part := range []string{PersonConfirmed, PersonSubmitted, personAnsweredPart} {
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

// legacyReply is Result.reply of a legacy done outcome: replyPolicy when
// its text may be the policy's reply (the page compares it with the
// policy's), else replyApp.
func legacyReply(text string) string {
	if text == "Done." {
		return ""
	}
	return "legacy:" + text
}
