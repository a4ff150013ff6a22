package interceptor

import "strings"

// fate is what becomes of one inspected call.
type fate uint8

const (
	held    fate = iota // removed; the verdict's text shown in its place
	passed              // reaches the app untouched
	refused             // removed; its refusal goes to the model (or is shown in place)
)

// fates reads v for calls: a call named by a refusal (by id) is refused,
// else one that Pass marks true is passed, else it is held. contents holds,
// per call, its refusal's content ("" unless refused); refusals naming no
// call are ignored. ids reports whether every refused call has an id (a
// tool result needs one).
func (v Verdict) fates(calls []Call) (fates []fate, contents []string, anyRefused, ids bool) {
	fates = make([]fate, len(calls))
	contents = make([]string, len(calls))
	ids = true
	for i, c := range calls {
		if i < len(v.Pass) && v.Pass[i] {
			fates[i] = passed
		}
		for _, r := range v.Refusals {
			if r.CallID == c.ID {
				fates[i] = refused
				contents[i] = r.Content
				anyRefused = true
				ids = ids && c.ID != ""
				break
			}
		}
	}
	return fates, contents, anyRefused, ids
}

// inPlace is the text shown when refusals cannot go back to the model: the
// verdict's text, then each refusal's content, blank lines between.
func inPlace(text string, fates []fate, contents []string) string {
	var b strings.Builder
	b.WriteString(text)
	for i, f := range fates {
		if f != refused || contents[i] == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(contents[i])
	}
	return b.String()
}

// couldNotContinue is the text the app reads when a follow-up brought no
// usable answer.
func couldNotContinue(reason string) string { return "Toolgate could not continue: " + reason }
