package gate

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// The checks of the answer path and the MCP front, each with a case that
// fails without it (see .ci/mutation).

// wantWaiting fails unless every hold of a step still waits and the app
// got no action request.
func (r *rig) wantWaiting(stepID string) {
	r.t.Helper()
	for _, h := range r.step(stepID) {
		if h.State != store.Waiting {
			r.t.Errorf("hold %d is %s (%s by %q), want waiting", h.Position, h.State, h.Answer, h.AnsweredBy)
		}
	}
	if n := len(r.app.Calls()); n != 0 {
		r.t.Errorf("the app got %d action requests, want none", n)
	}
}

// TestAnotherOwnerInTheTenantIsRefused: bo, signed in to ana's tenant,
// and ana of another tenant can neither see, answer, submit nor restore
// her step, even with its link and the ids of its holds. Nothing runs, the
// holds still wait, and ana answers them after.
func TestAnotherOwnerInTheTenantIsRefused(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	ctx := context.Background()
	step, _ := r.hold(ana, call(0, 1), call(1, 0))
	holds := r.step(step)
	// bo shares ana's tenant; ana of globex shares her id in another.
	for _, other := range []Person{bo, anaGlobex} {
		if _, err := r.gate.View(ctx, step, other, ""); !errors.Is(err, ErrNotOwner) {
			t.Errorf("%v viewing: %v, want ErrNotOwner", other, err)
		}
		for _, choice := range []string{store.AnswerConfirm, store.AnswerDecline} {
			if _, err := r.gate.Answer(ctx, step, holds[0].ID, other, choice); !errors.Is(err, ErrNotOwner) {
				t.Errorf("%v answering %s: %v, want ErrNotOwner", other, choice, err)
			}
		}
		if _, err := r.gate.Answer(ctx, step, holds[1].ID, other, store.AnswerDecline); !errors.Is(err, ErrNotOwner) {
			t.Errorf("%v declining the form: %v, want ErrNotOwner", other, err)
		}
		if _, err := r.gate.Submit(ctx, step, holds[1].ID, other, "", map[string][]string{"body": {"Spring"}}, nil, false); !errors.Is(err, ErrNotOwner) {
			t.Errorf("%v submitting: %v, want ErrNotOwner", other, err)
		}
		if _, err := r.gate.Submit(ctx, step, holds[1].ID, other, "", nil, []byte(`{"body":"Spring"}`), false); !errors.Is(err, ErrNotOwner) {
			t.Errorf("%v submitting JSON: %v, want ErrNotOwner", other, err)
		}
		if res := r.restore(other, step, true); res != nil {
			t.Errorf("%v's request restored %q", other, res)
		}
	}
	r.wantWaiting(step)
	if Status(ErrNotOwner) != 409 {
		t.Errorf("another person's answer is %d, want 409", Status(ErrNotOwner))
	}
	r.confirm(step, holds[0].ID)
	if _, err := r.gate.Submit(ctx, step, holds[1].ID, ana, "", map[string][]string{"body": {"Spring"}}, nil, false); err != nil {
		t.Fatalf("ana submitting: %v", err)
	}
	if n := r.runs(holds[0].ID); n != 1 {
		t.Errorf("ana's confirm ran %d times", n)
	}
}

// TestAnswerNamesTheHoldsOwnStep: a hold answered under the link of
// another step (ana's own, with a hold of its own) is no such hold: the
// answer is bound to the link the person opened.
func TestAnswerNamesTheHoldsOwnStep(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	ctx := context.Background()
	first, _ := r.hold(ana, call(0, 1), call(1, 0))
	second, _ := r.hold(ana, call(0, 2))
	holds := r.step(first)
	if _, err := r.gate.Answer(ctx, second, holds[0].ID, ana, store.AnswerConfirm); !errors.Is(err, ErrNotFound) {
		t.Errorf("confirming under another step's link: %v, want ErrNotFound", err)
	}
	if _, err := r.gate.Submit(ctx, second, holds[1].ID, ana, "", map[string][]string{"body": {"Spring"}}, nil, false); !errors.Is(err, ErrNotFound) {
		t.Errorf("submitting under another step's link: %v, want ErrNotFound", err)
	}
	r.wantWaiting(first)
	r.wantWaiting(second)
}

