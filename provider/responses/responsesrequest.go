package responses

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
	"github.com/toolgate/toolgate/wire/keyscan"
	"github.com/toolgate/toolgate/wire/links"
	"github.com/toolgate/toolgate/wire/tooledit"
)

var toolsKey = []byte(`"tools"`)

var (
	prevKey = []byte(`"previous_response_id"`)
	convKey = []byte(`"conversation"`)
)

// RewriteRequest restores the history behind this gate's held calls in a
// Responses API request body (wire-formats.md §2.4).
//
// A body that holds neither linkPrefix (plainly or with "\/") nor
// SyntheticPrefix is returned as is, the same slice, without JSON work,
// unless r is a provider.StateRestorer and the body names previous_response_id or
// conversation. Otherwise it must be valid JSON, or it is an error.
//
// A step is found in an item of "input" whose id is a synthetic one (the
// message, or an item_reference to it), and in an assistant message whose
// text holds linkPrefix followed by a step id: every link counts, in the
// order they appear, as one message can carry several steps (an app that
// joins an answer's text into one message). Each step is looked up with
// r.Restore once. For each it reports ok, in order:
//
//   - With a full input list (no previous_response_id, no conversation):
//     the items of Restored.Message (the response's output items up to the
//     held calls, see Responses) take the place of the synthetic item, and
//     of the app's own copies of any of them (same id, items and
//     item_references alike; also id-less assistant messages right before
//     it whose text one of them holds), at the first of those places, in
//     their original order: every reasoning item directly followed by its
//     next item. With store:false, stored reasoning items without
//     encrypted_content are left out (the provider cannot resolve them).
//     Right after them comes one function_call_output (custom_tool_call_output
//     for a custom tool) per Result whose call is in the input and has no
//     output there yet.
//   - With previous_response_id or conversation: the provider already holds
//     the original call, so the synthetic item is dropped and the results
//     are put first in "input".
//
// An assistant message (not a synthetic item) holding a restored step's
// link, in which words follow the last link (an app joining the answer's
// text, which holds the model's reply after the person answered; see
// Turn.Resume), stays as {"role":"assistant","content":<those words>}
// after the restored items and results.
//
// A synthetic item whose step is unknown (or another owner's) cannot reach
// the provider either: an item_reference to it is dropped, a message loses
// its id. When r is a provider.StateRestorer, the steps it gives for
// previous_response_id (or else conversation) add their results first in
// "input" too, except for calls already answered there. A string input
// stays the user's message, after them.
//
// Only "input" changes, rebuilt from its items' own bytes; every other byte
// of the body stays. The result is a new slice when anything changed, else
// body.
func (Responses) RewriteRequest(ctx context.Context, body []byte, linkPrefix string, r provider.Restorer) ([]byte, error) {
	linked := links.Has(body, linkPrefix) || keyscan.Contains(body, synthPrefix)
	sr, stateful := r.(provider.StateRestorer)
	stateful = stateful && (keyscan.Contains(body, prevKey) || keyscan.Contains(body, convKey))
	if !linked && !stateful {
		return body, nil
	}
	if !gjson.ValidBytes(body) {
		return nil, errors.New("responses request: invalid JSON carrying gate history")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return body, nil
	}
	var prevID, convID string
	if p := root.Get("previous_response_id"); p.Type == gjson.String {
		prevID = p.Str
	}
	switch c := root.Get("conversation"); {
	case c.Type == gjson.String:
		convID = c.Str
	case c.IsObject():
		convID = c.Get("id").Str
	}
	inState := prevID != "" || convID != ""
	storeFalse := root.Get("store").Type == gjson.False
	input := root.Get("input")

	q := &reqInput{answered: make(map[string]bool), calls: make(map[string]bool)}
	if input.IsArray() {
		input.ForEach(func(_, it gjson.Result) bool {
			q.items = append(q.items, reqItem{res: it, raw: it.Raw})
			if cid := it.Get("call_id").Str; cid != "" {
				switch typ := it.Get("type").Str; {
				case strings.HasSuffix(typ, "_output"):
					q.answered[cid] = true
				case isClientCall(typ):
					q.calls[cid] = true
				}
			}
			return true
		})
	}

	done := make(map[string]bool) // step → restored
	for i := range q.items {
		it := q.items[i].res
		id := it.Get("id").Str
		synth := strings.HasPrefix(id, SyntheticPrefix)
		var steps []string
		if step := synthStep(id); step != "" {
			steps = append(steps, step)
		}
		if linked && isAssistantMessage(it) {
			for _, step := range stepsOfItem(it, linkPrefix) {
				if !slices.Contains(steps, step) {
					steps = append(steps, step)
				}
			}
		}
		restoredAny, seenAll := false, len(steps) > 0
		for _, step := range steps {
			if restored, seen := done[step]; seen {
				restoredAny = restoredAny || restored
				continue
			}
			seenAll = false
			res, ok := r.Restore(ctx, step, q.userAfter(i))
			done[step] = ok
			if !ok {
				continue
			}
			stored, err := storedItems(res.Message)
			if err != nil {
				return nil, fmt.Errorf("responses request: step %s: %w", step, err)
			}
			restoredAny = true
			q.drop(i)
			if inState {
				q.head = append(q.head, q.outputs(res.Results, stored, false)...)
				continue
			}
			q.restore(i, stored, res.Results, storeFalse)
		}
		switch {
		case restoredAny && seenAll:
			q.drop(i) // another copy of a message already restored
		case !restoredAny && synth:
			q.sanitize(i)
		case restoredAny && !synth && isAssistantMessage(it):
			q.keepFollowUp(i, linkPrefix)
		}
	}
	if stateful && inState {
		key := prevID
		conv := ""
		if key == "" {
			conv = convID
		}
		for _, res := range sr.RestoreState(ctx, key, conv, q.userIn(input)) {
			stored, err := storedItems(res.Message)
			if err != nil {
				return nil, fmt.Errorf("responses request: stored state: %w", err)
			}
			q.head = append(q.head, q.outputs(res.Results, stored, false)...)
		}
	}
	if !q.changed && len(q.head) == 0 {
		return body, nil
	}
	parts := append([]string(nil), q.head...)
	for _, it := range q.items {
		parts = append(parts, it.before...)
		if !it.dropped {
			parts = append(parts, it.raw)
		}
	}
	if input.Type == gjson.String {
		parts = append(parts, `{"role":"user","content":`+input.Raw+`}`)
	}
	if !input.Exists() || jsonedit.IsNull(input) {
		return sjson.SetRawBytes(body, "input", []byte(joinItems(parts)))
	}
	e, err := jsonedit.Of(body, input, joinItems(parts))
	if err != nil {
		return nil, fmt.Errorf("responses request: %w", err)
	}
	return jsonedit.Apply(body, []jsonedit.Edit{e}), nil
}

