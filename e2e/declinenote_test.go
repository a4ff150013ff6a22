package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// Declining with a note (issue 19 §2), end to end: the policy file turns
// decline_note on; the person writes a note with quotation marks and a
// backslash on the card page in Chromium (with and without JavaScript)
// and presses Decline; the app is each official SDK, and the model reads
// exactly the sentence, with the note as a JSON string, once.

// declineNotePolicy is the test policy with the file's decline_note on.
var declineNotePolicy = "decline_note: true\n" + policyYAML

const (
	e2eNote     = "Not this one: it's the \"Spring\" draft \\ keep it"
	e2eNoteRead = `The person declined: "Not this one: it's the \"Spring\" draft \\ keep it". Nothing ran.`
	// e2eNoteGone is what a later turn reads.
	e2eNoteGone = "The person declined with a note to the assistant, given earlier in this conversation and not kept; nothing ran."
)

// noScript turns the page's scripts off (the pages work without them).
func noScript(t *testing.T, b context.Context) {
	t.Helper()
	if _, err := chromedp.Call(b, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
}

// declineWithNote opens a card page, types the note, presses Decline and
// returns the status the page then shows. It reports errors instead of
// failing (the MCP client calls it on its own goroutine).
func declineWithNote(b context.Context, link, note string) (string, error) {
	err := chromedp.Do(b, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`textarea[name=decline_note]`)),
		chromedp.SendKeys(chromedp.CSS(`textarea[name=decline_note]`), note),
		chromedp.Click(chromedp.CSS(`button.decline`)), chromedp.WaitVisible(chromedp.CSS(`.status`)))
	if err != nil {
		return "", err
	}
	return chromedp.Run(b, chromedp.Text(chromedp.CSS(`.status`)))
}

func TestBrowserDeclineNoteChat(t *testing.T) {
	e := newEnv(t, envOptions{policy: declineNotePolicy})
	setupPost(e)
	l, msg := e.hold(t, "ana")
	b := browser(t, ana)
	noScript(t, b)
	status, err := declineWithNote(b, l, e2eNote)
	if err != nil {
		t.Fatal(err)
	}
	if status != "Declined. Nothing ran." {
		t.Errorf("status = %q", status)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatalf("a declined call ran %d times", n)
	}
	if got := toolResult(e.next(t, "ana", msg, ""), "call_del7"); got != e2eNoteRead {
		t.Errorf("the model read %q, want %q", got, e2eNoteRead)
	}
	if got := toolResult(e.next(t, "ana", msg, "ok"), "call_del7"); got != e2eNoteGone {
		t.Errorf("the next turn read %q, want the note no longer kept", got)
	}
}

func TestBrowserDeclineNoteAnthropic(t *testing.T) {
	e := newEnv(t, envOptions{policy: declineNotePolicy})
	setupPost(e)
	e.provider.Enqueue(testkit.Reply{Body: []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Deleting."},{"type":"tool_use","id":"toolu_del7","name":"delete_post","input":{"post":7}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`)})
	c := e.anthropicClient("ana")
	params := anthropicAsk("Delete my old meetup draft.")
	m, err := c.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	b := browser(t, ana) // with JavaScript
	if _, err := declineWithNote(b, link(t, textOf(*m)), e2eNote); err != nil {
		t.Fatal(err)
	}
	e.provider.Enqueue(testkit.Reply{Body: []byte(`{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Understood."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)})
	params.Messages = append(params.Messages, m.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("ok")))
	if _, err := c.Messages.New(ctx, params); err != nil {
		t.Fatalf("the provider refused the restored history: %v", err)
	}
	reqs := e.provider.Requests()
	if got := anthropicResult(reqs[len(reqs)-1], "toolu_del7"); got != e2eNoteRead {
		t.Errorf("tool_result = %q, want %q", got, e2eNoteRead)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Errorf("a declined call ran %d times", n)
	}
}

func TestBrowserDeclineNoteResponses(t *testing.T) {
	e := newEnv(t, envOptions{policy: declineNotePolicy})
	setupPost(e)
	e.provider.Enqueue(testkit.Reply{Body: responsesJSON("resp_d1", "call_d1", "delete_post", `{"post":7}`)})
	c := e.client("ana")
	r, err := c.Responses.New(ctx, responsesAsk("Delete my old meetup draft."))
	if err != nil {
		t.Fatal(err)
	}
	b := browserWith(t, ana, browserOptions{lang: "de"})
	noScript(t, b)
	status, err := declineWithNote(b, link(t, r.OutputText()), e2eNote)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(status, "Abgelehnt") {
		t.Errorf("German status = %q", status)
	}
	e.provider.Enqueue(testkit.Reply{Body: responsesText("resp_d2", "Understood.")})
	next := responsesAsk("ok")
	next.PreviousResponseID = openai.String(r.ID)
	if _, err := c.Responses.New(ctx, next); err != nil {
		t.Fatalf("the provider refused the restored input: %v", err)
	}
	reqs := e.provider.Requests()
	last := reqs[len(reqs)-1]
	if got := gjson.GetBytes(last, `input.#(type=="function_call_output").output`).String(); got != e2eNoteRead {
		t.Errorf("function_call_output = %q, want %q in %s", got, e2eNoteRead, last)
	}
}

func TestBrowserDeclineNoteMCP(t *testing.T) {
	b := browser(t, ana)
	e := newMCPEnv(t, mcpEnvOptions{stateless: true, declineNote: true})
	e.app.SetRecord("/posts/7", postRecord)
	cs := e.connect(t, "ana", &mcp.ClientOptions{Capabilities: urlCaps, ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if _, err := declineWithNote(b, req.Params.URL, e2eNote); err != nil {
			t.Errorf("in the browser: %v", err)
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
		return &mcp.ElicitResult{Action: "accept"}, nil // consent; the page gave the answer
	}}, "")
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(c, &mcp.CallToolParams{Name: "delete_post", Arguments: map[string]any{"post": 7}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || resultText(res) != e2eNoteRead {
		t.Errorf("the tool result: isError=%v %q, want %q", res.IsError, resultText(res), e2eNoteRead)
	}
	e.wantNoCalls(t, "delete_post")
}
