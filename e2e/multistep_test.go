package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// One answer holds calls in two rounds: the model deletes post 7 (held)
// and rotates a key (refused: it would ask for a secret), the refusal goes
// back to it at once, and its follow-up sends an email instead (held).
// The app's message carries two links. The person confirms the delete and
// declines the email; the next request restores both steps, in order, each
// with its own results, and the provider (which checks history strictly)
// accepts it.

func linksIn(t *testing.T, text string) []string {
	t.Helper()
	l := linkRe.FindAllString(text, -1)
	if len(l) != 2 {
		t.Fatalf("want two links, got %q", text)
	}
	return l
}

// answerSteps confirms the first step and declines the second.
func (e *env) answerSteps(t *testing.T, links []string) {
	t.Helper()
	if st := e.answerOnly(ana, links[0], "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if st := e.answerOnly(ana, links[1], "decline"); st != http.StatusSeeOther {
		t.Fatalf("decline: %d", st)
	}
	if calls := e.app.Calls(); len(calls) != 1 || calls[0].URI != "/posts/7" {
		t.Fatalf("the app ran %v", calls)
	}
}

const (
	confirmedRemoved = "The person confirmed. Removed."
	declined         = "The person declined; nothing ran."
)

func TestChatRestoresEveryStepOfOneMessage(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	key := call{"call_key", "rotate_key", `{"service":"mail"}`, false}
	mail := call{"call_mail", "send_email", `{"to":"team@example.com","subject":"Post 7"}`, false}
	e.provider.Enqueue(
		testkit.Reply{Body: jsonCompletion("Deleting post 7.", del7, key)},
		testkit.Reply{Body: jsonCompletion("I will email the team instead of rotating the key.", mail)},
	)
	c := e.client("ana")
	params := userAsks("Delete post 7 and rotate the mail key.")
	got, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	msg := got.Choices[0].Message
	if len(msg.ToolCalls) != 0 {
		t.Fatalf("a gated call reached the app: %v", callNames(msg.ToolCalls))
	}
	e.answerSteps(t, linksIn(t, msg.Content))

	e.provider.Enqueue(testkit.Reply{Body: textCompletion("Done.")})
	params.Messages = append(params.Messages, msg.ToParam(), openai.UserMessage("Thanks."))
	if _, err := c.Chat.Completions.New(ctx, params); err != nil {
		t.Fatalf("the provider refused the restored history: %v", err)
	}
	reqs := e.provider.Requests()
	last := reqs[len(reqs)-1]
	var roles []string
	for _, m := range gjson.GetBytes(last, "messages").Array() {
		r := m.Get("role").String()
		for _, tc := range m.Get("tool_calls").Array() {
			r += ":" + tc.Get("id").String()
		}
		if id := m.Get("tool_call_id").String(); id != "" {
			r += ":" + id
		}
		roles = append(roles, r)
	}
	want := "user assistant:call_del7:call_key tool:call_del7 tool:call_key assistant:call_mail tool:call_mail user"
	if strings.Join(roles, " ") != want {
		t.Fatalf("history:\n%s\nwant\n%s\n%s", strings.Join(roles, " "), want, last)
	}
	if toolResult(last, "call_del7") != confirmedRemoved || toolResult(last, "call_mail") != declined ||
		!strings.Contains(toolResult(last, "call_key"), "apiKey") {
		t.Errorf("results: %q, %q, %q", toolResult(last, "call_del7"), toolResult(last, "call_key"), toolResult(last, "call_mail"))
	}
	if strings.Contains(string(last), "Waiting for") {
		t.Errorf("a waiting text reached the model: %s", last)
	}
}

