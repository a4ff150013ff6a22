package interceptor

import (
	"bytes"
	"encoding/base64"
	"errors"
	"math"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
	"github.com/toolgate/toolgate/wire/tooledit"
)

// MCP over Streamable HTTP: what the MCP front reads of a POSTed JSON-RPC
// message and writes back. This file is the one place that knows MCP's
// field names; the gate sees MCPRequest and opaque result bytes.

// MCPModern is the protocol version with multi round-trip requests
// (input_required, inputRequests, requestState) and per-request
// capabilities. Earlier versions are "legacy" here.
const MCPModern = "2026-07-28"

// Header names of Streamable HTTP.
const (
	MCPVersionHeader     = "Mcp-Protocol-Version"
	MCPMethodHeader      = "Mcp-Method"
	MCPNameHeader        = "Mcp-Name"
	MCPParamHeaderPrefix = "Mcp-Param-"
)

// gjson paths into a request's params._meta (the keys hold dots).
const (
	mcpMetaVersion = `params._meta.io\.modelcontextprotocol/protocolVersion`
	mcpMetaCaps    = `params._meta.io\.modelcontextprotocol/clientCapabilities`
)

// ErrMCPMessage is a POSTed body the MCP front cannot read as one JSON-RPC
// message.
var ErrMCPMessage = errors.New("mcp: not a JSON-RPC message object")

// MCPRequest is what the MCP front reads of one JSON-RPC request.
type MCPRequest struct {
	Method string
	ID     []byte // the raw JSON id; nil for a notification
	// Name and Arguments are a tools/call's params.name and
	// params.arguments (a JSON object; "{}" when absent).
	Name      string
	Arguments []byte
	// Version is the protocol version in params._meta ("" before
	// 2026-07-28, where it is not sent).
	Version string
	// Elicit is the elicitation the request declares it can answer
	// (2026-07-28 sends capabilities with every request).
	Elicit ElicitModes
	// State is params.requestState, HasState whether it was given.
	State    string
	HasState bool
	// Responses are params.inputResponses, raw, by key.
	Responses map[string][]byte
}

// ElicitModes are the elicitation modes a client declares: `{}` alone
// means form.
type ElicitModes struct{ Form, URL bool }

// MCPMethod returns a POSTed body's JSON-RPC method and, for tools/call,
// the tool's name, reading nothing deeper: "" for a response, a batch or
// anything else. ok is false when the message names its method, params or
// the tool's name twice (see DuplicateKey): the server might read the
// other one. It is all the pass-through reads.
func MCPMethod(body []byte) (method, tool string, ok bool) {
	if i := firstByte(body); i < 0 || body[i] != '{' {
		return "", "", true
	}
	top, ok := jsonedit.TopLevel(gjson.ParseBytes(body), "method", "params")
	if !ok {
		return "", "", false
	}
	method = top[0].String()
	if method != "tools/call" {
		return method, "", true
	}
	p, ok := jsonedit.TopLevel(top[1], "name")
	return method, p[0].String(), ok
}

// IsMCPBatch reports whether a POSTed body is a JSON-RPC batch (an array),
// which 2025-03-26 allowed and later versions removed.
func IsMCPBatch(body []byte) bool {
	i := firstByte(body)
	return i >= 0 && body[i] == '['
}

// MCPBatchCalls returns the tools/call names in a batch.
func MCPBatchCalls(body []byte) []string {
	var names []string
	gjson.ParseBytes(body).ForEach(func(_, m gjson.Result) bool {
		if m.Get("method").String() == "tools/call" {
			names = append(names, m.Get("params.name").String())
		}
		return true
	})
	return names
}

func firstByte(b []byte) int {
	for i, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return i
	}
	return -1
}