// TestAnswerFitsTheHoldsKind: a card takes confirm or decline, a form
// takes submit (Submit), decline or later; any other answer is refused
// (400) and claims nothing.
func TestAnswerFitsTheHoldsKind(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	ctx := context.Background()
	step, _ := r.hold(ana, call(0, 1), call(1, 0))
	holds := r.step(step)
	card, form := holds[0], holds[1]
	if _, err := r.gate.Submit(ctx, step, card.ID, ana, "", map[string][]string{"body": {"Spring"}}, nil, false); !errors.Is(err, ErrChoice) {
		t.Errorf("a form's answer to a card: %v, want ErrChoice", err)
	}
	for _, choice := range []string{store.AnswerSubmit, store.AnswerLater, store.AnswerUsed, ""} {
		if _, err := r.gate.Answer(ctx, step, card.ID, ana, choice); !errors.Is(err, ErrChoice) {
			t.Errorf("card answered %q: %v, want ErrChoice", choice, err)
		}
	}
	for _, choice := range []string{store.AnswerConfirm, store.AnswerSubmit, store.AnswerUsed} {
		if _, err := r.gate.Answer(ctx, step, form.ID, ana, choice); !errors.Is(err, ErrChoice) {
			t.Errorf("form answered %q: %v, want ErrChoice", choice, err)
		}
	}
	r.wantWaiting(step)
	if Status(ErrChoice) != 400 {
		t.Errorf("an unknown answer is %d, want 400", Status(ErrChoice))
	}
}

// TestLateAnswersAreRefused: past the TTL a card's confirm and a form's
// answer are refused as expired (409), a form's before its fields are
// even checked: the person is not asked to fix a form that can no longer
// run.
func TestLateAnswersAreRefused(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	ctx := context.Background()
	step, _ := r.hold(ana, call(0, 1), call(1, 0))
	holds := r.step(step)
	r.clock.Advance(DefaultTTL)
	if _, err := r.gate.Answer(ctx, step, holds[0].ID, ana, store.AnswerConfirm); !errors.Is(err, store.ErrExpired) {
		t.Errorf("a late confirm: %v, want ErrExpired", err)
	}
	for name, values := range map[string]map[string][]string{
		"complete":       {"body": {"Spring"}},
		"missing fields": {},
	} {
		_, err := r.gate.Submit(ctx, step, holds[1].ID, ana, "", values, nil, false)
		if !errors.Is(err, store.ErrExpired) || Status(err) != 409 {
			t.Errorf("a late form (%s): %v, want ErrExpired (409)", name, err)
		}
	}
	if n := len(r.app.Calls()); n != 0 {
		t.Errorf("a late answer ran %d actions", n)
	}
	wantResults(t, r.restore(ana, step, false), OutcomeExpired, OutcomeExpired)
}

// TestConfirmedCardIsCheckedAgainstTheRecord: a card whose record changed
// while it waited runs nothing when confirmed; the model reads that it
// changed. The same record read the same way runs.
func TestConfirmedCardIsCheckedAgainstTheRecord(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	changed, _ := r.hold(ana, call(0, 1))
	same, _ := r.hold(ana, call(0, 2))
	r.app.SetRecord("/posts/1", `{"title":"One, renamed"}`)
	r.confirm(changed, r.step(changed)[0].ID)
	r.confirm(same, r.step(same)[0].ID)
	wantResults(t, r.restore(ana, changed, false), OutcomeChanged)
	wantResults(t, r.restore(ana, same, false), removed)
	calls := r.app.Calls()
	if len(calls) != 1 || calls[0].URI != "/posts/2" {
		t.Errorf("the app got %d action requests, want one for post 2", len(calls))
	}
}

// The MCP front's checks on a retry.

