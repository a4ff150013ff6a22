package provider

import "strings"

// Fate is what becomes of one inspected call, as an adapter reads a Verdict.
type Fate uint8

const (
	Held    Fate = iota // removed; the verdict's text shown in its place
	Passed              // reaches the app untouched
	Refused             // removed; its refusal goes to the model (or is shown in place)
)

// Fates reads v for calls: a call named by a refusal (by id) is Refused,
// else one that Pass marks true is Passed, else it is Held. contents holds,
// per call, its refusal's content ("" unless Refused); refusals naming no
// call are ignored. ids reports whether every Refused call has an id (a
// tool result needs one).
func (v Verdict) Fates(calls []Call) (fates []Fate, contents []string, anyRefused, ids bool) {
	fates = make([]Fate, len(calls))
	contents = make([]string, len(calls))
	ids = true
	for i, c := range calls {
		if i < len(v.Pass) && v.Pass[i] {
			fates[i] = Passed
		}
		for _, r := range v.Refusals {
			if r.CallID == c.ID {
				fates[i] = Refused
				contents[i] = r.Content
				anyRefused = true
				ids = ids && c.ID != ""
				break
			}
		}
	}
	return fates, contents, anyRefused, ids
}

// InPlace is the text shown when refusals cannot go back to the model: the
// verdict's text, then each refusal's content, blank lines between.
func InPlace(text string, fates []Fate, contents []string) string {
	var b strings.Builder
	b.WriteString(text)
	for i, f := range fates {
		if f != Refused || contents[i] == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(contents[i])
	}
	return b.String()
}

// CouldNotContinue is the text the app reads when a follow-up brought no
// usable answer.
func CouldNotContinue(reason string) string { return "Toolgate could not continue: " + reason }
