// Package anthropictest checks an Anthropic Messages request's history as
// strictly as Anthropic does (Check), so that a fake provider refuses,
// with Anthropic's message, the histories the real API refuses. The tests'
// fake provider (internal/testkit) answers a Violation with a 400.
//
// builders.go holds the stream builders and anthropic-sdk-go readers the
// tests of provider/anthropic, provider and interceptor share.
package anthropictest

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// Check returns Anthropic's complaint about a history in which an
// assistant message's tool_use blocks are not each answered by a
// tool_result in the next message, which must be the person's (role
// user), or in which that message has a tool_result after a block of
// another type; nil when the history pairs. A tool_result naming no call
// is not checked.
func Check(body []byte) error {
	msgs := gjson.GetBytes(body, "messages").Array()
	for i, m := range msgs {
		if m.Get("role").String() != "assistant" {
			continue
		}
		var ids []string
		for _, b := range m.Get("content").Array() {
			if b.Get("type").String() == "tool_use" {
				ids = append(ids, b.Get("id").String())
			}
		}
		if len(ids) == 0 {
			continue
		}
		if i+1 >= len(msgs) || msgs[i+1].Get("role").String() != "user" {
			return violation("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s", i, ids[0])
		}
		answered := map[string]bool{}
		leading := true
		for _, b := range msgs[i+1].Get("content").Array() {
			if b.Get("type").String() == "tool_result" {
				if !leading {
					return violation("messages.%d: tool_result blocks must come first in the user message", i+1)
				}
				answered[b.Get("tool_use_id").String()] = true
			} else {
				leading = false
			}
		}
		for _, id := range ids {
			if !answered[id] {
				return violation("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s", i, id)
			}
		}
	}
	return nil
}

// Violation is a history Anthropic refuses; its text is the API's message.
type Violation struct{ Message string }

func (v Violation) Error() string { return v.Message }

func violation(format string, args ...any) error { return Violation{fmt.Sprintf(format, args...)} }
