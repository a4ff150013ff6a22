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
	"github.com/toolgate/toolgate/wire/turn"
)

// Anthropic is the adapter for Anthropic Messages (POST /v1/messages,
// wire-formats.md §3). It inspects "tool_use" content blocks, matched by
// name. server_tool_use and mcp_tool_use blocks run on the provider's side
// and pass, unless they name a gated tool (see anthStrayCall). The zero
// value is ready to use and holds no state; one Anthropic serves every
// request.
//
// A held call's Call has Type "function" (its input is a JSON object, as a
// Chat function's arguments), ID the tool_use id, Arguments the input's
// JSON text and Raw the tool_use block. The message Hold gets is the
// assistant message as it would be sent back in a request:
// {"role":"assistant","content":[every content block of the response, in
// order: thinking and redacted_thinking blocks with their signatures,
// text, every tool_use]}; in a stream the blocks are rebuilt from their
// events as the API would have sent them whole.
//
// The byte searches that let traffic without tool calls through untouched
// look for "tool_use", and for "input", which a block of another type that
// carries a call would need, in any case or spelling a decoder reads as
// them (see mayHold).
type Anthropic struct{}

// anthKeys are the bytes an Anthropic call needs: the type "tool_use",
// found by its 'u', which no key of a text or thinking delta holds, and
// "input", found by its 'p' ("input_tokens" holds one, but no quote after
// "input").
var anthKeys = keyscan.NewSet(keyscan.NewKey(`"tool_use"`, 'u'), keyscan.NewKey(`"input"`, 'p'))

// anthShape is what the gate reads of a Messages response or event (see
// shape.ambiguity): the content blocks of a message, the message of a
// message_start, a content_block_start's block, a delta.
var anthShape = func() *jsonedit.Shape {
	block := &jsonedit.Shape{Read: []string{"type", "id", "name", "input", "text", "thinking", "signature", "citations"}}
	delta := &jsonedit.Shape{Read: []string{"type", "text", "partial_json", "thinking", "signature", "citation", "stop_reason", "stop_sequence"}}
	msg := &jsonedit.Shape{Read: []string{"id", "type", "role", "content", "stop_reason", "stop_sequence", "usage"}, Into: map[string]*jsonedit.Shape{"content": block}}
	return &jsonedit.Shape{
		Read: []string{"id", "type", "role", "content", "stop_reason", "stop_sequence", "usage", "index", "message", "content_block", "delta"},
		Into: map[string]*jsonedit.Shape{"content": block, "message": msg, "content_block": block, "delta": delta},
	}
}()

// anthStrayCall returns the gated tool a content block names when it is
// no tool_use: a block of an unknown type (or a text block) carrying a
// name and input. anthropic-sdk-go decodes name and input whatever the
// type (ContentBlockUnion) and Message.Accumulate appends input_json_delta
// to any block (messageutil.go), so an app reading the name would run it;
// such a response is refused. So is a server_tool_use or mcp_tool_use
// block naming a gated tool: the provider ran it on its side, but the
// SDKs hand it to the app as a call object with that name, and an app
// must never be handed one naming a gated action. The provider's own
// tools (web_search, code_execution, ...) are no gated names and pass.
func anthStrayCall(h provider.Holder, cb gjson.Result) (string, bool) {
	if cb.Get("type").Str == "tool_use" {
		return "", false
	}
	n := cb.Get("name")
	return n.Str, n.Type == gjson.String && h.Gated(n.Str)
}

// errAnthStray is the error for a block that anthStrayCall reports.
func errAnthStray(cb gjson.Result, name string) error {
	return fmt.Errorf("a content block of type %q names the gated tool %q, which the gate cannot place", cb.Get("type").Str, name)
}

// hasToolUse reports whether b may hold an Anthropic call: "tool_use", or
// "input" (a block of an unknown type), however a reader may read them.
func hasToolUse(b []byte) bool { return anthKeys.MayHold(b) }

// MayHoldCalls is the fast path's byte search (hasToolUse), for the tests
// that hold every adapter's search against the readers'.
func (Anthropic) MayHoldCalls(b []byte) bool { return hasToolUse(b) }

