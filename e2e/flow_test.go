package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/pages"
)

var del7 = call{"call_del7", "delete_post", `{"post":7}`, false}

// hold makes the model call delete_post for post 7 in owner's
// conversation and returns the link and the message the app received.
func (e *env) hold(t *testing.T, owner string, calls ...call) (string, openai.ChatCompletionMessage) {
	t.Helper()
	if len(calls) == 0 {
		calls = []call{del7}
	}
	e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", calls...)})
	got, err := e.client(owner).Chat.Completions.New(ctx, userAsks("Delete my old meetup draft."))
	if err != nil {
		t.Fatal(err)
	}
	msg := got.Choices[0].Message
	if len(msg.ToolCalls) != 0 {
		t.Fatalf("a gated call reached the app: %+v", msg.ToolCalls)
	}
	return linkRe.FindString(msg.Content), msg
}

// next sends the conversation on with a new user message and returns the
// request the provider received.
func (e *env) next(t *testing.T, owner string, msg openai.ChatCompletionMessage, user string) []byte {
	t.Helper()
	e.provider.Enqueue(testkit.Reply{Body: textCompletion("ok")})
	params := userAsks("Delete my old meetup draft.")
	params.Messages = append(params.Messages, msg.ToParam())
	if user != "" {
		params.Messages = append(params.Messages, openai.UserMessage(user))
	}
	if _, err := e.client(owner).Chat.Completions.New(ctx, params); err != nil {
		t.Fatalf("next request: %v", err)
	}
	reqs := e.provider.Requests()
	return reqs[len(reqs)-1]
}

// toolResult is the tool message content for a call id in a request.
func toolResult(body []byte, callID string) string {
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		if m.Get("role").String() == "tool" && m.Get("tool_call_id").String() == callID {
			return m.Get("content").String()
		}
	}
	return ""
}

func setupPost(e *env) {
	e.app.SetRecord("/posts/7", `{"title":"Spring meetup","status":"draft"}`)
}

func TestConfirmRunsOnceAndRestoresHistory(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	l, msg := e.hold(t, "ana")
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	calls := e.app.Calls()
	if len(calls) != 1 {
		t.Fatalf("action ran %d times", len(calls))
	}
	c := calls[0]
	if c.Method != "DELETE" || c.URI != "/posts/7" || string(c.Body) != `{"post":7}` || c.SignatureErr != nil {
		t.Errorf("action got %s %s %s (signature: %v)", c.Method, c.URI, c.Body, c.SignatureErr)
	}
	if c.Header.Get(actions.HeaderPerson) != "ana" || len(c.Header.Get(actions.HeaderIdempotency)) != 26 {
		t.Errorf("action headers: %v", c.Header)
	}
	req := e.next(t, "ana", msg, "Thanks!")
	msgs := gjson.GetBytes(req, "messages").Array()
	if len(msgs) != 4 {
		t.Fatalf("restored history has %d messages: %s", len(msgs), req)
	}
	if msgs[1].Get("tool_calls.0.id").String() != "call_del7" || msgs[1].Get("tool_calls.0.function.arguments").String() != `{"post":7}` {
		t.Errorf("original call not restored: %s", msgs[1].Raw)
	}
	if strings.Contains(msgs[1].Raw, "Waiting for your confirmation") {
		t.Errorf("waiting text left in history: %s", msgs[1].Raw)
	}
	if got := toolResult(req, "call_del7"); got != "The person confirmed. Removed." {
		t.Errorf("tool result = %q", got)
	}
	if msgs[3].Get("role").String() != "user" {
		t.Errorf("the person's new message moved: %s", req)
	}
}

func TestDecline(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	l, msg := e.hold(t, "ana")
	if st := e.answerOnly(ana, l, "decline"); st != http.StatusSeeOther {
		t.Fatalf("decline: %d", st)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatalf("a declined call ran %d times", n)
	}
	if got := toolResult(e.next(t, "ana", msg, "ok"), "call_del7"); got != "The person declined; nothing ran." {
		t.Errorf("tool result = %q", got)
	}
}