// keepFollowUp keeps, in place of the restored assistant message i, the
// words the model wrote after its last link, if any: an app that joins an
// answer's text into one message carries there the model's reply after
// the person answered (see Turn.Resume) or after a refused call went back.
// They become {"role":"assistant","content":<the words>}, after the
// restored items and their results.
func (q *reqInput) keepFollowUp(i int, prefix string) {
	rest, found := links.AfterLast(itemText(q.items[i].res), prefix)
	if !found || !links.Wordy(rest) {
		return
	}
	it := &q.items[i]
	it.raw = `{"role":"assistant","content":` + string(gjson.AppendJSONString(nil, rest)) + `}`
	it.dropped = false
	q.changed = true
}

// reqInput is a request's input items while history is restored.
type reqInput struct {
	items    []reqItem
	head     []string        // items to put first
	answered map[string]bool // call ids with a result in the input
	calls    map[string]bool // call ids of the calls in the input
	changed  bool
}

type reqItem struct {
	res     gjson.Result
	raw     string
	dropped bool
	before  []string // items to insert before it
}

func (q *reqInput) drop(i int) {
	q.items[i].dropped = true
	q.changed = true
}

// sanitize makes a synthetic item that cannot be restored harmless: an
// item_reference to it is dropped (the provider would not find it), a
// message loses its id.
func (q *reqInput) sanitize(i int) {
	it := &q.items[i]
	if it.res.Get("type").Str == "item_reference" {
		q.drop(i)
		return
	}
	if raw, err := sjson.Delete(it.raw, "id"); err == nil {
		it.raw = raw
		q.changed = true
	}
}

