package responses

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
	"github.com/toolgate/toolgate/wire/keyscan"
	"github.com/toolgate/toolgate/wire/links"
)

// Responses is the adapter for the OpenAI Responses API (POST /v1/responses,
// wire-formats.md §2), JSON and SSE. The zero value is ready to use and holds
// no state; one Responses serves every request.
//
// It inspects the output items of type "function_call" and
// "custom_tool_call" (the calls the app runs). A call is matched by its
// name; when the item carries a "namespace", the policy key
// namespace + "/" + name is asked first and the bare name second, so a
// policy can name a namespaced tool exactly while a bare key still covers
// the tool in any namespace (fail closed: an app may dispatch by name
// alone). Call.Name is the key that matched, Call.ID the "call_id",
// Call.Type "function" or "custom", Call.Position the item's output_index,
// Call.Raw the item as the provider sent it.
//
// Hold gets, as the message, a JSON array of the response's output items
// verbatim, from the first up to and including the last inspected call
// (reasoning items, the model's text and other calls included): what a
// restored history puts back in place of the waiting text (see
// RewriteRequest). Hold's Kept names the response (unless the request
// said store:false) and the request's conversation.
//
// The held calls of a response become one "message" item, at the output
// index of the first of them, holding Verdict.Text; the others are removed
// and later items renumbered densely. Its id starts with "msg_toolgate_"
// followed by the step id of the last link in the text (random when there
// is none), so a reference to it can be traced back to its step.
//
// The byte searches that let traffic without calls through untouched look
// for "function_call" and "custom_tool_call", and for "arguments" and
// "input", which an item of another type that carries a call would need,
// in any case or spelling a decoder reads as them (see mayHold).
type Responses struct{}

// SyntheticPrefix starts the id of every item this adapter makes up: the
// message that takes the place of held calls. The provider never made such
// an item, so a request that still carries one after RewriteRequest would
// be refused by it.
const SyntheticPrefix = "msg_toolgate_"

var synthPrefix = []byte(SyntheticPrefix)

// respKeys are the bytes a Responses call needs: the type names
// "function_call" (also in function_call_arguments) and
// "custom_tool_call", and "arguments" and "input". The anchors are rare in
// the keys of a text or reasoning delta ("type", "sequence_number",
// "item_id", "output_index", "content_index", "delta", "logprobs",
// "obfuscation"): 'f' does not occur, the 'l' of "tool" and the 'g' of
// "arguments" only in "logprobs", the 'i' of "input" in four of them.
var respKeys = keyscan.NewSet(
	keyscan.NewKey("function_call", 'f'),
	keyscan.NewKey("custom_tool_call", 'l'),
	keyscan.NewKey(`"arguments"`, 'g'),
	keyscan.NewKey(`"input"`, 'i'),
)

// respShape is what the gate reads of a Responses body or event (see
// shape.ambiguity): the output items of a response, the response of an
// event, an event's item.
var respShape = func() *jsonedit.Shape {
	item := &jsonedit.Shape{Read: []string{"type", "id", "call_id", "name", "namespace", "arguments", "input", "status"}}
	resp := &jsonedit.Shape{Read: []string{"id", "status", "output", "usage"}, Into: map[string]*jsonedit.Shape{"output": item}}
	return &jsonedit.Shape{
		Read: []string{"id", "status", "output", "usage", "type", "response", "item", "item_id", "output_index", "sequence_number", "delta", "arguments", "input"},
		Into: map[string]*jsonedit.Shape{"output": item, "response": resp, "item": item},
	}
}()

// hasCallBytes reports whether b may carry a call item or its fragments:
// "function_call" (also in function_call_arguments), "custom_tool_call",
// or "arguments" or "input" (an item of an unknown type), however a
// reader may read them.
func hasCallBytes(b []byte) bool { return respKeys.MayHold(b) }

// MayHoldCalls is the fast path's byte search (hasCallBytes), for the
// tests that hold every adapter's search against the readers'.
func (Responses) MayHoldCalls(b []byte) bool { return hasCallBytes(b) }

// respWaitingOutput is the tool result a held call gets in a follow-up
// request that sends refusals back while it waits (the app's next request
// carries the real one).
const respWaitingOutput = "Waiting for the person's answer; nothing has run yet."