func TestExpiry(t *testing.T) {
	e := newEnv(t, envOptions{ttl: "1s"})
	setupPost(e)
	l, msg := e.hold(t, "ana")
	_, _, s := e.view(ana, l)
	time.Sleep(1100 * time.Millisecond)
	st, _ := e.answer(ana, l, s.Holds[0].ID, s.Tokens[s.Holds[0].ID], "confirm", nil)
	if st != http.StatusConflict {
		t.Errorf("late confirm: %d, want 409", st)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatalf("an expired call ran")
	}
	if got := toolResult(e.next(t, "ana", msg, "well?"), "call_del7"); got != "The person did not answer in time; nothing ran." {
		t.Errorf("tool result = %q", got)
	}
}

func TestRecordChangedRunsNothing(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	l, msg := e.hold(t, "ana")
	e.app.SetRecord("/posts/7", `{"title":"Spring meetup","status":"published"}`)
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatal("the call ran against a changed record")
	}
	if got := toolResult(e.next(t, "ana", msg, "ok"), "call_del7"); got != "The record changed while waiting; nothing ran." {
		t.Errorf("tool result = %q", got)
	}
}

// refusedWith makes the model call calls in owner's conversation, lets the
// model answer the refusal, and returns the tool result the model read and
// the text the app received.
func (e *env) refusedWith(t *testing.T, owner string, callID string, calls ...call) (string, string) {
	t.Helper()
	e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", calls...)}, testkit.Reply{Body: textCompletion("MODEL-FOLLOW-UP")})
	got, err := e.client(owner).Chat.Completions.New(ctx, userAsks("Delete my old meetup draft."))
	if err != nil {
		t.Fatal(err)
	}
	msg := got.Choices[0].Message
	if len(msg.ToolCalls) != 0 {
		t.Fatalf("a refused call reached the app: %+v", msg.ToolCalls)
	}
	reqs := e.provider.Requests()
	return toolResult(reqs[len(reqs)-1], callID), msg.Content
}

func TestMissingRecordRefuses(t *testing.T) {
	e := newEnv(t, envOptions{})
	res, text := e.refusedWith(t, "ana", "call_del7", del7) // no record for post 7
	if !strings.Contains(res, "delete_post") || !strings.Contains(res, "not found") {
		t.Errorf("refusal = %q", res)
	}
	if !strings.Contains(text, "MODEL-FOLLOW-UP") || linkRe.MatchString(text) {
		t.Errorf("the app did not get the model's own follow-up: %q", text)
	}
	e.app.Allow("somebody-else")
	setupPost(e)
	if res, _ := e.refusedWith(t, "ana", "call_del7", del7); !strings.Contains(res, "may not") {
		t.Errorf("a 403 record: %q", res)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatal("a refused call ran")
	}
}

func TestAnotherPersonCannotAnswer(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	l, _ := e.hold(t, "ana")
	if st, _, _ := e.view(bo, l); st != http.StatusNotFound {
		t.Errorf("bo viewing ana's card: %d, want 404", st)
	}
	_, _, s := e.view(ana, l)
	id := s.Holds[0].ID
	// bo with ana's token, and bo with a token made for himself (valid for
	// him: only the owner check refuses it): both 409.
	if st, _ := e.answer(bo, l, id, s.Tokens[id], "confirm", nil); st != http.StatusConflict {
		t.Errorf("bo confirming with ana's token: %d", st)
	}
	bos := (&pages.Pages{Secret: []byte(secret)}).Token(id, gate.Person{Owner: "bo"})
	for _, choice := range []string{"confirm", "decline"} {
		if st, _ := e.answer(bo, l, id, bos, choice, nil); st != http.StatusConflict {
			t.Errorf("bo answering %s with his own token: %d", choice, st)
		}
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatal("another person's answer ran the call")
	}
	// The hold still waits for ana.
	if st, _ := e.answer(ana, l, id, s.Tokens[id], "confirm", nil); st != http.StatusSeeOther {
		t.Errorf("ana's confirm after bo's try: %d", st)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("ran %d times", n)
	}
}

