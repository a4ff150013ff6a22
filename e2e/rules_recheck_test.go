package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"

	"github.com/toolgate/toolgate/internal/testkit"
)

// The confirm-time re-check of an action's rules, end to end on the model
// routes: the app is the provider API's SDK client (openai-go Chat and
// Responses, anthropic-sdk-go), the person confirms in Chromium, signed
// in through the platform's sign-in service (approvers_test.go's
// staffPages, which gives the answerer's roles).
//
// delete_post's card shows only the post's title, so that a change of the
// record's status or lock leaves the card as the person read it: what
// stops the run is the rules deciding differently now, not a changed
// card.
var recheckPolicyYAML = strings.NewReplacer(
	"        Post: title\n        Status: status\n", "        Post: title\n",
	"    reply: Removed.\n", `    reply: Removed.
    rules:
      - when: record.status == "draft"
        then: allow
      - name: locked
        when: has(record.locked) && record.locked == true
        then: deny
        because: The post is locked; nothing ran.
      - name: editors
        when: '"editor" in person.roles'
        then: allow
      - name: review
        when: record.status == "review"
        then: ask
        approvers: {roles: [editor]}
      - when: record.status == "broken" && record.nope == 1
        then: deny
        because: never read
`,
).Replace(policyYAML)

// heldOn makes the model call delete_post for post 7 in ana's
// conversation on api, through the api's SDK client, and returns the link
// the app's client read and a function that sends the conversation on
// (the app's next request, through the same client) and returns the tool
// result the model read for the held call.
func (e *env) heldOn(t *testing.T, api string) (string, func() string) {
	t.Helper()
	const followUp = "MODEL-NEXT"
	switch api {
	case "chat":
		l, msg := e.hold(t, "ana")
		if l == "" {
			t.Fatalf("no link in %q", msg.Content)
		}
		return l, func() string { return toolResult(e.next(t, "ana", msg, "Well?"), "call_del7") }
	case "responses":
		// Each response its own id, as a provider gives it: the app's next
		// request names it (previous_response_id).
		e.responses++
		id := fmt.Sprintf("resp_held%d", e.responses)
		c := e.client("ana")
		e.provider.Enqueue(testkit.Reply{Body: responsesJSON(id, "call_r7", "delete_post", `{"post":7}`)})
		got, err := c.Responses.New(ctx, responsesAsk("Delete it."))
		if err != nil {
			t.Fatal(err)
		}
		if calls := functionCalls(*got); len(calls) != 0 {
			t.Fatalf("a gated call reached the app: %v", calls)
		}
		return link(t, got.OutputText()), func() string {
			e.provider.Enqueue(testkit.Reply{Body: responsesText(id+"_next", followUp)})
			next := responsesAsk("Well?")
			next.PreviousResponseID = openai.String(got.ID)
			r, err := c.Responses.New(ctx, next)
			if err != nil {
				t.Fatalf("next request: %v", err)
			}
			if r.OutputText() != followUp {
				t.Errorf("the app read %q, want the model's reply", r.OutputText())
			}
			reqs := e.provider.Requests()
			return responsesOutput(reqs[len(reqs)-1], "call_r7")
		}
	case "anthropic":
		c := e.anthropicClient("ana")
		e.provider.Enqueue(testkit.Reply{Body: []byte(`{"id":"msg_held","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_7","name":"delete_post","input":{"post":7}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`)})
		params := anthropicAsk("Delete it.")
		msg, err := c.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if uses := toolUses(*msg); len(uses) != 0 {
			t.Fatalf("a gated call reached the app: %v", uses)
		}
		return link(t, textOf(*msg)), func() string {
			e.provider.Enqueue(testkit.Reply{Body: []byte(`{"id":"msg_next","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"` + followUp + `"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`)})
			params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("Well?")))
			m, err := c.Messages.New(ctx, params)
			if err != nil {
				t.Fatalf("next request: %v", err)
			}
			if textOf(*m) != followUp {
				t.Errorf("the app read %q, want the model's reply", textOf(*m))
			}
			reqs := e.provider.Requests()
			return anthropicResult(reqs[len(reqs)-1], "toolu_7")
		}
	}
	t.Fatalf("no API %q", api)
	return "", nil
}

