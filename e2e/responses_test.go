package e2e

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

func responsesAsk(text string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: "gpt-5",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)},
	}
}

// responsesStream runs a streamed response through openai-go and returns
// the final response and every event type seen.
func responsesStream(t *testing.T, c *openai.Client, params responses.ResponseNewParams) (responses.Response, []string) {
	t.Helper()
	s := c.Responses.NewStreaming(ctx, params)
	var final responses.Response
	var types []string
	last := int64(-1)
	for s.Next() {
		ev := s.Current()
		types = append(types, ev.Type)
		if ev.SequenceNumber <= last {
			t.Errorf("sequence_number %d after %d", ev.SequenceNumber, last)
		}
		last = ev.SequenceNumber
		if ev.Type == "response.completed" {
			final = ev.AsResponseCompleted().Response
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return final, types
}

func functionCalls(r responses.Response) []string {
	var out []string
	for _, it := range r.Output {
		if it.Type == "function_call" || it.Type == "custom_tool_call" {
			out = append(out, it.Name)
		}
	}
	return out
}

func TestResponsesFixtures(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, tt := range []struct{ fixture, held, name string }{
		{"azure-tool-call.sse", "call_H5DxLSFnsGhiROnUiDHmgyc8", "weather"},
		{"reasoning-encrypted-step1.sse", "", "calculator"},
	} {
		t.Run(tt.fixture, func(t *testing.T) {
			raw := testkit.Fixture(t, "openai-responses", tt.fixture)
			e.provider.Enqueue(testkit.Reply{Events: testkit.SSEEvents(raw)})
			final, types := responsesStream(t, e.client("ana"), responsesAsk("go"))
			if calls := functionCalls(final); len(calls) != 0 {
				t.Errorf("held call in the final response: %v", calls)
			}
			if !strings.Contains(final.OutputText(), "Waiting for your confirmation") {
				t.Errorf("output text = %q", final.OutputText())
			}
			for _, ty := range types {
				if strings.HasPrefix(ty, "response.function_call_arguments") {
					t.Errorf("argument event %s reached the app", ty)
				}
			}
			e.provider.Enqueue(testkit.Reply{Events: testkit.SSEEvents(raw)})
			_, _, got := e.rawResponses(t, "ana", `{"model":"gpt-5","stream":true,"input":"go"}`)
			if tt.held != "" && bytes.Contains(got, []byte(tt.held)) {
				t.Errorf("the held call's id reached the app")
			}
		})
	}
}

func (e *env) rawResponses(t *testing.T, owner, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", e.apiURL+"/v1/responses", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-Id", owner)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, buf.Bytes()
}

// responsesOutput is the function_call_output for a call id in a request.
func responsesOutput(body []byte, callID string) string {
	for _, it := range gjson.GetBytes(body, "input").Array() {
		if it.Get("type").String() == "function_call_output" && it.Get("call_id").String() == callID {
			return it.Get("output").String()
		}
	}
	return ""
}

func TestResponsesCardWithPreviousResponseID(t *testing.T) {
	e := newEnv(t, envOptions{})
	// A reasoning item followed by the held calculator call.
	raw := testkit.Fixture(t, "openai-responses", "reasoning-encrypted-step1.sse")
	e.provider.Enqueue(testkit.Reply{Events: testkit.SSEEvents(raw)})
	c := e.client("ana")
	final, _ := responsesStream(t, c, responsesAsk("What is 12 * 7?"))
	l := link(t, final.OutputText())
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Fatalf("ran %d", n)
	}
	callID := gjson.Get(string(raw), "..#(type==\"function_call\").call_id").String()
	// The app continues from the stored response: no link in its request.
	e.provider.Enqueue(testkit.Reply{Events: testkit.SSEEvents(testkit.Fixture(t, "openai-responses", "reasoning-encrypted-step4.sse"))})
	next := responsesAsk("thanks")
	next.PreviousResponseID = openai.String(final.ID)
	responsesStream(t, c, next)
	reqs := e.provider.Requests()
	last := reqs[len(reqs)-1]
	_ = callID
	found := false
	for _, it := range gjson.GetBytes(last, "input").Array() {
		if it.Get("type").String() == "function_call_output" && it.Get("output").String() == "The person confirmed. Calculated." {
			found = true
		}
	}
	if !found {
		t.Errorf("no function_call_output with the outcome in %s", last)
	}
}