// Of 100 confirms racing inside the store exactly one runs the call; the
// other 99 get 409 and run nothing. racePosts lines the answers up behind
// the sign-in and lets them go together; the step's other call carries a
// long argument, and every claim reads the whole step in its transaction,
// which keeps each claim open long enough for the others to start (with
// the store's conflict detection off, several win).
func TestSecondPressAndConcurrentConfirms(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	e.app.SetRecord("/posts/8", `{"title":"Autumn meetup","status":"draft"}`)
	long := call{"call_del8", "delete_post", fmt.Sprintf(`{"post":8,"note":%q}`, strings.Repeat("autumn meetup ", raceNoteRepeats)), false}
	l, _ := e.hold(t, "ana", del7, long)
	_, _, s := e.view(ana, l)
	if len(s.Holds) != 2 {
		t.Fatalf("%d holds, want 2", len(s.Holds))
	}
	// The long one is declined first: the confirm that wins completes the
	// step and releases it.
	if st, _ := e.answer(ana, l, s.Holds[1].ID, s.Tokens[s.Holds[1].ID], "decline", nil); st != http.StatusSeeOther {
		t.Fatalf("decline: %d", st)
	}
	id, tok := s.Holds[0].ID, s.Tokens[s.Holds[0].ID]
	const n = 100
	u, err := url.Parse(l)
	if err != nil {
		t.Fatal(err)
	}
	statuses := racePosts(t, ana, l, n, url.Values{"hold": {id}, "token": {tok}, "answer": {"confirm"}}, map[string]string{"Origin": u.Scheme + "://" + u.Host})
	count := map[int]int{}
	for _, st := range statuses {
		count[st]++
	}
	if count[http.StatusSeeOther] != 1 || count[http.StatusConflict] != n-1 {
		t.Errorf("statuses = %v, want one 303 and %d × 409", count, n-1)
	}
	if c := e.app.Calls(); len(c) != 1 || c[0].URI != "/posts/7" || c[0].Header.Get(actions.HeaderIdempotency) != id {
		t.Errorf("the action endpoint got %d requests, want one for post 7", len(c))
	}
	// A second press later, and a replayed decline: 409, nothing more runs.
	for _, choice := range []string{"confirm", "decline"} {
		if st, _ := e.answer(ana, l, id, tok, choice, nil); st != http.StatusConflict {
			t.Errorf("later %s: %d", choice, st)
		}
	}
	if c := len(e.app.Calls()); c != 1 {
		t.Errorf("the action ran %d times", c)
	}
}

func TestHoldSurvivesRestart(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	l, msg := e.hold(t, "ana")
	_, _, s := e.view(ana, l)
	testkit.Stop(t) // closes the store
	testkit.Run(t, e.caddy)
	id := s.Holds[0].ID
	if st, _ := e.answer(ana, l, id, s.Tokens[id], "confirm", nil); st != http.StatusSeeOther {
		t.Fatalf("confirm after restart: %d", st)
	}
	if c := len(e.app.Calls()); c != 1 {
		t.Errorf("ran %d times", c)
	}
	if got := toolResult(e.next(t, "ana", msg, "ok"), "call_del7"); got != "The person confirmed. Removed." {
		t.Errorf("tool result = %q", got)
	}
}

