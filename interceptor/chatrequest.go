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

// stepIDLen is the length of a step id in a link: 26 characters of
// [a-z2-7], 128 random bits in lower-case base32.
const stepIDLen = 26

// RewriteRequest restores the history behind this gate's links in a Chat
// Completions request body (wire-formats.md §1.4).
//
// A body that does not hold linkPrefix (plainly, or with "/" written "\/" as
// PHP's json_encode does) is returned as is, the same slice, without JSON
// work. Otherwise it must be valid JSON, or it is an error.
//
// Every assistant message whose content (a string, or the "text" parts of an
// array) holds linkPrefix followed by a step id is looked up with
// r.Restore; the last such link in a message counts, as the waiting text is
// appended after the model's own words, which may quote an older link. Each
// step is restored once. When Restore reports ok, the message is replaced by
// Restored.Message (with any tool_calls entry of the app's message that it
// lacks appended), and one {"role":"tool"} message per Result is inserted after
// the tool messages already following it, except for call ids that already
// have one there. Nothing else in the body changes: it is spliced, not
// re-encoded. The result is a new slice when anything was restored, else body.
func (Chat) RewriteRequest(ctx context.Context, body []byte, linkPrefix string, r Restorer) ([]byte, error) {
	if !hasLink(body, linkPrefix) {
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

	var edits []edit
	var done map[string]bool
	for i, m := range list {
		if m.Get("role").Str != "assistant" {
			continue
		}
		step := lastStep(m.Get("content"), linkPrefix)
		if step == "" || done[step] {
			continue
		}
		if done == nil {
			done = make(map[string]bool)
		}
		done[step] = true
		restored, ok := r.Restore(ctx, step, lastUser > i)
		if !ok {
			continue
		}
		msg, err := mergeCalls(restored.Message, m)
		if err != nil {
			return nil, fmt.Errorf("chat request: step %s: %w", step, err)
		}
		e, err := editOf(body, m, msg)
		if err != nil {
			return nil, fmt.Errorf("chat request: %w", err)
		}
		edits = append(edits, e)

		// The tool messages that already answer this message's calls.
		last := m
		answered := make(map[string]bool)
		for j := i + 1; j < len(list) && list[j].Get("role").Str == "tool"; j++ {
			last = list[j]
			answered[list[j].Get("tool_call_id").Str] = true
		}
		var ins []byte
		for _, res := range restored.Results {
			if answered[res.CallID] {
				continue
			}
			answered[res.CallID] = true
			ins = append(ins, `,{"role":"tool","tool_call_id":`...)
			ins = gjson.AppendJSONString(ins, res.CallID)
			ins = append(ins, `,"content":`...)
			ins = gjson.AppendJSONString(ins, res.Content)
			ins = append(ins, '}')
		}
		if len(ins) > 0 {
			at := last.Index + len(last.Raw)
			edits = append(edits, edit{start: at, end: at, repl: string(ins)})
		}
	}
	if len(edits) == 0 {
		return body, nil
	}
	return applyEdits(body, edits), nil
}

// hasLink reports whether body holds prefix, plainly or JSON-escaped with
// "\/" for "/".
func hasLink(body []byte, prefix string) bool {
	if prefix == "" {
		return false
	}
	if bytes.Contains(body, []byte(prefix)) {
		return true
	}
	if !strings.Contains(prefix, "/") || !bytes.Contains(body, []byte(`\/`)) {
		return false
	}
	return bytes.Contains(body, []byte(strings.ReplaceAll(prefix, "/", `\/`)))
}

// lastStep returns the step id of the last link in a message's content, or
// "". content is a string or an array of parts, of which "text" parts are
// read.
func lastStep(content gjson.Result, prefix string) string {
	switch {
	case content.Type == gjson.String:
		return lastStepIn(content.Str, prefix)
	case content.IsArray():
		step := ""
		content.ForEach(func(_, part gjson.Result) bool {
			if part.Get("type").Str == "text" {
				if s := lastStepIn(part.Get("text").Str, prefix); s != "" {
					step = s
				}
			}
			return true
		})
		return step
	}
	return ""
}

func lastStepIn(s, prefix string) string {
	for {
		i := strings.LastIndex(s, prefix)
		if i < 0 {
			return ""
		}
		id := s[i+len(prefix):]
		if len(id) >= stepIDLen && isStepID(id[:stepIDLen]) && (len(id) == stepIDLen || !isStepChar(id[stepIDLen])) {
			return id[:stepIDLen]
		}
		s = s[:i]
	}
}

func isStepID(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isStepChar(s[i]) {
			return false
		}
	}
	return true
}

func isStepChar(c byte) bool { return ('a' <= c && c <= 'z') || ('2' <= c && c <= '7') }

// mergeCalls returns the stored message with the tool_calls of the app's
// message that it lacks (by id) appended. The stored message holds every
// call of the step, so normally it comes back as it is.
func mergeCalls(stored []byte, app gjson.Result) (string, error) {
	if !gjson.ValidBytes(stored) {
		return "", errors.New("stored message is not valid JSON")
	}
	sm := gjson.ParseBytes(stored)
	if !sm.IsObject() {
		return "", errors.New("stored message is not a JSON object")
	}
	have := make(map[string]bool)
	var calls []string
	forEachCall(sm, func(tc gjson.Result) {
		have[tc.Get("id").Str] = true
		calls = append(calls, tc.Raw)
	})
	extra := false
	forEachCall(app, func(tc gjson.Result) {
		if id := tc.Get("id").Str; !have[id] {
			have[id] = true
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
