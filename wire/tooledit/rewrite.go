package tooledit

import (
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
)

// edit rewrites one tool object of a request (or of an MCP tools/list
// result): the object obj inside body holds the tool's name, its schema
// under schemaKey and its description. rewrite is asked under each of
// names in turn until it says ok; then the schema is replaced (unless the
// new one is nil) and the suffix appended to the description, created if
// absent or not a string. Only the object changes, spliced into body, so
// every other byte stays. ok is false when the tool stays as it is. Each
// provider differs only in where the object sits and what its schema key
// is; this is the part they share.
func edit(body []byte, obj gjson.Result, schemaKey string, names []string, rewrite provider.ToolRewrite, proto string) (e jsonedit.Edit, ok bool, err error) {
	if !obj.IsObject() {
		return jsonedit.Edit{}, false, nil
	}
	var schema []byte
	if p := obj.Get(schemaKey); p.Exists() {
		schema = []byte(p.Raw)
	}
	var newSchema []byte
	var suffix string
	for _, n := range names {
		if newSchema, suffix, ok = rewrite(n, schema); ok {
			break
		}
	}
	if !ok {
		return jsonedit.Edit{}, false, nil
	}
	out := obj.Raw
	if newSchema != nil {
		if !gjson.ValidBytes(newSchema) {
			return jsonedit.Edit{}, false, fmt.Errorf("%s: tool %q: the new %s is not valid JSON", proto, names[len(names)-1], schemaKey)
		}
		if out, err = sjson.SetRaw(out, schemaKey, string(newSchema)); err != nil {
			return jsonedit.Edit{}, false, err
		}
	}
	if suffix != "" {
		desc := obj.Get("description")
		var d []byte
		if desc.Type == gjson.String {
			// The description's own bytes stay, escapes and all.
			d = append(d, desc.Raw[:len(desc.Raw)-1]...)
			d = append(d, gjson.AppendJSONString(nil, suffix)[1:]...)
		} else {
			d = gjson.AppendJSONString(d, suffix)
		}
		if out, err = sjson.SetRaw(out, "description", string(d)); err != nil {
			return jsonedit.Edit{}, false, err
		}
	}
	if out == obj.Raw {
		return jsonedit.Edit{}, false, nil
	}
	e, err = jsonedit.Of(body, obj, out)
	return e, err == nil, err
}

// Rewrite applies a policy's rewrite to the tools of a list: visit is
// called with each element of tools (an array inside body) and calls add
// for each tool object it holds (obj, its schema's key, and the names the
// rewrite is asked under, in turn); the edits are spliced into body (the
// same slice when nothing changed). proto names the list in errors.
func Rewrite(body []byte, tools gjson.Result, visit func(tool gjson.Result, add func(obj gjson.Result, schemaKey string, names ...string) bool) bool, rewrite provider.ToolRewrite, proto string) ([]byte, error) {
	var edits []jsonedit.Edit
	var err error
	add := func(obj gjson.Result, schemaKey string, names ...string) bool {
		var e jsonedit.Edit
		var ok bool
		if e, ok, err = edit(body, obj, schemaKey, names, rewrite, proto); err != nil {
			return false
		}
		if ok {
			edits = append(edits, e)
		}
		return true
	}
	tools.ForEach(func(_, tool gjson.Result) bool {
		return visit(tool, add) && err == nil
	})
	if err != nil {
		return nil, err
	}
	if len(edits) == 0 {
		return body, nil
	}
	return jsonedit.Apply(body, edits), nil
}
