package interceptor

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// anthClientTool reports whether a tools entry is a client tool, the kind
// whose calls come back as tool_use blocks: no "type", or "custom". Server
// tools (web_search_20250305, bash_20250124, …) carry their own type.
func anthClientTool(tool gjson.Result) bool {
	if !tool.IsObject() {
		return false
	}
	t := tool.Get("type")
	return !t.Exists() || t.Type == gjson.Null || t.Str == "custom"
}

// RewriteTools rewrites the client tools of a Messages request body on
// its way to the provider ({"name","description","input_schema"}, with no
// "type" or "custom"). For each, rewrite gets name and the raw input_schema
// (nil when absent); when it says ok, input_schema is replaced by the new
// schema (unless that is nil) and the suffix is appended to description,
// which is created if absent. Server tools (a "type" such as
// web_search_20250305) are left alone.
//
// A body without the bytes "tools" is returned as is, the same slice,
// without JSON work; so is one where rewrite says !ok for every tool.
// Otherwise the result is a new slice: only the rewritten tool objects
// change (spliced, not re-encoded), every other byte is kept. Invalid JSON
// is an error, as is a new schema that is not valid JSON.
func (Anthropic) RewriteTools(body []byte, rewrite ToolRewrite) ([]byte, error) {
	if !bytes.Contains(body, toolsKey) {
		return body, nil
	}
	if !gjson.ValidBytes(body) {
		return nil, errors.New("anthropic request: invalid JSON carrying tools")
	}
	tools := gjson.GetBytes(body, "tools")
	if !tools.IsArray() {
		return body, nil
	}
	var edits []edit
	var err error
	tools.ForEach(func(_, tool gjson.Result) bool {
		if !anthClientTool(tool) {
			return true
		}
		name := tool.Get("name").Str
		var schema []byte
		if p := tool.Get("input_schema"); p.Exists() {
			schema = []byte(p.Raw)
		}
		newSchema, suffix, ok := rewrite(name, schema)
		if !ok {
			return true
		}
		out := tool.Raw
		if newSchema != nil {
			if !gjson.ValidBytes(newSchema) {
				err = fmt.Errorf("anthropic request: tool %q: the new input_schema is not valid JSON", name)
				return false
			}
			if out, err = sjson.SetRaw(out, "input_schema", string(newSchema)); err != nil {
				return false
			}
		}
		if suffix != "" {
			desc := tool.Get("description")
			var d []byte
			if desc.Type == gjson.String {
				// The description's own bytes stay, escapes and all.
				d = append(d, desc.Raw[:len(desc.Raw)-1]...)
				d = append(d, gjson.AppendJSONString(nil, suffix)[1:]...)
			} else {
				d = gjson.AppendJSONString(d, suffix)
			}
			if out, err = sjson.SetRaw(out, "description", string(d)); err != nil {
				return false
			}
		}
		if out == tool.Raw {
			return true
		}
		var e edit
		if e, err = editOf(body, tool, out); err != nil {
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

// AnthropicToolSchema returns the input_schema a Messages request body
// offers for the client tool name, or nil: what the Caddy handler gives the
// gate (Front.WithToolSchemas) for an action whose policy has no schema.
func AnthropicToolSchema(body []byte, name string) []byte {
	if !bytes.Contains(body, toolsKey) || !gjson.ValidBytes(body) {
		return nil
	}
	var out []byte
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		if anthClientTool(t) && t.Get("name").Str == name {
			if p := t.Get("input_schema"); p.IsObject() {
				out = []byte(p.Raw)
			}
			return false
		}
		return true
	})
	return out
}