// mcpPolicy is the rig's policy with delete_post confirmed over MCP.
func mcpPolicy(t *testing.T, r *rig) *policies.Policy {
	t.Helper()
	src := strings.ReplaceAll(testPolicy, "APP", r.app.URL)
	src = strings.Replace(src, "    effect: destructive\n", "    effect: destructive\n    mcp: {confirm: true}\n", 1)
	p, err := policies.Parse("policy.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mcpFront is the MCP front of one request by who.
func (r *rig) mcpFront(who Person) *Front {
	return r.gate.MCPFront(r.policy, "policy.yaml", func() Person { return who }, 0, 0)
}

var (
	modernURL  = interceptor.ElicitModes{URL: true}
	modernForm = interceptor.ElicitModes{Form: true}
	stepLink   = regexp.MustCompile(`/h/([a-z2-7]{26})`)
)

// askMCPConfirm makes who's client call delete_post for post 1 and
// returns the requestState and the card's step.
func (r *rig) askMCPConfirm(who Person) (state, stepID string) {
	r.t.Helper()
	v := r.mcpFront(who).MCP(context.Background(), MCPCall{Name: "delete_post", Arguments: []byte(`{"post":1}`), Modern: true, Elicit: modernURL})
	state = gjson.GetBytes(v.Result, "requestState").String()
	m := stepLink.FindSubmatch(v.Result)
	if state == "" || m == nil {
		r.t.Fatalf("no confirmation asked: %s", v.Result)
	}
	return state, string(m[1])
}

// retryMCPConfirm is who's retry of a confirmation, accepted.
func (r *rig) retryMCPConfirm(who Person, state string) MCPVerdict {
	return r.mcpFront(who).MCP(context.Background(), MCPCall{
		Name: "delete_post", Arguments: []byte(`{"post":1}`), Modern: true, Elicit: modernURL, State: state,
		Responses: map[string][]byte{MCPConfirmKey: []byte(`{"action":"accept"}`)},
	})
}

// askMCPForm makes who's client call draft_post without a body and
// returns the requestState.
func (r *rig) askMCPForm(who Person) string {
	r.t.Helper()
	v := r.mcpFront(who).MCP(context.Background(), MCPCall{Name: "draft_post", Arguments: []byte(`{"title":"Hi"}`), Modern: true, Elicit: modernForm})
	state := gjson.GetBytes(v.Result, "requestState").String()
	if state == "" {
		r.t.Fatalf("no form asked: %s", v.Result)
	}
	return state
}

// answerMCPForm is who's retry with the form filled in.
func (r *rig) answerMCPForm(who Person, state string) MCPVerdict {
	return r.mcpFront(who).MCP(context.Background(), MCPCall{
		Name: "draft_post", Arguments: []byte(`{"title":"Hi"}`), Modern: true, Elicit: modernForm, State: state,
		Responses: map[string][]byte{MCPFormKey: []byte(`{"action":"accept","content":{"body":"Spring"}}`)},
	})
}

// wantRefused fails unless v answers the client with a tool error saying
// want, and sends nothing on to the server.
func wantRefused(t *testing.T, v MCPVerdict, want string) {
	t.Helper()
	if v.Rewritten || v.Result == nil || !gjson.GetBytes(v.Result, "isError").Bool() || !strings.Contains(string(v.Result), want) {
		t.Errorf("got rewritten=%v %s, want a tool error saying %q", v.Rewritten, v.Result, want)
	}
}

// TestMCPConfirmedBySomeoneElseDoesNotRun: a card that reads as confirmed
// but was answered by someone other than the caller runs nothing on the
// caller's retry. The pages let only the owner answer, so this is the
// check behind that one: the hold is answered here straight in the store.
func TestMCPConfirmedBySomeoneElseDoesNotRun(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.policy = mcpPolicy(t, r)
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	ctx := context.Background()
	state, step := r.askMCPConfirm(ana)
	id := r.step(step)[0].ID
	if _, err := r.db.Claim(ctx, id, store.Answer{Choice: store.AnswerConfirm, By: "bo"}); err != nil {
		t.Fatal(err)
	}
	if err := r.db.Settle(ctx, id, OutcomeMCPConfirmed); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, r.retryMCPConfirm(ana, state), "confirmed by someone else")

	// Confirmed by ana, the same retry runs.
	state, step = r.askMCPConfirm(ana)
	r.confirm(step, r.step(step)[0].ID)
	if v := r.retryMCPConfirm(ana, state); !v.Rewritten || v.Result != nil || string(v.Arguments) != `{"post":1}` {
		t.Errorf("ana's confirmed retry: rewritten=%v %s", v.Rewritten, v.Result)
	}
}

// TestMCPStateMustMatchItsTicket: a requestState that passes every check
// of its own (signature, person, tool, arguments) but names a ticket the
// gate issued for someone else, or a card hold rather than a ticket, runs
// nothing. Only a leaked key or a bug could sign one; the ticket is what
// the gate trusts.
func TestMCPStateMustMatchItsTicket(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.policy = mcpPolicy(t, r)
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	forge := func(kind, ticket, tool, args string) string {
		digest, err := argsDigest([]byte(args))
		if err != nil {
			t.Fatal(err)
		}
		return r.gate.signState(mcpState{Kind: kind, ID: ticket, Person: r.gate.personMAC(ana), Tool: tool, Digest: digest, Expires: r.clock.Now().Add(time.Minute).UnixMilli()})
	}
	bos, ok := r.gate.readState(r.askMCPForm(bo))
	if !ok {
		t.Fatal("bo's state does not read")
	}
	wantRefused(t, r.answerMCPForm(ana, forge("form", bos.ID, "draft_post", `{"title":"Hi"}`)), "does not match")

	// Ana's own card hold, for its own tool and arguments: a hold, not a
	// ticket.
	_, step := r.askMCPConfirm(ana)
	card := forge("card", r.step(step)[0].ID, "delete_post", `{"post":1}`)
	wantRefused(t, r.retryMCPConfirm(ana, card), "does not match")

	// A state the gate issued to ana runs.
	if v := r.answerMCPForm(ana, r.askMCPForm(ana)); !v.Rewritten || v.Result != nil {
		t.Errorf("ana's own state: rewritten=%v %s", v.Rewritten, v.Result)
	}
}

// TestMCPStateIsBoundToThePerson: a requestState retried by the same owner
// id in another tenant, or by another owner, is refused before its ticket
// is used: the person it was issued to can still redeem it.
func TestMCPStateIsBoundToThePerson(t *testing.T) {
	r := newRig(t, rigOptions{})
	state := r.askMCPForm(ana)
	for _, who := range []Person{{Owner: "ana", Tenant: "globex"}, {Owner: "ana"}, bo} {
		wantRefused(t, r.answerMCPForm(who, state), "issued to someone else")
	}
	if v := r.answerMCPForm(ana, state); !v.Rewritten || v.Result != nil || string(v.Arguments) != `{"title":"Hi","body":"Spring"}` {
		t.Errorf("ana's retry after the others: rewritten=%v %s %s", v.Rewritten, v.Arguments, v.Result)
	}
	wantRefused(t, r.answerMCPForm(ana, state), "already used")
}

// TestMCPStateIsBoundToTheCall: a requestState retried for other
// arguments or another tool is refused, and one not signed by this gate
// is not read at all.
func TestMCPStateIsBoundToTheCall(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.policy = mcpPolicy(t, r)
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	ctx := context.Background()
	state := r.askMCPForm(ana)
	answer := map[string][]byte{MCPFormKey: []byte(`{"action":"accept","content":{"body":"Spring"}}`)}
	v := r.mcpFront(ana).MCP(ctx, MCPCall{Name: "draft_post", Arguments: []byte(`{"title":"Other"}`), Modern: true, Elicit: modernForm, State: state, Responses: answer})
	wantRefused(t, v, "other arguments")
	v = r.mcpFront(ana).MCP(ctx, MCPCall{Name: "delete_post", Arguments: []byte(`{"title":"Hi"}`), Modern: true, Elicit: modernURL, State: state, Responses: answer})
	wantRefused(t, v, "another tool")
	other := New(Config{Store: r.db, Secret: []byte("another-secret-0123456789")})
	forged := other.signState(mcpState{Kind: "form", ID: "x", Person: other.personMAC(ana), Tool: "draft_post", Expires: r.clock.Now().Add(time.Minute).UnixMilli()})
	wantRefused(t, r.answerMCPForm(ana, forged), "not one this gate signed")
	if v := r.answerMCPForm(ana, state); !v.Rewritten {
		t.Errorf("the right retry after the wrong ones: %s", v.Result)
	}
}

// TestCallWithoutAnOwnerIsRefused: a gated call in a conversation nobody
// can be told to own is refused at once (the model reads why), not held
// for an answer no one could give.
func TestCallWithoutAnOwnerIsRefused(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	step, v := r.hold(Person{Tenant: "acme"}, call(0, 1), call(1, 0))
	if step != "" || len(v.Refusals) != 2 {
		t.Fatalf("held as step %q: %+v", step, v)
	}
	for _, ref := range v.Refusals {
		if !strings.Contains(ref.Content, "could not tell whose conversation") {
			t.Errorf("refusal %q", ref.Content)
		}
	}
	if got := r.events.refusals("no_owner"); got != 2 {
		t.Errorf("%d no_owner refusals counted, want 2", got)
	}
}

// TestMCPConfirmedCardIsCheckedAgain: a card confirmed over MCP whose
// record changed since runs nothing on the client's retry.
func TestMCPConfirmedCardIsCheckedAgain(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.policy = mcpPolicy(t, r)
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	state, step := r.askMCPConfirm(ana)
	r.confirm(step, r.step(step)[0].ID)
	r.app.SetRecord("/posts/1", `{"title":"One, renamed"}`)
	wantRefused(t, r.retryMCPConfirm(ana, state), OutcomeChanged)
}

// TestCallGivingAKeyTwiceIsRefused: a call whose arguments name a key twice
// is refused: the card would read one value and the app act on the other.
func TestCallGivingAKeyTwiceIsRefused(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	c := call(0, 1)
	c.Arguments = []byte(`{"post":1,"post":2}`)
	step, v := r.hold(ana, c)
	if step != "" || len(v.Refusals) != 1 || !strings.Contains(v.Refusals[0].Content, "give a key twice") {
		t.Errorf("held as step %q: %+v", step, v)
	}
}

// TestMCPCallerNobodyCanNameIsRefused: an MCP call without a caller is
// refused, not asked for.
func TestMCPCallerNobodyCanNameIsRefused(t *testing.T) {
	r := newRig(t, rigOptions{})
	v := r.mcpFront(Person{}).MCP(context.Background(), MCPCall{Name: "draft_post", Arguments: []byte(`{"title":"Hi"}`), Modern: true, Elicit: modernForm})
	wantRefused(t, v, "could not tell who is calling")
}

// TestMCPTicketNamesTheCallersOwnCard: a card ticket that names someone
// else's card hold (another owner's, or the same owner id's in another
// tenant) is refused as unknown: ana is not asked to confirm it, nor sent
// its link. Only a bug could issue one; the hold is checked again.
func TestMCPTicketNamesTheCallersOwnCard(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.policy = mcpPolicy(t, r)
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	ctx := context.Background()
	for _, other := range []Person{bo, {Owner: "ana", Tenant: "globex"}} {
		_, step := r.askMCPConfirm(other)
		theirs := r.step(step)[0]
		f := r.mcpFront(ana)
		f.Person() // the front's person, as its MCP call reads it first
		c := MCPCall{Name: "delete_post", Arguments: []byte(`{"post":1}`)}
		tk := f.ticket(c, theirs.Expires)
		tk.CallID, tk.Arguments = theirs.ID, theirs.Arguments
		state, err := f.issue(ctx, tk, "card", c, "")
		if err != nil {
			t.Fatal(err)
		}
		v := r.retryMCPConfirm(ana, state)
		wantRefused(t, v, "unknown to this gate")
		if strings.Contains(string(v.Result), step) {
			t.Errorf("%+v's link was sent to ana: %s", other, v.Result)
		}
	}
}
