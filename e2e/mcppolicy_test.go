package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testkit"
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

// reloadPolicy edits the env's policy file and reloads its Caddyfile, then
// waits (up to 10 s) until only the new config's socket listens on the
// gate's port. Caddy binds each config's listener anew (SO_REUSEPORT) and
// closes the old one as the old server shuts down, after the reload has
// returned: a connection the kernel queued on the old socket then is
// reset before any server reads it.
func (e *mcpEnv) reloadPolicy(t *testing.T, from, to string) {
	t.Helper()
	reloadPolicy(t, e.caddy, e.app.URL, from, to)
	e.oneListener(t)
}

// oneListener waits (up to 10 s) until only one socket listens on the
// gate's port, after a reload.
func (e *mcpEnv) oneListener(t *testing.T) {
	t.Helper()
	u, err := url.Parse(e.gateURL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := listening(port)
		if err != nil {
			t.Logf("cannot tell when the old listener closed: %v", err)
			return
		}
		if n <= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sockets still listen on port %d after the reload", n, port)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// listening counts the TCP sockets listening on port, from the kernel's
// table (Linux).
func listening(port int) (int, error) {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0, err
	}
	suffix := fmt.Sprintf(":%04X", port)
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[1], suffix) && f[3] == "0A" { // 0A: LISTEN
			n++
		}
	}
	return n, nil
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
			// A retry the old server accepted just before its listener
			// closed would be cut by the env's grace period of 1ns. With a
			// grace period it is served, against the policy as it reads
			// now (the gate reads the live policy), as the new server's.
			graceful := strings.Replace(e.caddy, "grace_period 1ns", "grace_period 10s", 1)
			if graceful == e.caddy {
				t.Fatal("the env's Caddyfile sets no grace_period 1ns")
			}
			e.caddy = graceful
			if err := testkit.Load(t, e.caddy); err != nil {
				t.Fatalf("loading with a grace period: %v", err)
			}
			e.oneListener(t)
			var res *mcp.CallToolResult
			if tc.byHand {
				cs := e.connectNoReuse(t, "ana", &mcp.ClientOptions{
					ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						return nil, fmt.Errorf("not by hand")
					},
					MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
				})
				key, state := askDraft(t, cs)
				e.reloadPolicy(t, tc.from, tc.to)
				res = retry(t, cs, springArgs, key, state)
			} else {
				// The SDK's handler waits while the test reloads the
				// policy; the SDK then retries with the answer.
				var count atomic.Int32
				asked, goOn := make(chan struct{}, 1), make(chan struct{})
				cs := e.connectNoReuse(t, "ana", &mcp.ClientOptions{
					ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						if n := count.Add(1); n > 1 {
							return nil, fmt.Errorf("asked %d times", n)
						}
						asked <- struct{}{}
						select {
						case <-goOn:
						case <-ctx.Done():
							return nil, ctx.Err()
						}
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"body": "Spring is here."}}, nil
					},
				})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				type called struct {
					res *mcp.CallToolResult
					err error
				}
				done := make(chan called, 1)
				go func() {
					r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "draft_post", Arguments: springArgs})
					done <- called{r, err}
				}()
				select {
				case <-asked:
				case c := <-done:
					if c.err != nil {
						t.Fatalf("the client was not asked: %v", c.err)
					}
					t.Fatalf("the client was not asked: isError=%v %q", c.res.IsError, resultText(c.res))
				case <-ctx.Done():
					t.Fatal("the client was never asked")
				}
				e.reloadPolicy(t, tc.from, tc.to)
				close(goOn)
				select {
				case c := <-done:
					if c.err != nil {
						t.Fatalf("calling draft_post: %v", c.err)
					}
					res = c.res
				case <-ctx.Done():
					t.Fatal("the retry never came back")
				}
				if n := count.Load(); n != 1 {
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
