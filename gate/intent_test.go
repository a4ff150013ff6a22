package gate

import (
	"context"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// One card per intent: while a hold waits, the same call again attaches to
// it: it is a hold of its own step (its own link), sharing the first
// hold's card; once that is answered, a repeat is a new call.

func TestSameCallAttachesToTheWaitingHold(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	step, first := r.hold(ana, call(0, 1))
	if first.Step != step {
		t.Errorf("Verdict.Step = %q, want %q", first.Step, step)
	}
	primary := r.step(step)[0]
	// The same call again, its arguments written otherwise: a link of its
	// own, to the same card.
	again := call(5, 1)
	again.Arguments = []byte(`{ "post" : 1 }`)
	step2, v := r.hold(ana, again)
	if step2 == step || v.Step != step2 || !strings.Contains(v.Text, "Delete this post?") || v.Pass[0] || len(v.Refusals) != 0 {
		t.Fatalf("repeat: step %q (first %q), verdict %+v", step2, step, v)
	}
	if hs := r.step(step2); len(hs) != 1 || primaryOf(hs[0]) != primary.ID || hs[0].CallID != "call_5" || hs[0].Fingerprint != primary.Fingerprint {
		t.Errorf("the repeat's step: %+v", hs)
	}
	// Another post, another person, the same owner in another tenant: new
	// cards.
	for _, tc := range []struct {
		who  Person
		call provider.Call
	}{
		{ana, call(0, 2)},
		{Person{Owner: "bo", Tenant: "acme"}, call(0, 1)},
		{Person{Owner: "ana", Tenant: "other"}, call(0, 1)},
	} {
		if s, v := r.hold(tc.who, tc.call); s == "" || s == step || v.Step != s || primaryOf(r.step(s)[0]) != "" {
			t.Errorf("%+v %s: step %q, verdict %+v", tc.who, tc.call.Arguments, s, v)
		}
	}
	// Answered, a repeat is a new call.
	r.confirm(step, primary.ID)
	step3, v := r.hold(ana, call(0, 1))
	if step3 == "" || step3 == step || v.Step != step3 || primaryOf(r.step(step3)[0]) != "" {
		t.Errorf("after the answer: step %q, verdict %+v", step3, v)
	}
	if n := r.runs(primary.ID); n != 1 {
		t.Errorf("ran %d times", n)
	}
	if n := len(r.app.Calls()); n != 1 {
		t.Errorf("the app ran %d times", n)
	}
}

func TestRepeatBesideANewCall(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	step, _ := r.hold(ana, call(0, 1))
	// The repeat and a new call in one response: one step and one link,
	// the repeat sharing the first card, the new call with a card of its
	// own.
	v := r.front(ana).Hold(context.Background(), []provider.Call{call(0, 1), call(1, 2)}, []byte(`{"role":"assistant","content":null,"tool_calls":[]}`), provider.Kept{})
	if v.Step == "" || v.Step == step || strings.Count(v.Text, "/h/") != 1 || !strings.Contains(v.Text, "/h/"+v.Step) {
		t.Fatalf("verdict %+v", v)
	}
	hs := r.step(v.Step)
	if len(hs) != 2 || primaryOf(hs[0]) != r.step(step)[0].ID || primaryOf(hs[1]) != "" {
		t.Errorf("the new step: %+v", hs)
	}
	if n := len(r.step(step)); n != 1 {
		t.Errorf("the first step has %d holds", n)
	}
}

// A repeat in another conversation is a step of that conversation: its
// link restores its own assistant message and call ids only, and what
// either conversation does (moving on) settles only its own holds.
func TestRepeatInAnotherConversationKeepsToItsOwn(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	one := []byte(`{"role":"assistant","content":"conversation one","tool_calls":[]}`)
	two := []byte(`{"role":"assistant","content":"conversation two","tool_calls":[]}`)
	step1 := r.holdIn(r.front(ana), one, call(0, 1), call(1, 0))
	step2 := r.holdIn(r.front(ana), two, call(7, 1))
	if step2 == "" || step2 == step1 {
		t.Fatalf("conversation 2 was given the link %q; conversation 1's is %q", step2, step1)
	}
	res, ok := r.front(ana).Restore(context.Background(), step2, false)
	if !ok || string(res.Message) != string(two) || len(res.Results) != 1 || res.Results[0].CallID != "call_7" {
		t.Fatalf("conversation 2 restores %s with %+v", res.Message, res.Results)
	}
	// Conversation 2 moves on: conversation 1's holds still wait.
	if got := r.restore(ana, step2, true); len(got) != 1 || got[0] != OutcomeMovedOn {
		t.Errorf("conversation 2 read %q", got)
	}
	for _, h := range r.step(step1) {
		if h.State != store.Waiting {
			t.Errorf("conversation 1's %s was settled by conversation 2: %s %q", h.CallID, h.State, h.Outcome)
		}
	}
	// A repeat made again, then conversation 1 moves on: the repeat still
	// waits, and is answered on its own link: it runs once, for itself.
	step3 := r.holdIn(r.front(ana), two, call(8, 1))
	if got := r.restore(ana, step1, true); len(got) != 2 || got[0] != OutcomeMovedOn {
		t.Fatalf("conversation 1 read %q", got)
	}
	h3 := r.step(step3)[0]
	if h3.State != store.Waiting || h3.CallID != "call_8" {
		t.Fatalf("conversation 2's repeat is %s (%s) after conversation 1 moved on", h3.State, h3.CallID)
	}
	r.confirm(step3, h3.ID)
	r.settled(h3.ID)
	if got := r.restore(ana, step3, false); len(got) != 1 || got[0] != "The person confirmed. Removed." {
		t.Errorf("conversation 2 read %q", got)
	}
	if n := r.app.Calls(); len(n) != 1 {
		t.Errorf("the app ran %d times", len(n))
	}
}

// The person answers one card for both conversations: the action runs
// once, and each conversation reads the outcome under its own call id.
func TestRepeatSharesTheFirstCardsAnswer(t *testing.T) {
	for _, via := range []string{"first link", "repeat's link"} {
		t.Run(via, func(t *testing.T) {
			r := newRig(t, rigOptions{})
			r.app.SetRecord("/posts/1", `{"title":"One"}`)
			one := []byte(`{"role":"assistant","content":"conversation one","tool_calls":[]}`)
			two := []byte(`{"role":"assistant","content":"conversation two","tool_calls":[]}`)
			step1 := r.holdIn(r.front(ana), one, call(0, 1))
			step2 := r.holdIn(r.front(ana), two, call(7, 1))
			if step2 == step1 {
				t.Fatalf("conversation 2 was given conversation 1's link")
			}
			// The repeat's page shows the same card, waiting.
			v, err := r.gate.View(context.Background(), step2, ana, "")
			if err != nil || len(v.Holds) != 1 || v.Holds[0].Card == nil || v.Holds[0].Card.Sentence != "Delete this post?" || len(v.Holds[0].Answers) == 0 {
				t.Fatalf("the repeat's page: %+v, %v", v, err)
			}
			answer, step := r.step(step1)[0], step1
			if via != "first link" {
				answer, step = r.step(step2)[0], step2
			}
			r.confirm(step, answer.ID)
			first := r.settled(r.step(step1)[0].ID)
			r.settled(r.step(step2)[0].ID)
			want := "The person confirmed. Removed."
			if got := r.restore(ana, step1, true); len(got) != 1 || got[0] != want {
				t.Errorf("conversation 1 read %q", got)
			}
			res, ok := r.front(ana).Restore(context.Background(), step2, true)
			if !ok || string(res.Message) != string(two) || len(res.Results) != 1 || res.Results[0].CallID != "call_7" || res.Results[0].Content != want {
				t.Errorf("conversation 2 restores %s with %+v", res.Message, res.Results)
			}
			if n := len(r.app.Calls()); n != 1 || r.runs(first.ID) != 1 {
				t.Errorf("the app ran %d times", n)
			}
			// A second answer on either link is refused.
			for _, s := range []string{step1, step2} {
				if _, err := r.gate.Answer(context.Background(), s, r.step(s)[0].ID, ana, store.AnswerConfirm); Status(err) != 409 {
					t.Errorf("a second confirm on %s: %v", s, err)
				}
			}
		})
	}
}

// A repeat attaches only where the very same request would run: another
// route's policy, another protocol, another version of the action each
// get a card of their own, which the first card's answer does not settle.
func TestRepeatAttachesOnlyWhereTheSameRequestWouldRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		front func(r *rig) *Front
	}{
		{"another_route", func(r *rig) *Front {
			shop := r.parsePolicy("shop.yaml", func(s string) string {
				return strings.ReplaceAll(s, "url: "+r.app.URL+"/posts/{post}", "url: "+r.app.URL+"/shopitems/{post}")
			})
			r.routes = map[string]*policies.Policy{"shop.yaml": shop}
			return r.gate.Front(shop, "shop.yaml", func() Person { return ana }, "openai-chat")
		}},
		{"another_app", func(r *rig) *Front {
			// The same action, word for word, in another app's policy: a
			// policy identifies a route (whatever the action's version).
			shop := r.parsePolicy("shop.yaml", func(s string) string { return strings.Replace(s, "app: Test blog", "app: Test shop", 1) })
			r.routes = map[string]*policies.Policy{"shop.yaml": shop}
			return r.gate.Front(shop, "shop.yaml", func() Person { return ana }, "openai-chat")
		}},
		{"another_protocol", func(r *rig) *Front {
			return r.gate.Front(r.policy, "policy.yaml", func() Person { return ana }, "anthropic")
		}},
		{"another_action_version", func(r *rig) *Front {
			r.reload("method: DELETE", "method: POST")
			return r.front(ana)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOptions{})
			r.app.SetRecord("/posts/1", `{"title":"One"}`)
			r.app.SetRecord("/shopitems/1", `{"title":"One"}`)
			step1 := r.holdIn(r.front(ana), nil, call(0, 1))
			other := tc.front(r)
			step2 := r.holdIn(other, nil, call(7, 1))
			if step2 == "" || step2 == step1 {
				t.Fatalf("the repeat was given the first card's link")
			}
			second := r.step(step2)[0]
			r.confirm(step1, r.step(step1)[0].ID)
			r.settled(r.step(step1)[0].ID)
			if h, _ := r.db.Get(context.Background(), second.ID); h.State != store.Waiting {
				t.Errorf("the first card's answer settled the repeat: %s %q", h.State, h.Outcome)
			}
			if got := r.restore(ana, step2, false); len(got) != 0 && got[0] != OutcomeWaiting {
				t.Errorf("the repeat reads %q", got)
			}
		})
	}
}

