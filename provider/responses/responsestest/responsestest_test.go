package responsestest

import (
	"os"
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

// The recorded responses' ids and calls (testdata/README.md).
const (
	jsonID    = "resp_0a2fa1b539ba14ba00698c519df7a88194874af28c8bfccb12"
	jsonCall  = "call_YunNGbIwdVJ2i0y0Mybva4Pw"
	sseID     = "resp_04041325ab8ae30400698c519fb7fc81979972618138fc336d"
	sseCall   = "call_H5DxLSFnsGhiROnUiDHmgyc8"
	step1Call = "call_AB6AaRZ1FYZB2RwS6A5vbdqn"
)

// continuing is a request continuing the response prev, with input items.
func continuing(t *testing.T, prev string, input ...string) []byte {
	t.Helper()
	b := []byte(`{"model":"gpt-5.1","input":[]}`)
	var err error
	if prev != "" {
		if b, err = sjson.SetBytes(b, "previous_response_id", prev); err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range input {
		if b, err = sjson.SetRawBytes(b, "input.-1", []byte(it)); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func output(id string) string {
	return `{"type":"function_call_output","call_id":"` + id + `","output":"{\"temperature\":\"15°C\"}"}`
}

// step1Input is what an app sends after reasoning-encrypted-step1.sse
// with store:false: the person's message, the response's output items as
// recorded (the reasoning item with its encrypted content, the call),
// then the given items.
func step1Input(t *testing.T, more ...string) []byte {
	t.Helper()
	items := []string{`{"role":"user","content":"What is (12 + 7) * 3 * 10?"}`}
	for _, it := range gjson.GetBytes(completed(read(t, "reasoning-encrypted-step1.sse")), "output").Array() {
		items = append(items, it.Raw)
	}
	return continuing(t, "", append(items, more...)...)
}

// TestCheckAcceptsTheRecordedRequests: the follow-ups of the recorded
// responses (testdata, from vercel/ai's recordings), each answering every
// call: by previous_response_id after a JSON and a streamed response, and
// with the whole history (store:false) after a reasoning step.
func TestCheckAcceptsTheRecordedRequests(t *testing.T) {
	var c Checker
	c.Served(read(t, "azure-tool-call.json"))
	c.Served(read(t, "azure-tool-call.sse"))
	c.Served(read(t, "reasoning-encrypted-step1.sse"))
	for name, body := range map[string][]byte{
		"after the JSON response":   continuing(t, jsonID, output(jsonCall)),
		"after the stream":          continuing(t, sseID, output(sseCall)),
		"after an unknown response": continuing(t, "resp_unknown", `{"role":"user","content":"hi"}`),
		"the whole history":         step1Input(t, output(step1Call)),
		"a custom tool call": continuing(t, "", `{"type":"custom_tool_call","call_id":"call_c","name":"patch","input":"x"}`,
			`{"type":"custom_tool_call_output","call_id":"call_c","output":"ok"}`),
		"a reference to a stored item": continuing(t, "", `{"type":"item_reference","id":"msg_0a2f"}`),
	} {
		if err := c.Check(body); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCheckRefuses: each history OpenAI refuses, with its message.
func TestCheckRefuses(t *testing.T) {
	var c Checker
	c.Served(read(t, "azure-tool-call.json"))
	c.Served(read(t, "azure-tool-call.sse"))
	for _, k := range []struct {
		name string
		body []byte
		want string
	}{
		{"the JSON response's call unanswered", continuing(t, jsonID, `{"role":"user","content":"and?"}`), "No tool output found for function call " + jsonCall + "."},
		{"the stream's call unanswered", continuing(t, sseID, output(jsonCall)), "No tool output found for function call " + sseCall + "."},
		{"a call in input unanswered", step1Input(t), "No tool output found for function call " + step1Call + "."},
		{"a custom tool call unanswered", continuing(t, "", `{"type":"custom_tool_call","call_id":"call_c","name":"patch","input":"x"}`), "No tool output found for function call call_c."},
		{"reasoning last", continuing(t, "", `{"type":"reasoning","id":"rs_1","summary":[]}`), "Item 'rs_1' of type 'reasoning' was provided without its required following item."},
		{"a reference to the gate's message", continuing(t, "", `{"type":"item_reference","id":"msg_toolgate_01"}`), "Item with id 'msg_toolgate_01' not found."},
	} {
		err := c.Check(k.body)
		if err == nil || err.Error() != k.want {
			t.Errorf("%s: %v, want %q", k.name, err, k.want)
		}
		if _, ok := err.(Violation); err != nil && !ok {
			t.Errorf("%s: %T is not a Violation", k.name, err)
		}
	}
}

// TestCheckerLearnsOnlyWhatItServed: a Checker knows the calls of the
// responses given to its own Served, not another's; a response served
// again replaces what was learned (a stream's last completed event wins).
func TestCheckerLearnsOnlyWhatItServed(t *testing.T) {
	var a, b Checker
	a.Served(read(t, "azure-tool-call.json"))
	body := continuing(t, jsonID)
	if a.Check(body) == nil {
		t.Error("the checker that served the call accepted a request without its output")
	}
	if err := b.Check(body); err != nil {
		t.Errorf("another checker refused: %v", err)
	}
	noCalls, err := sjson.SetRawBytes(read(t, "azure-tool-call.json"), "output", []byte(`[]`))
	if err != nil {
		t.Fatal(err)
	}
	a.Served(noCalls)
	if err := a.Check(body); err != nil {
		t.Errorf("served again without calls: %v", err)
	}
}
