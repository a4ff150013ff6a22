package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
	"github.com/toolgate/toolgate/wire/links"
)

// RewriteRequest restores the history behind this gate's links in a Chat
// Completions request body (wire-formats.md §1.4).
//
// A body that does not hold linkPrefix (plainly, or with "/" written "\/" as
// PHP's json_encode does) is returned as is, the same slice, without JSON
// work. Otherwise it must be valid JSON, or it is an error.
//
// Every assistant message whose content (a string, or the "text" parts of an
// array) holds linkPrefix followed by a step id is looked up with
// r.Restore, link by link in the order they appear: one answer can carry
// several steps (a held call, a refused one sent back to the model, then a
// held call in its follow-up), and each goes back. Each step is restored
// once per request (an older link quoted again is already restored where
// it first appears). The steps Restore reports ok for take the message's
// place, in order: each stored message (the last one with any tool_calls
// entry of the app's message that none of them holds appended), followed
// by the tool messages that answer its calls: first the app's own (moved
// from after the app's message; they answer calls that passed), then one
// {"role":"tool"} message per Result, except for call ids already answered.
// When words follow the message's last link (the model's reply after the
// person answered, in the same response; see Turn.Resume), the app's
// message comes next, made those words: its content what follows the link
// (a string's rest; the rest of the text part and the parts after it), its
// tool_calls those no step holds, which then are not appended to the last
// stored message. The app's tool messages that answer no restored call
// stay after the last. Nothing else in the body changes: it is spliced,
// not re-encoded.
// The result is a new slice when anything was restored, else body.
func (Chat) RewriteRequest(ctx context.Context, body []byte, linkPrefix string, r provider.Restorer) ([]byte, error) {
	if !links.Has(body, linkPrefix) {
		return body, nil
	}
	if !gjson.ValidBytes(body) {
		return nil, errors.New("chat request: invalid JSON carrying a gate link")
	}
	msgs := gjson.GetBytes(body, "messages")
	if !msgs.IsArray() {
		return body, nil
	}
	var list []gjson.Result
	lastUser := -1
	msgs.ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").Str == "user" {
			lastUser = len(list)
		}
		list = append(list, m)
		return true
	})

	var edits []jsonedit.Edit
	done := make(map[string]bool)
	for i, m := range list {
		if m.Get("role").Str != "assistant" {
			continue
		}
		var steps []provider.Restored
		var ids []string
		for _, step := range links.Steps(m.Get("content"), linkPrefix) {
			if done[step] {
				continue
			}
			done[step] = true
			if restored, ok := r.Restore(ctx, step, lastUser > i); ok {
				steps, ids = append(steps, restored), append(ids, step)
			}
		}
		if len(steps) == 0 {
			continue
		}
		// The app's message and the tool messages right after it.
		end := i + 1
		for end < len(list) && list[end].Get("role").Str == "tool" {
			end++
		}
		repl, err := restoreChatSteps(steps, ids, m, list[i+1:end], linkPrefix)
		if err != nil {
			return nil, fmt.Errorf("chat request: %w", err)
		}
		last := list[end-1]
		edits = append(edits, jsonedit.Edit{Start: m.Index, End: last.Index + len(last.Raw), Repl: repl})
	}
	if len(edits) == 0 {
		return body, nil
	}
	return jsonedit.Apply(body, edits), nil
}

