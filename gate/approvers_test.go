package gate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// approverPolicy: delete_post may be answered by editors and by dee as
// well as its owner; send_note only by an approver (four_eyes); draft_post
// (a form) only by its owner.
const approverPolicy = "app: Test blog\nactions:\n" + testkit.DeletePostAction + `    approvers:
      roles: [editor]
      ids: [dee]
  send_note:
    effect: external
    card:
      reason: Send this note?
    run:
      url: APP/notes
    reply: Sent.
    approvers: {roles: [editor]}
    four_eyes: true
  draft_post:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        title: {type: string, title: Title}
        body: {type: string, title: Body}
      required: [title, body]
    run:
      url: APP/drafts
`

var (
	cyEditor  = Person{Owner: "cy", Tenant: "acme", Roles: []string{"viewer", "editor"}}
	dee       = Person{Owner: "dee", Tenant: "acme"}
	bo        = Person{Owner: "bo", Tenant: "acme", Roles: []string{"viewer"}}
	cyGlobex  = Person{Owner: "cy", Tenant: "globex", Roles: []string{"editor"}}
	anaGlobex = Person{Owner: "ana", Tenant: "globex"}
)

func newApproverRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t, rigOptions{})
	p, err := policies.Parse("policy.yaml", []byte(strings.ReplaceAll(approverPolicy, "APP", r.app.URL)))
	if err != nil {
		t.Fatal(err)
	}
	r.policy = p
	r.app.SetRecord("/posts/7", `{"title":"Spring meetup"}`)
	return r
}

func noteCall(i int) provider.Call {
	c := call(i, 7)
	c.Name = "send_note"
	c.Arguments = []byte(`{}`)
	c.Raw = []byte(`{"id":"` + c.ID + `","type":"function","function":{"name":"send_note","arguments":"{}"}}`)
	return c
}

// An editor of ana's tenant sees ana's card, says whose it is, confirms
// it, and the release runs as the editor; ana's model reads only the
// outcome.
func TestApproverConfirmsAnothersHold(t *testing.T) {
	r := newApproverRig(t)
	ctx := context.Background()
	step, _ := r.hold(ana, call(0, 7))
	v, err := r.gate.View(ctx, step, cyEditor, "")
	if err != nil {
		t.Fatalf("the editor viewing: %v", err)
	}
	if !v.Approver || len(v.Holds) != 1 || v.Holds[0].Owner != "ana" || !slices.Equal(v.Holds[0].Answers, []string{"confirm", "decline"}) {
		t.Fatalf("the editor's view: %+v", v)
	}
	if _, err := r.gate.Answer(ctx, step, v.Holds[0].ID, cyEditor, store.AnswerConfirm); err != nil {
		t.Fatalf("the editor confirming: %v", err)
	}
	calls := r.app.Calls()
	if len(calls) != 1 || calls[0].Header.Get("X-Toolgate-Person") != "cy" || calls[0].Header.Get("X-Toolgate-Tenant") != "acme" {
		t.Fatalf("release: %+v", calls)
	}
	if h := r.settled(v.Holds[0].ID); h.AnsweredBy != "cy" || h.Owner != "ana" {
		t.Errorf("answered by %q, owner %q", h.AnsweredBy, h.Owner)
	}
	wantResults(t, r.restore(ana, step, true), "The person confirmed. Removed.")
	// The owner sees the same hold as hers, answered.
	own, err := r.gate.View(ctx, step, ana, "")
	if err != nil || own.Approver || own.Holds[0].Answers != nil || own.Holds[0].Result.Kind != ResultDone {
		t.Errorf("ana's view after: %+v, %v", own, err)
	}
}