// RewriteJSON judges the inspected calls of a Responses API response body
// (wire-formats.md §2.1) and takes out the held and refused ones; refusals
// are shown in place (a Turn sends them back to the model instead).
//
// A body without the bytes "function_call" or "custom_tool_call" is
// returned as is, the same slice, without any JSON work. Otherwise the body
// is validated once; invalid JSON is an error (fail closed). When no item of
// "output" is an inspected call, or every one is passed and Hold gives no
// text, the body is returned unchanged, the same slice. Otherwise only the
// "output" array changes: passed calls and every other item stay byte for
// byte, the held and refused calls are removed, and the message item with
// the text stands at the index of the first of them. The result is a new
// slice; body is never modified.
func (Responses) RewriteJSON(ctx context.Context, body []byte, h provider.Holder) ([]byte, error) {
	out, _, err := rewriteResponsesJSON(ctx, body, h, nil)
	return out, err
}

func rewriteResponsesJSON(ctx context.Context, body []byte, h provider.Holder, t *respTurn) ([]byte, *respStep, error) {
	if !hasCallBytes(body) {
		return body, nil, nil
	}
	if !gjson.ValidBytes(body) {
		return nil, nil, errors.New("responses response: invalid JSON around calls")
	}
	root := gjson.ParseBytes(body)
	if err := respShape.Ambiguity(root); err != nil {
		return nil, nil, fmt.Errorf("responses response: %w", err)
	}
	output := root.Get("output")
	if !output.IsArray() {
		return body, nil, nil
	}
	items := output.Array()
	var calls []*respCall
	for i, it := range items {
		if key, stray := respStrayCall(h, it); stray {
			return nil, nil, fmt.Errorf("responses response: %w", errRespStray(it, key))
		}
		if c := inspectItem(h, it); c != nil {
			c.index, c.pos, c.raw = i, i, it.Raw
			c.head = true
			calls = append(calls, c)
		}
	}
	if len(calls) == 0 {
		return body, nil, nil
	}
	st := root.Get("status")
	v := judge(ctx, h, t, items, calls, root.Get("id").Str, st.Str == "completed" || !st.Exists())
	if !v.changes(calls) {
		return body, nil, nil
	}
	patched := v.patch(items, calls)
	e, err := jsonedit.Of(body, output, joinItems(patched))
	if err != nil {
		return nil, nil, errors.New("responses response: " + err.Error())
	}
	return jsonedit.Apply(body, []jsonedit.Edit{e}), v.step, nil
}

// respCall is one inspected call of a response.
type respCall struct {
	index  int    // its output_index as the provider sent it
	pos    int    // its position in the output items judged; -1: not among them
	itemID string // the item's "id"
	callID string // its "call_id"
	typ    string // "function" or "custom"
	name   string // the policy key it matched
	raw    string // the item, complete, as sent ("" until known)
	args   []byte // stream: the arguments (or input) fragments so far
	head   bool   // stream: its output_item.added was seen (where its replacement goes)
	fate   provider.Fate

	// Stream: every version of the arguments the events carried, which
	// must agree (clients read different ones).
	deltas   bool   // argument deltas were seen (args)
	argsDone string // the arguments .done event's
	hasDone  bool
	doneItem string // the output_item.done item
}

// argsOf returns the arguments (function) or input (custom) of a call
// item.
func (c *respCall) argsOf(item gjson.Result) gjson.Result {
	if c.typ == "custom" {
		return item.Get("input")
	}
	return item.Get("arguments")
}

// consistent reports whether every version of the call's arguments the
// stream carried is the same: the deltas joined, the .done event, the
// output_item.done item and the terminal output's item (term, "" if none).
func (c *respCall) consistent(term string) bool {
	var versions []string
	if c.deltas {
		versions = append(versions, string(c.args))
	}
	if c.hasDone {
		versions = append(versions, c.argsDone)
	}
	for _, raw := range [...]string{c.doneItem, term} {
		if raw != "" {
			a := c.argsOf(gjson.Parse(raw))
			if a.Type != gjson.String {
				return false
			}
			versions = append(versions, a.Str)
		}
	}
	for _, v := range versions[min(1, len(versions)):] {
		if v != versions[0] {
			return false
		}
	}
	return true
}

// isCallType reports whether an output item type is one this adapter
// inspects.
func isCallType(typ string) bool { return typ == "function_call" || typ == "custom_tool_call" }

// isClientCall reports whether an output item is a call the app runs, whose
// result the provider expects in the next request (wire-formats.md §2.4).
func isClientCall(typ string) bool {
	switch typ {
	case "function_call", "custom_tool_call", "computer_call", "local_shell_call", "shell_call", "apply_patch_call":
		return true
	}
	return false
}