// holdIn makes the model call calls through front, in the conversation
// whose assistant message is message (a default one when nil), and
// returns the step id its waiting text links to.
func (r *rig) holdIn(front *Front, message []byte, calls ...provider.Call) string {
	r.t.Helper()
	if message == nil {
		message = []byte(`{"role":"assistant","content":null,"tool_calls":[]}`)
	}
	v := front.Hold(context.Background(), calls, message, provider.Kept{})
	i := strings.Index(v.Text, "/h/")
	if i < 0 {
		r.t.Fatalf("nothing held: %+v", v)
	}
	return v.Text[i+3 : i+3+26]
}

// Once the person answered the card, the same card on a repeat's link is
// answered: an answer there is refused, even while the card's own step
// still waits for its other calls (so the action has not run yet).
func TestAnsweredCardIsNotAnsweredAgainOnARepeatsLink(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	step1 := r.holdIn(r.front(ana), nil, call(0, 1), call(1, 0))
	step2 := r.holdIn(r.front(ana), []byte(`{"role":"assistant","content":"two","tool_calls":[]}`), call(7, 1))
	primary, repeat := r.step(step1)[0], r.step(step2)[0]
	r.confirm(step1, primary.ID)
	if _, err := r.gate.Answer(context.Background(), step2, repeat.ID, ana, store.AnswerConfirm); Status(err) != 409 {
		t.Errorf("confirming the answered card again on the repeat's link: %v", err)
	}
	// The first conversation moves on: its step completes and runs; the
	// repeat reads the same.
	r.restore(ana, step1, true)
	r.settled(primary.ID)
	r.settled(repeat.ID)
	if got := r.restore(ana, step2, false); len(got) != 1 || got[0] != "The person confirmed. Removed." {
		t.Errorf("the repeat reads %q", got)
	}
	if n := len(r.app.Calls()); n != 1 {
		t.Errorf("the app ran %d times", n)
	}
}

