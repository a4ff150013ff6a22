package gate

import (
	"context"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// A policy reloaded while an MCP client's form, card or relayed question
// waits: the client's retry goes on only under the version of the action
// it was asked under (gate/policyversion.go), as a page's answer does.

// reloadMCP replaces the rig's policy with mcpPolicy's edited by
// replacing from with to (APP standing for the app's URL), as a config
// reload of a changed file does.
func (r *rig) reloadMCP(from, to string) {
	r.t.Helper()
	src := strings.ReplaceAll(testPolicy, "APP", r.app.URL)
	src = strings.Replace(src, "    effect: destructive\n", "    effect: destructive\n    mcp: {confirm: true}\n", 1)
	from, to = strings.ReplaceAll(from, "APP", r.app.URL), strings.ReplaceAll(to, "APP", r.app.URL)
	edited := strings.Replace(src, from, to, 1)
	if edited == src {
		r.t.Fatalf("%q is not in the test policy", from)
	}
	p, err := policies.Parse("policy.yaml", []byte(edited))
	if err != nil {
		r.t.Fatalf("reloading the policy: %v", err)
	}
	r.policy = p
}

// ranAsAnswered fails unless v sends the form's call on with the person's
// value merged in.
func ranAsAnswered(t *testing.T, v MCPVerdict) {
	t.Helper()
	if !v.Rewritten || v.Result != nil || string(v.Arguments) != `{"title":"Hi","body":"Spring"}` {
		t.Errorf("got rewritten=%v %s %s, want the answered call to go on", v.Rewritten, v.Arguments, v.Result)
	}
}

// TestMCPPolicyReloadedBetweenFormAndAnswer: the policy is reloaded after
// an MCP client was asked for draft_post's form and before its answered
// retry. The call goes on only when draft_post itself is unchanged;
// otherwise the client reads that the policy changed (or no longer
// declares the action), the ticket is used, and nothing goes to the
// server. A decline still reads as the person's decline.
func TestMCPPolicyReloadedBetweenFormAndAnswer(t *testing.T) {
	const drafts = "url: APP/drafts\n    reply: Drafted."
	for _, tc := range []struct {
		name, from, to string
		answer         string // the form's answer; "" none
		want           string // the tool error; "" goes on
	}{
		{"another action edited", "reply: Removed.", "reply: Gone.", "accept", ""},
		{"its endpoint changed", drafts, "url: APP/v2/drafts\n    reply: Drafted.", "accept", outcomePolicyChanged},
		{"its schema changed", "body: {type: string, title: Body}", "body: {type: string, title: Body, maxLength: 100}", "accept", outcomePolicyChanged},
		{"now in shadow", drafts, drafts + "\n    mode: shadow", "accept", outcomePolicyChanged},
		{"removed", "  draft_post:", "  write_post:", "accept", outcomePolicyDropped},
		{"asked again", drafts, "url: APP/v2/drafts\n    reply: Drafted.", "", outcomePolicyChanged},
		{"declined", drafts, "url: APP/v2/drafts\n    reply: Drafted.", "decline", "The person declined to fill in body; nothing ran."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOptions{})
			state := r.askMCPForm(ana)
			st, _ := r.gate.readState(state)
			old := r.policy.Version()
			r.reload(strings.ReplaceAll(tc.from, "APP", r.app.URL), strings.ReplaceAll(tc.to, "APP", r.app.URL))
			if r.policy.Version() == old {
				t.Fatal("the reloaded policy has the old version")
			}
			c := MCPCall{Name: "draft_post", Arguments: []byte(`{"title":"Hi"}`), Modern: true, Elicit: modernForm, State: state}
			switch tc.answer {
			case "accept":
				c.Responses = map[string][]byte{MCPFormKey: []byte(`{"action":"accept","content":{"body":"Spring"}}`)}
			case "decline":
				c.Responses = map[string][]byte{MCPFormKey: []byte(`{"action":"decline"}`)}
			}
			v := r.mcpFront(ana).MCP(context.Background(), c)
			if tc.want == "" {
				ranAsAnswered(t, v)
				return
			}
			wantRefused(t, v, tc.want)
			if tk, err := r.db.Get(context.Background(), st.ID); err != nil || tk.State != store.Settled {
				t.Errorf("the form's ticket is %s (%v), want used", tk.State, err)
			}
			if n := r.events.decided["policy_changed"]; (tc.answer != "decline") != (n == 1) {
				t.Errorf("%d policy_changed decisions counted", n)
			}
			audited := 0
			for _, e := range r.auditLog() {
				if e.Kind == store.EventRefused && e.Reason == "policy_changed" {
					audited++
					if e.Owner != ana.Owner || e.Tenant != ana.Tenant || e.Action != "draft_post" || e.Detail != tc.want || e.PolicyVersion != r.policy.Version() {
						t.Errorf("audited %+v", e.Event)
					}
				}
			}
			if (tc.answer != "decline") != (audited == 1) {
				t.Errorf("%d policy_changed refusals audited", audited)
			}
		})
	}
}

