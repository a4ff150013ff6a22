package anthropic

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
	"github.com/toolgate/toolgate/wire/keyscan"
	"github.com/toolgate/toolgate/wire/links"
)

// RewriteRequest restores the history behind this gate's links in a
// Messages request body (wire-formats.md §3.4).
//
// A body that does not hold linkPrefix (plainly, or with "/" written "\/")
// is returned as is, the same slice, without JSON work. Otherwise it must be
// valid JSON, or it is an error.
//
// Every assistant message whose content (a string, or its "text" blocks)
// holds linkPrefix followed by a step id is looked up with r.Restore, link
// by link in the order they appear: one answer can carry several steps (a
// held call, a refused one sent back to the model, then a held call in its
// follow-up), and each goes back. Each step is restored once per request.
// userFollows is true when a later user message holds anything but
// tool_result blocks: the person wrote, rather than the app answering the
// calls that passed. The steps Restore reports ok for take the message's
// place, in order:
//
//   - each step's content is Restored.Message's content, verbatim
//     (thinking and redacted_thinking blocks with their signatures, as the
//     API requires them echoed); the last one's with any tool_use block of
//     the app's message that no step holds (by id) appended, in the app's
//     message itself;
//   - after each step but the last, a user message inserted with the
//     tool_result blocks of its calls: the app's own, moved from the user
//     message after the app's message, then one
//     {"type":"tool_result","tool_use_id":…,"content":…} per Result not
//     answered yet;
//   - the user message after the app's message starts with the tool_result
//     blocks left (for the last step's calls that passed), then the last
//     step's Results not answered yet, then the rest of its content (a
//     string content becomes a text block; an empty one is dropped). With
//     no user message right after, one is inserted holding just the tool
//     results.
//   - When words follow the last link (the model's reply after the person
//     answered, in the same response; see Turn.Resume), every step gets
//     its user message of results, and the app's message comes after them
//     made that reply: the rest of the linking text block and the blocks
//     after it (but tool_use blocks a step holds and text blocks reading
//     as a step's own), its first text without the blank line before it.
//     The user message after it loses the results moved to the steps (and
//     if it would be left empty, the reply is not split off).
//
// Nothing else in the body changes: it is spliced, not re-encoded. The
// result is a new slice when anything was restored, else body. A stored
// message without a content array is an error.
func (Anthropic) RewriteRequest(ctx context.Context, body []byte, linkPrefix string, r provider.Restorer) ([]byte, error) {
	if !links.Has(body, linkPrefix) {
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

	var edits []jsonedit.Edit
	done := make(map[string]bool)
	for i, m := range list {
		if m.Get("role").Str != "assistant" {
			continue
		}
		content := m.Get("content")
		var steps []provider.Restored
		var ids []string
		for _, step := range links.Steps(content, linkPrefix) {
			if done[step] {
				continue
			}
			done[step] = true
			if restored, ok := r.Restore(ctx, step, person[i+1]); ok {
				steps, ids = append(steps, restored), append(ids, step)
			}
		}
		if len(steps) == 0 {
			continue
		}
		var next gjson.Result // the user message right after, if any
		if i+1 < len(list) && list[i+1].Get("role").Str == "user" {
			next = list[i+1]
		}
		e, err := anthRestoreSteps(body, steps, ids, m, next, linkPrefix)
		if err != nil {
			return nil, fmt.Errorf("anthropic request: %w", err)
		}
		edits = append(edits, e...)
	}
	if len(edits) == 0 {
		return body, nil
	}
	return jsonedit.Apply(body, edits), nil
}

// anthRestoreSteps returns the edits that put steps in place of the app's
// message m, and their results in the user message next (when it
// exists) and in user messages inserted between them (see
// RewriteRequest).
func anthRestoreSteps(body []byte, steps []provider.Restored, ids []string, m, next gjson.Result, prefix string) ([]jsonedit.Edit, error) {
	contents := make([][]string, len(steps))
	held := make(map[string]bool)  // tool_use ids the steps hold
	texts := make(map[string]bool) // the text of the steps' text blocks
	for k, st := range steps {
		blocks, err := anthStoredBlocks(st.Message)
		if err != nil {
			return nil, fmt.Errorf("step %s: %w", ids[k], err)
		}
		contents[k] = blocks
		for _, b := range blocks {
			r := gjson.Parse(b)
			if id, ok := anthBlockToolUseID(r); ok {
				held[id] = true
			}
			if r.Get("type").Str == "text" {
				texts[strings.TrimSpace(r.Get("text").Str)] = true
			}
		}
	}
	app := m.Get("content")
	last := len(steps) - 1
	// The app's tool_use blocks that no step holds join the last step's
	// content, but for the follow-up's own (after upto).
	extra := func(upto int) {
		i := 0
		app.ForEach(func(_, b gjson.Result) bool {
			if id, ok := anthBlockToolUseID(b); ok && app.IsArray() && !held[id] && (upto < 0 || i <= upto) {
				held[id] = true
				contents[last] = append(contents[last], b.Raw)
			}
			i++
			return true
		})
	}
	follow, lead := anthFollowBlocks(app, prefix, held, texts)
	if follow == nil {
		extra(-1)
	} else if extra(lead); next.Exists() && !anthKeepsContent(next, held) {
		// The user message after would be left empty: the old shape.
		follow = nil
		extra(-1)
	}
	// The app's tool_result blocks, by the call they answer.
	appResults := make(map[string]string)
	next.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == "tool_result" {
			if id := b.Get("tool_use_id").Str; appResults[id] == "" {
				appResults[id] = b.Raw
			}
		}
		return true
	})
	answered := make(map[string]bool)
	moved := make(map[string]bool)
	// results returns a step's tool_result blocks: the app's for its calls
	// (when move), then one per Result not answered yet.
	results := func(k int, move bool) []string {
		var out []string
		calls := make(map[string]bool)
		for _, b := range contents[k] {
			if id, ok := anthBlockToolUseID(gjson.Parse(b)); ok {
				calls[id] = true
			}
		}
		if move {
			for _, b := range contents[k] {
				id, ok := anthBlockToolUseID(gjson.Parse(b))
				if ok && appResults[id] != "" && !answered[id] {
					answered[id], moved[id] = true, true
					out = append(out, appResults[id])
				}
			}
		} else {
			for id := range appResults {
				if calls[id] && !moved[id] {
					answered[id] = true
				}
			}
		}
		for _, res := range steps[k].Results {
			if answered[res.CallID] || !calls[res.CallID] {
				continue
			}
			answered[res.CallID] = true
			b := append([]byte(`{"type":"tool_result","tool_use_id":`), gjson.AppendJSONString(nil, res.CallID)...)
			b = append(b, `,"content":`...)
			b = gjson.AppendJSONString(b, res.Content)
			out = append(out, string(append(b, '}')))
		}
		return out
	}
	if follow != nil {
		return anthFollowEdits(body, contents, results, m, next, follow, moved)
	}
	var before []byte // the messages of every step but the last, inserted before m
	for k := range last {
		before = append(before, `{"role":"assistant","content":[`...)
		before = append(before, strings.Join(contents[k], ",")...)
		before = append(before, "]},"...)
		if rs := results(k, true); len(rs) > 0 {
			before = append(before, `{"role":"user","content":[`...)
			before = append(before, strings.Join(rs, ",")...)
			before = append(before, "]},"...)
		}
	}
	var edits []jsonedit.Edit
	if len(before) > 0 {
		edits = append(edits, jsonedit.Edit{Start: m.Index, End: m.Index, Repl: string(before)})
	}
	e, err := jsonedit.Of(body, app, "["+strings.Join(contents[last], ",")+"]")
	if err != nil {
		return nil, err
	}
	edits = append(edits, e)
	ours := results(last, false)
	if len(ours) == 0 && len(moved) == 0 {
		return edits, nil
	}
	if !next.Exists() {
		if len(ours) > 0 {
			at := m.Index + len(m.Raw)
			edits = append(edits, jsonedit.Edit{Start: at, End: at, Repl: `,{"role":"user","content":[` + strings.Join(ours, ",") + `]}`})
		}
		return edits, nil
	}
	msg, err := anthWithResults(next, ours, moved)
	if err != nil {
		return nil, err
	}
	if e, err = jsonedit.Of(body, next, msg); err != nil {
		return nil, err
	}
	return append(edits, e), nil
}