// Two repeats attached to one card, whose conversation then moves on:
// the person confirms on both repeats' links. The attachments answer as
// one (the first answer takes the group, the second is 409), the action
// runs once, and the other repeat reads what came of it. Found by
// TestReleaseModel (seed 419647816991994602): each used to run.
func TestAttachmentsOfAnEndedCardAnswerAsOne(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	one := []byte(`{"role":"assistant","content":"conversation one","tool_calls":[]}`)
	two := []byte(`{"role":"assistant","content":"conversation two","tool_calls":[]}`)
	three := []byte(`{"role":"assistant","content":"conversation three","tool_calls":[]}`)
	step1 := r.holdIn(r.front(ana), one, call(0, 1))
	step2 := r.holdIn(r.front(ana), two, call(7, 1))
	step3 := r.holdIn(r.front(ana), three, call(8, 1))
	if got := r.restore(ana, step1, true); len(got) != 1 || got[0] != OutcomeMovedOn {
		t.Fatalf("conversation 1 read %q", got)
	}
	h2, h3 := r.step(step2)[0], r.step(step3)[0]
	if primaryOf(h2) == "" || primaryOf(h2) != primaryOf(h3) {
		t.Fatalf("the repeats are not attached to one card: %q %q", primaryOf(h2), primaryOf(h3))
	}
	r.confirm(step3, h3.ID)
	if _, err := r.gate.Answer(context.Background(), step2, h2.ID, ana, store.AnswerConfirm); Status(err) != 409 {
		t.Fatalf("the second confirmation, on the other repeat's link: %v (status %d), want 409", err, Status(err))
	}
	r.settled(h2.ID)
	r.settled(h3.ID)
	if n := r.app.Calls(); len(n) != 1 {
		t.Fatalf("the app ran %d times, want once", len(n))
	}
	for _, step := range []string{step2, step3} {
		if got := r.restore(ana, step, false); len(got) != 1 || got[0] != "The person confirmed. Removed." {
			t.Errorf("conversation of %s read %q", step, got)
		}
	}
}