// ParseMCPRequest reads a request the gate inspects. It is strict where
// the gate decides: the body must be one valid JSON object, params and
// arguments objects, the state a string.
func ParseMCPRequest(body []byte) (MCPRequest, error) {
	var r MCPRequest
	if !gjson.ValidBytes(body) {
		return r, ErrMCPMessage
	}
	if jsonedit.DuplicateKey(body) {
		return r, errors.New("mcp: a key is given twice in one object")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return r, ErrMCPMessage
	}
	// A key the gate reads, given in another case, could be what a
	// case-insensitive server reads instead (see DuplicateKey).
	if _, ok := jsonedit.TopLevel(root, "jsonrpc", "id", "method", "params"); !ok {
		return r, errors.New("mcp: a key is given in another case")
	}
	if _, ok := jsonedit.TopLevel(root.Get("params"), "_meta", "name", "arguments", "requestState", "inputResponses"); !ok {
		return r, errors.New("mcp: a key of params is given in another case")
	}
	r.Method = root.Get("method").String()
	if id := root.Get("id"); id.Exists() {
		r.ID = []byte(id.Raw)
	}
	params := root.Get("params")
	if params.Exists() && !params.IsObject() {
		return r, errors.New("mcp: params is not an object")
	}
	r.Name = params.Get("name").String()
	r.Arguments = []byte("{}")
	if a := params.Get("arguments"); a.Exists() && a.Type != gjson.Null {
		if !a.IsObject() {
			return r, errors.New("mcp: arguments is not an object")
		}
		r.Arguments = []byte(a.Raw)
	}
	r.Version = root.Get(mcpMetaVersion).String()
	if el := root.Get(mcpMetaCaps + ".elicitation"); el.IsObject() {
		form, url := el.Get("form"), el.Get("url")
		r.Elicit.URL = url.Exists()
		r.Elicit.Form = form.Exists() || !url.Exists()
	}
	if st := params.Get("requestState"); st.Exists() {
		if st.Type != gjson.String {
			return r, errors.New("mcp: requestState is not a string")
		}
		r.State, r.HasState = st.String(), true
	}
	if ir := params.Get("inputResponses"); ir.Exists() && ir.Type != gjson.Null {
		if !ir.IsObject() {
			return r, errors.New("mcp: inputResponses is not an object")
		}
		r.Responses = map[string][]byte{}
		ir.ForEach(func(k, v gjson.Result) bool {
			r.Responses[k.String()] = []byte(v.Raw)
			return true
		})
	}
	return r, nil
}

// Modern reports whether the request speaks 2026-07-28: the body's _meta
// says so and the Mcp-Protocol-Version header agrees.
func (r MCPRequest) Modern(header string) bool {
	return r.Version == MCPModern && header == MCPModern
}

