package pages

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// fieldError is one error shown under a field.
type fieldError struct {
	Text string `json:"text"`
	Lang string `json:"lang,omitempty"` // "en" when the rule is shown as the gate wrote it on a page in another language
}

// ruleRe reads the rule words the form and schema checks write (package
// forms' Check, policies' argument checks): "required", "at most 120
// characters", "minimum 3", "must be a valid date-time".
var ruleRe = regexp.MustCompile(`^(?:(required)|at (least|most) (\d+) (characters|items)|(minimum|maximum) (-?[0-9][0-9.eE+-]*)|must be (greater|less) than (-?[0-9][0-9.eE+-]*)|must be (integer|number)|must be (?:one of the (?:choices|allowed values)|the allowed value)|items must be (unique)|must be a valid (email|uri|url|date|date-time))$`)

// rule says a broken rule to the person in the page's language. A rule it
// does not know is shown as written, in English, with a capital and a full
// stop.
func (s speech) rule(rule string) fieldError {
	w := s.W
	m := ruleRe.FindStringSubmatch(rule)
	if m == nil {
		lang := ""
		if s.Tag != "en" {
			lang = "en"
		}
		return fieldError{Text: sentence(rule), Lang: lang}
	}
	n, _ := strconv.Atoi(m[3])
	text := ""
	switch {
	case m[1] != "":
		text = w.RuleRequired
	case m[2] == "least" && m[4] == "characters":
		text = fmt.Sprintf(w.RuleMinChars, n)
	case m[2] == "most" && m[4] == "characters":
		text = fmt.Sprintf(w.RuleMaxChars, n)
	case m[2] == "least":
		text = fmt.Sprintf(w.RuleMinItems, n)
	case m[2] == "most":
		text = fmt.Sprintf(w.RuleMaxItems, n)
	case m[5] == "minimum":
		text = fmt.Sprintf(w.RuleMin, m[6])
	case m[5] == "maximum":
		text = fmt.Sprintf(w.RuleMax, m[6])
	case m[7] == "greater":
		text = fmt.Sprintf(w.RuleGreater, m[8])
	case m[7] == "less":
		text = fmt.Sprintf(w.RuleLess, m[8])
	case m[9] == "integer":
		text = w.RuleInteger
	case m[9] == "number":
		text = w.RuleNumber
	case m[10] == "unique":
		text = w.RuleUnique
	case m[11] == "email":
		text = w.RuleEmail
	case m[11] == "uri" || m[11] == "url":
		text = w.RuleURL
	case m[11] == "date":
		text = w.RuleDate
	case m[11] == "date-time":
		text = w.RuleDateTime
	default:
		text = w.RuleChoice
	}
	return fieldError{Text: text}
}

// rules says each of a field's broken rules.
func (s speech) rules(rules []string) []fieldError {
	out := make([]fieldError, len(rules))
	for i, r := range rules {
		out[i] = s.rule(r)
	}
	return out
}

// sentence starts s with a capital and ends it with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
