package anthropic

import (
	"net/url"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/params"
	"github.com/toolgate/toolgate/wire/shape"
	"github.com/toolgate/toolgate/wire/tooledit"
)

// What Anthropic Messages answers of the provider.Provider questions.

func init() {
	provider.Register(Anthropic{})
}

// Name is "anthropic".
func (Anthropic) Name() string { return "anthropic" }

// Serves reports a path ending in /messages.
func (Anthropic) Serves(path string) bool { return strings.HasSuffix(path, "/messages") }

// Around names the Message Batches API (anything under /messages/batches).
func (Anthropic) Around(method string, segs []string, i int) *provider.Around {
	if segs[i] == "batches" {
		return provider.AroundBatches
	}
	return nil
}

// AroundParam: no Messages parameter carries calls around the gate.
func (Anthropic) AroundParam([]byte) *provider.Around { return nil }

// KnownPaths: legacy text completions, token counting.
func (Anthropic) KnownPaths() []string { return []string{"/complete", "/messages/count_tokens"} }

// Streams reports a body that asks for a stream ("stream": true).
func (Anthropic) Streams(_ string, _ *url.URL, body []byte) bool {
	return params.StreamsByBody(body)
}

// OwnerFields: none; a route sets one (metadata.user_id).
func (Anthropic) OwnerFields() []string { return nil }

// ToolParameters returns the input_schema of the client tool of that
// name, or nil.
func (Anthropic) ToolParameters(body []byte, name string) []byte {
	return AnthropicToolSchema(body, name)
}

// DropTools takes the client tools drop names out of the request
// (tooledit.Drop; an emptied list goes, with tool_choice and
// parallel_tool_calls).
func (Anthropic) DropTools(body []byte, drop func(string) bool) ([]byte, error) {
	return tooledit.Drop(body, anthropicToolName, tooledit.RemoveEmpty, drop)
}

// anthropicToolName is a client tool's name.
func anthropicToolName(tool gjson.Result) (string, bool) {
	if anthClientTool(tool) {
		return tool.Get("name").Str, true
	}
	return "", false
}

// AnswerKey is the top-level key an Anthropic answer carries its calls
// under (content): a body naming a gated tool is read only when it has
// this key and no other provider's call key (see shape.Reads).
func (Anthropic) AnswerKey() string { return "content" }

// OwnsEvent reports whether an event's data is an Anthropic event and no
// other protocol's (asked only of an event naming a gated tool): see
// shape.EventMarks. An Anthropic event naming a gated tool must also say
// which event it is: the adapter finds calls by the event's type, so one
// without a known type (a content_block and no type, say) passes it unread
// while a reader that goes by the keys could still take a call from it.
func (Anthropic) OwnsEvent(data []byte) bool {
	return shape.EventMarks(data) == shape.MarkAnthropic && shape.AnthropicEvent(gjson.GetBytes(data, "type").String())
}

// Interface guards
var (
	_ provider.Provider    = Anthropic{}
	_ provider.AnswerKeyer = Anthropic{}
	_ provider.EventOwner  = Anthropic{}
)