// respStrayCall returns the policy key a gated tool's output item names
// when it is no call this adapter inspects: an item of an unknown type (or
// a message, a reasoning item) carrying a name. openai-go decodes name and
// arguments whatever the type (ResponseOutputItemUnion), so an app reading
// the name would run it; such a response is refused. So is an mcp_call
// or mcp_approval_request item naming a gated tool: the tool runs on the
// provider's side, but openai-go hands the item to the app with that name,
// and an app must never be handed an object naming a gated action. The
// provider's own tools are no gated names and pass.
func respStrayCall(h provider.Holder, it gjson.Result) (string, bool) {
	if isCallType(it.Get("type").Str) {
		return "", false
	}
	n := it.Get("name")
	if n.Type != gjson.String {
		return "", false
	}
	return gatedKey(h, it.Get("namespace").Str, n.Str)
}

// errRespStray is the error for an item that respStrayCall reports.
func errRespStray(it gjson.Result, key string) error {
	return fmt.Errorf("an output item of type %q names the gated tool %q, which the gate cannot place", it.Get("type").Str, key)
}

// gatedKey returns the policy key a call matches: namespace/name first,
// then the bare name.
func gatedKey(h provider.Holder, namespace, name string) (string, bool) {
	if namespace != "" {
		if q := namespace + "/" + name; h.Gated(q) {
			return q, true
		}
	}
	if h.Gated(name) {
		return name, true
	}
	return "", false
}

// inspectItem returns the call an output item is, when h inspects it.
func inspectItem(h provider.Holder, it gjson.Result) *respCall {
	typ := it.Get("type").Str
	if !isCallType(typ) {
		return nil
	}
	key, ok := gatedKey(h, it.Get("namespace").Str, it.Get("name").Str)
	if !ok {
		return nil
	}
	c := &respCall{pos: -1, itemID: it.Get("id").Str, callID: it.Get("call_id").Str, typ: "function", name: key}
	if typ == "custom_tool_call" {
		c.typ = "custom"
	}
	return c
}

// call returns the Call that Hold gets for c.
func (c *respCall) call() provider.Call {
	it := gjson.Parse(c.raw)
	args := it.Get("arguments")
	if c.typ == "custom" {
		args = it.Get("input")
	}
	var a []byte
	if args.Exists() {
		a = jsonedit.Arguments(args)
	} else {
		a = append(a, c.args...)
	}
	return provider.Call{Position: c.index, ID: c.callID, Type: c.typ, Name: c.name, Arguments: a, Raw: []byte(c.raw)}
}

// respVerdict is what becomes of one response's inspected calls.
type respVerdict struct {
	held  provider.Verdict // the Holder's verdict
	text  string           // the message's text ("": no message)
	slot  *respCall        // the call whose place the message takes
	msgID string
	step  *respStep // refused calls to send back; nil: none (or shown in place)
}

// respStep is the refused calls of one response, to send back to the model.
type respStep struct {
	responseID string
	items      []string // mode 'a': the output items to append to the input
	outputs    []string // the tool results, as input items
	fallback   string   // the text shown in their place if no follow-up is sent
}

// judge hands the inspected calls of one response to h. items are the
// response's output items (those of the terminal event, for a stream; nil
// when unknown), calls the inspected ones, located in items by pos.
// Refusals may go back to the model only from a completed response.
func judge(ctx context.Context, h provider.Holder, t *respTurn, items []gjson.Result, calls []*respCall, responseID string, completed bool) respVerdict {
	last := -1
	for _, c := range calls {
		last = max(last, c.pos)
	}
	msg := []byte{'['}
	if last >= 0 {
		for i := 0; i <= last && i < len(items); i++ {
			if i > 0 {
				msg = append(msg, ',')
			}
			msg = append(msg, items[i].Raw...)
		}
	}
	for _, c := range calls {
		if c.pos < 0 { // never among the items: the call alone
			if len(msg) > 1 {
				msg = append(msg, ',')
			}
			msg = append(msg, c.raw...)
		}
	}
	msg = append(msg, ']')
	list := make([]provider.Call, len(calls))
	for i, c := range calls {
		list[i] = c.call()
	}
	kept := provider.Kept{ResponseID: responseID}
	if t != nil {
		t.readRequest()
		kept.ConversationID = t.conv
		if t.storeFalse {
			kept = provider.Kept{}
		}
	}
	v := h.Hold(ctx, list, msg, kept)
	fates, contents, anyRefused, ids := v.Fates(list)
	for i, c := range calls {
		c.fate = fates[i]
	}
	out := respVerdict{held: v}
	if completed && anyRefused && ids && t != nil && t.allowed() {
		out.step = t.stepFor(items, calls, contents, responseID)
	}
	out.text = v.Text
	if out.step == nil {
		out.text = provider.InPlace(v.Text, fates, contents)
	} else {
		out.step.fallback = provider.InPlace("", fates, contents)
	}
	if out.text != "" {
		// The message goes where the first held call was (of those the app
		// saw begin, in a stream), else where the first removed one was.
		for _, want := range [...]provider.Fate{provider.Held, provider.Refused} {
			for _, c := range calls {
				if c.fate == want && (out.slot == nil || c.head && !out.slot.head) {
					out.slot = c
				}
			}
			if out.slot != nil {
				break
			}
		}
		out.msgID = synthID(out.text, responseID+"/"+strconv.Itoa(out.slot.index))
	}
	return out
}