// Approvers named by id answer too; nobody else, and nobody in another
// tenant, sees or answers anything; the owner still may.
func TestWhoMayAnswer(t *testing.T) {
	r := newApproverRig(t)
	ctx := context.Background()
	step, _ := r.hold(ana, call(0, 7))
	hold := r.step(step)[0].ID
	for _, p := range []Person{bo, cyGlobex, anaGlobex, {Tenant: "acme", Roles: []string{"editor"}}} {
		if _, err := r.gate.View(ctx, step, p, ""); !errors.Is(err, ErrNotOwner) {
			t.Errorf("%+v viewing: %v, want ErrNotOwner", p, err)
		}
		if _, err := r.gate.Answer(ctx, step, hold, p, store.AnswerConfirm); !errors.Is(err, ErrNotOwner) {
			t.Errorf("%+v confirming: %v, want ErrNotOwner", p, err)
		}
		if w, err := r.gate.Waiting(ctx, p, ""); err != nil || len(w) != 0 {
			t.Errorf("%+v's list: %+v, %v", p, w, err)
		}
	}
	if n := len(r.app.Calls()); n != 0 {
		t.Fatalf("ran %d times", n)
	}
	if v, err := r.gate.View(ctx, step, dee, ""); err != nil || !v.Approver {
		t.Fatalf("dee (by id) viewing: %+v, %v", v, err)
	}
	if v, err := r.gate.View(ctx, step, ana, ""); err != nil || v.Approver || !slices.Equal(v.Holds[0].Answers, []string{"confirm", "decline"}) {
		t.Fatalf("ana viewing her own: %+v, %v", v, err)
	}
	if _, err := r.gate.Answer(ctx, step, hold, dee, store.AnswerDecline); err != nil {
		t.Fatalf("dee declining: %v", err)
	}
	if _, err := r.gate.Answer(ctx, step, hold, ana, store.AnswerConfirm); !errors.Is(err, store.ErrAnswered) {
		t.Errorf("ana confirming after dee declined: %v", err)
	}
	wantResults(t, r.restore(ana, step, true), OutcomeDeclined)
}

// With four_eyes the owner sees her card, may decline it but not confirm
// it; an editor confirms it. The app reads the waiting text as waiting
// for an approver.
func TestFourEyes(t *testing.T) {
	r := newApproverRig(t)
	ctx := context.Background()
	step, verdict := r.hold(ana, noteCall(0))
	if !strings.HasPrefix(verdict.Text, "Waiting for an approver's confirmation: Send this note?") {
		t.Errorf("waiting text %q", verdict.Text)
	}
	v, err := r.gate.View(ctx, step, ana, "")
	if err != nil || !v.Holds[0].FourEyes || !slices.Equal(v.Holds[0].Answers, []string{"decline"}) {
		t.Fatalf("ana's view: %+v, %v", v, err)
	}
	hold := v.Holds[0].ID
	if _, err := r.gate.Answer(ctx, step, hold, ana, store.AnswerConfirm); !errors.Is(err, ErrFourEyes) || Status(err) != 409 {
		t.Fatalf("ana confirming her own: %v (status %d)", err, Status(err))
	}
	if h := r.step(step)[0]; h.State != store.Waiting {
		t.Fatalf("the refused confirmation changed the hold: %+v", h)
	}
	if w, _ := r.gate.Waiting(ctx, ana, ""); len(w) != 0 {
		t.Errorf("ana's list holds her four-eyes call: %+v", w)
	}
	if w, _ := r.gate.Waiting(ctx, cyEditor, ""); len(w) != 1 || w[0].Hold != hold || w[0].Owner != "ana" || !w[0].Approver || w[0].Sentence != "Send this note?" {
		t.Fatalf("cy's list: %+v", w)
	}
	if _, err := r.gate.Answer(ctx, step, hold, cyEditor, store.AnswerConfirm); err != nil {
		t.Fatalf("cy confirming: %v", err)
	}
	if calls := r.app.Calls(); len(calls) != 1 || calls[0].Header.Get("X-Toolgate-Person") != "cy" {
		t.Errorf("release: %+v", calls)
	}

	// The owner may withdraw her own.
	step2, _ := r.hold(ana, noteCall(0))
	if _, err := r.gate.Answer(ctx, step2, r.step(step2)[0].ID, ana, store.AnswerDecline); err != nil {
		t.Fatalf("ana declining her own: %v", err)
	}
	if n := len(r.app.Calls()); n != 1 {
		t.Errorf("%d releases, want 1", n)
	}
}