// restoreChatSteps returns the messages that take the place of the app's
// message app and its tool messages tools: each step's stored message and
// the tool messages answering its calls, then the model's words after the
// last link, if any (see RewriteRequest).
func restoreChatSteps(steps []provider.Restored, ids []string, app gjson.Result, tools []gjson.Result, prefix string) (string, error) {
	stored := make([]gjson.Result, len(steps))
	held := make(map[string]bool) // call ids the stored messages hold
	for k, st := range steps {
		if !gjson.ValidBytes(st.Message) {
			return "", fmt.Errorf("step %s: stored message is not valid JSON", ids[k])
		}
		if stored[k] = gjson.ParseBytes(st.Message); !stored[k].IsObject() {
			return "", fmt.Errorf("step %s: stored message is not a JSON object", ids[k])
		}
		forEachCall(stored[k], func(tc gjson.Result) { held[tc.Get("id").Str] = true })
	}
	follow, err := chatFollowUp(app, prefix, held)
	if err != nil {
		return "", err
	}
	answered := make(map[string]bool)
	used := make([]bool, len(tools))
	var out []string
	for k, st := range steps {
		msg := strings.TrimSpace(stored[k].Raw)
		if k == len(steps)-1 && follow == "" {
			var err error
			if msg, err = mergeCalls(stored[k], app, held); err != nil {
				return "", fmt.Errorf("step %s: %w", ids[k], err)
			}
		}
		out = append(out, msg)
		calls := make(map[string]bool)
		forEachCall(gjson.Parse(msg), func(tc gjson.Result) { calls[tc.Get("id").Str] = true })
		for j, tm := range tools {
			if id := tm.Get("tool_call_id").Str; !used[j] && calls[id] {
				used[j], answered[id] = true, true
				out = append(out, tm.Raw)
			}
		}
		for _, res := range st.Results {
			if answered[res.CallID] {
				continue
			}
			answered[res.CallID] = true
			b := append([]byte(`{"role":"tool","tool_call_id":`), gjson.AppendJSONString(nil, res.CallID)...)
			b = append(b, `,"content":`...)
			b = gjson.AppendJSONString(b, res.Content)
			out = append(out, string(append(b, '}')))
		}
	}
	if follow != "" {
		out = append(out, follow)
	}
	for j, tm := range tools {
		if !used[j] {
			out = append(out, tm.Raw)
		}
	}
	return strings.Join(out, ","), nil
}

// chatFollowUp returns the app's message app made the model's words that
// came after the last link in it, or "" when none did: an answer that went
// on after the person answered (see Turn.Resume), or after a refused call
// went back to the model, holds the waiting text and then the model's
// reply. The message keeps its other members; its content becomes what
// follows the link, and its tool_calls those that no restored step holds
// (held, by id): the follow-up's own calls, which the app's tool messages
// after it answer.
func chatFollowUp(app gjson.Result, prefix string, held map[string]bool) (string, error) {
	content, ok := links.Follow(app.Get("content"), prefix, "text")
	if !ok {
		return "", nil
	}
	msg, err := sjson.SetRaw(app.Raw, "content", content)
	if err != nil {
		return "", err
	}
	var extra []string
	forEachCall(app, func(tc gjson.Result) {
		if !held[tc.Get("id").Str] {
			extra = append(extra, tc.Raw)
		}
	})
	switch {
	case len(extra) > 0:
		msg, err = sjson.SetRaw(msg, "tool_calls", "["+strings.Join(extra, ",")+"]")
	case app.Get("tool_calls").Exists():
		msg, err = sjson.Delete(msg, "tool_calls")
	}
	return strings.TrimSpace(msg), err
}

// mergeCalls returns the stored message with the tool_calls of the app's
// message that no restored message holds (held, by id) appended. The
// stored messages hold every call of their steps, so normally it comes
// back as it is.
func mergeCalls(sm, app gjson.Result, held map[string]bool) (string, error) {
	var calls []string
	forEachCall(sm, func(tc gjson.Result) { calls = append(calls, tc.Raw) })
	extra := false
	forEachCall(app, func(tc gjson.Result) {
		if id := tc.Get("id").Str; !held[id] {
			held[id] = true
			calls = append(calls, tc.Raw)
			extra = true
		}
	})
	if !extra {
		return strings.TrimSpace(sm.Raw), nil
	}
	return sjson.SetRaw(sm.Raw, "tool_calls", "["+strings.Join(calls, ",")+"]")
}

// forEachCall calls fn with each entry of a message's tool_calls array.
func forEachCall(msg gjson.Result, fn func(tc gjson.Result)) {
	tcs := msg.Get("tool_calls")
	if !tcs.IsArray() {
		return
	}
	tcs.ForEach(func(_, tc gjson.Result) bool {
		fn(tc)
		return true
	})
}
