// Package chattest checks a Chat Completions request's history as strictly
// as OpenAI does (Check), so that a fake provider refuses, with OpenAI's
// message, the histories the real API refuses. The tests' fake provider
// (internal/testkit) answers a Violation with a 400.
//
// builders.go holds the stream builders and openai-go readers the tests of
// provider/chat, provider and interceptor share.
package chattest

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// Check returns OpenAI's complaint about a history in which an assistant
// message's tool calls are not all answered by the tool messages right
// after it (before a message of another role or the end), or nil when the
// history pairs. When several calls of a message go unanswered, the first
// in the message's order is named.
func Check(body []byte) error {
	msgs := gjson.GetBytes(body, "messages").Array()
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Get("role").String() != "assistant" || !m.Get("tool_calls").Exists() {
			continue
		}
		answered := map[string]bool{}
		for j := i + 1; j < len(msgs) && msgs[j].Get("role").String() == "tool"; j++ {
			answered[msgs[j].Get("tool_call_id").String()] = true
		}
		for _, c := range m.Get("tool_calls").Array() {
			if id := c.Get("id").String(); !answered[id] {
				return Violation{fmt.Sprintf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", id)}
			}
		}
	}
	return nil
}

// Violation is a history OpenAI refuses; its text is the API's message.
type Violation struct{ Message string }

func (v Violation) Error() string { return v.Message }
