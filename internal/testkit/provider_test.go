package testkit

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestProviderRefusesBrokenHistories: the fake provider finds each
// protocol's checker by the path and answers a history it refuses with a
// 400 carrying the provider's message; a Responses provider checks a
// previous_response_id request against the calls it served itself.
func TestProviderRefusesBrokenHistories(t *testing.T) {
	p := NewProvider(t)
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(p.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, gjson.GetBytes(b, "error.message").String()
	}
	served := `{"id":"resp_1","object":"response","output":[{"type":"function_call","call_id":"call_r","name":"f","arguments":"{}"}]}`
	// Every request takes the next reply, refused or not; the sixth is a
	// stream serving resp_1.
	for i := range 9 {
		r := Reply{Body: []byte(`{}`)}
		if i == 5 {
			r = Reply{Events: [][]byte{[]byte("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":" + served + "}\n\n")}}
		}
		p.Enqueue(r)
	}
	for _, c := range []struct {
		path, body string
		status     int
		message    string
	}{
		{"/v1/chat/completions", `{"messages":[{"role":"assistant","tool_calls":[{"id":"call_c"}]}]}`, 400,
			"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_c"},
		{"/v1/messages", `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a"}]}]}`, 400,
			"messages.0: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a"},
		{"/v1/responses", `{"input":[{"type":"reasoning","id":"rs_1"}]}`, 400,
			"Item 'rs_1' of type 'reasoning' was provided without its required following item."},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, 200, ""},
		{"/v1/messages", `{"messages":[{"role":"user","content":"hi"}]}`, 200, ""},
		{"/v1/responses", `{"input":"hi"}`, 200, ""}, // serves resp_1, a stream
		{"/v1/responses", `{"previous_response_id":"resp_1","input":"and?"}`, 400, "No tool output found for function call call_r."},
		{"/v1/responses", `{"previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"call_r","output":"ok"}]}`, 200, ""},
		{"/v1beta/models/m:generateContent", `{"messages":[{"role":"assistant","tool_calls":[{"id":"call_c"}]}]}`, 200, ""},
	} {
		status, msg := post(c.path, c.body)
		if status != c.status || msg != c.message {
			t.Errorf("%s %s: %d %q, want %d %q", c.path, c.body, status, msg, c.status, c.message)
		}
	}
	if got := len(p.Requests()); got != 9 {
		t.Errorf("%d requests recorded, want 9", got)
	}
}