// responsesJSON builds a non-streamed Responses body with one function call.
func responsesJSON(id, callID, name, args string) []byte {
	return []byte(`{"id":"` + id + `","object":"response","created_at":1,"status":"completed","model":"gpt-5","output":[{"id":"fc_` + callID + `","type":"function_call","status":"completed","arguments":` + jsonString(args) + `,"call_id":"` + callID + `","name":"` + name + `"}],"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`)
}

func responsesText(id, text string) []byte {
	return []byte(`{"id":"` + id + `","object":"response","created_at":1,"status":"completed","model":"gpt-5","output":[{"id":"msg_` + id + `","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":` + jsonString(text) + `,"annotations":[]}]}],"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`)
}

func TestResponsesFormWithFullInput(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.provider.Enqueue(testkit.Reply{Body: responsesJSON("resp_f1", "call_f1", "draft_post", `{"title":"Launch notes"}`)})
	st, _, body := e.rawResponses(t, "ana", `{"model":"gpt-5","store":false,"input":[{"role":"user","content":"Draft a post called Launch notes"}]}`)
	if st != 200 {
		t.Fatalf("%d %s", st, body)
	}
	out := gjson.GetBytes(body, "output")
	if strings.Contains(out.Raw, `"function_call"`) || !strings.Contains(out.Raw, "A few details for your post.") {
		t.Fatalf("output = %s", out.Raw)
	}
	l := link(t, out.Raw)
	_, _, s := e.view(ana, l)
	id := s.Holds[0].ID
	if st, b := e.formPost(ana, l, id, s.Tokens[id], map[string][]string{"title": {"Launch notes"}, "body": {"VALUE-FROM-PERSON"}, "status": {"draft"}}, false); st != http.StatusSeeOther {
		t.Fatalf("submit: %d %s", st, b)
	}
	// The app sends the whole conversation back, our message item included.
	e.provider.Enqueue(testkit.Reply{Body: responsesText("resp_f2", "Drafted it.")})
	next := `{"model":"gpt-5","store":false,"input":[{"role":"user","content":"Draft a post called Launch notes"},` + out.Get("0").Raw + `,{"role":"user","content":"thanks"}]}`
	if st, _, b := e.rawResponses(t, "ana", next); st != 200 {
		t.Fatalf("the provider refused the restored input: %d %s", st, b)
	}
	reqs := e.provider.Requests()
	last := reqs[len(reqs)-1]
	if got := responsesOutput(last, "call_f1"); got != "The person filled in: title, body, status. Drafted." {
		t.Errorf("function_call_output = %q in %s", got, last)
	}
	if bytes.Contains(last, []byte("VALUE-FROM-PERSON")) || bytes.Contains(last, []byte("msg_toolgate")) {
		t.Errorf("the person's value or our synthetic item reached the provider: %s", last)
	}
	if gjson.GetBytes(last, `input.#(type=="function_call").call_id`).String() != "call_f1" {
		t.Errorf("the original call was not put back: %s", last)
	}
}

func TestResponsesRefusalContinues(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.provider.Enqueue(testkit.Reply{Body: responsesJSON("resp_k1", "call_k", "rotate_key", `{"service":"mail"}`)}, testkit.Reply{Body: responsesText("resp_k2", "Please set the key yourself.")})
	st, _, body := e.rawResponses(t, "ana", `{"model":"gpt-5","input":"rotate my mail key"}`)
	if st != 200 || !bytes.Contains(body, []byte("set the key yourself")) || bytes.Contains(body, []byte("Toolgate refused")) || bytes.Contains(body, []byte("call_k")) {
		t.Errorf("app got %d %s", st, body)
	}
	reqs := e.provider.Requests()
	if len(reqs) != 2 || !strings.Contains(responsesOutput(reqs[1], "call_k"), "apiKey") {
		t.Errorf("the refusal did not go back to the model")
	}
}
