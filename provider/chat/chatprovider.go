package chat

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

// What OpenAI Chat Completions answers of the provider.Provider
// questions: its paths, the endpoints that carry calls around the gate,
// whether an answer streams, the owner fields, a tool's schema.

func init() {
	provider.Register(Chat{})
}

// Name is "openai-chat".
func (Chat) Name() string { return "openai-chat" }

// Serves reports a path ending in /chat/completions.
func (Chat) Serves(path string) bool { return strings.HasSuffix(path, "/chat/completions") }

// Around names, of OpenAI's endpoints that return tool calls the gate
// never rewrites, those of Chat and the batch API:
//
//   - batches: anything under /batches, and /files/{id}/content, where
//     batch output is read;
//   - stored responses: GET /chat/completions (the stored list) and
//     anything under /chat/completions/{id} but DELETE.
func (Chat) Around(method string, segs []string, i int) *provider.Around {
	rest := len(segs) - i - 1 // segments after segs[i]
	switch segs[i] {
	case "batches":
		return provider.AroundBatches
	case "files":
		if rest == 2 && segs[i+2] == "content" {
			return provider.AroundBatches
		}
	case "completions":
		if i == 0 || segs[i-1] != "chat" {
			return nil
		}
		if (rest == 0 && method == http.MethodGet) || (rest >= 1 && method != http.MethodDelete) {
			return provider.AroundStored
		}
	}
	return nil
}

// AroundParam refuses the legacy functions: a non-empty functions, a
// function_call other than "none". Every top-level key counts, in any
// case: a key given twice or as "Functions" is what some server reads.
func (Chat) AroundParam(body []byte) *provider.Around {
	if !params.MayName(body, "functions", "function_call") {
		return nil
	}
	return chatParams(body)
}

// chatParams is Chat's AroundParam without the byte filter.
func chatParams(body []byte) *provider.Around {
	var found *provider.Around
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		key := k.String()
		switch {
		case strings.EqualFold(key, "functions"):
			if v.Type != gjson.Null && !(v.IsArray() && len(v.Array()) == 0) {
				found = provider.AroundFunctions
			}
		case strings.EqualFold(key, "function_call"):
			if v.Type != gjson.Null && v.String() != "none" {
				found = provider.AroundFunctions
			}
		}
		return found == nil
	})
	return found
}

// KnownPaths: embeddings, moderations, legacy completions, audio, images,
// files and uploads, tokenizing (vLLM's), conversations and their items.
func (Chat) KnownPaths() []string {
	return []string{
		"/embeddings", "/moderations", "/completions",
		"/audio/speech", "/audio/transcriptions", "/audio/translations",
		"/images/generations", "/images/edits", "/images/variations",
		"/files", "/uploads", "/parts",
		"/tokenize", "/detokenize",
	}
}

// Streams reports a body that asks for a stream ("stream": true).
func (Chat) Streams(_ string, _ *url.URL, body []byte) bool { return params.StreamsByBody(body) }

// OwnerFields are safety_identifier, then user.
func (Chat) OwnerFields() []string { return params.OpenAIOwnerFields }

// ToolParameters returns the function.parameters of the function tool of
// that name, or nil.
func (Chat) ToolParameters(body []byte, name string) []byte {
	var out []byte
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		if t.Get("function.name").String() == name {
			if p := t.Get("function.parameters"); p.IsObject() {
				out = []byte(p.Raw)
			}
			return false
		}
		return true
	})
	return out
}

// DropTools takes the function tools drop names out of the request
// (tooledit.Drop; an emptied list goes, with tool_choice and
// parallel_tool_calls).
func (Chat) DropTools(body []byte, drop func(string) bool) ([]byte, error) {
	return tooledit.Drop(body, chatToolName, tooledit.RemoveEmpty, drop)
}

// chatToolName is a function tool's function.name.
func chatToolName(tool gjson.Result) (string, bool) {
	if tool.Get("type").Str == "function" {
		return tool.Get("function.name").Str, true
	}
	return "", false
}

// AnswerKey is the top-level key a Chat answer carries its calls under
// (choices): a body naming a gated tool is read only when it has this key
// and no other provider's call key (see shape.Reads).
func (Chat) AnswerKey() string { return "choices" }

// OwnsEvent reports whether an event's data is a Chat chunk and no other
// protocol's event (asked only of an event naming a gated tool): see
// shape.EventMarks.
func (Chat) OwnsEvent(data []byte) bool { return shape.EventMarks(data) == shape.MarkChat }

// Interface guards
var (
	_ provider.Provider    = Chat{}
	_ provider.AnswerKeyer = Chat{}
	_ provider.EventOwner  = Chat{}
	_ provider.Stream      = (*chatStream)(nil)
)
