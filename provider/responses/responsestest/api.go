package responsestest

import (
	"strings"

	"github.com/tidwall/gjson"
)

// GateItemPrefix starts the id of every item the gate makes up
// (provider/responses.SyntheticPrefix, which a test there holds equal):
// the real API never made such an item, so it refuses a request that
// names one.
const GateItemPrefix = "msg_toolgate_"

// API is a fake Responses API that checks a request's input the way the
// real one does, as far as its documented errors go (wire-formats.md §2.4).
type API struct {
	stored map[string]string // response id → its output (a JSON array)
	next   map[string]string // reasoning item id → the id of the item that followed it
}

// Learn records a response's output (a JSON array) under its id, and which
// item followed each reasoning item.
func (a *API) Learn(id, output string) {
	if a.stored == nil {
		a.stored, a.next = make(map[string]string), make(map[string]string)
	}
	a.stored[id] = output
	items := gjson.Parse(output).Array()
	for i, it := range items {
		if it.Get("type").Str == "reasoning" && i+1 < len(items) {
			a.next[it.Get("id").Str] = items[i+1].Get("id").Str
		}
	}
}

// Check returns the error the API would answer with, or nil.
func (a *API) Check(body []byte) error {
	if !gjson.ValidBytes(body) {
		return violation("invalid JSON")
	}
	root := gjson.ParseBytes(body)
	calls := make(map[string]bool) // call ids made, answered or not
	open := make(map[string]bool)  // calls without a result yet
	known := make(map[string]bool) // item ids the API can resolve
	for id, out := range a.stored {
		gjson.Parse(out).ForEach(func(_, it gjson.Result) bool {
			known[it.Get("id").Str] = true
			return true
		})
		_ = id
	}
	prev := root.Get("previous_response_id").Str
	if prev == "" {
		prev = root.Get("conversation.id").Str // a conversation holds the items of its responses
		if c := root.Get("conversation"); c.Type == gjson.String {
			prev = c.Str
		}
	}
	if prev != "" {
		out, ok := a.stored[prev]
		if !ok {
			return violation("Previous response with id '%s' not found.", prev)
		}
		gjson.Parse(out).ForEach(func(_, it gjson.Result) bool {
			if clientCall(it.Get("type").Str) {
				calls[it.Get("call_id").Str] = true
				open[it.Get("call_id").Str] = true
			}
			return true
		})
	}
	items := root.Get("input").Array()
	seen := make(map[string]bool)
	for i, it := range items {
		id := it.Get("id").Str
		typ := it.Get("type").Str
		if id != "" {
			if seen[id] {
				return violation("Duplicate item found with id %s.", id)
			}
			seen[id] = true
		}
		if strings.HasPrefix(id, GateItemPrefix) {
			return violation("Item with id '%s' not found.", id)
		}
		switch {
		case typ == "item_reference":
			if !known[id] || root.Get("store").Type == gjson.False {
				return violation("Item with id '%s' not found.", id)
			}
			if n, ok := a.next[id]; ok && (i+1 >= len(items) || items[i+1].Get("id").Str != n) {
				return violation("Item '%s' of type 'reasoning' was provided without its required following item.", id)
			}
		case typ == "reasoning":
			if n, ok := a.next[id]; ok && (i+1 >= len(items) || items[i+1].Get("id").Str != n) {
				return violation("Item '%s' of type 'reasoning' was provided without its required following item.", id)
			}
		case clientCall(typ):
			calls[it.Get("call_id").Str] = true
			open[it.Get("call_id").Str] = true
		case strings.HasSuffix(typ, "_call_output"):
			cid := it.Get("call_id").Str
			if !calls[cid] {
				return violation("No tool call found for function call output with call_id %s.", cid)
			}
			delete(open, cid)
		}
	}
	for cid := range open {
		return violation("No tool output found for function call %s.", cid)
	}
	return nil
}

// clientCall reports the item types of the calls the app runs
// (provider/responses' isClientCall).
func clientCall(typ string) bool {
	switch typ {
	case "function_call", "custom_tool_call", "computer_call", "local_shell_call", "shell_call", "apply_patch_call":
		return true
	}
	return false
}
