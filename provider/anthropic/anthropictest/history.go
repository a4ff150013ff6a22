package anthropictest

import (
	"strings"

	"github.com/tidwall/gjson"
)

// HistoryError rejects a request history the way the Messages API does
// (wire-formats.md §3.4): every tool_use of an assistant message must be
// answered by a tool_result in the next message, a user message, where the
// tool_result blocks come first; a tool_result must answer a tool_use of
// the message right before it. Text blocks must not be empty. It is
// stricter than Check, whose messages the fake provider answers with.
func HistoryError(body []byte) error {
	if !gjson.ValidBytes(body) {
		return violation("invalid JSON")
	}
	msgs := gjson.GetBytes(body, "messages").Array()
	for i, m := range msgs {
		leading := true
		var uses map[string]bool
		if i > 0 && msgs[i-1].Get("role").Str == "assistant" {
			uses = UseIDs(msgs[i-1])
		}
		var bad error
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "tool_result":
				id := b.Get("tool_use_id").Str
				if m.Get("role").Str != "user" || !leading {
					bad = violation("messages.%d: tool_result %s is not at the start of a user message", i, id)
				} else if !uses[id] {
					bad = violation("messages.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, id)
				}
			case "text":
				leading = false
				if strings.TrimSpace(b.Get("text").Str) == "" {
					bad = violation("messages.%d: text content blocks must contain non-whitespace text", i)
				}
			default:
				leading = false
			}
			return bad == nil
		})
		if bad != nil {
			return bad
		}
		if m.Get("role").Str != "assistant" {
			continue
		}
		var missing []string
		answered := make(map[string]bool)
		if i+1 < len(msgs) && msgs[i+1].Get("role").Str == "user" {
			msgs[i+1].Get("content").ForEach(func(_, b gjson.Result) bool {
				if b.Get("type").Str != "tool_result" {
					return false
				}
				answered[b.Get("tool_use_id").Str] = true
				return true
			})
		}
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str == "tool_use" && !answered[b.Get("id").Str] {
				missing = append(missing, b.Get("id").Str)
			}
			return true
		})
		if len(missing) > 0 {
			return violation("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", "))
		}
	}
	return nil
}
