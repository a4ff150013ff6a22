package gate

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// forgeState signs a requestState for ana naming the record id, as only a
// holder of the gate's key could.
func (r *rig) forgeState(kind, id, tool, args string) string {
	r.t.Helper()
	digest, err := argsDigest([]byte(args))
	if err != nil {
		r.t.Fatal(err)
	}
	return r.gate.signState(mcpState{Kind: kind, ID: id, Person: r.gate.personMAC(ana), Tool: tool, Digest: digest, Expires: r.clock.Now().Add(time.Minute).UnixMilli()})
}

// TestMCPMismatchedStateUsesNothing: a validly signed requestState that
// names a record it was not issued for (ana's card hold rather than a
// ticket; her card's ticket under another kind of state; a kind the gate
// never issues) is refused before anything is claimed. The card still
// waits, ana confirms it, and her client's own retry runs it once. A card
// state naming a card hold of a model route uses nothing either.
func TestMCPMismatchedStateUsesNothing(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		ticket     bool // names the card's ticket, else the card hold itself
		want       string
	}{
		{"card state naming the card hold", "card", false, "does not match"},
		{"form state naming the card hold", "form", false, "does not match"},
		{"relay state naming the card hold", "relay", false, "does not match"},
		{"form state naming the card's ticket", "form", true, "does not match"},
		{"relay state naming the card's ticket", "relay", true, "does not match"},
		{"unknown kind naming the card's ticket", "other", true, "unknown kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOptions{})
			r.policy = mcpPolicy(t, r)
			r.app.SetRecord("/posts/1", `{"title":"One"}`)
			state, step := r.askMCPConfirm(ana)
			card := r.step(step)[0]
			issued, ok := r.gate.readState(state)
			if !ok {
				t.Fatal("the issued state does not read")
			}
			id := card.ID
			if tc.ticket {
				id = issued.ID
			}
			wantRefused(t, r.retryMCPConfirm(ana, r.forgeState(tc.kind, id, "delete_post", `{"post":1}`)), tc.want)
			for _, id := range []string{card.ID, issued.ID} {
				h, err := r.db.Get(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				if h.State != store.Waiting {
					t.Errorf("the %s is %s (%s by %q), want waiting", h.Kind, h.State, h.Answer, h.AnsweredBy)
				}
			}
			r.confirm(step, card.ID)
			if v := r.retryMCPConfirm(ana, state); !v.Rewritten || v.Result != nil || string(v.Arguments) != `{"post":1}` {
				t.Errorf("ana's confirmed retry after the forged one: rewritten=%v %s", v.Rewritten, v.Result)
			}
		})
	}

	// A card hold of ana's on a model route, which names its tool call as
	// a card's ticket names its hold.
	r := newRig(t, rigOptions{})
	r.policy = mcpPolicy(t, r)
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	step, v := r.hold(ana, call(0, 1))
	if step == "" {
		t.Fatalf("not held: %+v", v)
	}
	held := r.step(step)[0]
	wantRefused(t, r.retryMCPConfirm(ana, r.forgeState("card", held.ID, "delete_post", `{"post":1}`)), "does not match")
	r.wantWaiting(step)
}
