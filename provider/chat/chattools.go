package chat

import (
	"bytes"
	"errors"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/tooledit"
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
func (Chat) RewriteTools(body []byte, rewrite provider.ToolRewrite) ([]byte, error) {
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
	return tooledit.Rewrite(body, tools, func(tool gjson.Result, add func(gjson.Result, string, ...string) bool) bool {
		if !tool.IsObject() || tool.Get("type").Str != "function" {
			return true
		}
		fn := tool.Get("function")
		return add(fn, "parameters", fn.Get("name").Str)
	}, rewrite, "chat request")
}