// TestMCPFormTicketRecordsItsVersions: the ticket behind a form's
// requestState records the versions its question was asked under.
func TestMCPFormTicketRecordsItsVersions(t *testing.T) {
	r := newRig(t, rigOptions{})
	st, _ := r.gate.readState(r.askMCPForm(ana))
	tk, err := r.db.Get(context.Background(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tk.PolicyVersion == "" || tk.PolicyVersion != r.policy.Version() || tk.ActionVersion != r.policy.Action("draft_post").Version() {
		t.Errorf("ticket versions %q/%q, want %q/%q", tk.PolicyVersion, tk.ActionVersion, r.policy.Version(), r.policy.Action("draft_post").Version())
	}
}

// TestMCPPolicyReloadedBetweenConfirmAndRetry: a card confirmed over MCP,
// then the policy reloaded before the client's retry: the retry goes on
// only when delete_post is unchanged; a changed endpoint or card reads as
// a changed policy (not a changed record), a removed action as one the
// policy no longer declares, and nothing goes on.
func TestMCPPolicyReloadedBetweenConfirmAndRetry(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           string // "" goes on
	}{
		{"another action edited", "url: APP/drafts", "url: APP/v2/drafts", ""},
		{"its endpoint changed", "url: APP/posts/{post}\n    reply", "url: APP/archive/{post}\n    reply", outcomePolicyChanged},
		{"its card changed", "rows:\n        Post: title", "rows:\n        Post: title\n        Author: author", outcomePolicyChanged},
		{"removed", "  delete_post:", "  remove_post:", outcomePolicyDropped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOptions{})
			r.policy = mcpPolicy(t, r)
			r.app.SetRecord("/posts/1", `{"title":"One","author":"ana"}`)
			state, step := r.askMCPConfirm(ana)
			r.confirm(step, r.step(step)[0].ID)
			r.reloadMCP(tc.from, tc.to)
			v := r.retryMCPConfirm(ana, state)
			if tc.want == "" {
				if !v.Rewritten || v.Result != nil || string(v.Arguments) != `{"post":1}` {
					t.Errorf("got rewritten=%v %s, want the confirmed call to go on", v.Rewritten, v.Result)
				}
				return
			}
			wantRefused(t, v, tc.want)
		})
	}
}

// TestMCPPolicyReloadedDuringServerQuestion: the MCP server asks its own
// question about an answered form's call, and the policy changes
// draft_post before the client's retry: the retry does not go on.
func TestMCPPolicyReloadedDuringServerQuestion(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           string // "" goes on
	}{
		{"another action edited", "reply: Removed.", "reply: Gone.", ""},
		{"its endpoint changed", "url: APP/drafts", "url: APP/v2/drafts", outcomePolicyChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOptions{})
			f := r.mcpFront(ana) // one request's front: the answered retry, then the server's answer to it
			v := f.MCP(context.Background(), MCPCall{
				Name: "draft_post", Arguments: []byte(`{"title":"Hi"}`), Modern: true, Elicit: modernForm, State: r.askMCPForm(ana),
				Responses: map[string][]byte{MCPFormKey: []byte(`{"action":"accept","content":{"body":"Spring"}}`)},
			})
			ranAsAnswered(t, v)
			asked := f.WrapMCP(context.Background(), v.Relay, []byte(`{"resultType":"input_required","inputRequests":{"srv/ok":{"method":"elicitation/create","params":{"mode":"form","message":"Sure?","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"srv-1"}`))
			state := gjson.GetBytes(asked, "requestState").String()
			if !strings.HasPrefix(state, statePrefix) {
				t.Fatalf("the server's question was not wrapped: %s", asked)
			}
			r.reload(strings.ReplaceAll(tc.from, "APP", r.app.URL), strings.ReplaceAll(tc.to, "APP", r.app.URL))
			v = r.mcpFront(ana).MCP(context.Background(), MCPCall{
				Name: "draft_post", Arguments: []byte(`{"title":"Hi"}`), Modern: true, Elicit: modernForm, State: state,
				Responses: map[string][]byte{"srv/ok": []byte(`{"action":"accept","content":{}}`)},
			})
			if tc.want == "" {
				if !v.Rewritten || v.State != "srv-1" || string(v.Arguments) != `{"title":"Hi","body":"Spring"}` {
					t.Errorf("got rewritten=%v state %q %s %s, want the server's round trip to go on", v.Rewritten, v.State, v.Arguments, v.Result)
				}
				return
			}
			wantRefused(t, v, tc.want)
		})
	}
}