// anthStep is the refused calls of one response, to send back to the model.
type anthStep struct {
	blocks   []string           // the assistant content sent back: the response's blocks through the last refused tool_use, without the tool_use blocks that were not refused
	results  []provider.Refusal // the refused calls' tool results, in message order
	fallback string             // the text shown in their place if no follow-up is sent
}

// RewriteJSON judges the inspected calls of a Messages response body
// (wire-formats.md §3.1) and takes out the held and refused ones; refusals
// are shown in place (a Turn sends them back to the model instead).
//
// A body without the bytes "tool_use" is returned as is, the same slice,
// without any JSON work. Otherwise the body is validated once; invalid JSON
// is an error, because a call in it could not be checked (fail closed). When
// no tool_use block is inspected, or every one is passed and Hold gives no
// text, the body is returned unchanged, the same slice.
//
// Passed blocks stay where they are, byte for byte; held and refused ones
// are removed, and one text block holding the text (after a blank line
// when the model wrote text before it) takes the place of the first of
// them. stop_reason "tool_use" becomes "end_turn" when no tool_use block is
// left. Every other byte is kept; the result is a new slice.
func (Anthropic) RewriteJSON(ctx context.Context, body []byte, h provider.Holder) ([]byte, error) {
	out, _, err := rewriteAnthJSON(ctx, body, h, nil)
	return out, err
}

// rewriteAnthJSON is RewriteJSON. When allowed is given and says yes, the
// refused calls (all with ids) are taken out without text and returned as
// a step, to be sent back to the model.
func rewriteAnthJSON(ctx context.Context, body []byte, h provider.Holder, allowed func() bool) ([]byte, *anthStep, error) {
	if !hasToolUse(body) {
		return body, nil, nil
	}
	if !gjson.ValidBytes(body) {
		return nil, nil, errors.New("anthropic response: invalid JSON around tool_use")
	}
	root := gjson.ParseBytes(body)
	if err := anthShape.Ambiguity(root); err != nil {
		return nil, nil, fmt.Errorf("anthropic response: %w", err)
	}
	content := root.Get("content")
	if !content.IsArray() {
		return body, nil, nil
	}
	var calls []provider.Call
	var at []int // per call, its block's position
	var stray error
	pos, n := 0, 0
	content.ForEach(func(_, b gjson.Result) bool {
		if name, ok := anthStrayCall(h, b); ok {
			stray = errAnthStray(b, name)
			return false
		}
		if b.IsObject() && b.Get("type").Str == "tool_use" {
			if name := b.Get("name").Str; h.Gated(name) {
				calls = append(calls, provider.Call{
					Position:  pos,
					ID:        b.Get("id").Str,
					Type:      "function",
					Name:      name,
					Arguments: anthInput(b.Get("input")),
					Raw:       []byte(b.Raw),
				})
				at = append(at, n)
			}
			pos++
		}
		n++
		return true
	})
	if stray != nil {
		return nil, nil, fmt.Errorf("anthropic response: %w", stray)
	}
	if len(calls) == 0 {
		return body, nil, nil
	}
	blocks := make([]gjson.Result, 0, n)
	content.ForEach(func(_, b gjson.Result) bool {
		blocks = append(blocks, b)
		return true
	})
	msg := make([]byte, 0, len(content.Raw)+32)
	msg = append(msg, `{"role":"assistant","content":`...)
	msg = append(msg, content.Raw...)
	msg = append(msg, '}')
	v := h.Hold(ctx, calls, msg, provider.Kept{})
	fates, contents, anyRefused, ids := v.Fates(calls)
	cont := anyRefused && ids && allowed != nil && allowed()
	text := v.Text
	if !cont {
		text = provider.InPlace(text, fates, contents)
	}

	fateAt := make(map[int]provider.Fate, len(calls))
	for i, p := range at {
		fateAt[p] = fates[i]
	}
	var step *anthStep
	if cont {
		step = &anthStep{fallback: provider.InPlace("", fates, contents)}
		last := 0
		for i, p := range at {
			if fates[i] == provider.Refused {
				last = p
				step.results = append(step.results, provider.Refusal{CallID: calls[i].ID, Content: contents[i]})
			}
		}
		for p, b := range blocks[:last+1] {
			if f, gated := fateAt[p]; b.Get("type").Str != "tool_use" || gated && f == provider.Refused {
				step.blocks = append(step.blocks, b.Raw)
			}
		}
	}

	out := make([]byte, 0, len(content.Raw)+len(text)+32)
	out = append(out, '[')
	removed, texted, toolUses := false, false, 0
	textAt := -1
	add := func(raw string) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, raw...)
	}
	for p, b := range blocks {
		if f, gated := fateAt[p]; gated && f != provider.Passed {
			removed = true
			if text != "" && textAt < 0 && (f == provider.Held || !cont) {
				textAt = p
				add(anthTextBlock(text, texted))
			}
			continue
		}
		add(b.Raw)
		switch b.Get("type").Str {
		case "tool_use":
			toolUses++
		case "text":
			texted = texted || b.Get("text").Str != ""
		}
	}
	if text != "" && textAt < 0 {
		add(anthTextBlock(text, texted))
	}
	out = append(out, ']')
	if !removed && text == "" {
		return body, step, nil
	}
	e, err := jsonedit.Of(body, content, string(out))
	if err != nil {
		return nil, nil, fmt.Errorf("anthropic response: %w", err)
	}
	edits := []jsonedit.Edit{e}
	if sr := root.Get("stop_reason"); sr.Type == gjson.String && toolUses == 0 && sr.Str == "tool_use" {
		e, err := jsonedit.Of(body, sr, `"end_turn"`)
		if err != nil {
			return nil, nil, fmt.Errorf("anthropic response: %w", err)
		}
		edits = append(edits, e)
	}
	return jsonedit.Apply(body, edits), step, nil
}

