package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolgate/toolgate/internal/testkit"
)

// One card per intent never crosses apps or protocols: the same call on
// another route (another app's policy, whose delete_post runs another
// endpoint) or on another protocol gets a card of its own. Answering the
// first card runs only the first app's request, and the other card still
// waits, then runs its own request when answered.
func TestRepeatOnAnotherAppOrProtocolGetsItsOwnCard(t *testing.T) {
	e := newEnv(t, envOptions{shop: true})
	setupPost(e)
	e.app.SetRecord("/shopitems/7", `{"title":"Spring meetup","status":"draft"}`)
	blog, _ := e.hold(t, "ana")
	if blog == "" {
		t.Fatal("nothing held on the blog's route")
	}

	// The shop's app, its SDK pointed at its own route, makes the same call.
	e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", del7)})
	shopClient := openai.NewClient(option.WithBaseURL(e.shopURL+"/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0), option.WithHeader("X-User-Id", "ana"))
	got, err := shopClient.Chat.Completions.New(ctx, userAsks("Delete item 7."))
	if err != nil {
		t.Fatal(err)
	}
	shop := linkRe.FindString(got.Choices[0].Message.Content)

	// The blog's app on Anthropic makes it too.
	e.provider.Enqueue(testkit.Reply{Body: []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
		`"content":[{"type":"tool_use","id":"toolu_del7","name":"delete_post","input":{"post":7}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)})
	msg, err := e.anthropicClient("ana").Messages.New(ctx, anthropicAsk("Delete my old meetup draft."))
	if err != nil {
		t.Fatal(err)
	}
	anthropicLink := linkRe.FindString(textOf(*msg))

	if shop == "" || shop == blog || anthropicLink == "" || anthropicLink == blog || anthropicLink == shop {
		t.Fatalf("links: blog %q, shop %q, anthropic %q", blog, shop, anthropicLink)
	}
	if _, _, s := e.view(ana, shop); s.App != "Test shop" || len(s.Holds) != 1 || s.Holds[0].State != "waiting" {
		t.Fatalf("the shop's page: %+v", s)
	}
	if st := e.answerOnly(ana, blog, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm the blog's card: %d", st)
	}
	for _, l := range []string{shop, anthropicLink} {
		if _, _, s := e.view(ana, l); len(s.Holds) != 1 || s.Holds[0].State != "waiting" {
			t.Errorf("after the blog's card was confirmed, %s reads %+v", l, s.Holds)
		}
	}
	if st := e.answerOnly(ana, shop, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm the shop's card: %d", st)
	}
	var uris []string
	for _, c := range e.app.Calls() {
		if c.Method == "DELETE" {
			uris = append(uris, c.URI)
		}
	}
	if strings.Join(uris, " ") != "/posts/7 /shopitems/7" {
		t.Errorf("the app ran %q, want the blog's delete, then the shop's", uris)
	}
}

// One card per intent never crosses conversations: the same call in a
// second conversation has its own link; that conversation's next request
// carries only its own assistant message and call, and moving on there
// leaves the first conversation's holds waiting. Answering the card once
// runs it once, and a conversation that repeated it reads the outcome
// under its own call id.
func TestRepeatInAnotherConversationRestoresOnlyItsOwn(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	note := call{"call_note", "send_email", `{"to":"sam@example.com","subject":"Hi"}`, false}
	first, _ := e.hold(t, "ana", del7, note)

	repeatIn := func(callID string) (string, openai.ChatCompletionMessage) {
		t.Helper()
		e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", call{callID, "delete_post", `{"post":7}`, false})})
		got, err := e.client("ana").Chat.Completions.New(ctx, userAsks("Tidy up my drafts."))
		if err != nil {
			t.Fatal(err)
		}
		msg := got.Choices[0].Message
		return linkRe.FindString(msg.Content), msg
	}
	second, msg2 := repeatIn("call_two")
	if second == "" || second == first {
		t.Fatalf("the second conversation was given %q; the first has %q", second, first)
	}
	body := e.next(t, "ana", msg2, "Never mind.")
	for _, leak := range []string{"call_del7", "call_note", "send_email", "sam@example.com"} {
		if strings.Contains(string(body), leak) {
			t.Errorf("the second conversation's request carries the first's %q:\n%s", leak, body)
		}
	}
	if got := toolResult(body, "call_two"); !strings.Contains(got, "moved on") {
		t.Errorf("the second conversation reads %q", got)
	}
	_, _, s := e.view(ana, first)
	if len(s.Holds) != 2 {
		t.Fatalf("the first conversation's page: %+v", s.Holds)
	}
	for _, h := range s.Holds {
		if h.State != "waiting" {
			t.Errorf("moving on in the second conversation settled the first's %s: %s", h.ID, h.State)
		}
	}

	// A third conversation repeats it; the person confirms on its link and
	// declines the note on the first conversation's page.
	third, msg3 := repeatIn("call_three")
	if third == "" || third == first || third == second {
		t.Fatalf("the third conversation was given %q", third)
	}
	if st := e.answerOnly(ana, third, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm on the third link: %d", st)
	}
	for _, h := range s.Holds {
		if h.ID != s.Holds[0].ID {
			if st, b := e.answer(ana, first, h.ID, s.Tokens[h.ID], "decline", nil); st != http.StatusSeeOther {
				t.Fatalf("declining the note: %d %s", st, b)
			}
		}
	}
	body = e.next(t, "ana", msg3, "")
	if got := toolResult(body, "call_three"); got != "The person confirmed. Removed." {
		t.Errorf("the third conversation reads %q:\n%s", got, body)
	}
	if strings.Contains(string(body), "call_del7") || strings.Contains(string(body), "call_note") {
		t.Errorf("the third conversation's request carries the first's calls:\n%s", body)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the app ran %d times", n)
	}
}
