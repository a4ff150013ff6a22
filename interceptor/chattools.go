package interceptor

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

var toolsKey = []byte(`"tools"`)

// RewriteTools rewrites the function tools of a Chat Completions request
// body on its way to the provider. For each tools[i] of type "function",
// rewrite gets function.name and the raw function.parameters (nil when
// absent); when it says ok, parameters is replaced by the new schema (unless
// that is nil) and the suffix is appended to function.description, which is
// created if absent. Other tools (custom, or of an unknown type) are left
// alone.
//
// A body without the bytes "tools" is returned as is, the same slice,
// without JSON work; so is one where rewrite says !ok for every tool.
// Otherwise the result is a new slice: only the rewritten function objects
// change (spliced, not re-encoded), every other byte is kept. Invalid JSON
// is an error, as is a new schema that is not valid JSON.
func (Chat) RewriteTools(body []byte, rewrite ToolRewrite) ([]byte, error) {
	if !bytes.Contains(body, toolsKey) {
		return body, nil
	}
	if !gjson.ValidBytes(body) {
		return nil, errors.New("chat request: invalid JSON carrying tools")
	}
	tools := gjson.GetBytes(body, "tools")
	if !tools.IsArray() {
		return body, nil
	}
	var edits []edit
	var err error
	tools.ForEach(func(_, tool gjson.Result) bool {
		if !tool.IsObject() || tool.Get("type").Str != "function" {
			return true
		}
		fn := tool.Get("function")
		if !fn.IsObject() {
			return true
		}
		name := fn.Get("name").Str
		var params []byte
		if p := fn.Get("parameters"); p.Exists() {
			params = []byte(p.Raw)
		}
		newParams, suffix, ok := rewrite(name, params)
		if !ok {
			return true
		}
		out := fn.Raw
		if newParams != nil {
			if !gjson.ValidBytes(newParams) {
				err = fmt.Errorf("chat request: tool %q: the new parameters are not valid JSON", name)
				return false
			}
			if out, err = sjson.SetRaw(out, "parameters", string(newParams)); err != nil {
				return false
			}
		}
		if suffix != "" {
			desc := fn.Get("description")
			var d []byte
			if desc.Type == gjson.String {
				// The description's own bytes stay, escapes and all.
				d = append(d, desc.Raw[:len(desc.Raw)-1]...)
				q := gjson.AppendJSONString(nil, suffix)
				d = append(d, q[1:]...)
			} else {
				d = gjson.AppendJSONString(d, suffix)
			}
			if out, err = sjson.SetRaw(out, "description", string(d)); err != nil {
				return false
			}
		}
		if out == fn.Raw {
			return true
		}
		var e edit
		if e, err = editOf(body, fn, out); err != nil {
			return false
		}
		edits = append(edits, e)
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(edits) == 0 {
		return body, nil
	}
	return applyEdits(body, edits), nil
}
