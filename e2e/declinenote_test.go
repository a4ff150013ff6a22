package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
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

// TestDeclineNoteRefusals: a note where the policy offers none, with
// Confirm, or over 500 characters gets 400 and answers nothing; the JSON
// API takes a note as "note", and the model reads it.
func TestDeclineNoteRefusals(t *testing.T) {
	plain := newEnv(t, envOptions{})
	setupPost(plain)
	l, _ := plain.hold(t, "ana")
	_, _, s := plain.view(ana, l)
	id := id(s)
	origin := map[string]string{"Origin": strings.TrimSuffix(plain.pagesURL, "/toolgate")}
	if st, _ := plain.post(ana, l, url.Values{"hold": {id}, "token": {s.Tokens[id]}, "answer": {"decline"}, "decline_note": {"no"}}, origin); st != http.StatusBadRequest {
		t.Errorf("a note without decline_note: %d, want 400", st)
	}

	e := newEnv(t, envOptions{policy: declineNotePolicy})
	setupPost(e)
	l, msg := e.hold(t, "ana")
	_, _, s = e.view(ana, l)
	id = s.Holds[0].ID
	origin = map[string]string{"Origin": strings.TrimSuffix(e.pagesURL, "/toolgate")}
	for name, form := range map[string]url.Values{
		"with confirm":   {"answer": {"confirm"}, "note": {"no"}},
		"501 characters": {"answer": {"decline"}, "decline_note": {strings.Repeat("x", 501)}},
	} {
		form.Set("hold", id)
		form.Set("token", s.Tokens[id])
		if name == "with confirm" {
			// The form post takes a note only with decline; the JSON API
			// refuses one with any other answer.
			body, _ := json.Marshal(map[string]string{"hold": id, "token": s.Tokens[id], "answer": "confirm", "note": "no"})
			if st := postJSON(t, l, body); st != http.StatusBadRequest {
				t.Errorf("%s: %d, want 400", name, st)
			}
			continue
		}
		if st, _ := e.post(ana, l, form, origin); st != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", name, st)
		}
	}
	if _, _, now := e.view(ana, l); now.Holds[0].State != "waiting" || len(e.app.Calls()) != 0 {
		t.Fatalf("a refused note answered the card: %+v", now)
	}
	body, _ := json.Marshal(map[string]string{"hold": id, "token": s.Tokens[id], "answer": "decline", "note": e2eNote})
	if st := postJSON(t, l, body); st != http.StatusOK {
		t.Fatalf("the JSON API's decline with a note: %d", st)
	}
	if got := toolResult(e.next(t, "ana", msg, ""), "call_del7"); got != e2eNoteRead {
		t.Errorf("the model read %q", got)
	}
}

// postJSON posts an answer as JSON as ana and returns the status.
func postJSON(t *testing.T, link string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest("POST", link, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(ana.name, ana.password)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
