package anthropic

import (
	"bytes"
	"errors"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/tooledit"
)

var toolsKey = []byte(`"tools"`)

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
func (Anthropic) RewriteTools(body []byte, rewrite provider.ToolRewrite) ([]byte, error) {
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
	return tooledit.Rewrite(body, tools, func(tool gjson.Result, add func(gjson.Result, string, ...string) bool) bool {
		if !anthClientTool(tool) {
			return true
		}
		return add(tool, "input_schema", tool.Get("name").Str)
	}, rewrite, "anthropic request")
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