func TestCrossOriginAnswerRefused(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	l, _ := e.hold(t, "ana")
	_, _, s := e.view(ana, l)
	hid, tok := s.Holds[0].ID, s.Tokens[id(s)]
	for _, h := range []map[string]string{
		{"Origin": "http://evil.example"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Origin": "null"},
	} {
		if st, _ := e.answer(ana, l, hid, tok, "confirm", h); st != http.StatusConflict {
			t.Errorf("cross-origin %v: %d", h, st)
		}
	}
	if st, _ := e.answer(ana, l, hid, "not-the-token", "confirm", nil); st != http.StatusConflict {
		t.Errorf("bad token: %d", st)
	}
	if c := len(e.app.Calls()); c != 0 {
		t.Errorf("a cross-origin answer ran the call")
	}
}

func id(s stepJSON) string { return s.Holds[0].ID }

func TestPageEscapesRecordAndHidesArguments(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.app.SetRecord("/posts/7", `{"title":"<script>alert(1)</script><b>x</b>","status":"draft\u202e"}`)
	// The model's arguments carry a marker that must never reach a page.
	l, _ := e.hold(t, "ana", call{"call_del7", "delete_post", `{"post":7,"note":"MODEL-SAID-THIS"}`, false})
	_, raw, s := e.view(ana, l)
	if strings.Contains(string(raw), "MODEL-SAID-THIS") || strings.Contains(string(raw), "call_del7") {
		t.Errorf("page JSON holds the model's arguments: %s", raw)
	}
	if s.Holds[0].Card.Rows[1].Value != "draft" {
		t.Errorf("direction character kept: %q", s.Holds[0].Card.Rows[1].Value)
	}
	req, _ := http.NewRequest("GET", l, nil)
	req.SetBasicAuth("ana", "ana-pw")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, readAll(t, resp))
	html := b.String()
	if strings.Contains(html, "<script>alert") || strings.Contains(html, "<b>x</b>") {
		t.Errorf("record HTML not escaped")
	}
	if !strings.Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("escaped title missing from page")
	}
	if strings.Contains(html, "MODEL-SAID-THIS") {
		t.Errorf("page holds the model's arguments")
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP = %q", csp)
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return sb.String()
}

func TestNoOwnerIsRefused(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	if res, text := e.refusedWith(t, "", "call_del7", del7); !strings.Contains(res, "whose conversation") || linkRe.MatchString(text) {
		t.Errorf("a call with no owner was held or passed: %q / %q", res, text)
	}
	// With owner configured, the body's safety_identifier does not stand
	// in for an empty header (see TestOwnerFallbackOnlyWhereConfigured).
	e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", del7)}, testkit.Reply{Body: textCompletion("MODEL-FOLLOW-UP")})
	_, _, body := e.rawPost(t, "", `{"model":"gpt-4o","safety_identifier":"ana","messages":[{"role":"user","content":"x"}]}`)
	reqs := e.provider.Requests()
	if l := linkRe.FindString(gjson.GetBytes(body, "choices.0.message.content").String()); l != "" || !strings.Contains(toolResult(reqs[len(reqs)-1], "call_del7"), "whose conversation") {
		t.Errorf("safety_identifier stood in for the configured owner: %s", body)
	}
}

func TestMovedOnAndForeignLinks(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	l, msg := e.hold(t, "ana")
	// Bo pastes ana's message into his own conversation: nothing restored.
	req := e.next(t, "bo", msg, "what is this?")
	if strings.Contains(string(req), "call_del7") || gjson.GetBytes(req, "messages.1.content").String() != msg.Content {
		t.Errorf("another person's link restored history: %s", req)
	}
	// Ana writes on without answering: settled as moved on, nothing runs.
	req = e.next(t, "ana", msg, "never mind")
	if got := toolResult(req, "call_del7"); got != "The person moved on without answering; nothing ran." {
		t.Errorf("tool result = %q", got)
	}
	_, _, s := e.view(ana, l)
	if st, _ := e.answer(ana, l, id(s), s.Tokens[id(s)], "confirm", nil); st != http.StatusConflict {
		t.Errorf("confirm after moving on: %d", st)
	}
	if c := len(e.app.Calls()); c != 0 {
		t.Error("a moved-on call ran")
	}
	var page stepJSON
	_, raw, _ := e.view(ana, l)
	_ = json.Unmarshal(raw, &page)
	if page.Holds[0].Answer != "moved_on" {
		t.Errorf("page answer = %q", page.Holds[0].Answer)
	}
}
