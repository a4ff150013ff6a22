package differential

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Key attacks: JSON that different readers read differently (a duplicate
// key: openai-go and anthropic-sdk-go read the first, JSON.parse the last,
// so every duplicate comes in both orders), keys written with escapes or
// in another case, call objects of an unexpected type that still carry a
// name and arguments, and the legacy function_call.

type attack struct {
	name     string
	provider string
	stream   bool
	// mayRefuse: the gate may refuse the ungated twin instead of passing
	// it, because readers disagree on these bytes, or (in a stream) the
	// gate cannot place the call as it goes by (see cannotPlace).
	mayRefuse bool
	apply     func(b base) ([]byte, error)
}

// swap makes an attack of replacement pairs (old, new, old, new, ...)
// built from the base's tool name.
func swap(name, provider string, stream, mayRefuse bool, pairs func(tool string) []string) attack {
	return attack{name, provider, stream, mayRefuse, func(b base) ([]byte, error) {
		return replaceSeq(b.body, pairs(b.tool)...)
	}}
}

// dup makes two attacks that give the key at the end of each path a second
// time with a benign value: once before the real one, once after it. The
// paths are gjson paths into the JSON body, or into every data line of a
// stream that has them.
func dup(name, provider string, stream bool, benign string, paths ...string) []attack {
	mk := func(order string, before bool) attack {
		return attack{name + "-benign-" + order, provider, stream, true, func(b base) ([]byte, error) {
			return editJSON(b.body, stream, func(data []byte) []byte {
				for _, path := range paths {
					data = dupKey(data, path, benign, before)
				}
				return data
			})
		}}
	}
	return []attack{mk("first", true), mk("last", false)}
}

// dupKey writes the key at path a second time, with the benign value,
// before or after the real one; data is returned as is when it has no such
// key.
func dupKey(data []byte, path, benign string, before bool) []byte {
	r := gjson.GetBytes(data, path)
	if !r.Exists() || r.Index <= 0 {
		return data
	}
	key := `"` + path[strings.LastIndexByte(path, '.')+1:] + `"`
	if !before {
		end := r.Index + len(r.Raw)
		return concat(data[:end], ","+key+":"+benign, data[end:])
	}
	k := bytes.LastIndex(data[:r.Index], []byte(key))
	if k < 0 {
		return data
	}
	return concat(data[:k], key+":"+benign+",", data[k:])
}

func concat(a []byte, mid string, b []byte) []byte {
	out := make([]byte, 0, len(a)+len(mid)+len(b))
	return append(append(append(out, a...), mid...), b...)
}

// editJSON applies f to a JSON body, or to the JSON of every data line of
// an LF-framed stream, and fails when nothing changed.
func editJSON(body []byte, stream bool, f func(data []byte) []byte) ([]byte, error) {
	var out []byte
	if !stream {
		out = f(body)
	} else {
		out = mapLines(body, func(l string) []string {
			if v, ok := strings.CutPrefix(l, "data: "); ok && strings.HasPrefix(v, "{") {
				return []string{"data: " + string(f([]byte(v)))}
			}
			return []string{l}
		})
	}
	if bytes.Equal(out, body) {
		return nil, fmt.Errorf("no key to duplicate")
	}
	return out, nil
}

func q(s string) string { return `"` + s + `"` }

const (
	chatBenignChoice  = `[{"index":0,"message":{"role":"assistant","content":"Nothing to do."},"logprobs":null,"finish_reason":"stop"}]`
	chatBenignChunk   = `[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":null}]`
	chatBenignMessage = `{"role":"assistant","content":"Nothing to do."}`
	chatBenignFn      = `{"name":"noop","arguments":"{}"}`
	respBenignOutput  = `[{"id":"msg_benign","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Nothing to do.","annotations":[]}]}]`
	respBenignItem    = `{"id":"msg_benign","type":"message","status":"in_progress","role":"assistant","content":[]}`
	anthBenignContent = `[{"type":"text","text":"Nothing to do."}]`
	anthBenignBlock   = `{"type":"text","text":""}`
)

// attacks on every provider's call objects; each names the kind it runs on.
var attacks = concatAll(chatAttacks(), responsesAttacks(), anthropicAttacks())

func concatAll(lists ...[]attack) []attack {
	var out []attack
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// nameCases are the case and escape attacks on a call's name key and value.
func nameCases(provider string, stream bool, nameKey func(tool string) string) []attack {
	return []attack{
		swap("escaped-key-name", provider, stream, false, func(t string) []string {
			return []string{nameKey(t), strings.Replace(nameKey(t), `"name"`, `"n\u0061me"`, 1)}
		}),
		swap("escaped-name-value", provider, stream, false, func(t string) []string {
			return []string{nameKey(t), strings.Replace(nameKey(t), q(t), q(escapeLast(t)), 1)}
		}),
		swap("case-NAME-after-name", provider, stream, true, func(t string) []string {
			return []string{nameKey(t), `"name":"noop",` + strings.Replace(nameKey(t), `"name"`, `"NAME"`, 1)}
		}),
		swap("case-NAME-before-name", provider, stream, true, func(t string) []string {
			return []string{nameKey(t), strings.Replace(nameKey(t), `"name"`, `"NAME"`, 1) + `,"name":"noop"`}
		}),
	}
}

// cannotPlace is mayRefuse for a call the gate stops a stream on even when
// it names no gated tool (true for a stream, false for a whole body, which
// the gate reads as the SDKs do): a Chat tool call of an unknown type or
// whose name comes in several deltas, a Responses item of an unknown type
// or none that argument deltas are sent for. The gate judges a streamed
// call on its first delta and forwards it at once; it cannot know there
// what name the app will end up reading, because the SDKs do not agree:
//
//   - A name in several deltas: openai-go appends the fragments
//     (ChatCompletionAccumulator.accumulateDelta in streamaccumulator.go:
//     Name += ..., "lookup_get_wea"+"ther"), openai-node keeps the last one
//     (ChatCompletionStream#accumulateChatCompletion in
//     src/lib/ChatCompletionStream.ts: functionSnapshot.name = fn.name,
//     "ther"). A gate that let the first fragment through as the name would
//     miss "delete_" + "post".
//   - A Chat call of an unknown type: openai-go's accumulator copies type and
//     function.name whatever the type says; openai-node accumulates
//     function and custom whatever the type, and at the end reads any type
//     but "custom" as a function call (#accumulateChatCompletion and
//     finalizeChatCompletion). The name may sit in a body the type does not
//     point at, and may come in fragments there too.
//   - A Responses item of an unknown type (or none) with argument deltas:
//     openai-go reads the item and the final response whatever the type
//     (ResponseOutputItemUnion), openai-node throws at the first argument
//     delta for an item that is no function_call (validateOutputItemIdentity
//     in src/internal/responses/response-accumulator.ts: "expected output
//     item type 'function_call'").
//
// Refusing (stopping the stream) is the fail-closed choice; real providers
// send a known type and the whole name in the call's first delta.
func cannotPlace(stream bool) bool { return stream }

func chatAttacks() []attack {
	name := func(t string) string { return `"name":` + q(t) }
	out := concatAll(
		dup("dup-choices", chat, false, chatBenignChoice, "choices"),
		dup("dup-message", chat, false, chatBenignMessage, "choices.0.message"),
		dup("dup-tool_calls", chat, false, `[]`, "choices.0.message.tool_calls"),
		dup("dup-function", chat, false, chatBenignFn, "choices.0.message.tool_calls.0.function"),
		dup("dup-name", chat, false, `"noop"`, "choices.0.message.tool_calls.0.function.name"),
		dup("dup-type", chat, false, `"x-none"`, "choices.0.message.tool_calls.0.type"),
		dup("dup-arguments", chat, false, `"{}"`, "choices.0.message.tool_calls.0.function.arguments"),
		dup("dup-content", chat, false, `"Nothing to do."`, "choices.0.message.content"),
		dup("dup-choices", chat, true, chatBenignChunk, "choices"),
		dup("dup-delta", chat, true, `{"content":""}`, "choices.0.delta"),
		dup("dup-tool_calls", chat, true, `[]`, "choices.0.delta.tool_calls"),
		dup("dup-function", chat, true, chatBenignFn, "choices.0.delta.tool_calls.0.function"),
		dup("dup-name", chat, true, `"noop"`, "choices.0.delta.tool_calls.0.function.name"),
		dup("dup-type", chat, true, `"x-none"`, "choices.0.delta.tool_calls.0.type"),
		nameCases(chat, false, name),
		nameCases(chat, true, name),
	)
	for _, stream := range []bool{false, true} {
		s := stream
		out = append(out,
			swap("escaped-key-tool_calls", chat, s, false, func(string) []string {
				return []string{`"tool_calls"`, `"\u0074ool_calls"`}
			}),
			swap("case-Tool_Calls", chat, s, true, func(string) []string {
				return []string{`"tool_calls"`, `"Tool_Calls"`}
			}),
			swap("unknown-type-tool", chat, s, cannotPlace(s), func(string) []string {
				return []string{`"type":"function"`, `"type":"tool"`}
			}),
			swap("no-type", chat, s, false, func(string) []string {
				return []string{`"type":"function",`, ``}
			}),
		)
	}
	return append(out,
		swap("custom-call", chat, false, false, func(t string) []string {
			return []string{`"type":"function","function":{"name":`, `"type":"custom","custom":{"name":`, `"arguments":`, `"input":`}
		}),
		attack{"legacy-function_call", chat, false, true, chatLegacyJSON},
		swap("custom-call", chat, true, false, func(t string) []string {
			return []string{`"type":"function","function":{"name":`, `"type":"custom","custom":{"name":`,
				`"function":{"arguments":`, `"custom":{"input":`, `"arguments":""`, `"input":""`}
		}),
		attack{"legacy-function_call", chat, true, true, chatLegacyStream},
		attack{"name-split-across-deltas", chat, true, cannotPlace(true), chatNameSplit},
	)
}

// chatLegacyJSON turns the message's first tool call into the legacy
// function_call (finish_reason "function_call").
func chatLegacyJSON(b base) ([]byte, error) {
	fn := gjson.GetBytes(b.body, "choices.0.message.tool_calls.0.function")
	if !fn.IsObject() {
		return nil, fmt.Errorf("no tool call to turn into a function_call")
	}
	body, err := sjson.DeleteBytes(b.body, "choices.0.message.tool_calls")
	if err == nil {
		body, err = sjson.SetRawBytes(body, "choices.0.message.function_call", []byte(fn.Raw))
	}
	if err == nil {
		body, err = sjson.SetBytes(body, "choices.0.finish_reason", "function_call")
	}
	return body, err
}

var (
	chatCallHeader   = regexp.MustCompile(`"tool_calls":\[\{"index":0,"id":"[^"]*","type":"function","function":(\{[^{}]*\})\}\]`)
	chatCallFragment = regexp.MustCompile(`"tool_calls":\[\{"index":0,"function":(\{"arguments":"(?:[^"\\]|\\.)*"\})\}\]`)
)

// chatLegacyStream turns a streamed tool call into function_call deltas.
func chatLegacyStream(b base) ([]byte, error) {
	if !chatCallHeader.Match(b.body) {
		return nil, fmt.Errorf("no tool call header chunk")
	}
	body := chatCallHeader.ReplaceAll(b.body, []byte(`"function_call":$1`))
	body = chatCallFragment.ReplaceAll(body, []byte(`"function_call":$1`))
	return replaceIn(body, `"finish_reason":"tool_calls"`, `"finish_reason":"function_call"`)
}

// chatNameSplit sends the call's name in two deltas, neither of which is
// the name: a reader that appends name fragments reads the whole name.
func chatNameSplit(b base) ([]byte, error) {
	cut := len(b.tool) - 4
	body, err := replaceIn(b.body, `"name":`+q(b.tool)+`,"arguments":""`, `"name":`+q(b.tool[:cut])+`,"arguments":""`)
	if err != nil {
		return nil, err
	}
	first := []byte(`{"index":0,"function":{"arguments":`)
	if !bytes.Contains(body, first) {
		return nil, fmt.Errorf("no argument fragment")
	}
	return bytes.Replace(body, first, []byte(`{"index":0,"function":{"name":`+q(b.tool[cut:])+`,"arguments":`), 1), nil
}

func responsesAttacks() []attack {
	// The call item ends with its name; the tools echo does not.
	name := func(t string) string { return `"name":` + q(t) + `}` }
	out := concatAll(
		dup("dup-output", responses, false, respBenignOutput, "output"),
		dup("dup-name", responses, false, `"noop"`, "output.0.name"),
		dup("dup-type", responses, false, `"message"`, "output.0.type"),
		dup("dup-arguments", responses, false, `"{}"`, "output.0.arguments"),
		dup("dup-item", responses, true, respBenignItem, "item"),
		dup("dup-output", responses, true, respBenignOutput, "response.output"),
		dup("dup-name", responses, true, `"noop"`, "item.name", "response.output.0.name"),
		dup("dup-type", responses, true, `"message"`, "item.type", "response.output.0.type"),
		nameCases(responses, false, name),
		nameCases(responses, true, name),
	)
	for _, stream := range []bool{false, true} {
		s := stream
		out = append(out,
			swap("unknown-type", responses, s, cannotPlace(s), func(string) []string {
				return []string{`"type":"function_call"`, `"type":"function_call_v2"`}
			}),
			swap("custom-tool-call", responses, s, false, func(string) []string {
				return []string{`"type":"function_call"`, `"type":"custom_tool_call"`, `"arguments":"`, `"input":"`}
			}),
			swap("no-type", responses, s, cannotPlace(s), func(string) []string {
				return []string{`"type":"function_call",`, ``}
			}),
		)
	}
	return append(out,
		swap("escaped-key-output", responses, false, false, func(string) []string {
			return []string{`"output":`, `"\u006futput":`}
		}),
		swap("case-Output", responses, false, true, func(string) []string {
			return []string{`"output":`, `"Output":`}
		}),
		swap("case-Item", responses, true, true, func(string) []string {
			return []string{`"item":`, `"Item":`}
		}),
	)
}

func anthropicAttacks() []attack {
	name := func(t string) string { return `"name":` + q(t) }
	out := concatAll(
		dup("dup-content", anthropic, false, anthBenignContent, "content"),
		dup("dup-name", anthropic, false, `"noop"`, "content.1.name"),
		dup("dup-type", anthropic, false, `"text"`, "content.1.type"),
		dup("dup-input", anthropic, false, `{"post":1}`, "content.1.input"),
		dup("dup-content_block", anthropic, true, anthBenignBlock, "content_block"),
		dup("dup-name", anthropic, true, `"noop"`, "content_block.name"),
		dup("dup-type", anthropic, true, `"text"`, "content_block.type"),
		dup("dup-event-type", anthropic, true, `"ping"`, "type"),
		nameCases(anthropic, false, name),
		nameCases(anthropic, true, name),
	)
	for _, stream := range []bool{false, true} {
		s := stream
		out = append(out,
			swap("unknown-type", anthropic, s, false, func(string) []string {
				return []string{`"type":"tool_use"`, `"type":"tool_use_v2"`}
			}),
			swap("server-tool-use", anthropic, s, false, func(string) []string {
				return []string{`"type":"tool_use"`, `"type":"server_tool_use"`}
			}),
			swap("no-type", anthropic, s, false, func(string) []string {
				return []string{`"type":"tool_use",`, ``}
			}),
		)
	}
	return append(out,
		swap("escaped-key-content", anthropic, false, false, func(string) []string {
			return []string{`"content":`, `"c\u006fntent":`}
		}),
		swap("case-Content", anthropic, false, true, func(string) []string {
			return []string{`"content":`, `"Content":`}
		}),
		swap("case-Content_Block", anthropic, true, true, func(string) []string {
			return []string{`"content_block":{"type":"tool_use"`, `"Content_Block":{"type":"tool_use"`}
		}),
		swap("ping-label-on-call", anthropic, true, true, func(string) []string {
			return []string{"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1",
				"event: ping\ndata: {\"type\":\"content_block_start\",\"index\":1"}
		}),
	)
}
