package policies

import (
	"fmt"
	"strings"
)

// Error is a mistake in a policy file, or a failure to read it. Its message
// names the file, the action and the key, so an operator can find it without
// a debugger:
//
//	policy /etc/toolgate/blog.yaml: action "delete_post": card.rows: a row needs card.record
type Error struct {
	File   string // the policy file; "" for a check at run time
	Line   int    // line of the offending key or value, 1-based; 0 when unknown
	Action string // the action's tool name; "" outside an action
	Key    string // the key path inside the action or file, e.g. "card.rows"; "" for the whole
	Err    error  // what is wrong
}

func (e *Error) Error() string {
	var b strings.Builder
	// A check at run time (Action.CheckAsk) knows no file.
	if e.File != "" {
		b.WriteString("policy ")
		b.WriteString(e.File)
		b.WriteString(": ")
	} else {
		b.WriteString("policy: ")
	}
	if e.Action != "" {
		fmt.Fprintf(&b, "action %q: ", e.Action)
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	// Some causes (schema compilers, YAML) report on several lines; one
	// line keeps the message usable in logs.
	msg := "invalid"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	for i, line := range strings.Split(msg, "\n") {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strings.TrimSpace(line))
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