func TestAnthropicRestoresEveryStepOfOneMessage(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	first := `{"id":"msg_a1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Deleting post 7."},` +
		`{"type":"tool_use","id":"toolu_del","name":"delete_post","input":{"post":7}},` +
		`{"type":"tool_use","id":"toolu_key","name":"rotate_key","input":{"service":"mail"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
	follow := `{"id":"msg_a2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"I will email the team instead."},` +
		`{"type":"tool_use","id":"toolu_mail","name":"send_email","input":{"to":"team@example.com","subject":"Post 7"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":7}}`
	e.provider.Enqueue(testkit.Reply{Body: []byte(first)}, testkit.Reply{Body: []byte(follow)})
	c := e.anthropicClient("ana")
	params := anthropicAsk("Delete post 7 and rotate the mail key.")
	m, err := c.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(toolUses(*m)) != 0 {
		t.Fatalf("a gated call reached the app: %v", toolUses(*m))
	}
	e.answerSteps(t, linksIn(t, textOf(*m)))

	e.provider.Enqueue(testkit.Reply{Body: []byte(`{"id":"msg_a3","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)})
	params.Messages = append(params.Messages, m.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("Thanks.")))
	if _, err := c.Messages.New(ctx, params); err != nil {
		t.Fatalf("the provider refused the restored history: %v", err)
	}
	reqs := e.provider.Requests()
	last := reqs[len(reqs)-1]
	var shape []string
	for _, msg := range gjson.GetBytes(last, "messages").Array() {
		s := msg.Get("role").String()
		for _, b := range msg.Get("content").Array() {
			s += " " + b.Get("type").String() + ":" + b.Get("id").String() + b.Get("tool_use_id").String()
		}
		shape = append(shape, s)
	}
	want := "user text: | assistant text: tool_use:toolu_del tool_use:toolu_key | user tool_result:toolu_del tool_result:toolu_key | " +
		"assistant text: tool_use:toolu_mail | user tool_result:toolu_mail text:"
	if strings.Join(shape, " | ") != want {
		t.Fatalf("history:\n%s\nwant\n%s", strings.Join(shape, " | "), want)
	}
	if anthropicResult(last, "toolu_del") != confirmedRemoved || anthropicResult(last, "toolu_mail") != declined ||
		!strings.Contains(anthropicResult(last, "toolu_key"), "apiKey") {
		t.Errorf("results: %q, %q, %q", anthropicResult(last, "toolu_del"), anthropicResult(last, "toolu_key"), anthropicResult(last, "toolu_mail"))
	}
}

func TestResponsesRestoresEveryStepOfOneMessage(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	first := `{"id":"resp_m1","object":"response","created_at":1,"status":"completed","model":"gpt-5","output":[` +
		`{"id":"fc_del","type":"function_call","status":"completed","arguments":"{\"post\":7}","call_id":"call_del","name":"delete_post"},` +
		`{"id":"fc_key","type":"function_call","status":"completed","arguments":"{\"service\":\"mail\"}","call_id":"call_key","name":"rotate_key"}],` +
		`"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`
	follow := `{"id":"resp_m2","object":"response","created_at":1,"status":"completed","model":"gpt-5","output":[` +
		`{"id":"msg_m2","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"I will email the team instead.","annotations":[]}]},` +
		`{"id":"fc_mail","type":"function_call","status":"completed","arguments":"{\"to\":\"team@example.com\",\"subject\":\"Post 7\"}","call_id":"call_mail","name":"send_email"}],` +
		`"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`
	e.provider.Enqueue(testkit.Reply{Body: []byte(first)}, testkit.Reply{Body: []byte(follow)})
	ask := `{"model":"gpt-5","store":false,"input":[{"role":"user","content":"Delete post 7 and rotate the mail key."}]}`
	st, _, body := e.rawResponses(t, "ana", ask)
	if st != 200 {
		t.Fatalf("%d %s", st, body)
	}
	r := gjson.ParseBytes(body)
	if strings.Contains(r.Get("output").Raw, `"function_call"`) {
		t.Fatalf("a gated call reached the app: %s", body)
	}
	// The app keeps the answer's text as one assistant message.
	var text strings.Builder
	for _, it := range r.Get("output").Array() {
		for _, p := range it.Get("content").Array() {
			text.WriteString(p.Get("text").String() + "\n\n")
		}
	}
	e.answerSteps(t, linksIn(t, text.String()))

	e.provider.Enqueue(testkit.Reply{Body: responsesText("resp_m3", "Done.")})
	next := `{"model":"gpt-5","store":false,"input":[{"role":"user","content":"Delete post 7 and rotate the mail key."},` +
		`{"role":"assistant","content":` + jsonString(text.String()) + `},{"role":"user","content":"Thanks."}]}`
	if st, _, b := e.rawResponses(t, "ana", next); st != 200 {
		t.Fatalf("the provider refused the restored input: %d %s", st, b)
	}
	reqs := e.provider.Requests()
	last := reqs[len(reqs)-1]
	var kinds []string
	for _, it := range gjson.GetBytes(last, "input").Array() {
		k := it.Get("type").String()
		if k == "" {
			k = it.Get("role").String()
		}
		kinds = append(kinds, k+":"+it.Get("call_id").String())
	}
	want := "user: function_call:call_del function_call:call_key function_call_output:call_del function_call_output:call_key " +
		"message: function_call:call_mail function_call_output:call_mail user:"
	if strings.Join(kinds, " ") != want {
		t.Fatalf("input:\n%s\nwant\n%s\n%s", strings.Join(kinds, " "), want, last)
	}
	if responsesOutput(last, "call_del") != confirmedRemoved || responsesOutput(last, "call_mail") != declined {
		t.Errorf("outputs: %q, %q", responsesOutput(last, "call_del"), responsesOutput(last, "call_mail"))
	}
}
