package interceptor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// RewriteRequest restores the history behind this gate's links in a
// Messages request body (wire-formats.md §3.4).
//
// A body that does not hold linkPrefix (plainly, or with "/" written "\/")
// is returned as is, the same slice, without JSON work. Otherwise it must be
// valid JSON, or it is an error.
//
// Every assistant message whose content (a string, or its "text" blocks)
// holds linkPrefix followed by a step id is looked up with r.Restore; the
// last such link in a message counts. Each step is restored once.
// userFollows is true when a later user message holds anything but
// tool_result blocks: the person wrote, rather than the app answering the
// calls that passed. When Restore reports ok:
//
//   - the message's content becomes Restored.Message's content, verbatim
//     (thinking and redacted_thinking blocks with their signatures, as the
//     API requires them echoed), with any tool_use block of the app's
//     message that it lacks (by id) appended;
//   - the next user message starts with the tool_result blocks: those it
//     already has (for calls that passed), then one
//     {"type":"tool_result","tool_use_id":…,"content":…} per Result whose
//     call is a tool_use of the restored content and is not answered
//     there yet, then the rest of its content (a string content becomes a
//     text block; an empty one is dropped). With no user message right
//     after, one is inserted holding just the tool results.
//
// Nothing else in the body changes: it is spliced, not re-encoded. The
// result is a new slice when anything was restored, else body. A stored
// message without a content array is an error.
func (Anthropic) RewriteRequest(ctx context.Context, body []byte, linkPrefix string, r Restorer) ([]byte, error) {
	if !hasLink(body, linkPrefix) {
		return body, nil
	}
	if !gjson.ValidBytes(body) {
		return nil, errors.New("anthropic request: invalid JSON carrying a gate link")
	}
	msgs := gjson.GetBytes(body, "messages")
	if !msgs.IsArray() {
		return body, nil
	}
	var list []gjson.Result
	msgs.ForEach(func(_, m gjson.Result) bool {
		list = append(list, m)
		return true
	})
	// person[i]: a user message at or after i holds the person's words.
	person := make([]bool, len(list)+1)
	for i := len(list) - 1; i >= 0; i-- {
		person[i] = person[i+1] || list[i].Get("role").Str == "user" && anthPersonWrote(list[i].Get("content"))
	}

	var edits []edit
	var done map[string]bool
	for i, m := range list {
		if m.Get("role").Str != "assistant" {
			continue
		}
		content := m.Get("content")
		step := lastStep(content, linkPrefix)
		if step == "" || done[step] {
			continue
		}
		if done == nil {
			done = make(map[string]bool)
		}
		done[step] = true
		restored, ok := r.Restore(ctx, step, person[i+1])
		if !ok {
			continue
		}
		newContent, calls, err := anthRestoredContent(restored.Message, content)
		if err != nil {
			return nil, fmt.Errorf("anthropic request: step %s: %w", step, err)
		}
		e, err := editOf(body, content, newContent)
		if err != nil {
			return nil, fmt.Errorf("anthropic request: %w", err)
		}
		edits = append(edits, e)

		var next gjson.Result // the user message right after, if any
		if i+1 < len(list) && list[i+1].Get("role").Str == "user" {
			next = list[i+1]
		}
		answered := make(map[string]bool)
		next.Get("content").ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str == "tool_result" {
				answered[b.Get("tool_use_id").Str] = true
			}
			return true
		})
		var ours []string
		for _, res := range restored.Results {
			if answered[res.CallID] || !calls[res.CallID] {
				continue
			}
			answered[res.CallID] = true
			b := append([]byte(`{"type":"tool_result","tool_use_id":`), gjson.AppendJSONString(nil, res.CallID)...)
			b = append(b, `,"content":`...)
			b = gjson.AppendJSONString(b, res.Content)
			ours = append(ours, string(append(b, '}')))
		}
		if len(ours) == 0 {
			continue
		}
		if !next.Exists() {
			at := m.Index + len(m.Raw)
			edits = append(edits, edit{start: at, end: at, repl: `,{"role":"user","content":[` + strings.Join(ours, ",") + `]}`})
			continue
		}
		msg, err := anthWithResults(next, ours)
		if err != nil {
			return nil, fmt.Errorf("anthropic request: %w", err)
		}
		if e, err = editOf(body, next, msg); err != nil {
			return nil, fmt.Errorf("anthropic request: %w", err)
		}
		edits = append(edits, e)
	}
	if len(edits) == 0 {
		return body, nil
	}
	return applyEdits(body, edits), nil
}

// anthPersonWrote reports whether a user message's content holds anything
// but tool results: a non-blank string, or a block of another type.
func anthPersonWrote(content gjson.Result) bool {
	if content.Type == gjson.String {
		return strings.TrimSpace(content.Str) != ""
	}
	wrote := false
	content.ForEach(func(_, b gjson.Result) bool {
		wrote = b.Get("type").Str != "tool_result"
		return !wrote
	})
	return wrote
}

// anthRestoredContent returns the stored message's content with the
// tool_use blocks of the app's content that it lacks (by id) appended, and
// the ids of its tool_use blocks. The stored message holds every block of
// the step, so normally its content comes back as it is.
func anthRestoredContent(stored []byte, app gjson.Result) (string, map[string]bool, error) {
	if !gjson.ValidBytes(stored) {
		return "", nil, errors.New("stored message is not valid JSON")
	}
	c := gjson.GetBytes(stored, "content")
	if !c.IsArray() {
		return "", nil, errors.New("stored message has no content blocks")
	}
	ids := make(map[string]bool)
	var blocks []string
	c.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == "tool_use" {
			ids[b.Get("id").Str] = true
		}
		blocks = append(blocks, b.Raw)
		return true
	})
	extra := false
	app.ForEach(func(_, b gjson.Result) bool {
		if id := b.Get("id").Str; app.IsArray() && b.Get("type").Str == "tool_use" && !ids[id] {
			ids[id] = true
			blocks = append(blocks, b.Raw)
			extra = true
		}
		return true
	})
	if !extra {
		return strings.TrimSpace(c.Raw), ids, nil
	}
	return "[" + strings.Join(blocks, ",") + "]", ids, nil
}

// anthWithResults returns the user message msg with its content made
// [its tool_result blocks, ours, the rest of its content].
func anthWithResults(msg gjson.Result, ours []string) (string, error) {
	c := msg.Get("content")
	var results, rest []string
	switch {
	case c.Type == gjson.String:
		if strings.TrimSpace(c.Str) != "" {
			rest = append(rest, `{"type":"text","text":`+c.Raw+`}`)
		}
	case c.IsArray():
		c.ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str == "tool_result" {
				results = append(results, b.Raw)
			} else {
				rest = append(rest, b.Raw)
			}
			return true
		})
	}
	all := append(append(results, ours...), rest...)
	return sjson.SetRaw(msg.Raw, "content", "["+strings.Join(all, ",")+"]")
}

var anthMetadataKey = []byte(`"metadata"`)

// AnthropicOwner returns the end-user id a Messages request body carries
// in metadata.user_id (trimmed), or "" when it has none. The Caddy handler
// uses it as the conversation's owner when its owner placeholder gives
// nothing, as it uses safety_identifier and user for Chat.
func AnthropicOwner(body []byte) string {
	if !bytes.Contains(body, anthMetadataKey) || !gjson.ValidBytes(body) {
		return ""
	}
	if v := gjson.GetBytes(body, "metadata.user_id"); v.Type == gjson.String {
		return strings.TrimSpace(v.Str)
	}
	return ""
}