// RewriteMCPCall returns a tools/call body with new arguments, request
// state ("" removes it) and input responses (none removes them); the rest
// of the body, _meta included, is kept as sent.
func RewriteMCPCall(body, args []byte, state string, responses map[string][]byte) ([]byte, error) {
	out, err := sjson.SetRawBytes(body, "params.arguments", args)
	if err != nil {
		return nil, err
	}
	if state == "" {
		out, err = sjson.DeleteBytes(out, "params.requestState")
	} else {
		out, err = sjson.SetBytes(out, "params.requestState", state)
	}
	if err != nil {
		return nil, err
	}
	if len(responses) == 0 {
		return sjson.DeleteBytes(out, "params.inputResponses")
	}
	obj := []byte("{")
	for _, k := range sortedKeys(responses) {
		if len(obj) > 1 {
			obj = append(obj, ',')
		}
		obj = gjson.AppendJSONString(obj, k)
		obj = append(obj, ':')
		obj = append(obj, responses[k]...)
	}
	obj = append(obj, '}')
	return sjson.SetRawBytes(out, "params.inputResponses", obj)
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ { // tiny maps: insertion sort
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// MCPResponse wraps a result in a JSON-RPC response to the request id.
func MCPResponse(id, result []byte) []byte {
	b := make([]byte, 0, len(result)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if len(id) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, id...)
	}
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// MCPToolError is a tools/call result the model reads as a failed tool:
// `isError: true` with one text block. modern adds resultType, which
// 2026-07-28 requires on every result.
func MCPToolError(text string, modern bool) []byte {
	b := []byte(`{"content":[{"type":"text","text":`)
	b = gjson.AppendJSONString(b, text)
	b = append(b, `}],"isError":true`...)
	if modern {
		b = append(b, `,"resultType":"complete"`...)
	}
	return append(b, '}')
}

// MCPElicitation is one input request of ours: key → elicitation/create
// params (a form or a URL request).
type MCPElicitation struct {
	Key    string
	Params []byte
}

// MCPInputRequired is a 2026-07-28 InputRequiredResult asking the client
// for the elicitations and to echo state.
func MCPInputRequired(reqs []MCPElicitation, state string) []byte {
	b := []byte(`{"resultType":"input_required","inputRequests":{`)
	for i, r := range reqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = gjson.AppendJSONString(b, r.Key)
		b = append(b, `:{"method":"elicitation/create","params":`...)
		b = append(b, r.Params...)
		b = append(b, '}')
	}
	b = append(b, `},"requestState":`...)
	b = gjson.AppendJSONString(b, state)
	return append(b, '}')
}

// MCPURLElicitation is the params of a URL-mode elicitation.
func MCPURLElicitation(message, url string) []byte {
	b := []byte(`{"mode":"url","message":`)
	b = gjson.AppendJSONString(b, message)
	b = append(b, `,"url":`...)
	b = gjson.AppendJSONString(b, url)
	return append(b, '}')
}

// ElicitAnswer is a client's answer to one elicitation.
type ElicitAnswer struct {
	Action  string // accept, decline or cancel
	Content []byte // accept of a form: the values object; nil otherwise
}

// ReadElicitAnswer reads an inputResponses entry that answers an
// elicitation.
func ReadElicitAnswer(raw []byte) (ElicitAnswer, error) {
	if !gjson.ValidBytes(raw) {
		return ElicitAnswer{}, errors.New("mcp: input response is not JSON")
	}
	v := gjson.ParseBytes(raw)
	a := ElicitAnswer{Action: v.Get("action").String()}
	switch a.Action {
	case "accept":
		if c := v.Get("content"); c.IsObject() {
			a.Content = []byte(c.Raw)
		}
	case "decline", "cancel":
	default:
		return ElicitAnswer{}, errors.New("mcp: input response has no action accept, decline or cancel")
	}
	return a, nil
}

// MCPUpstreamInput reads a result that asks the client for input: its
// state and its input request keys. ok is false for any other result.
func MCPUpstreamInput(result []byte) (state string, keys []string, ok bool) {
	r := gjson.ParseBytes(result)
	if r.Get("resultType").String() != "input_required" {
		return "", nil, false
	}
	r.Get("inputRequests").ForEach(func(k, _ gjson.Result) bool {
		keys = append(keys, k.String())
		return true
	})
	return r.Get("requestState").String(), keys, true
}

// MCPPrependText puts a text content item before a tool result's content
// (a result without a content list gets one holding only it).
func MCPPrependText(result []byte, text string) ([]byte, error) {
	item := gjson.AppendJSONString([]byte(`{"type":"text","text":`), text)
	item = append(item, '}')
	list := []byte{'['}
	list = append(list, item...)
	if c := gjson.GetBytes(result, "content"); c.IsArray() {
		c.ForEach(func(_, v gjson.Result) bool {
			list = append(append(list, ','), v.Raw...)
			return true
		})
	}
	list = append(list, ']')
	return sjson.SetRawBytes(result, "content", list)
}

// SetMCPState replaces a result's requestState.
func SetMCPState(result []byte, state string) ([]byte, error) {
	return sjson.SetBytes(result, "requestState", state)
}

// RewriteMCPTools rewrites the tools of a tools/list result as the model
// adapters rewrite a request's tools: rewrite gets each tool's name and
// inputSchema; when it says ok, the schema is replaced (unless nil) and the
// suffix appended to the description. Tools it leaves alone keep their
// bytes; a result it changes nothing in comes back as the same slice.
func RewriteMCPTools(result []byte, rewrite provider.ToolRewrite) ([]byte, error) {
	tools := gjson.GetBytes(result, "tools")
	if !tools.IsArray() {
		return result, nil
	}
	return tooledit.Rewrite(result, tools, func(tool gjson.Result, add func(gjson.Result, string, ...string) bool) bool {
		return add(tool, "inputSchema", tool.Get("name").String())
	}, rewrite, "mcp tools/list")
}

// MCPParamHeaders computes the Mcp-Param-* headers a 2026-07-28 tools/call
// carries for the tool's parameters annotated x-mcp-header, from the
// arguments as sent: primitives only, nulls and absent values skipped,
// values that are not plain visible ASCII wrapped as =?base64?...?=.
func MCPParamHeaders(schema, args []byte) map[string]string {
	var out map[string]string
	var walk func(props gjson.Result, path string)
	walk = func(props gjson.Result, path string) {
		props.ForEach(func(k, p gjson.Result) bool {
			at := path + gjson.Escape(k.String())
			if h := p.Get("x-mcp-header"); h.Type == gjson.String && h.String() != "" {
				if v, ok := headerValue(gjson.GetBytes(args, at)); ok {
					if out == nil {
						out = map[string]string{}
					}
					out[MCPParamHeaderPrefix+h.String()] = v
				}
			}
			if sub := p.Get("properties"); sub.IsObject() {
				walk(sub, at+".")
			}
			return true
		})
	}
	walk(gjson.GetBytes(schema, "properties"), "")
	return out
}

func headerValue(v gjson.Result) (string, bool) {
	var s string
	switch v.Type {
	case gjson.String:
		s = v.String()
	case gjson.True:
		s = "true"
	case gjson.False:
		s = "false"
	case gjson.Number:
		f := v.Float()
		if f != math.Trunc(f) || math.Abs(f) > 1<<53-1 {
			return "", false
		}
		s = strconv.FormatInt(int64(f), 10)
	default:
		return "", false
	}
	if needsBase64(s) {
		return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=", true
	}
	return s, true
}

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return true
		}
	}
	return false
}

// sameID compares two raw JSON-RPC ids.
func sameID(a, b []byte) bool {
	return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
}

// DropMCPTools takes the tools drop names out of a tools/list result
// (tooledit.Drop); a list left empty stays, as [].
func DropMCPTools(result []byte, drop func(name string) bool) ([]byte, error) {
	return tooledit.Drop(result, mcpToolName, tooledit.KeepEmpty, drop)
}

// mcpToolName is an MCP tool's name.
func mcpToolName(tool gjson.Result) (string, bool) {
	if tool.IsObject() {
		return tool.Get("name").String(), true
	}
	return "", false
}