// TestRulesRecheckAtConfirmEndToEnd: ana's delete_post is held (the
// effect's card, or the review rule's, which editors may answer too); the
// person reads the card in Chromium; the record changes so that the rules
// decide otherwise now (deny, allow, another rule's approvers, or an
// evaluation error), while the card reads the same; the person confirms.
// Nothing runs (the action's endpoint got nothing), the page says why,
// and the model reads it in the app's next request, on each provider API.
//
// The re-check decides for the person the call was decided for (its
// owner, with the roles the route gave them), not for the one who
// answers: an editor confirming ana's review card runs it, although for
// the editor the editors rule would allow the call without a card.
func TestRulesRecheckAtConfirmEndToEnd(t *testing.T) {
	for _, want := range []string{"        Post: title\n    run:", "name: review"} {
		if !strings.Contains(recheckPolicyYAML, want) {
			t.Fatalf("the rules were not written into the policy: no %q", want)
		}
	}
	e := newEnv(t, envOptions{policy: recheckPolicyYAML, pagesRoute: staffPages(t), handler: "roles {http.request.header.X-Roles}"})
	long := browserOptions{timeout: 5 * time.Minute}
	bAna := browserWith(t, ana, long)
	bCy := browserWith(t, cy, long)
	const (
		published = `{"title":"Spring meetup","status":"published"}`
		review    = `{"title":"Spring meetup","status":"review"}`
		notRun    = "Not run. The record changed while waiting for your answer."
	)
	for _, c := range []struct {
		name          string
		before, after string // the record when the call is held, and when the person confirms ("" unchanged)
		cy            bool   // cy-editor confirms (else ana)
		page          string // the page's status after confirming
		model         string // the tool result the model reads
	}{
		{name: "deny now", before: published, after: `{"title":"Spring meetup","status":"published","locked":true}`, page: notRun, model: recordChangedText},
		{name: "allow now", before: published, after: `{"title":"Spring meetup","status":"draft"}`, page: notRun, model: recordChangedText},
		{name: "another approver now", before: review, after: published, page: notRun, model: recordChangedText},
		{name: "evaluation error now", before: published, after: `{"title":"Spring meetup","status":"broken"}`, page: "Not run. The gate could not run it.", model: confirmTimeRuleError},
		{name: "decided for the owner", before: review, cy: true, page: "Done. Removed.", model: "The person confirmed. Removed."},
	} {
		for _, api := range rulesAPIs {
			t.Run(api+" "+c.name, func(t *testing.T) {
				e.app.SetRecord("/posts/7", c.before)
				ran := len(e.app.Calls())
				l, next := e.heldOn(t, api)
				b, who := bAna, "ana"
				if c.cy {
					b, who = bCy, cy.name
				}
				if err := chromedp.Do(b, chromedp.Navigate(l), chromedp.WaitVisible(chromedp.CSS(`button.confirm`))); err != nil {
					t.Fatal(err)
				}
				if got := text(t, b, `.sentence`); got != "Delete this post? This cannot be undone." {
					t.Errorf("sentence = %q", got)
				}
				if got := text(t, b, `dl`); !strings.Contains(got, "Spring meetup") {
					t.Errorf("rows = %q", got)
				}
				if c.after != "" {
					e.app.SetRecord("/posts/7", c.after) // between card and confirm
				}
				if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`button.confirm`)), chromedp.WaitVisible(chromedp.CSS(`.status`))); err != nil {
					t.Fatal(err)
				}
				if got := strings.Join(strings.Fields(text(t, b, `.status`)), " "); got != c.page {
					t.Errorf("the page says %q, want %q", got, c.page)
				}
				calls := e.app.Calls()[ran:]
				if c.model == "The person confirmed. Removed." {
					if len(calls) != 1 || calls[0].Method != "DELETE" || calls[0].URI != "/posts/7" || calls[0].Header.Get("X-Toolgate-Person") != who {
						t.Errorf("the action's endpoint got %+v, want DELETE /posts/7 once, as %s", calls, who)
					}
				} else if len(calls) != 0 {
					t.Errorf("the action's endpoint got %d calls, want none", len(calls))
				}
				if got := next(); got != c.model {
					t.Errorf("the model read %q, want %q", got, c.model)
				}
			})
		}
	}
}
