// Package tooledit edits a request's (or an MCP tools/list result's) tool
// list, the same for every wire protocol: the policy's rewrite of a
// declared tool's schema and description (Rewrite), and the tools not
// offered to a person taken out (Drop). Each protocol says only where its
// tool objects sit and how it names a tool; the list is edited here, every
// byte not edited kept.
package tooledit

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/wire/jsonedit"
)

// ToolName is the name a protocol's model calls a tool of its list by; ok
// is false for a tool the model does not call by its name (a provider's
// own tool, a namespace).
type ToolName func(tool gjson.Result) (name string, ok bool)

// EmptyList says what Drop does with a list it empties.
type EmptyList uint8

const (
	// RemoveEmpty removes an emptied list, with tool_choice and
	// parallel_tool_calls, which providers refuse without tools.
	RemoveEmpty EmptyList = iota
	// KeepEmpty keeps an emptied list as [] (an MCP tools/list result).
	KeepEmpty
)

var toolsKey = []byte(`"tools"`)

// Drop takes out of body's top-level "tools" array the tools that name
// reads a name of and drop says true for: a policy's offer_when
// (gate/rules.go) offers them only to some persons. Only the tools array
// changes (its kept elements keep their bytes; the array is written again
// without the dropped ones); a list left empty is handled as empty says.
// A body it drops nothing from (or that is not valid JSON, or has no tools
// array) comes back as the same slice.
func Drop(body []byte, name ToolName, empty EmptyList, drop func(name string) bool) ([]byte, error) {
	if !bytes.Contains(body, toolsKey) || !gjson.ValidBytes(body) {
		return body, nil
	}
	tools := gjson.GetBytes(body, "tools")
	if !tools.IsArray() {
		return body, nil
	}
	var kept []string
	dropped := false
	tools.ForEach(func(_, tool gjson.Result) bool {
		if n, ok := name(tool); ok && drop(n) {
			dropped = true
			return true
		}
		kept = append(kept, tool.Raw)
		return true
	})
	if !dropped {
		return body, nil
	}
	if len(kept) == 0 && empty == RemoveEmpty {
		out := body
		var err error
		for _, k := range []string{"tools", "tool_choice", "parallel_tool_calls"} {
			if out, err = sjson.DeleteBytes(out, k); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	e, err := jsonedit.Of(body, tools, "["+strings.Join(kept, ",")+"]")
	if err != nil {
		return nil, err
	}
	return jsonedit.Apply(body, []jsonedit.Edit{e}), nil
}
