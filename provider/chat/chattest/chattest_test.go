package chattest

import (
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// followUp is the request an app sends after the recorded answer resp:
// the person's message, the assistant message as recorded, then a tool
// message for each of the given call ids, then more (raw messages).
func followUp(t *testing.T, resp []byte, answered []string, more ...string) []byte {
	t.Helper()
	msgs := `[{"role":"user","content":"Weather in Edinburgh, and AAPL?"},` + gjson.GetBytes(resp, "choices.0.message").Raw
	for _, id := range answered {
		msgs += `,{"role":"tool","tool_call_id":"` + id + `","content":"done"}`
	}
	for _, m := range more {
		msgs += "," + m
	}
	b, err := sjson.SetRawBytes([]byte(`{"model":"gpt-4o-2024-08-06"}`), "messages", []byte(msgs+"]"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckAcceptsTheRecordedRequests: the recorded answers' tool calls
// (testdata, from openai-python's recordings), each answered by a tool
// message as the SDKs send them, in order or not, then the model's words
// and the person's next message.
func TestCheckAcceptsTheRecordedRequests(t *testing.T) {
	one := read(t, "json-one-tool.json")
	two := read(t, "json-parallel-tools.json")
	for name, body := range map[string][]byte{
		"one call":                   followUp(t, one, []string{"call_Y6qJ7ofLgOrBnMD5WbVAeiRV"}),
		"two calls":                  followUp(t, two, []string{"call_fdNz3vOBKYgOIpMdWotB9MjY", "call_h1DWI1POMJLb0KwIyQHWXD4p"}),
		"two calls, answers swapped": followUp(t, two, []string{"call_h1DWI1POMJLb0KwIyQHWXD4p", "call_fdNz3vOBKYgOIpMdWotB9MjY"}),
		"and the next turn": followUp(t, one, []string{"call_Y6qJ7ofLgOrBnMD5WbVAeiRV"},
			`{"role":"assistant","content":"It is 12°C."}`, `{"role":"user","content":"Thanks"}`),
		"no tool calls": []byte(`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Hello."},{"role":"user","content":"bye"}]}`),
	} {
		if err := Check(body); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCheckRefuses: each history OpenAI refuses, with its message naming
// the first call left without an answer.
func TestCheckRefuses(t *testing.T) {
	two := read(t, "json-parallel-tools.json")
	const msg = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"no answer at all", followUp(t, two, nil), "call_fdNz3vOBKYgOIpMdWotB9MjY"},
		{"the second call unanswered", followUp(t, two, []string{"call_fdNz3vOBKYgOIpMdWotB9MjY"}), "call_h1DWI1POMJLb0KwIyQHWXD4p"},
		{"the first call unanswered", followUp(t, two, []string{"call_h1DWI1POMJLb0KwIyQHWXD4p"}), "call_fdNz3vOBKYgOIpMdWotB9MjY"},
		{"an answer after the person's words", followUp(t, two, []string{"call_fdNz3vOBKYgOIpMdWotB9MjY"},
			`{"role":"user","content":"and?"}`, `{"role":"tool","tool_call_id":"call_h1DWI1POMJLb0KwIyQHWXD4p","content":"done"}`), "call_h1DWI1POMJLb0KwIyQHWXD4p"},
		{"an answer naming another call", followUp(t, two, []string{"call_fdNz3vOBKYgOIpMdWotB9MjY", "call_other"}), "call_h1DWI1POMJLb0KwIyQHWXD4p"},
	} {
		err := Check(c.body)
		if err == nil || err.Error() != msg+c.want {
			t.Errorf("%s: %v, want %q", c.name, err, msg+c.want)
		}
		if _, ok := err.(Violation); err != nil && !ok {
			t.Errorf("%s: %T is not a Violation", c.name, err)
		}
	}
	if err := Check(followUp(t, two, nil)); err == nil || !strings.Contains(err.Error(), "tool_call_ids did not have response messages") {
		t.Errorf("the e2e tests' marker is gone: %v", err)
	}
}