// anthTextBlock is a text block holding text, after a blank line when
// text was shown before it.
func anthTextBlock(text string, after bool) string {
	if after {
		text = "\n\n" + text
	}
	b := append([]byte(`{"type":"text","text":`), gjson.AppendJSONString(nil, text)...)
	return string(append(b, '}'))
}

// anthInput is a tool_use block's input as JSON text ({} when absent).
func anthInput(in gjson.Result) []byte {
	if !in.Exists() {
		return []byte("{}")
	}
	return []byte(in.Raw)
}

// anthStopReason is the stop_reason the app reads: "tool_use" only when a
// tool_use block reached it. An "end_turn" becomes "tool_use" only in a
// continuation (an earlier response passed a call); other reasons stay.
func anthStopReason(reason string, called, inCont bool) string {
	switch {
	case reason == "tool_use" && !called:
		return "end_turn"
	case reason == "end_turn" && called && inCont:
		return "tool_use"
	}
	return reason
}

// mergeAnthJSON merges the follow-up body next (already rewritten) into
// the answer acc: content blocks appended (the follow-up's first text after
// a blank line when acc has text), usage summed, stop_reason and
// stop_sequence from the follow-up (stop_reason "tool_use" exactly when a
// tool_use block is in the merged content, unless it says something else
// than tool_use or end_turn). Every other byte of acc stays.
func mergeAnthJSON(acc, next []byte) ([]byte, error) {
	if !gjson.ValidBytes(next) {
		return nil, errors.New("anthropic response: follow-up is not valid JSON")
	}
	ac, nc := gjson.GetBytes(acc, "content"), gjson.GetBytes(next, "content")
	if !ac.IsArray() || !nc.IsArray() {
		return nil, errors.New("anthropic response: no content to continue")
	}
	var blocks []string
	texted, called := false, false
	ac.ForEach(func(_, b gjson.Result) bool {
		blocks = append(blocks, b.Raw)
		texted = texted || b.Get("type").Str == "text" && b.Get("text").Str != ""
		called = called || b.Get("type").Str == "tool_use"
		return true
	})
	var err error
	nc.ForEach(func(_, b gjson.Result) bool {
		raw := b.Raw
		if t := b.Get("text"); texted && b.Get("type").Str == "text" && t.Type == gjson.String && t.Str != "" {
			if raw, err = sjson.SetRaw(raw, "text", `"\n\n`+t.Raw[1:]); err != nil {
				return false
			}
			texted = false // once
		}
		called = called || b.Get("type").Str == "tool_use"
		blocks = append(blocks, raw)
		return true
	})
	if err != nil {
		return nil, err
	}
	e, err := jsonedit.Of(acc, ac, "["+strings.Join(blocks, ",")+"]")
	if err != nil {
		return nil, err
	}
	out := jsonedit.Apply(acc, []jsonedit.Edit{e})
	if sr := gjson.GetBytes(next, "stop_reason"); sr.Type == gjson.String {
		q := gjson.AppendJSONString(nil, anthStopReason(sr.Str, called, true))
		if out, err = sjson.SetRawBytes(out, "stop_reason", q); err != nil {
			return nil, err
		}
	}
	if ss := gjson.GetBytes(next, "stop_sequence"); ss.Exists() {
		if out, err = sjson.SetRawBytes(out, "stop_sequence", []byte(ss.Raw)); err != nil {
			return nil, err
		}
	}
	if nu := gjson.GetBytes(next, "usage"); !jsonedit.IsNull(nu) {
		if out, err = sjson.SetRawBytes(out, "usage", []byte(turn.SumUsage(gjson.GetBytes(out, "usage").Raw, nu.Raw))); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendAnthText appends a text block holding text to the content of a
// Messages body (after a blank line when it has text), and makes
// stop_reason "end_turn" if it says tool_use while no tool_use block is
// left.
func appendAnthText(body []byte, text string) ([]byte, error) {
	c := gjson.GetBytes(body, "content")
	if !c.IsArray() {
		return nil, errors.New("anthropic response: no content")
	}
	var blocks []string
	texted, called := false, false
	c.ForEach(func(_, b gjson.Result) bool {
		blocks = append(blocks, b.Raw)
		texted = texted || b.Get("type").Str == "text" && b.Get("text").Str != ""
		called = called || b.Get("type").Str == "tool_use"
		return true
	})
	blocks = append(blocks, anthTextBlock(text, texted))
	e, err := jsonedit.Of(body, c, "["+strings.Join(blocks, ",")+"]")
	if err != nil {
		return nil, err
	}
	out := jsonedit.Apply(body, []jsonedit.Edit{e})
	if sr := gjson.GetBytes(out, "stop_reason"); sr.Type == gjson.String && sr.Str == "tool_use" && !called {
		return sjson.SetRawBytes(out, "stop_reason", []byte(`"end_turn"`))
	}
	return out, nil
}

// anthOverlay returns the usage object a with b's members set over it
// (raw JSON; either may be "" or not an object): a response's final usage
// is its message_start usage with its message_delta usage over it.
func anthOverlay(a, b string) string {
	ra, rb := gjson.Parse(a), gjson.Parse(b)
	switch {
	case !rb.IsObject():
		if ra.IsObject() {
			return ra.Raw
		}
		return ""
	case !ra.IsObject():
		return rb.Raw
	}
	out := ra.Raw
	var err error
	rb.ForEach(func(k, v gjson.Result) bool {
		if v.Type == gjson.Null {
			return true
		}
		out, err = sjson.SetRaw(out, gjson.Escape(k.Str), v.Raw)
		return err == nil
	})
	if err != nil {
		return rb.Raw
	}
	return out
}

// appendAnthStep returns the follow-up request body: req with the step's
// assistant message and a user message of its tool results (is_error)
// appended to its messages. Every other byte is kept.
func appendAnthStep(req []byte, step *anthStep) ([]byte, error) {
	msgs := gjson.GetBytes(req, "messages")
	if !msgs.IsArray() {
		return nil, errors.New("anthropic request: no messages")
	}
	e, err := jsonedit.Of(req, msgs, msgs.Raw)
	if err != nil {
		return nil, err
	}
	at := e.End - 1 // the closing bracket
	var b []byte
	if turn.HasElements(msgs) {
		b = append(b, ',')
	}
	b = append(b, `{"role":"assistant","content":[`...)
	b = append(b, strings.Join(step.blocks, ",")...)
	b = append(b, `]},{"role":"user","content":[`...)
	for i, r := range step.results {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"tool_result","tool_use_id":`...)
		b = gjson.AppendJSONString(b, r.CallID)
		b = append(b, `,"content":`...)
		b = gjson.AppendJSONString(b, r.Content)
		b = append(b, `,"is_error":true}`...)
	}
	b = append(b, "]}"...)
	return jsonedit.Apply(req, []jsonedit.Edit{{Start: at, End: at, Repl: string(b)}}), nil
}

// Interface guards
var (
	_ provider.Adapter = Anthropic{}
	_ provider.Turn    = (*anthTurn)(nil)
	_ provider.Stream  = (*anthStream)(nil)
)