// anthFollowBlocks returns the blocks of the app's message content that the
// model wrote after its last link, and the index of the block holding that
// link: an answer that went on after the person answered (see
// Turn.Resume), or after a refused call went back to the model, holds the
// waiting text and then the model's reply. They are the rest of the
// linking text block (a text block) and the blocks after it, but for
// tool_use blocks a step holds (held) and text blocks that read as one of
// the steps' own (texts): a response's blocks after its held call. A
// string content gives its rest after the link as one text block. nil when
// no words follow.
func anthFollowBlocks(content gjson.Result, prefix string, held, texts map[string]bool) (follow []string, lead int) {
	raw, ok := links.Follow(content, prefix, "text")
	if !ok {
		return nil, -1
	}
	parsed := gjson.Parse(raw)
	if parsed.Type == gjson.String {
		return []string{`{"type":"text","text":` + raw + `}`}, 0
	}
	blocks := content.Array()
	for i, b := range blocks {
		if _, found := links.AfterLast(b.Get("text").Str, prefix); found {
			lead = i
		}
	}
	words := false
	parsed.ForEach(func(_, b gjson.Result) bool {
		id, isUse := anthBlockToolUseID(b)
		text := b.Get("type").Str == "text"
		switch {
		case isUse && held[id]:
		case text && texts[strings.TrimSpace(b.Get("text").Str)]:
		case text && !words:
			// The first text: without the blank line the gate put
			// between the waiting text and the reply.
			raw := b.Raw
			if t := b.Get("text").Str; strings.TrimLeft(t, " \t\r\n") != t {
				if r, err := sjson.Set(raw, "text", strings.TrimLeft(t, " \t\r\n")); err == nil {
					raw = r
				}
			}
			follow = append(follow, raw)
			words = true
		default:
			follow = append(follow, b.Raw)
		}
		return true
	})
	if !words {
		return nil, -1
	}
	return follow, lead
}

