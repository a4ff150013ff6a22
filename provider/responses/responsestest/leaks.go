package responsestest

import (
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/wire/sse"
)

// Leaks reports whether a rewritten stream (or body) shows the app a
// call h blocks: as an item of an event or of a response's output, or as
// an event of a blocked item (by an item id no other item of in uses).
func Leaks(h *providertest.Holder, in, out []byte) bool {
	blocked, other := make(map[string]bool), make(map[string]bool)
	visit := func(b []byte, fn func(item gjson.Result)) {
		for _, ev := range providertest.Events(b) {
			data, _, ok := sse.Data(ev, nil)
			if !ok {
				data = ev // a JSON body
			}
			if !gjson.ValidBytes(data) {
				continue
			}
			root := gjson.ParseBytes(data)
			for _, p := range [...]string{"item", "response.output", "output"} {
				v := root.Get(p)
				if v.IsArray() {
					v.ForEach(func(_, it gjson.Result) bool { fn(it); return true })
				} else if v.IsObject() {
					fn(v)
				}
			}
		}
	}
	visit(in, func(it gjson.Result) {
		if id := it.Get("id").Str; id != "" {
			if Blocks(h, it) {
				blocked[id] = true
			} else {
				other[id] = true
			}
		}
	})
	leak := false
	visit(out, func(it gjson.Result) { leak = leak || Blocks(h, it) })
	for _, ev := range providertest.Events(out) {
		if data, _, ok := sse.Data(ev, nil); ok && gjson.ValidBytes(data) {
			if id := gjson.GetBytes(data, "item_id").Str; blocked[id] && !other[id] {
				leak = true
			}
		}
	}
	return leak
}

// Blocks reports whether h keeps a call item from the app.
func Blocks(h *providertest.Holder, item gjson.Result) bool {
	if !isCallType(item.Get("type").Str) {
		return false
	}
	key, ok := gatedKey(h, item.Get("namespace").Str, item.Get("name").Str)
	return ok && h.Blocks(key)
}

// isCallType reports a function or custom tool call item (provider/responses'
// isCallType, kept apart so the tests' oracle is not the code it checks).
func isCallType(typ string) bool { return typ == "function_call" || typ == "custom_tool_call" }

// gatedKey is the policy key h inspects a call under: namespace/name
// first, then the bare name (as provider/responses reads a call).
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