// restore puts the stored items in place of the synthetic item i and the
// app's copies of them, followed by the results.
func (q *reqInput) restore(i int, stored []gjson.Result, results []provider.Result, storeFalse bool) {
	ids := make(map[string]bool, len(stored))
	texts := make(map[string]bool)
	for _, s := range stored {
		if id := s.Get("id").Str; id != "" {
			ids[id] = true
		}
		if s.Get("type").Str == "message" {
			if t := itemText(s); t != "" {
				texts[t] = true
			}
		}
	}
	at := i
	for j := range q.items {
		if j != i && !q.items[j].dropped && ids[q.items[j].res.Get("id").Str] {
			q.drop(j)
			at = min(at, j)
		}
	}
	for j := at - 1; j >= 0; j-- {
		it := q.items[j]
		if it.dropped {
			continue
		}
		if !isAssistantMessage(it.res) || it.res.Get("id").Exists() || !texts[itemText(it.res)] {
			break
		}
		q.drop(j)
		at = j
	}
	var ins []string
	for _, s := range stored {
		if storeFalse && s.Get("type").Str == "reasoning" && s.Get("encrypted_content").Str == "" {
			continue
		}
		ins = append(ins, s.Raw)
		if cid := s.Get("call_id").Str; cid != "" && isClientCall(s.Get("type").Str) {
			q.calls[cid] = true
		}
	}
	ins = append(ins, q.outputs(results, stored, true)...)
	q.items[at].before = append(q.items[at].before, ins...)
}

// outputs returns the result items for results whose call has none in the
// input yet (and, when inInput, whose call is in the input).
func (q *reqInput) outputs(results []provider.Result, stored []gjson.Result, inInput bool) []string {
	var out []string
	for _, res := range results {
		if q.answered[res.CallID] || inInput && !q.calls[res.CallID] {
			continue
		}
		q.answered[res.CallID] = true
		typ := "function"
		for _, s := range stored {
			if s.Get("call_id").Str == res.CallID && s.Get("type").Str == "custom_tool_call" {
				typ = "custom"
			}
		}
		out = append(out, toolOutput(typ, res.CallID, res.Content))
	}
	return out
}

// userAfter reports whether a user message follows item i.
func (q *reqInput) userAfter(i int) bool {
	for _, it := range q.items[i+1:] {
		if isUserMessage(it.res) {
			return true
		}
	}
	return false
}

// userIn reports whether the input carries a user message.
func (q *reqInput) userIn(input gjson.Result) bool {
	return input.Type == gjson.String || q.userAfter(-1)
}

func isUserMessage(it gjson.Result) bool {
	typ := it.Get("type").Str
	return it.Get("role").Str == "user" && (typ == "" || typ == "message")
}

func isAssistantMessage(it gjson.Result) bool {
	typ := it.Get("type").Str
	return it.Get("role").Str == "assistant" && (typ == "" || typ == "message")
}

// itemText is the text of a message item: its string content, or its text
// parts joined.
func itemText(it gjson.Result) string {
	c := it.Get("content")
	if c.Type == gjson.String {
		return c.Str
	}
	var b strings.Builder
	c.ForEach(func(_, part gjson.Result) bool {
		if t := part.Get("text"); t.Type == gjson.String {
			b.WriteString(t.Str)
		}
		return true
	})
	return b.String()
}

