package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// Resume in the same response: with resume_wait, a streamed answer whose
// calls were held stays open while the person answers, and the model's
// reply after the answer reaches the app in the same response. The apps
// are the SDKs, streaming; the person is Chromium.

// resumeLines are the handler lines of a route that waits: a keep-alive
// short enough that every stream here carries some.
const resumeLines = "resume_wait 1m\n\t\tresume_keepalive 20ms\n\t\tresume_poll 50ms"

func newResumeEnv(t *testing.T, more ...string) *env {
	return newEnv(t, envOptions{handler: resumeLines + strings.Join(append([]string{""}, more...), "\n\t\t")})
}

const (
	resumeReply = "Done: post 7 is deleted."
	bound       = 30 * time.Second // how long any one step of these tests may take
)

// streamRun is an app's streamed request running in the background: it
// reports the link as soon as the app has read it, then how the stream
// ended.
type streamRun struct {
	link chan string
	done chan error
	text func() string // the answer's text as the app accumulated it (after done)
	stop context.CancelFunc
}

func newStreamRun(t *testing.T) (*streamRun, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &streamRun{link: make(chan string, 1), done: make(chan error, 1), stop: cancel}, ctx
}

// seen reports a link once it appears in the text read so far.
func (s *streamRun) seen(sent *bool, text string) {
	if *sent {
		return
	}
	if l := linkRe.FindString(text); l != "" {
		*sent = true
		s.link <- l
	}
}

// waitLink waits (bounded) until the app has read the link.
func (s *streamRun) waitLink(t *testing.T) string {
	t.Helper()
	select {
	case l := <-s.link:
		return l
	case err := <-s.done:
		t.Fatalf("the stream ended before the app read a link: %v", err)
	case <-time.After(bound):
		t.Fatal("the app read no link")
	}
	return ""
}

// wait waits (bounded) for the stream to end.
func (s *streamRun) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(bound):
		t.Fatal("the stream did not end")
		return nil
	}
}

// stillOpen checks that the stream has not ended.
func (s *streamRun) stillOpen(t *testing.T) {
	t.Helper()
	select {
	case err := <-s.done:
		t.Fatalf("the stream ended: %v", err)
	default:
	}
}

// chatRun streams a Chat completion through openai-go's accumulator.
func (e *env) chatRun(t *testing.T, owner string, params openai.ChatCompletionNewParams) (*streamRun, *openai.ChatCompletionAccumulator) {
	run, ctx := newStreamRun(t)
	acc := new(openai.ChatCompletionAccumulator)
	run.text = func() string {
		if len(acc.Choices) == 0 {
			return ""
		}
		return acc.Choices[0].Message.Content
	}
	go func() {
		s := e.client(owner).Chat.Completions.NewStreaming(ctx, params)
		sent := false
		for s.Next() {
			if !acc.AddChunk(s.Current()) {
				run.done <- fmt.Errorf("openai-go refused chunk %s", s.Current().RawJSON())
				return
			}
			run.seen(&sent, run.text())
		}
		run.done <- s.Err()
	}()
	return run, acc
}

// anthropicRun streams a message through anthropic-sdk-go's accumulator.
func (e *env) anthropicRun(t *testing.T, owner string, params anthropic.MessageNewParams) (*streamRun, *anthropic.Message) {
	run, ctx := newStreamRun(t)
	msg := new(anthropic.Message)
	run.text = func() string { return textOf(*msg) }
	go func() {
		s := e.anthropicClient(owner).Messages.NewStreaming(ctx, params)
		sent := false
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				run.done <- fmt.Errorf("anthropic-sdk-go refused an event: %w", err)
				return
			}
			run.seen(&sent, run.text())
		}
		run.done <- s.Err()
	}()
	return run, msg
}

