// Package responsestest checks an OpenAI Responses request's history as
// strictly as OpenAI does, so that a fake provider refuses, with OpenAI's
// message, the histories the real API refuses. The check is stateful: a
// Checker learns the calls of each response the fake served (Served) and
// holds a request continuing one of them (previous_response_id) to
// answering every call. The tests' fake provider (internal/testkit)
// answers a Violation with a 400.
//
// builders.go holds the synthetic stream builder (Syn) and the openai-go
// reader (Decode) the tests of provider/responses, provider and
// interceptor share.
package responsestest

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// Checker is the history checker of one fake provider. Its zero value is
// ready; it is safe for concurrent use.
type Checker struct {
	mu sync.Mutex
	// calls are the function_call and custom_tool_call call_ids of each
	// response served, by response id.
	calls map[string][]string
}

// Served learns the calls of a response the fake sends: body is a
// Response object (JSON, starting with '{') or an event stream, whose
// last event naming "response.completed" carries the Response in the data
// of its first data line. A response without an id is not learned.
func (c *Checker) Served(body []byte) {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		body = completed(body)
	}
	id := gjson.GetBytes(body, "id").String()
	if id == "" {
		return
	}
	var ids []string
	for _, it := range gjson.GetBytes(body, "output").Array() {
		if t := it.Get("type").String(); t == "function_call" || t == "custom_tool_call" {
			ids = append(ids, it.Get("call_id").String())
		}
	}
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string][]string{}
	}
	c.calls[id] = ids
	c.mu.Unlock()
}

// completed returns the Response of an event stream's response.completed
// event, or nil.
func completed(stream []byte) []byte {
	var out []byte
	for _, ev := range events(stream) {
		if bytes.Contains(ev, []byte(`"response.completed"`)) {
			_, data, _ := bytes.Cut(ev, []byte("data: "))
			out = []byte(gjson.GetBytes(data, "response").Raw)
		}
	}
	return out
}

// events splits a stream at its blank lines (LF or CRLF line ends).
func events(stream []byte) [][]byte {
	stream = bytes.ReplaceAll(stream, []byte("\r\n"), []byte("\n"))
	return bytes.Split(stream, []byte("\n\n"))
}

// Check returns OpenAI's complaint about a Responses request, or nil: a
// call of the response previous_response_id names (as Served learned it)
// without a function_call_output or custom_tool_call_output in input; a
// function_call or custom_tool_call item of input without its output; a
// reasoning item with no item after it; an item_reference to a message
// the gate wrote (an id starting "msg_toolgate"), which OpenAI never
// stored.
func (c *Checker) Check(body []byte) error {
	items := gjson.GetBytes(body, "input").Array()
	outputs := map[string]bool{}
	for _, it := range items {
		if t := it.Get("type").String(); t == "function_call_output" || t == "custom_tool_call_output" {
			outputs[it.Get("call_id").String()] = true
		}
	}
	if prev := gjson.GetBytes(body, "previous_response_id").String(); prev != "" {
		c.mu.Lock()
		ids := c.calls[prev]
		c.mu.Unlock()
		for _, id := range ids {
			if !outputs[id] {
				return violation("No tool output found for function call %s.", id)
			}
		}
	}
	for i, it := range items {
		switch it.Get("type").String() {
		case "function_call", "custom_tool_call":
			if id := it.Get("call_id").String(); !outputs[id] {
				return violation("No tool output found for function call %s.", id)
			}
		case "reasoning":
			if i+1 >= len(items) {
				return violation("Item '%s' of type 'reasoning' was provided without its required following item.", it.Get("id").String())
			}
		case "item_reference":
			if id := it.Get("id").String(); strings.HasPrefix(id, "msg_toolgate") {
				return violation("Item with id '%s' not found.", id)
			}
		}
	}
	return nil
}

// Violation is a history OpenAI refuses; its text is the API's message.
type Violation struct{ Message string }

func (v Violation) Error() string { return v.Message }

func violation(format string, args ...any) error { return Violation{fmt.Sprintf(format, args...)} }
