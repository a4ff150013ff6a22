package gate

import (
	"context"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// reload replaces the rig's policy with testPolicy edited by replacing
// from with to, as a config reload of a changed file does.
func (r *rig) reload(from, to string) {
	r.t.Helper()
	src := strings.ReplaceAll(testPolicy, "APP", r.app.URL)
	edited := strings.Replace(src, from, to, 1)
	if edited == src {
		r.t.Fatalf("%q is not in the test policy", from)
	}
	p, err := policies.Parse("policy.yaml", []byte(edited))
	if err != nil {
		r.t.Fatalf("reloading the policy: %v", err)
	}
	r.swapPolicy(p)
}

// TestPolicyReloadedBetweenHoldAndConfirm: a hold records the versions of
// its policy and action; when the policy is reloaded before the person
// confirms, the call runs only if its action is unchanged, and otherwise
// the model and the person's page read that the policy changed.
func TestPolicyReloadedBetweenHoldAndConfirm(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           string // what the model reads; removed when it runs
	}{
		{"another action edited", "url: APP/drafts", "url: APP/v2/drafts", removed},
		{"its reply edited", "reply: Removed.", "reply: Gone.", "The person confirmed. Gone."},
		{"its endpoint changed", "url: APP/posts/{post}\n    reply", "url: APP/archive/{post}\n    reply", outcomePolicyChanged},
		{"now a form", "effect: destructive\n    schema:\n      type: object\n      properties:\n        post: {type: integer}\n      required: [post]\n    card:\n      reason: Delete this post?\n      record: APP/posts/{post}\n      rows:\n        Post: title\n",
			"effect: write\n    ask_for_missing: true\n    schema:\n      type: object\n      properties:\n        post: {type: integer}\n      required: [post]\n", outcomePolicyChanged},
		{"its card changed", "rows:\n        Post: title", "rows:\n        Post: title\n        Author: author", outcomePolicyChanged},
		{"removed", "  delete_post:", "  remove_post:", outcomePolicyDropped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOptions{})
			r.app.SetRecord("/posts/7", `{"title":"Seven","author":"ana"}`)
			step, v := r.hold(ana, call(0, 7))
			if step == "" {
				t.Fatalf("not held: %+v", v)
			}
			h := r.step(step)[0]
			if h.PolicyVersion != r.policy.Version() || h.ActionVersion != r.policy.Action("delete_post").Version() || h.PolicyVersion == "" {
				t.Fatalf("hold versions %q/%q, want the policy's %q/%q", h.PolicyVersion, h.ActionVersion, r.policy.Version(), r.policy.Action("delete_post").Version())
			}
			old := r.policy.Version()
			r.reload(strings.ReplaceAll(tc.from, "APP", r.app.URL), strings.ReplaceAll(tc.to, "APP", r.app.URL))
			if r.policy.Version() == old {
				t.Fatal("the reloaded policy has the old version")
			}
			view, err := r.gate.Answer(context.Background(), step, h.ID, ana, store.AnswerConfirm)
			if err != nil {
				t.Fatalf("confirm: %v", err)
			}
			wantResults(t, r.restore(ana, step, false), tc.want)
			runs := r.runs(h.ID)
			if tc.want == outcomePolicyChanged || tc.want == outcomePolicyDropped {
				if runs != 0 || len(r.app.Calls()) != 0 {
					t.Errorf("ran %d times (%d requests to the app) after the policy changed", runs, len(r.app.Calls()))
				}
				if view.Result.Kind != ResultNotRun || view.Result.Why != NotRunPolicyChanged {
					t.Errorf("the person's page reads %+v, want not_run because the policy changed", view.Result)
				}
				return
			}
			if runs != 1 {
				t.Errorf("ran %d times, want once", runs)
			}
			if view.Result.Kind != ResultDone {
				t.Errorf("the person's page reads %+v, want done", view.Result)
			}
		})
	}
}

// TestPolicyReloadedBetweenHoldAndSubmit: the same for a form: a submit
// after the action's endpoint changed runs nothing.
func TestPolicyReloadedBetweenHoldAndSubmit(t *testing.T) {
	r := newRig(t, rigOptions{})
	step, v := r.hold(ana, call(0, 0))
	if step == "" {
		t.Fatalf("not held: %+v", v)
	}
	h := r.step(step)[0]
	if h.Kind != store.KindForm {
		t.Fatalf("held as %s, want a form", h.Kind)
	}
	r.reload("url: "+r.app.URL+"/drafts", "url: "+r.app.URL+"/v2/drafts")
	view, err := r.gate.Submit(context.Background(), step, h.ID, ana, "", map[string][]string{"body": {"Text"}}, nil, false)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	wantResults(t, r.restore(ana, step, false), outcomePolicyChanged)
	if n := len(r.app.Calls()); n != 0 {
		t.Errorf("%d requests to the app after the policy changed", n)
	}
	if view.Result.Kind != ResultNotRun || view.Result.Why != NotRunPolicyChanged {
		t.Errorf("the person's page reads %+v, want not_run because the policy changed", view.Result)
	}
}
