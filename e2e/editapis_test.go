package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// An edited confirmation read by the model on each API (issue 19 §1): the
// app is the official SDK, the person corrects the subject and the body,
// the app's endpoint gets exactly those arguments once, and the model
// reads which fields changed — never their values — in the request the
// provider receives (over MCP: in the tool result the SDK client parsed).

const (
	editedRead    = "The person confirmed with changes to: subject, body. Sent."
	editedSubject = "Quarterly numbers"
	editedBody    = "Figures attached; see page two."
)

// confirmEdited answers a card's page as JSON as ana, with the subject and
// the body corrected.
func confirmEdited(t *testing.T, e *env, l string) {
	t.Helper()
	_, _, s := e.view(ana, l)
	if len(s.Holds) != 1 {
		t.Fatalf("the page holds %d questions", len(s.Holds))
	}
	h := s.Holds[0]
	body, _ := json.Marshal(map[string]any{"hold": h.ID, "token": s.Tokens[h.ID], "answer": "confirm", "values": map[string]any{"subject": editedSubject, "body": editedBody}})
	if st := jsonPost(t, ana, l, body); st != http.StatusOK {
		t.Fatalf("the edited confirmation: %d", st)
	}
}

// wantEditedRun checks that the app ran the mail once with the person's
// values over the model's.
func wantEditedRun(t *testing.T, e *env) {
	t.Helper()
	calls := e.app.Calls()
	if len(calls) != 1 {
		t.Fatalf("the action ran %d times", len(calls))
	}
	var got map[string]any
	if err := json.Unmarshal(calls[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"to": "bo@example.com", "subject": editedSubject, "body": editedBody, "account": "team"}
	if !reflect.DeepEqual(got, want) || calls[0].URI != "/accounts/team/mail" {
		t.Errorf("the app got %s %s, want %v", calls[0].URI, calls[0].Body, want)
	}
}

// wantNoValues fails when the model's request holds a value the person
// typed.
func wantNoValues(t *testing.T, req []byte) {
	t.Helper()
	for _, v := range []string{editedSubject, editedBody} {
		if strings.Contains(string(req), v) {
			t.Errorf("the model's request holds the person's value %q", v)
		}
	}
}

func TestEditReachesTheModelResponses(t *testing.T) {
	e := newEditEnv(t)
	e.provider.Enqueue(testkit.Reply{Body: responsesJSON("resp_m1", mailCall.id, mailCall.name, mailCall.args)})
	c := e.client("ana")
	r, err := c.Responses.New(ctx, responsesAsk("Send the numbers to Bo."))
	if err != nil {
		t.Fatal(err)
	}
	confirmEdited(t, e, link(t, r.OutputText()))
	wantEditedRun(t, e)
	e.provider.Enqueue(testkit.Reply{Body: responsesText("resp_m2", "Sent it.")})
	next := responsesAsk("thanks")
	next.PreviousResponseID = openai.String(r.ID)
	if _, err := c.Responses.New(ctx, next); err != nil {
		t.Fatalf("the provider refused the restored input: %v", err)
	}
	reqs := e.provider.Requests()
	last := reqs[len(reqs)-1]
	if got := gjson.GetBytes(last, `input.#(type=="function_call_output").output`).String(); got != editedRead {
		t.Errorf("function_call_output = %q, want %q in %s", got, editedRead, last)
	}
	wantNoValues(t, last)
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the action ran %d times after the model read it", n)
	}
}

