package gate

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// inboxSteps pages through who's whole inbox, limit at a time, and
// returns the steps in the order read.
func inboxSteps(t *testing.T, r *rig, who Person, limit int) ([]string, []InboxPage) {
	t.Helper()
	var steps []string
	var pages []InboxPage
	cursor := ""
	for range 20 {
		p, err := r.gate.Inbox(context.Background(), who, "", cursor, limit)
		if err != nil {
			t.Fatalf("%+v's inbox: %v", who, err)
		}
		pages = append(pages, p)
		for _, w := range p.Waiting {
			steps = append(steps, w.Step)
		}
		if cursor = p.Next; cursor == "" {
			return steps, pages
		}
	}
	t.Fatalf("%+v's inbox does not end", who)
	return nil, nil
}

// TestInbox (issue 19 §3): the inbox lists everything waiting for the
// person in their tenant — their own cards and forms (the approvers' list
// left the forms out) and the cards they may approve — newest first,
// paged; nothing of another tenant, nor of another person they may not
// answer; an answered step leaves it.
func TestInbox(t *testing.T) {
	r := newApproverRig(t)
	ctx := context.Background()
	hold := func(who Person, c ...any) string {
		t.Helper()
		r.clock.Advance(time.Second)
		var step string
		switch x := c[0].(type) {
		case int:
			step, _ = r.hold(who, call(0, x))
		default:
			step, _ = r.hold(who, noteCall(0))
		}
		if step == "" {
			t.Fatalf("%+v's call was not held", who)
		}
		return step
	}
	anaCard := hold(ana, 7)
	anaForm := hold(ana, 0)
	boNote := hold(bo, "note")   // four_eyes: editors answer it, not ana
	boForm := hold(bo, 0)        // bo's own: nobody else's
	globex := hold(anaGlobex, 7) // the same owner id in another tenant
	globexForm := hold(anaGlobex, 0)
	anaNote := hold(ana, "note") // her own under four_eyes: she may decline it

	got, pages := inboxSteps(t, r, ana, 2)
	if want := []string{anaNote, anaForm, anaCard}; !slices.Equal(got, want) {
		t.Fatalf("ana's inbox %v, want %v (newest first)", got, want)
	}
	if len(pages) != 2 || len(pages[0].Waiting) != 2 || pages[1].Next != "" {
		t.Errorf("pages of 2: %+v", pages)
	}
	first := pages[0].Waiting
	if first[0].Kind != store.KindCard || !first[0].FourEyes || first[0].Approver || first[1].Kind != store.KindForm || first[1].Sentence == "" {
		t.Errorf("ana's first page: %+v", first)
	}
	if got, _ := inboxSteps(t, r, anaGlobex, 0); !slices.Equal(got, []string{globexForm, globex}) {
		t.Errorf("ana of globex's inbox %v", got)
	}
	if got, _ := inboxSteps(t, r, cyEditor, 1); !slices.Equal(got, []string{anaNote, boNote, anaCard}) {
		t.Errorf("cy (editor) inbox %v, want the approvable cards of acme only", got)
	}
	if got, _ := inboxSteps(t, r, bo, 0); !slices.Equal(got, []string{boForm, boNote}) {
		t.Errorf("bo's inbox %v, want his own only", got)
	}
	if got, _ := inboxSteps(t, r, Person{Owner: "zed", Tenant: "acme"}, 0); len(got) != 0 {
		t.Errorf("someone with nothing waiting reads %v", got)
	}
	if _, err := r.gate.Inbox(ctx, ana, "", "bm90IGEgY3Vyc29y!", 0); !errors.Is(err, ErrCursor) {
		t.Errorf("a forged cursor: %v", err)
	}
	// Answered, a card leaves the inbox, and its step the index.
	if _, err := r.gate.Answer(ctx, anaCard, r.step(anaCard)[0].ID, ana, store.AnswerDecline); err != nil {
		t.Fatal(err)
	}
	if got, _ := inboxSteps(t, r, ana, 0); !slices.Equal(got, []string{anaNote, anaForm}) {
		t.Errorf("ana's inbox after answering %v", got)
	}
	if filed, err := r.db.Indexed(ctx, inboxKey(ana)); err != nil || slices.Contains(filed, anaCard) {
		t.Errorf("ana's index after a read: %v, %v", filed, err)
	}
	// Past their TTL, holds wait no more: the inbox is empty, though no
	// sweeper ran.
	r.clock.Advance(24 * time.Hour)
	for _, who := range []Person{ana, cyEditor, bo, anaGlobex} {
		if got, _ := inboxSteps(t, r, who, 0); len(got) != 0 {
			t.Errorf("%+v's inbox past the TTL: %v", who, got)
		}
	}
}

// TestInboxKeyNamesTheIdentity: the own inbox's key carries the tenant and
// the owner; two differing never share one.
func TestInboxKeyNamesTheIdentity(t *testing.T) {
	keys := map[string]Person{}
	for _, p := range []Person{ana, anaGlobex, {Owner: "ana"}, {Owner: "bo", Tenant: "acme"}, {Owner: "cme", Tenant: "a"}, {Owner: "a", Tenant: "cme"}} {
		k := inboxKey(p)
		if q, ok := keys[k]; ok {
			t.Errorf("%+v and %+v share the inbox key %q", p, q, k)
		}
		keys[k] = p
	}
}
