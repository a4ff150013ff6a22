package interceptor

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/wire/jsonedit"
)

// DropTools takes out of a request's (or an MCP tools/list result's) tool
// list the function tools for which drop says true: a policy's offer_when
// (gate/rules.go) offers them only to some persons. proto is "openai-chat",
// "openai-responses", "anthropic" or "mcp". Only the tools array changes
// (its kept elements keep their bytes; the array is written again without
// the dropped ones); a list left empty is removed, with tool_choice and
// parallel_tool_calls, which providers refuse without tools (not for MCP,
// whose result keeps an empty list). A body it drops nothing from comes
// back as the same slice. Tools inside a Responses namespace stay: their
// calls are refused all the same.
func DropTools(body []byte, proto string, drop func(name string) bool) ([]byte, error) {
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
		if name, ok := toolName(tool, proto); ok && drop(name) {
			dropped = true
			return true
		}
		kept = append(kept, tool.Raw)
		return true
	})
	if !dropped {
		return body, nil
	}
	if len(kept) == 0 && proto != "mcp" {
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

// toolName is the name a function tool is called by, as each protocol
// lists it; ok is false for a tool the model does not call by its name
// (a provider's own tool, a namespace).
func toolName(tool gjson.Result, proto string) (string, bool) {
	switch proto {
	case "openai-chat":
		if tool.Get("type").Str == "function" {
			return tool.Get("function.name").Str, true
		}
	case "openai-responses":
		if t := tool.Get("type").Str; t == "function" || t == "custom" {
			return tool.Get("name").Str, true
		}
	case "anthropic":
		if anthClientTool(tool) {
			return tool.Get("name").Str, true
		}
	case "mcp":
		if tool.IsObject() {
			return tool.Get("name").String(), true
		}
	}
	return "", false
}