// responsesRun streams a response through openai-go, checking the
// sequence numbers, and keeps the terminal response.
func (e *env) responsesRun(t *testing.T, owner string, params responses.ResponseNewParams) (*streamRun, *responses.Response) {
	run, ctx := newStreamRun(t)
	final := new(responses.Response)
	var text strings.Builder
	run.text = func() string { return final.OutputText() }
	go func() {
		s := e.client(owner).Responses.NewStreaming(ctx, params)
		sent := false
		last, terminals := int64(-1), 0
		for s.Next() {
			ev := s.Current()
			if ev.SequenceNumber <= last {
				run.done <- fmt.Errorf("sequence_number %d after %d", ev.SequenceNumber, last)
				return
			}
			last = ev.SequenceNumber
			switch ev.Type {
			case "response.output_text.delta":
				text.WriteString(ev.Delta)
				run.seen(&sent, text.String())
			case "response.completed":
				terminals++
				*final = ev.AsResponseCompleted().Response
			}
		}
		if err := s.Err(); err != nil || terminals != 1 {
			run.done <- fmt.Errorf("stream: %v, %d terminal events", err, terminals)
			return
		}
		run.done <- nil
	}()
	return run, final
}

// waitingShown waits (bounded) until the step's page says whether the
// assistant waits for it, as want.
func (e *env) waitingShown(t *testing.T, link string, want bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		st, body, _ := e.view(ana, link)
		if st != 200 {
			t.Fatalf("view: %d %s", st, body)
		}
		if gjson.GetBytes(body, "assistant_waiting").Bool() == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page says the assistant waits: %v, want %v", !want, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// confirmInBrowser is the person: Chromium opens the link, reads that the
// assistant waits, and confirms.
func confirmInBrowser(t *testing.T, link string) {
	t.Helper()
	b := browser(t, ana)
	if err := chromedp.Do(b, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`button.confirm`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, b, `.resumes`); !strings.Contains(got, "Your assistant is waiting for your answer and continues as soon as you have answered.") {
		t.Errorf("the page says %q", got)
	}
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`button.confirm`)), chromedp.WaitVisible(chromedp.CSS(`.status`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, b, `.status`); !strings.HasPrefix(got, "Done.") {
		t.Errorf("status after confirm = %q", got)
	}
}

// chatReply is a streamed Chat answer of text alone.
func chatReply(text string) testkit.Reply { return testkit.Reply{Events: streamEvents([]string{text})} }

func TestResumeChatInBrowser(t *testing.T) {
	e := newResumeEnv(t)
	setupPost(e)
	e.provider.Enqueue(testkit.Reply{Events: streamEvents([]string{"I'll delete it."}, del7)}, chatReply(resumeReply))
	params := userAsks("Delete my old meetup draft.")
	run, acc := e.chatRun(t, "ana", params)
	l := run.waitLink(t)
	e.waitingShown(t, l, true)
	run.stillOpen(t)
	confirmInBrowser(t, l)
	if err := run.wait(t); err != nil {
		t.Fatal(err)
	}
	// One response: the text, the link, then the model's reply.
	c := acc.Choices[0]
	content := c.Message.Content
	if i, j := strings.Index(content, l), strings.Index(content, resumeReply); !strings.HasPrefix(content, "I'll delete it.") || i < 0 || j < i {
		t.Errorf("the app read %q", content)
	}
	if c.FinishReason != "stop" || len(c.Message.ToolCalls) != 0 || acc.ID != chatID || acc.Usage.TotalTokens != 60 {
		t.Errorf("finish %q, calls %v, id %q, usage %+v", c.FinishReason, callNames(c.Message.ToolCalls), acc.ID, acc.Usage)
	}
	calls := e.app.Calls()
	if len(calls) != 1 || calls[0].URI != "/posts/7" || calls[0].Method != "DELETE" {
		t.Fatalf("the app ran %v", calls)
	}
	// The provider was asked again with the history restored.
	reqs := e.provider.Requests()
	if len(reqs) != 2 || toolResult(reqs[1], "call_del7") != confirmedRemoved {
		t.Fatalf("follow-up: %d requests; %s", len(reqs), reqs[len(reqs)-1])
	}
	// The app's next request carries all of it; the provider accepts it.
	e.provider.Enqueue(testkit.Reply{Body: textCompletion("You're welcome.")})
	params.Messages = append(params.Messages, c.Message.ToParam(), openai.UserMessage("Thanks."))
	if _, err := e.client("ana").Chat.Completions.New(ctx, params); err != nil {
		t.Fatalf("the provider refused the next request: %v", err)
	}
	reqs = e.provider.Requests()
	next := reqs[len(reqs)-1]
	if got := chatShape(next); got != "user assistant:call_del7 tool:call_del7 assistant user" {
		t.Errorf("history %s\n%s", got, next)
	}
	if gjson.GetBytes(next, "messages.3.content").String() != resumeReply || strings.Contains(string(next), "Waiting for") {
		t.Errorf("history %s", next)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the app ran %d times", n)
	}
}

