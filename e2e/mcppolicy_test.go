package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectNoReuse connects as user as connect does, over a transport that
// opens a connection per request: a Caddy reload closes the connections
// of the config it replaces, and Go does not resend a POST that a closed
// pooled connection cut, so a reused one would fail before the gate.
func (e *mcpEnv) connectNoReuse(t *testing.T, user string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "ide", Version: "1"}, opts)
	hc := &http.Client{Transport: asUser{user, &http.Transport{DisableKeepAlives: true}}}
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.gateURL, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connecting through the gate: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestMCPPolicyReloadedBetweenFormAndAnswer: through a real Caddy and
// Badger, the policy file is edited and the config reloaded after a
// 2026-07-28 client was asked for draft_post's form and before its
// answered retry. The SDK's elicitation handler does the reload, so the
// SDK's own retry carries the requestState and the answer; one client
// retries by hand. The retry goes on only when draft_post is unchanged:
// otherwise the client reads that the policy changed, or no longer
// declares the tool, and the MCP server never gets the call.
func TestMCPPolicyReloadedBetweenFormAndAnswer(t *testing.T) {
	const (
		changed = "The gate's policy for this action was changed after the person was asked; nothing ran. Call it again to ask the person under the current policy."
		dropped = "The gate's policy was changed after the person was asked and no longer declares this action; nothing ran."
	)
	for _, tc := range []struct {
		name, from, to string
		byHand         bool
		want           string // the tool error; "" runs
	}{
		{"another action edited", "reason: Wipe everything?", "reason: Wipe it all?", false, ""},
		{"its form changed", "textarea: [body]", "textarea: [body, title]", false, changed},
		{"its form changed, retried by hand", "textarea: [body]", "textarea: [body, title]", true, changed},
		{"removed", "  draft_post:", "  write_post:", false, dropped},
		{"removed, retried by hand", "  draft_post:", "  write_post:", true, dropped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newMCPEnv(t, modern)
			var res *mcp.CallToolResult
			if tc.byHand {
				cs := e.connectNoReuse(t, "ana", &mcp.ClientOptions{
					ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						return nil, fmt.Errorf("not by hand")
					},
					MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
				})
				key, state := askDraft(t, cs)
				reloadPolicy(t, e.caddy, e.app.URL, tc.from, tc.to)
				res = retry(t, cs, springArgs, key, state)
			} else {
				var asked atomic.Int32
				cs := e.connectNoReuse(t, "ana", &mcp.ClientOptions{
					ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						if n := asked.Add(1); n > 1 {
							return nil, fmt.Errorf("asked %d times", n)
						}
						reloadPolicy(t, e.caddy, e.app.URL, tc.from, tc.to)
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"body": "Spring is here."}}, nil
					},
				})
				res = callTool(t, cs, &mcp.CallToolParams{Name: "draft_post", Arguments: springArgs})
				if n := asked.Load(); n != 1 {
					t.Errorf("the client was asked %d times, want once", n)
				}
			}
			if tc.want == "" {
				wantDrafted(t, res)
				e.wantRan(t, 1)
				return
			}
			if !res.IsError || resultText(res) != tc.want {
				t.Errorf("the client read isError=%v %q, want %q", res.IsError, resultText(res), tc.want)
			}
			e.wantRan(t, 0)
		})
	}
}