// changes reports whether the verdict changes what the app reads.
func (v respVerdict) changes(calls []*respCall) bool {
	if v.text != "" {
		return true
	}
	for _, c := range calls {
		if c.fate != provider.Passed {
			return true
		}
	}
	return false
}

// patch returns the output items as the app reads them: removed calls out,
// the message in place of the slot.
func (v respVerdict) patch(items []gjson.Result, calls []*respCall) []string {
	at := make(map[int]*respCall, len(calls))
	for _, c := range calls {
		if c.pos >= 0 {
			at[c.pos] = c
		}
	}
	out := make([]string, 0, len(items)+1)
	placed := v.slot == nil
	for i, it := range items {
		if !placed && v.slot.pos < 0 && i >= v.slot.index {
			// The slot's call is not among the items (a stream whose
			// terminal output lacks it): its message goes where the call
			// would have been.
			out = append(out, messageItem(v.msgID, v.text))
			placed = true
		}
		c := at[i]
		switch {
		case c == nil:
			out = append(out, it.Raw)
		case c == v.slot:
			out = append(out, messageItem(v.msgID, v.text))
			placed = true
		case c.fate == provider.Passed:
			out = append(out, it.Raw)
		}
	}
	if !placed {
		out = append(out, messageItem(v.msgID, v.text))
	}
	return out
}

// messageItem is the output item of an assistant message holding text.
func messageItem(id, text string) string {
	b := make([]byte, 0, len(id)+len(text)+160)
	b = append(b, `{"id":`...)
	b = gjson.AppendJSONString(b, id)
	b = append(b, `,"type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	b = gjson.AppendJSONString(b, text)
	b = append(b, `}],"role":"assistant"}`...)
	return string(b)
}

// joinItems is the JSON array of raw items.
func joinItems(items []string) string {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(it)
	}
	b.WriteByte(']')
	return b.String()
}

var stepEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// synthID is the id of the message holding text: the prefix and the step
// id of the last link in text (a "/" followed by a step id), or, when text
// holds none, 128 bits of a hash of text and where the message stands
// (salt: the response id and the index), so a rewrite does not depend on
// how the body was split and no two messages of an answer share an id.
func synthID(text, salt string) string {
	if step := lastLinkStep(text); step != "" {
		return SyntheticPrefix + step
	}
	sum := sha256.Sum256([]byte(salt + "\x00" + text))
	return SyntheticPrefix + stepEncoding.EncodeToString(sum[:16])
}

// lastLinkStep returns the step id of the last link in s: a "/" followed by
// exactly stepIDLen step characters.
func lastLinkStep(s string) string {
	for {
		i := strings.LastIndexByte(s, '/')
		if i < 0 {
			return ""
		}
		id := s[i+1:]
		if len(id) >= links.IDLen && links.IsID(id[:links.IDLen]) && (len(id) == links.IDLen || !links.IsIDChar(id[links.IDLen])) {
			return id[:links.IDLen]
		}
		s = s[:i]
	}
}

// synthStep returns the step id a synthetic item id carries, or "".
func synthStep(id string) string {
	rest, ok := strings.CutPrefix(id, SyntheticPrefix)
	if !ok || len(rest) != links.IDLen || !links.IsID(rest) {
		return ""
	}
	return rest
}

// setOutput sets the "output" array of body to items (sjson keeps every
// other byte).
func setOutput(body []byte, items []string) ([]byte, error) {
	return sjson.SetRawBytes(body, "output", []byte(joinItems(items)))
}
