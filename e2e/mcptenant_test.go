package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testkit"
)

// tenantGate runs toolgate_mcp with owner and tenant from headers in front
// of the fake MCP server (2026-07-28) and returns the server and the
// gate's URL.
func tenantGate(t *testing.T) (*mcpServer, string) {
	t.Helper()
	srv := newMCPServer(t, modern)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(strings.ReplaceAll(mcpPolicy, "APP", "http://127.0.0.1:1")), 0o600); err != nil {
		t.Fatal(err)
	}
	port := testkit.FreePort(t)
	testkit.Run(t, fmt.Sprintf(`{
	admin off
	auto_https off
	default_bind 127.0.0.1
	log {
		level ERROR
	}
	toolgate {
		store %s
		secret %s
		pages http://127.0.0.1:1/toolgate
	}
}
http://127.0.0.1:%d {
	toolgate_mcp {
		policy %s
		owner {http.request.header.X-User-Id}
		tenant {http.request.header.X-Tenant}
	}
	reverse_proxy %s
}
`, filepath.Join(dir, "store"), secret, port, pol, srv.URL))
	return srv, fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// inTenant sets X-User-Id and X-Tenant on every request.
type inTenant struct{ user, tenant string }

func (a inTenant) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-User-Id", a.user)
	r.Header.Set("X-Tenant", a.tenant)
	return http.DefaultTransport.RoundTrip(r)
}

// manualIn connects as user in tenant with a form-capable client that
// retries by hand.
func manualIn(t *testing.T, url, user, tenant string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "ide", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: inTenant{user, tenant}}, DisableStandaloneSSE: true}
	cs, err := c.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// The tenant is part of who is calling: ana of tenant "north" cannot redeem
// the requestState issued to ana of tenant "south", and her try uses
// nothing up, as another person's would not: the south ana's own retry
// still runs, once.
func TestMCPStateBoundToTenant(t *testing.T) {
	srv, url := tenantGate(t)
	key, state := askDraft(t, manualIn(t, url, "ana", "south"))
	wantToolError(t, retry(t, manualIn(t, url, "ana", "north"), springArgs, key, state), "someone else", "nothing ran")
	wantToolError(t, retry(t, manualIn(t, url, "ana", ""), springArgs, key, state), "someone else", "nothing ran")
	if got := srv.Calls(); len(got) != 0 {
		t.Fatalf("the server ran %q", got)
	}
	wantDrafted(t, retry(t, manualIn(t, url, "ana", "south"), springArgs, key, state))
	if got := srv.Calls(); len(got) != 1 || got[0] != draftRan {
		t.Errorf("the server ran %q, want %q once", got, draftRan)
	}
}