func TestEditReachesTheModelAnthropic(t *testing.T) {
	e := newEditEnv(t)
	e.provider.Enqueue(testkit.Reply{Body: []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Sending."},{"type":"tool_use","id":"toolu_mail","name":"send_mail","input":` + mailCall.args + `}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`)})
	c := e.anthropicClient("ana")
	params := anthropicAsk("Send the numbers to Bo.")
	m, err := c.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	confirmEdited(t, e, link(t, textOf(*m)))
	wantEditedRun(t, e)
	e.provider.Enqueue(testkit.Reply{Body: []byte(`{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Sent it."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)})
	params.Messages = append(params.Messages, m.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("thanks")))
	if _, err := c.Messages.New(ctx, params); err != nil {
		t.Fatalf("the provider refused the restored history: %v", err)
	}
	reqs := e.provider.Requests()
	last := reqs[len(reqs)-1]
	if got := anthropicResult(last, "toolu_mail"); got != editedRead {
		t.Errorf("tool_result = %q, want %q", got, editedRead)
	}
	wantNoValues(t, last)
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the action ran %d times after the model read it", n)
	}
}

// TestEditReachesTheModelChatJSON: the JSON API's edit, on Chat (the
// browser's is TestEditRunsTheEditedArgumentsOnce).
func TestEditReachesTheModelChatJSON(t *testing.T) {
	e := newEditEnv(t)
	l, msg := e.hold(t, "ana", mailCall)
	// The JSON view holds the edit form: the subject opens on the model's
	// value, the body (a direction character) on nothing, the account
	// (it names the run URL) is not in it.
	_, raw, _ := e.view(ana, l)
	edit := gjson.GetBytes(raw, "holds.0.edit")
	if props := edit.Get("requestedSchema.properties"); edit.Get("mode").String() != "form" ||
		props.Get("subject.default").String() != "Hello" || !props.Get("body").Exists() || props.Get("body.default").Exists() ||
		props.Get("account").Exists() || props.Get("to").Exists() {
		t.Errorf("the JSON view's edit form: %s", edit.Raw)
	}
	if strings.Contains(string(raw), "gnp.exe") {
		t.Errorf("the JSON view shows the model's unsafe body: %s", raw)
	}
	confirmEdited(t, e, l)
	wantEditedRun(t, e)
	req := e.next(t, "ana", msg, "thanks")
	if got := toolResult(req, mailCall.id); got != editedRead {
		t.Errorf("the model reads %q, want %q", got, editedRead)
	}
	wantNoValues(t, req)
}

// mcpMailAction is send_mail for the MCP server: confirmed in URL mode,
// the subject and the body editable.
const mcpMailAction = `  send_mail:
    effect: external
    mcp: {confirm: true}
    schema:
      type: object
      properties:
        to: {type: string, title: To}
        subject: {type: string, title: Subject}
        body: {type: string, title: Body}
      required: [to, subject, body]
    card:
      reason: Send this email?
      rows: {To: args.to, Subject: args.subject}
      editable: [subject, body]
`

// TestBrowserEditMCP: over MCP (URL mode) the client's URL opens the same
// card page with the edit form, here without JavaScript and in German;
// the person corrects the subject and the body and confirms. The client's
// retry reaches the server once with exactly those arguments, and the
// tool result the SDK client parsed first says which fields changed.
func TestBrowserEditMCP(t *testing.T) {
	b := browserWith(t, ana, browserOptions{lang: "de", timeout: 3 * time.Minute})
	noScript(t, b)
	e := newMCPEnv(t, mcpEnvOptions{stateless: true, policyEdit: func(p string) string { return p + mcpMailAction }})
	var opened []string
	cs := e.connect(t, "ana", &mcp.ClientOptions{Capabilities: urlCaps, ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		err := chromedp.Do(b, chromedp.Navigate(req.Params.URL), chromedp.WaitVisible(chromedp.CSS(`form.edit button.confirm`)))
		if err == nil {
			legend, _ := chromedp.Run(b, chromedp.Text(chromedp.CSS(`form.edit legend`)))
			subject, _ := chromedp.Run(b, chromedp.Value(chromedp.CSS(`#f-subject`)))
			body, _ := chromedp.Run(b, chromedp.Value(chromedp.CSS(`#f-body`)))
			opened = append(opened, squash(legend), subject, body)
			err = chromedp.Do(b,
				// No script runs on the page: the input is cleared through
				// its value attribute (it has not been typed in yet).
				chromedp.SetAttributeValue(chromedp.CSS(`#f-subject`), "value", ""),
				chromedp.SendKeys(chromedp.CSS(`#f-subject`), editedSubject),
				chromedp.SendKeys(chromedp.CSS(`#f-body`), editedBody),
				chromedp.Click(chromedp.CSS(`form.edit button.confirm`)),
				chromedp.WaitVisible(chromedp.CSS(`h1.status`)),
			)
		}
		if err != nil {
			t.Errorf("in the browser: %v", err)
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
		return &mcp.ElicitResult{Action: "accept"}, nil // consent; the page gave the answer
	}}, "")
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(c, &mcp.CallToolParams{Name: "send_mail", Arguments: map[string]any{"to": "bo@example.com", "subject": "Numbers", "body": "Hi\u2028there"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Sie können dies vor dem Bestätigen korrigieren.", "Numbers", ""}; !reflect.DeepEqual(opened, want) {
		t.Errorf("the page opened on %q, want %q (the body holds a line separator: empty)", opened, want)
	}
	if res.IsError || len(res.Content) != 2 {
		t.Fatalf("the tool result: isError=%v %q", res.IsError, resultText(res))
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "The person confirmed with changes to: subject, body." {
		t.Errorf("the tool result reads first %q", got)
	}
	if got := res.Content[1].(*mcp.TextContent).Text; got != "sent" {
		t.Errorf("the server's own result: %q", got)
	}
	wantCalls := []string{`send_mail {"to":"bo@example.com","subject":"` + editedSubject + `","body":"` + editedBody + `"}`}
	if got := e.server.Calls(); !reflect.DeepEqual(got, wantCalls) {
		t.Errorf("the server ran %q, want %q", got, wantCalls)
	}
}
