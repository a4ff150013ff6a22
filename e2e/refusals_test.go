package e2e

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testkit"
)

// An action only MCP routes can release (no run) is refused on a model
// route, with the reason sent back to the model; a call whose arguments
// give a key twice is refused before any card is built (a card read for
// one value, an app acting on the other). Nothing reaches the app.
func TestModelRouteRefusals(t *testing.T) {
	e := newEnv(t, envOptions{policy: policyYAML + `  wipe_all:
    effect: destructive
    card:
      reason: Wipe everything?
    mcp: {confirm: true}
`})
	setupPost(e)
	for _, tc := range []struct {
		call call
		want string
	}{
		{call{"call_wipe", "wipe_all", `{}`, false}, "no endpoint"},
		{call{"call_dup", "delete_post", `{"post":7,"post":8}`, false}, "give a key twice"},
		{call{"call_case", "delete_post", `{"post":7,"Post":8}`, false}, "give a key twice"},
	} {
		e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", tc.call)}, testkit.Reply{Body: textCompletion("I could not do that.")})
		got, err := e.client("ana").Chat.Completions.New(ctx, userAsks("Clean up."))
		if err != nil {
			t.Fatal(err)
		}
		msg := got.Choices[0].Message
		if len(msg.ToolCalls) != 0 || !strings.Contains(msg.Content, "I could not do that.") || linkRe.MatchString(msg.Content) {
			t.Errorf("%s: the app got %q with calls %v", tc.call.name, msg.Content, msg.ToolCalls)
		}
		reqs := e.provider.Requests()
		if res := toolResult(reqs[len(reqs)-1], tc.call.id); !strings.Contains(res, "Toolgate refused") || !strings.Contains(res, tc.want) {
			t.Errorf("%s: the model read %q, want it to say %q", tc.call.name, res, tc.want)
		}
	}
	if len(e.app.Calls()) != 0 || len(e.app.Reads()) != 0 {
		t.Errorf("the app was reached: calls %v, reads %v", e.app.Calls(), e.app.Reads())
	}
}
