package gate

import (
	"context"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/interceptor"
)

// One card per intent: while a hold waits, the same call again attaches to
// it and repeats its link; once it is answered, a repeat is a new call.

func TestSameCallAttachesToTheWaitingHold(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	step, first := r.hold(ana, call(0, 1))
	if first.Step != step {
		t.Errorf("Verdict.Step = %q, want %q", first.Step, step)
	}
	// The same call again, its arguments written otherwise: the same link,
	// no second card.
	again := call(5, 1)
	again.Arguments = []byte(`{ "post" : 1 }`)
	step2, v := r.hold(ana, again)
	if step2 != step || v.Step != "" || !strings.Contains(v.Text, "Delete this post?") || v.Pass[0] || len(v.Refusals) != 0 {
		t.Fatalf("repeat: step %q (first %q), verdict %+v", step2, step, v)
	}
	if n := len(r.step(step)); n != 1 {
		t.Errorf("the step has %d holds", n)
	}
	// Another post, another person, the same owner in another tenant: new
	// cards.
	for _, tc := range []struct {
		who  Person
		call interceptor.Call
	}{
		{ana, call(0, 2)},
		{Person{Owner: "bo", Tenant: "acme"}, call(0, 1)},
		{Person{Owner: "ana", Tenant: "other"}, call(0, 1)},
	} {
		if s, v := r.hold(tc.who, tc.call); s == "" || s == step || v.Step != s {
			t.Errorf("%+v %s: step %q, verdict %+v", tc.who, tc.call.Arguments, s, v)
		}
	}
	// Answered, a repeat is a new call.
	r.confirm(step, r.step(step)[0].ID)
	step3, v := r.hold(ana, call(0, 1))
	if step3 == "" || step3 == step || v.Step != step3 {
		t.Errorf("after the answer: step %q, verdict %+v", step3, v)
	}
	if n := r.runs(r.step(step)[0].ID); n != 1 {
		t.Errorf("ran %d times", n)
	}
}

func TestRepeatBesideANewCall(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	r.app.SetRecord("/posts/2", `{"title":"Two"}`)
	step, _ := r.hold(ana, call(0, 1))
	// The repeat and a new call in one response: the new call gets its own
	// step and link, the repeat the old link; nothing waits in one step
	// alone, so no stream waits for it (Step is empty).
	v := r.front(ana).Hold(context.Background(), []interceptor.Call{call(0, 1), call(1, 2)}, []byte(`{"role":"assistant","content":null,"tool_calls":[]}`))
	if v.Step != "" || strings.Count(v.Text, "/h/") != 2 || !strings.Contains(v.Text, "/h/"+step) {
		t.Fatalf("verdict %+v", v)
	}
	if n := len(r.step(step)); n != 1 {
		t.Errorf("the first step has %d holds", n)
	}
}