// stepsOfItem returns the step ids of the links in a message item's text,
// in order, each once.
func stepsOfItem(it gjson.Result, prefix string) []string {
	c := it.Get("content")
	if c.Type == gjson.String {
		return links.Steps(c, prefix)
	}
	var steps []string
	c.ForEach(func(_, part gjson.Result) bool {
		if t := part.Get("text"); t.Type == gjson.String {
			for _, s := range links.StepsIn(t.Str, prefix) {
				if !slices.Contains(steps, s) {
					steps = append(steps, s)
				}
			}
		}
		return true
	})
	return steps
}

// storedItems reads a step's stored message: the JSON array of output items
// Hold was given.
func storedItems(msg []byte) ([]gjson.Result, error) {
	if !gjson.ValidBytes(msg) {
		return nil, errors.New("stored items are not valid JSON")
	}
	m := gjson.ParseBytes(msg)
	if !m.IsArray() {
		return nil, errors.New("stored items are not a JSON array")
	}
	return m.Array(), nil
}

// RewriteTools rewrites the function tools of a Responses API request body
// on its way to the provider. Responses tools are flat:
// {"type":"function","name","description","parameters","strict"}. For each
// of them rewrite gets the name and the raw parameters (nil when absent);
// a function inside a {"type":"namespace","name":ns,"tools":[…]} tool is
// asked about as ns + "/" + name first, then by its bare name, as calls are
// matched. When rewrite says ok, parameters is replaced by the new schema
// (unless that is nil) and the suffix is appended to description, which is
// created if absent (or null). Other tools are left alone.
//
// A body without the bytes "tools" is returned as is, the same slice,
// without JSON work; so is one where rewrite says !ok for every tool.
// Otherwise the result is a new slice in which only the rewritten tool
// objects change. Invalid JSON is an error, as is a new schema that is not
// valid JSON.
func (Responses) RewriteTools(body []byte, rewrite provider.ToolRewrite) ([]byte, error) {
	if !bytes.Contains(body, toolsKey) {
		return body, nil
	}
	if !gjson.ValidBytes(body) {
		return nil, errors.New("responses request: invalid JSON carrying tools")
	}
	tools := gjson.GetBytes(body, "tools")
	if !tools.IsArray() {
		return body, nil
	}
	return tooledit.Rewrite(body, tools, func(tool gjson.Result, add func(gjson.Result, string, ...string) bool) bool {
		switch tool.Get("type").Str {
		case "function":
			return add(tool, "parameters", tool.Get("name").Str)
		case "namespace":
			ns := tool.Get("name").Str
			ok := true
			tool.Get("tools").ForEach(func(_, sub gjson.Result) bool {
				if sub.Get("type").Str == "function" {
					name := sub.Get("name").Str
					ok = add(sub, "parameters", ns+"/"+name, name)
				}
				return ok
			})
			return ok
		}
		return true
	}, rewrite, "responses request")
}

// ToolParameters returns the raw JSON Schema "parameters" a Responses API
// request offers for the function tool a policy key names (name, or
// namespace/name), or nil. The handler's lookup for Chat reads
// function.parameters; Responses tools are flat.
func (Responses) ToolParameters(body []byte, key string) []byte {
	var out []byte
	match := func(tool gjson.Result, ns string) bool {
		name := tool.Get("name").Str
		if tool.Get("type").Str != "function" || name != key && (ns == "" || ns+"/"+name != key) {
			return true
		}
		if p := tool.Get("parameters"); p.IsObject() {
			out = []byte(p.Raw)
		}
		return false
	}
	gjson.GetBytes(body, "tools").ForEach(func(_, tool gjson.Result) bool {
		if tool.Get("type").Str == "namespace" {
			ns := tool.Get("name").Str
			tool.Get("tools").ForEach(func(_, sub gjson.Result) bool { return match(sub, ns) })
			return out == nil
		}
		return match(tool, "")
	})
	return out
}
