package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A synthetic Chat Completions response, built the way the recorded ones
// are shaped (testdata/fixtures/openai-chat at the module's root): one role chunk, text
// deltas, each call's header then argument fragments, a finish chunk, a
// usage chunk and [DONE].

type call struct {
	id, name, args string
	custom         bool
}

const chatID = "chatcmpl-synthetic0001"

func envelope(choices string, extra string) string {
	return fmt.Sprintf(`{"id":%q,"object":"chat.completion.chunk","created":1727346178,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5050236cbd","choices":%s%s}`, chatID, choices, extra)
}

func chunk(delta string, finish string) []byte {
	f := "null"
	if finish != "" {
		f = fmt.Sprintf("%q", finish)
	}
	return []byte("data: " + envelope(fmt.Sprintf(`[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]`, delta, f), "") + "\n\n")
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// streamEvents builds the SSE events of a response with text then calls.
func streamEvents(text []string, calls ...call) [][]byte {
	var ev [][]byte
	ev = append(ev, chunk(`{"role":"assistant","content":null}`, ""))
	for _, t := range text {
		ev = append(ev, chunk(`{"content":`+jsonString(t)+`}`, ""))
	}
	for i, c := range calls {
		if c.custom {
			ev = append(ev, chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"custom","custom":{"name":%q,"input":""}}]}`, i, c.id, c.name), ""))
		} else {
			ev = append(ev, chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, i, c.id, c.name), ""))
		}
		for _, frag := range split(c.args, 3) {
			key := "function"
			field := "arguments"
			if c.custom {
				key, field = "custom", "input"
			}
			ev = append(ev, chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"%s":{"%s":%s}}]}`, i, key, field, jsonString(frag)), ""))
		}
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	ev = append(ev, chunk(`{}`, finish))
	ev = append(ev, []byte("data: "+envelope(`[]`, `,"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30}`)+"\n\n"))
	ev = append(ev, []byte("data: [DONE]\n\n"))
	return ev
}

func split(s string, n int) []string {
	if len(s) < n {
		return []string{s}
	}
	var out []string
	step := len(s) / n
	for i := 0; i < n-1; i++ {
		out = append(out, s[i*step:(i+1)*step])
	}
	return append(out, s[(n-1)*step:])
}

// jsonCompletion builds a non-streamed response.
func jsonCompletion(text string, calls ...call) []byte {
	content := "null"
	if text != "" {
		content = jsonString(text)
	}
	var tc []string
	for _, c := range calls {
		if c.custom {
			tc = append(tc, fmt.Sprintf(`{"id":%q,"type":"custom","custom":{"name":%q,"input":%s}}`, c.id, c.name, jsonString(c.args)))
		} else {
			tc = append(tc, fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}`, c.id, c.name, jsonString(c.args)))
		}
	}
	msg := `{"role":"assistant","content":` + content + `,"refusal":null`
	finish := "stop"
	if len(tc) > 0 {
		msg += `,"tool_calls":[` + strings.Join(tc, ",") + `]`
		finish = "tool_calls"
	}
	msg += "}"
	return []byte(fmt.Sprintf(`{"id":%q,"object":"chat.completion","created":1727346166,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],"usage":{"prompt_tokens":149,"completion_tokens":60,"total_tokens":209},"system_fingerprint":"fp_b40fb1c6fb"}`, chatID, msg, finish))
}

// textCompletion is a plain answer.
func textCompletion(text string) []byte { return jsonCompletion(text) }
