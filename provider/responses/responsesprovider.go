package responses

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/params"
	"github.com/toolgate/toolgate/wire/shape"
	"github.com/toolgate/toolgate/wire/tooledit"
)

// What the OpenAI Responses API answers of the provider.Provider
// questions (its ToolParameters is in responsesrequest.go).

func init() {
	provider.Register(Responses{})
}

// Name is "openai-responses".
func (Responses) Name() string { return "openai-responses" }

// AnswerKey is the top-level key a Responses answer carries its calls
// under (output): a body naming a gated tool is read only when it has
// this key and no other provider's call key (see shape.Reads).
func (Responses) AnswerKey() string { return "output" }

// OwnsEvent reports whether an event's data is a Responses event and no
// other protocol's (asked only of an event naming a gated tool): see
// shape.EventMarks. A Responses event naming a gated tool must also say
// which event it is, as an Anthropic one must (provider/anthropic): the
// adapter goes by its type.
func (Responses) OwnsEvent(data []byte) bool {
	return shape.EventMarks(data) == shape.MarkResponses && strings.HasPrefix(gjson.GetBytes(data, "type").String(), "response.")
}

// Serves reports a path ending in /responses.
func (Responses) Serves(path string) bool { return strings.HasSuffix(path, "/responses") }

// Around names the Responses API's stored output and OpenAI's Realtime
// API:
//
//   - stored responses: anything under /responses/{id} but DELETE (the
//     stored response, its input items, cancel), except POST
//     /responses/input_tokens and /responses/compact; GET
//     /conversations/{id}/items[/{id}];
//   - realtime: anything under /realtime (the WebSocket, calls, sessions,
//     client secrets).
func (Responses) Around(method string, segs []string, i int) *provider.Around {
	rest := len(segs) - i - 1 // segments after segs[i]
	switch segs[i] {
	case "realtime":
		return provider.AroundRealtime
	case "responses":
		if rest >= 1 && method != http.MethodDelete && !(rest == 1 && method == http.MethodPost && (segs[i+1] == "input_tokens" || segs[i+1] == "compact")) {
			return provider.AroundStored
		}
	case "conversations":
		if rest >= 2 && segs[i+2] == "items" && method == http.MethodGet {
			return provider.AroundStored
		}
	}
	return nil
}

// AroundParam refuses a background response, whose output is read back
// later, around the gate: background in any case, any value a lenient
// server reads as true.
func (Responses) AroundParam(body []byte) *provider.Around {
	if !params.MayName(body, "background") {
		return nil
	}
	return responsesParams(body)
}

// responsesParams is Responses' AroundParam without the byte filter.
func responsesParams(body []byte) *provider.Around {
	var found *provider.Around
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		if strings.EqualFold(k.String(), "background") && params.Truthy(v) {
			found = provider.AroundBackground
		}
		return found == nil
	})
	return found
}

// KnownPaths: input token counting, response compaction, conversations
// and their items.
func (Responses) KnownPaths() []string {
	return []string{"/responses/input_tokens", "/responses/compact", "/conversations", "/items"}
}

// Streams reports a body that asks for a stream ("stream": true).
func (Responses) Streams(_ string, _ *url.URL, body []byte) bool {
	return params.StreamsByBody(body)
}

// OwnerFields are safety_identifier, then user.
func (Responses) OwnerFields() []string { return params.OpenAIOwnerFields }

// DropTools takes the function and custom tools drop names out of the
// request (tooledit.Drop; an emptied list goes, with tool_choice and
// parallel_tool_calls). Tools inside a namespace stay: their calls are
// refused all the same.
func (Responses) DropTools(body []byte, drop func(string) bool) ([]byte, error) {
	return tooledit.Drop(body, responsesToolName, tooledit.RemoveEmpty, drop)
}

// responsesToolName is a function or custom tool's name.
func responsesToolName(tool gjson.Result) (string, bool) {
	if t := tool.Get("type").Str; t == "function" || t == "custom" {
		return tool.Get("name").Str, true
	}
	return "", false
}

// Interface guards
var (
	_ provider.Provider    = Responses{}
	_ provider.AnswerKeyer = Responses{}
	_ provider.EventOwner  = Responses{}
)