// anthKeepsContent reports whether a user message keeps anything once the
// tool_result blocks answering held calls are moved out of it.
func anthKeepsContent(msg gjson.Result, held map[string]bool) bool {
	c := msg.Get("content")
	if c.Type == gjson.String {
		return strings.TrimSpace(c.Str) != ""
	}
	keeps := false
	c.ForEach(func(_, b gjson.Result) bool {
		keeps = b.Get("type").Str != "tool_result" || !held[b.Get("tool_use_id").Str]
		return !keeps
	})
	return keeps
}

// anthFollowEdits returns the edits that put every step, each followed by
// a user message with its results, before the app's message m, and make
// m's content the model's follow-up blocks; the user message next (when
// it exists) loses the tool_result blocks moved to the steps.
func anthFollowEdits(body []byte, contents [][]string, results func(k int, move bool) []string, m, next gjson.Result, follow []string, moved map[string]bool) ([]jsonedit.Edit, error) {
	var before []byte
	for k := range contents {
		before = append(before, `{"role":"assistant","content":[`...)
		before = append(before, strings.Join(contents[k], ",")...)
		before = append(before, "]},"...)
		if rs := results(k, true); len(rs) > 0 {
			before = append(before, `{"role":"user","content":[`...)
			before = append(before, strings.Join(rs, ",")...)
			before = append(before, "]},"...)
		}
	}
	edits := []jsonedit.Edit{{Start: m.Index, End: m.Index, Repl: string(before)}}
	e, err := jsonedit.Of(body, m.Get("content"), "["+strings.Join(follow, ",")+"]")
	if err != nil {
		return nil, err
	}
	edits = append(edits, e)
	if !next.Exists() || len(moved) == 0 {
		return edits, nil
	}
	msg, err := anthWithResults(next, nil, moved)
	if err != nil {
		return nil, err
	}
	if e, err = jsonedit.Of(body, next, msg); err != nil {
		return nil, err
	}
	return append(edits, e), nil
}

// anthBlockToolUseID returns the id of a tool_use block.
func anthBlockToolUseID(b gjson.Result) (string, bool) {
	if b.Get("type").Str != "tool_use" {
		return "", false
	}
	return b.Get("id").Str, true
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

// anthStoredBlocks returns the content blocks of a step's stored
// message, raw.
func anthStoredBlocks(stored []byte) ([]string, error) {
	if !gjson.ValidBytes(stored) {
		return nil, errors.New("stored message is not valid JSON")
	}
	c := gjson.GetBytes(stored, "content")
	if !c.IsArray() {
		return nil, errors.New("stored message has no content blocks")
	}
	var blocks []string
	c.ForEach(func(_, b gjson.Result) bool {
		blocks = append(blocks, b.Raw)
		return true
	})
	return blocks, nil
}

// anthWithResults returns the user message msg with its content made
// [its tool_result blocks but those answering a call in moved, ours, the
// rest of its content].
func anthWithResults(msg gjson.Result, ours []string, moved map[string]bool) (string, error) {
	c := msg.Get("content")
	var results, rest []string
	switch {
	case c.Type == gjson.String:
		if strings.TrimSpace(c.Str) != "" {
			rest = append(rest, `{"type":"text","text":`+c.Raw+`}`)
		}
	case c.IsArray():
		c.ForEach(func(_, b gjson.Result) bool {
			switch {
			case b.Get("type").Str != "tool_result":
				rest = append(rest, b.Raw)
			case !moved[b.Get("tool_use_id").Str]:
				results = append(results, b.Raw)
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
	if !keyscan.Contains(body, anthMetadataKey) || !gjson.ValidBytes(body) {
		return ""
	}
	if v := gjson.GetBytes(body, "metadata.user_id"); v.Type == gjson.String {
		return strings.TrimSpace(v.Str)
	}
	return ""
}