// The list shows what waits for the person, oldest first, in their tenant
// only; a step nothing waits in any more leaves the list when read.
func TestWaitingList(t *testing.T) {
	r := newApproverRig(t)
	ctx := context.Background()
	first, _ := r.hold(ana, call(0, 7))
	r.clock.Advance(time.Second) // filed in this order
	second, _ := r.hold(bo, noteCall(0))
	other, _ := r.hold(anaGlobex, call(0, 7))
	formOnly, _ := r.hold(ana, call(0, 0))
	if first == "" || second == "" || other == "" || formOnly == "" {
		t.Fatal("a call was not held")
	}
	steps := func(w []WaitingHold) []string {
		var s []string
		for _, x := range w {
			s = append(s, x.Step)
		}
		return s
	}
	w, err := r.gate.Waiting(ctx, cyEditor, "")
	if err != nil || !slices.Equal(steps(w), []string{first, second}) {
		t.Fatalf("cy's list: %v, %v; want %v", steps(w), err, []string{first, second})
	}
	if w[0].Link != "http://gate.test/toolgate/h/"+first || w[0].App != "Test blog" || w[0].Sentence != "Delete this post?" || w[0].Action != "delete_post" {
		t.Errorf("first entry: %+v", w[0])
	}
	// Ana's own delete_post waits for her as well (no four_eyes); her form
	// is not on a list (its action has no approvers).
	if w, _ := r.gate.Waiting(ctx, ana, ""); !slices.Equal(steps(w), []string{first}) || w[0].Approver {
		t.Errorf("ana's list: %+v", w)
	}
	if w, _ := r.gate.Waiting(ctx, dee, ""); !slices.Equal(steps(w), []string{first}) {
		t.Errorf("dee's list: %v", steps(w))
	}
	if w, _ := r.gate.Waiting(ctx, cyGlobex, ""); !slices.Equal(steps(w), []string{other}) {
		t.Errorf("cy of globex's list: %v", steps(w))
	}
	if _, err := r.gate.Answer(ctx, first, r.step(first)[0].ID, cyEditor, store.AnswerDecline); err != nil {
		t.Fatal(err)
	}
	if w, _ := r.gate.Waiting(ctx, cyEditor, ""); !slices.Equal(steps(w), []string{second}) {
		t.Errorf("cy's list after answering: %v", steps(w))
	}
	filed, err := r.db.Indexed(ctx, approvalsKey("acme"))
	if err != nil || !slices.Equal(filed, []string{second}) {
		t.Errorf("acme's approvals after a read: %v, %v; want the answered step off", filed, err)
	}
}

// In a step of a card approvers may answer and a form only its owner may,
// an approver sees and answers the card alone.
func TestApproverSeesOnlyTheirs(t *testing.T) {
	r := newApproverRig(t)
	ctx := context.Background()
	step, _ := r.hold(ana, call(0, 7), call(1, 0))
	v, err := r.gate.View(ctx, step, cyEditor, "")
	if err != nil || len(v.Holds) != 1 || v.Holds[0].Action != "delete_post" {
		t.Fatalf("cy's view: %+v, %v", v, err)
	}
	form := r.step(step)[1]
	if _, err := r.gate.Answer(ctx, step, form.ID, cyEditor, store.AnswerDecline); !errors.Is(err, ErrNotOwner) {
		t.Errorf("cy declining ana's form: %v", err)
	}
	if _, err := r.gate.Submit(ctx, step, form.ID, cyEditor, "", map[string][]string{"title": {"x"}, "body": {"y"}}, nil, false); !errors.Is(err, ErrNotOwner) {
		t.Errorf("cy submitting ana's form: %v", err)
	}
	if own, _ := r.gate.View(ctx, step, ana, ""); len(own.Holds) != 2 {
		t.Errorf("ana sees %d holds, want 2", len(own.Holds))
	}
}

func TestConfirmedByRightPerson(t *testing.T) {
	open := &policies.Action{Approvers: &policies.Approvers{Roles: []string{"editor"}}}
	fourEyes := &policies.Action{Approvers: open.Approvers, FourEyes: true}
	ownerOnly := &policies.Action{}
	for _, tc := range []struct {
		by   string
		a    *policies.Action
		want bool
	}{
		{"ana", ownerOnly, true},
		{"cy", ownerOnly, false},
		{"ana", open, true},
		{"cy", open, true},
		{"ana", fourEyes, false},
		{"cy", fourEyes, true},
		{"", open, false},
		{"ana", nil, false},
	} {
		if got := confirmedByRightPerson(store.Hold{Owner: "ana", AnsweredBy: tc.by}, tc.a); got != tc.want {
			t.Errorf("answered by %q, %+v: %v, want %v", tc.by, tc.a, got, tc.want)
		}
	}
}
