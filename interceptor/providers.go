package interceptor

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
)

// What each adapter answers of the provider.Provider questions: its paths,
// the endpoints that carry calls around the gate, whether an answer
// streams, the owner fields, a tool's schema.

func init() {
	provider.Register(Chat{})
	provider.Register(Responses{})
	provider.Register(Anthropic{})
}

// Name is "openai-chat".
func (Chat) Name() string { return "openai-chat" }

// Name is "openai-responses".
func (Responses) Name() string { return "openai-responses" }

// Name is "anthropic".
func (Anthropic) Name() string { return "anthropic" }

// Serves reports a path ending in /chat/completions.
func (Chat) Serves(path string) bool { return strings.HasSuffix(path, "/chat/completions") }

// Serves reports a path ending in /responses.
func (Responses) Serves(path string) bool { return strings.HasSuffix(path, "/responses") }

// Serves reports a path ending in /messages.
func (Anthropic) Serves(path string) bool { return strings.HasSuffix(path, "/messages") }

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

// Around names the Message Batches API (anything under /messages/batches).
func (Anthropic) Around(method string, segs []string, i int) *provider.Around {
	if segs[i] == "batches" {
		return provider.AroundBatches
	}
	return nil
}

// AroundParam refuses the legacy functions: a non-empty functions, a
// function_call other than "none". Every top-level key counts, in any
// case: a key given twice or as "Functions" is what some server reads.
func (Chat) AroundParam(body []byte) *provider.Around {
	if !mayName(body, "functions", "function_call") {
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

// AroundParam refuses a background response, whose output is read back
// later, around the gate: background in any case, any value a lenient
// server reads as true.
func (Responses) AroundParam(body []byte) *provider.Around {
	if !mayName(body, "background") {
		return nil
	}
	return responsesParams(body)
}

// responsesParams is Responses' AroundParam without the byte filter.
func responsesParams(body []byte) *provider.Around {
	var found *provider.Around
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		if strings.EqualFold(k.String(), "background") && truthy(v) {
			found = provider.AroundBackground
		}
		return found == nil
	})
	return found
}

// AroundParam: no Messages parameter carries calls around the gate.
func (Anthropic) AroundParam([]byte) *provider.Around { return nil }

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

// KnownPaths: input token counting, response compaction, conversations
// and their items.
func (Responses) KnownPaths() []string {
	return []string{"/responses/input_tokens", "/responses/compact", "/conversations", "/items"}
}

// KnownPaths: legacy text completions, token counting.
func (Anthropic) KnownPaths() []string { return []string{"/complete", "/messages/count_tokens"} }

// Streams reports a body that asks for a stream ("stream": true).
func (Chat) Streams(_ string, _ *url.URL, body []byte) bool { return streamsByBody(body) }

// Streams reports a body that asks for a stream ("stream": true).
func (Responses) Streams(_ string, _ *url.URL, body []byte) bool { return streamsByBody(body) }

// Streams reports a body that asks for a stream ("stream": true).
func (Anthropic) Streams(_ string, _ *url.URL, body []byte) bool { return streamsByBody(body) }

// streamsByBody reports a body whose "stream" is true, as OpenAI's and
// Anthropic's APIs ask for an event stream.
func streamsByBody(body []byte) bool {
	return body != nil && gjson.GetBytes(body, "stream").Type == gjson.True
}

// openAIOwnerFields name the end user in OpenAI requests: safety_identifier,
// and user, which it replaces.
var openAIOwnerFields = []string{"safety_identifier", "user"}

// OwnerFields are safety_identifier, then user.
func (Chat) OwnerFields() []string { return openAIOwnerFields }

// OwnerFields are safety_identifier, then user.
func (Responses) OwnerFields() []string { return openAIOwnerFields }

// OwnerFields: none; a route sets one (metadata.user_id).
func (Anthropic) OwnerFields() []string { return nil }

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

// ToolParameters returns the input_schema of the client tool of that
// name, or nil.
func (Anthropic) ToolParameters(body []byte, name string) []byte {
	return AnthropicToolSchema(body, name)
}

// DropTools takes the function tools drop names out of the request.
func (Chat) DropTools(body []byte, drop func(string) bool) ([]byte, error) {
	return DropTools(body, "openai-chat", drop)
}

// DropTools takes the function tools drop names out of the request.
func (Responses) DropTools(body []byte, drop func(string) bool) ([]byte, error) {
	return DropTools(body, "openai-responses", drop)
}

// DropTools takes the client tools drop names out of the request.
func (Anthropic) DropTools(body []byte, drop func(string) bool) ([]byte, error) {
	return DropTools(body, "anthropic", drop)
}

// mayName reports whether a JSON body may name one of the lower-case
// words as a key: its bytes hold one, in any case, between quotes, or a
// \u escape, which could spell one. It reads the bytes without
// allocating, so that the common request is not parsed for a key it cannot
// hold.
func mayName(body []byte, words ...string) bool {
	if bytes.Contains(body, []byte(`\u`)) {
		return true
	}
	for i := 0; ; {
		j := bytes.IndexByte(body[i:], '"')
		if j < 0 {
			return false
		}
		i += j + 1
		for _, w := range words {
			if len(body)-i > len(w) && foldEq(body[i:i+len(w)], w) && body[i+len(w)] == '"' {
				return true
			}
		}
	}
}

// foldEq reports whether b equals the lower-case ASCII word w in any case.
func foldEq(b []byte, w string) bool {
	for j := 0; j < len(w); j++ {
		if c := b[j]; c != w[j] && c+('a'-'A') != w[j] {
			return false
		}
	}
	return true
}

// truthy reports a value a lenient server (pydantic's lax mode) reads as
// true: true, a number other than 0, or "1", "on", "t", "true", "y", "yes".
func truthy(v gjson.Result) bool {
	switch v.Type {
	case gjson.True:
		return true
	case gjson.Number:
		return v.Num != 0
	case gjson.String:
		switch strings.ToLower(strings.TrimSpace(v.Str)) {
		case "1", "on", "t", "true", "y", "yes":
			return true
		}
	}
	return false
}

// Interface guards
var (
	_ provider.Provider = Chat{}
	_ provider.Provider = Responses{}
	_ provider.Provider = Anthropic{}
)