// chatShape lists a request's messages as role[:call ids].
func chatShape(body []byte) string {
	var roles []string
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		r := m.Get("role").String()
		for _, tc := range m.Get("tool_calls").Array() {
			r += ":" + tc.Get("id").String()
		}
		if id := m.Get("tool_call_id").String(); id != "" {
			r += ":" + id
		}
		roles = append(roles, r)
	}
	return strings.Join(roles, " ")
}

func TestResumeAnthropicInBrowser(t *testing.T) {
	e := newResumeEnv(t)
	e.provider.Enqueue(
		testkit.Reply{Events: testkit.SSEEvents(testkit.Fixture(t, "anthropic", "stream-1.sse"))},
		testkit.Reply{Events: testkit.SSEEvents(testkit.Fixture(t, "anthropic", "stream-2.sse"))},
	)
	params := anthropicAsk("What's the weather in San Francisco, in fahrenheit?")
	run, msg := e.anthropicRun(t, "ana", params)
	l := run.waitLink(t)
	e.waitingShown(t, l, true)
	confirmInBrowser(t, l)
	if err := run.wait(t); err != nil {
		t.Fatal(err)
	}
	all := textOf(*msg)
	if i, j := strings.Index(all, l), strings.Index(all, "68 degrees"); i < 0 || j < i {
		t.Errorf("the app read %q", all)
	}
	if msg.StopReason != "end_turn" || len(toolUses(*msg)) != 0 || msg.ID != "msg_01H1pwRRkQxKbUGKi785gT4M" {
		t.Errorf("stop %q, tool uses %v, id %q", msg.StopReason, toolUses(*msg), msg.ID)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Fatalf("the app ran %d times", n)
	}
	reqs := e.provider.Requests()
	if len(reqs) != 2 || anthropicResult(reqs[1], "toolu_01RaX2WYWRWCbaeFHssmGJXG") != "The person confirmed. Done." {
		t.Fatalf("follow-up: %s", reqs[len(reqs)-1])
	}
	e.provider.Enqueue(testkit.Reply{Body: []byte(`{"id":"msg_3","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Welcome."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)})
	params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("Thanks.")))
	if _, err := e.anthropicClient("ana").Messages.New(ctx, params); err != nil {
		t.Fatalf("the provider refused the next request: %v", err)
	}
	reqs = e.provider.Requests()
	next := reqs[len(reqs)-1]
	var shape []string
	for _, m := range gjson.GetBytes(next, "messages").Array() {
		s := m.Get("role").String()
		for _, b := range m.Get("content").Array() {
			s += " " + b.Get("type").String()
		}
		shape = append(shape, s)
	}
	if got := strings.Join(shape, " | "); got != "user text | assistant text tool_use | user tool_result | assistant text | user text" {
		t.Errorf("history %s\n%s", got, next)
	}
}

func TestResumeResponsesInBrowser(t *testing.T) {
	e := newResumeEnv(t)
	e.provider.Enqueue(
		testkit.Reply{Events: testkit.SSEEvents(testkit.Fixture(t, "openai-responses", "reasoning-encrypted-step1.sse"))},
		testkit.Reply{Events: testkit.SSEEvents(testkit.Fixture(t, "openai-responses", "reasoning-encrypted-step4.sse"))},
	)
	run, final := e.responsesRun(t, "ana", responsesAsk("What is 12 + 7?"))
	l := run.waitLink(t)
	e.waitingShown(t, l, true)
	confirmInBrowser(t, l)
	if err := run.wait(t); err != nil {
		t.Fatal(err)
	}
	if calls := functionCalls(*final); len(calls) != 0 {
		t.Errorf("a call reached the app: %v", calls)
	}
	text := final.OutputText()
	if i := strings.Index(text, l); i < 0 || len(text) <= i+len(l) {
		t.Errorf("the app read %q", text)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Fatalf("the app ran %d times", n)
	}
	reqs := e.provider.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1]), "The person confirmed. Calculated.") {
		t.Fatalf("follow-up: %s", reqs[len(reqs)-1])
	}
	// The app's next request: its input with the answer's output items
	// sent back as they came.
	var items []string
	for _, it := range final.Output {
		items = append(items, it.RawJSON())
	}
	e.provider.Enqueue(testkit.Reply{Body: responsesText("resp_3", "Welcome.")})
	next := `{"model":"gpt-5","input":[{"role":"user","content":"What is 12 + 7?"},` + strings.Join(items, ",") + `,{"role":"user","content":"Thanks."}]}`
	if st, _, b := e.rawResponses(t, "ana", next); st != 200 {
		t.Fatalf("the provider refused the next request: %d %s", st, b)
	}
	reqs = e.provider.Requests()
	var kinds []string
	for _, it := range gjson.GetBytes(reqs[len(reqs)-1], "input").Array() {
		k := it.Get("type").String()
		if k == "" {
			k = it.Get("role").String()
		}
		kinds = append(kinds, k)
	}
	if got := strings.Join(kinds, " "); got != "user reasoning function_call function_call_output message user" {
		t.Errorf("input %s\n%s", got, reqs[len(reqs)-1])
	}
}

func TestResumeResponsesFromStoredResponse(t *testing.T) {
	// The app continues from a stored response: the follow-up does too,
	// with the call's result, and the answer's id is the follow-up's, whose
	// history holds it.
	e := newResumeEnv(t)
	step1 := testkit.Fixture(t, "openai-responses", "reasoning-encrypted-step1.sse")
	e.provider.Enqueue(testkit.Reply{Events: testkit.SSEEvents(step1)}, testkit.Reply{Events: testkit.SSEEvents(testkit.Fixture(t, "openai-responses", "reasoning-encrypted-step4.sse"))})
	params := responsesAsk("What is 12 + 7?")
	params.PreviousResponseID = openai.String("resp_before")
	run, final := e.responsesRun(t, "ana", params)
	l := run.waitLink(t)
	e.waitingShown(t, l, true)
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if err := run.wait(t); err != nil {
		t.Fatal(err)
	}
	reqs := e.provider.Requests()
	firstID := gjson.Get(string(testkit.SSEEvents(step1)[len(testkit.SSEEvents(step1))-1]), "response.id").String()
	if len(reqs) != 2 || gjson.GetBytes(reqs[1], "previous_response_id").String() == "resp_before" {
		t.Fatalf("follow-up: %s", reqs[len(reqs)-1])
	}
	if out := gjson.GetBytes(reqs[1], "input.0"); out.Get("type").String() != "function_call_output" || out.Get("output").String() != "The person confirmed. Calculated." {
		t.Errorf("follow-up input: %s", gjson.GetBytes(reqs[1], "input").Raw)
	}
	if final.ID == "" || final.ID == firstID {
		t.Errorf("the answer's id is %q, the held response's %q", final.ID, firstID)
	}
}

func TestResumeDecline(t *testing.T) {
	e := newResumeEnv(t)
	setupPost(e)
	e.provider.Enqueue(testkit.Reply{Events: streamEvents(nil, del7)}, chatReply("Alright, I left post 7 as it is."))
	run, acc := e.chatRun(t, "ana", userAsks("Delete post 7."))
	l := run.waitLink(t)
	e.waitingShown(t, l, true)
	if st := e.answerOnly(ana, l, "decline"); st != http.StatusSeeOther {
		t.Fatalf("decline: %d", st)
	}
	if err := run.wait(t); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(acc.Choices[0].Message.Content, "Alright, I left post 7 as it is.") {
		t.Errorf("the app read %q", acc.Choices[0].Message.Content)
	}
	reqs := e.provider.Requests()
	if len(reqs) != 2 || toolResult(reqs[1], "call_del7") != declined {
		t.Fatalf("follow-up: %s", reqs[len(reqs)-1])
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Errorf("a declined call ran")
	}
}

func TestResumeFormSubmitted(t *testing.T) {
	e := newResumeEnv(t)
	e.provider.Enqueue(testkit.Reply{Events: streamEvents(nil, draftTitleOnly)}, chatReply("Your draft is saved."))
	run, acc := e.chatRun(t, "ana", userAsks("Draft launch notes."))
	l := run.waitLink(t)
	e.waitingShown(t, l, true)
	_, _, s := e.view(ana, l)
	id := s.Holds[0].ID
	answer := url.Values{"title": {"Launch notes"}, "body": {"PERSON-BODY-TEXT"}, "status": {"draft"}}
	if st, body := e.formPost(ana, l, id, s.Tokens[id], answer, false); st != http.StatusSeeOther {
		t.Fatalf("submit: %d %s", st, body)
	}
	if err := run.wait(t); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(acc.Choices[0].Message.Content, "Your draft is saved.") {
		t.Errorf("the app read %q", acc.Choices[0].Message.Content)
	}
	reqs := e.provider.Requests()
	if len(reqs) != 2 || toolResult(reqs[1], "call_draft") != "The person filled in: title, body, status. Drafted." {
		t.Fatalf("follow-up: %s", reqs[len(reqs)-1])
	}
	if strings.Contains(string(reqs[1]), "PERSON-BODY-TEXT") {
		t.Errorf("the person's values reached the model")
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the app ran %d times", n)
	}
}

func TestResumeTwoHoldsAnsweredAtDifferentTimes(t *testing.T) {
	e := newResumeEnv(t)
	setupPost(e)
	mail := call{"call_mail", "send_email", `{"to":"team@example.com","subject":"Post 7"}`, false}
	e.provider.Enqueue(testkit.Reply{Events: streamEvents(nil, del7, mail)}, chatReply("Deleted, and the team knows."))
	run, acc := e.chatRun(t, "ana", userAsks("Delete post 7 and tell the team."))
	l := run.waitLink(t)
	e.waitingShown(t, l, true)
	_, _, s := e.view(ana, l)
	if len(s.Holds) != 2 {
		t.Fatalf("holds: %+v", s.Holds)
	}
	if st, _ := e.answer(ana, l, s.Holds[0].ID, s.Tokens[s.Holds[0].ID], "confirm", nil); st != http.StatusSeeOther {
		t.Fatalf("first answer: %d", st)
	}
	// One answer of two: the stream still waits, nothing ran, the provider
	// was not asked again, and the page still says the assistant waits.
	e.waitingShown(t, l, true)
	run.stillOpen(t)
	if n, m := len(e.app.Calls()), len(e.provider.Requests()); n != 0 || m != 1 {
		t.Fatalf("after one answer: %d runs, %d provider requests", n, m)
	}
	if st, _ := e.answer(ana, l, s.Holds[1].ID, s.Tokens[s.Holds[1].ID], "confirm", nil); st != http.StatusSeeOther {
		t.Fatalf("second answer: %d", st)
	}
	if err := run.wait(t); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(acc.Choices[0].Message.Content, "Deleted, and the team knows.") {
		t.Errorf("the app read %q", acc.Choices[0].Message.Content)
	}
	reqs := e.provider.Requests()
	if len(reqs) != 2 || toolResult(reqs[1], "call_del7") != confirmedRemoved || toolResult(reqs[1], "call_mail") != "The person confirmed. Sent." {
		t.Fatalf("follow-up: %s", reqs[len(reqs)-1])
	}
	if n := len(e.app.Calls()); n != 2 {
		t.Errorf("the app ran %d times", n)
	}
}

func TestResumeWaitPasses(t *testing.T) {
	// A wait that passes ends the stream as without waiting; the next
	// request restores the history as always.
	e := newEnv(t, envOptions{handler: "resume_wait 200ms\n\t\tresume_keepalive 20ms"})
	setupPost(e)
	e.provider.Enqueue(testkit.Reply{Events: streamEvents([]string{"I'll delete it."}, del7)})
	params := userAsks("Delete my old meetup draft.")
	acc := streamWith(t, e.client("ana"), params)
	c := acc.Choices[0]
	l := link(t, c.Message.Content)
	if c.FinishReason != "stop" || !strings.HasSuffix(c.Message.Content, l) || acc.Usage.TotalTokens != 30 {
		t.Errorf("finish %q, content %q, usage %+v", c.FinishReason, c.Message.Content, acc.Usage)
	}
	if n := len(e.provider.Requests()); n != 1 {
		t.Errorf("the provider was asked %d times", n)
	}
	_, _, s := e.view(ana, l)
	if s.Holds[0].State != "waiting" {
		t.Errorf("hold %s", s.Holds[0].State)
	}
	e.waitingShown(t, l, false)
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if got := toolResult(e.next(t, "ana", c.Message, "Thanks"), "call_del7"); got != confirmedRemoved {
		t.Errorf("restored %q", got)
	}
}

func TestResumeClientHangsUp(t *testing.T) {
	e := newResumeEnv(t)
	setupPost(e)
	e.provider.Enqueue(testkit.Reply{Events: streamEvents(nil, del7)})
	run, _ := e.chatRun(t, "ana", userAsks("Delete post 7."))
	l := run.waitLink(t)
	e.waitingShown(t, l, true)
	run.stop() // the app closes the connection
	if err := run.wait(t); !errors.Is(err, context.Canceled) {
		t.Errorf("the app's stream ended with %v", err)
	}
	// The wait ends; the hold is untouched and still answerable.
	e.waitingShown(t, l, false)
	_, _, s := e.view(ana, l)
	if s.Holds[0].State != "waiting" || len(e.app.Calls()) != 0 || len(e.provider.Requests()) != 1 {
		t.Fatalf("hold %s, %d runs, %d provider requests", s.Holds[0].State, len(e.app.Calls()), len(e.provider.Requests()))
	}
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the app ran %d times", n)
	}
	if n := len(e.provider.Requests()); n != 1 {
		t.Errorf("the provider was asked again after the app left: %d requests", n)
	}
}

func TestResumeProviderFailsOnFollowUp(t *testing.T) {
	e := newResumeEnv(t)
	setupPost(e)
	e.provider.Enqueue(testkit.Reply{Events: streamEvents([]string{"I'll delete it."}, del7)},
		testkit.Reply{Status: http.StatusInternalServerError, Body: []byte(`{"error":{"message":"upstream broke"}}`)})
	run, acc := e.chatRun(t, "ana", userAsks("Delete my old meetup draft."))
	l := run.waitLink(t)
	e.waitingShown(t, l, true)
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if err := run.wait(t); err != nil {
		t.Fatalf("the stream broke: %v", err)
	}
	c := acc.Choices[0]
	if !strings.HasSuffix(c.Message.Content, "Toolgate could not continue: the provider answered HTTP 500.") || c.FinishReason != "stop" {
		t.Errorf("finish %q, content %q", c.FinishReason, c.Message.Content)
	}
	if strings.Contains(c.Message.Content, "upstream broke") {
		t.Errorf("the provider's error reached the app")
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the app ran %d times", n)
	}
}

func TestResumeKeepAlivesAndStreamCap(t *testing.T) {
	// One stream may wait on this route: it gets keep-alives (SSE comments)
	// while it waits; a second held answer meanwhile ends at once.
	e := newResumeEnv(t, "resume_max_streams 1")
	setupPost(e)
	e.app.SetRecord("/posts/8", `{"title":"Eight","status":"draft"}`)
	e.provider.Serve("first", testkit.Reply{Events: streamEvents(nil, del7)})
	e.provider.Serve("second", testkit.Reply{Events: streamEvents(nil, call{"call_del8", "delete_post", `{"post":8}`, false})})
	first := `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Delete post 7."}]}`
	req, err := http.NewRequest("POST", e.apiURL+"/v1/chat/completions", strings.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	req = req.WithContext(rctx)
	req.Header.Set("X-User-Id", "ana")
	req.Header.Set(testkit.ReplyKeyHeader, "first")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	var l string
	keepAlives := 0
	for keepAlives < 3 && lines.Scan() {
		line := lines.Text()
		if found := linkRe.FindString(line); found != "" {
			l = found
		}
		if strings.HasPrefix(line, ":") {
			if line != ": toolgate: waiting for the person's answer" {
				t.Errorf("keep-alive %q", line)
			}
			keepAlives++
		}
	}
	if l == "" || keepAlives < 3 {
		t.Fatalf("link %q, %d keep-alives: %v", l, keepAlives, lines.Err())
	}
	// The second stream finds the cap reached: it ends without waiting.
	sreq, _ := http.NewRequest("POST", e.apiURL+"/v1/chat/completions", strings.NewReader(strings.Replace(first, "7", "8", 1)))
	sreq.Header.Set("X-User-Id", "ana")
	sreq.Header.Set(testkit.ReplyKeyHeader, "second")
	sctx, scancel := context.WithTimeout(context.Background(), bound)
	defer scancel()
	sresp, err := http.DefaultClient.Do(sreq.WithContext(sctx))
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, sresp)
	if !strings.HasSuffix(body, "data: [DONE]\n\n") || strings.Contains(body, ": toolgate") || !linkRe.MatchString(body) {
		t.Errorf("the second stream:\n%s", body)
	}
	// The first still waits, and goes on once answered.
	e.provider.Serve("first", chatReply(resumeReply))
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	if !strings.Contains(rest.String(), jsonString(resumeReply)[1:len(jsonString(resumeReply))-1]) || !strings.HasSuffix(rest.String(), "data: [DONE]\n\n") {
		t.Errorf("the first stream went on with:\n%s", rest.String())
	}
}

func TestResumeRepeatedCallSharesTheCard(t *testing.T) {
	// Without waiting, the model calls delete_post again before the person
	// answered (the app retried): a link of the repeat's own, to the same
	// card; the person answers once, on either link.
	e := newEnv(t, envOptions{})
	setupPost(e)
	l, msg := e.hold(t, "ana")
	e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", call{"call_again", "delete_post", `{ "post": 7 }`, false})})
	params := userAsks("Delete my old meetup draft.")
	params.Messages = append(params.Messages, msg.ToParam())
	got, err := e.client("ana").Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	again := linkRe.FindString(got.Choices[0].Message.Content)
	if again == "" || again == l {
		t.Fatalf("the repeat shows %q (the first link %q)", again, l)
	}
	_, _, first := e.view(ana, l)
	_, _, repeat := e.view(ana, again)
	if len(repeat.Holds) != 1 || repeat.Holds[0].Card.Sentence != first.Holds[0].Card.Sentence || repeat.Holds[0].State != "waiting" {
		t.Errorf("the repeat's page: %+v", repeat.Holds)
	}
	if st := e.answerOnly(ana, again, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	for _, link := range []string{l, again} {
		if _, _, s := e.view(ana, link); len(s.Holds) != 1 || s.Holds[0].State != "settled" {
			t.Errorf("%s after the answer: %+v", link, s.Holds)
		}
	}
	// Answered: the same call again is a new one.
	l3, _ := e.hold(t, "ana")
	if l3 == "" || l3 == l || l3 == again {
		t.Errorf("after the answer the call got %q", l3)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the app ran %d times", n)
	}
}
