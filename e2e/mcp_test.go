package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testkit"
)

// mcpPolicy gates three tools of the fake MCP server.
const mcpPolicy = `app: Test blog
actions:
  draft_post:
    effect: write
    ask_for_missing: true
    ask:
      message: A few details for your post.
      textarea: [body]
  delete_post:
    effect: destructive
    mcp: {confirm: true}
    card:
      reason: Delete this post? This cannot be undone.
      record: APP/posts/{post}
      rows:
        Post: title
  wipe_all:
    effect: destructive
    card:
      reason: Wipe everything?
`

// mcpServer is a fake MCP server recording the calls its tools got.
type mcpServer struct {
	URL   string
	mu    sync.Mutex
	calls []string // tool name + " " + arguments JSON
}

func (s *mcpServer) record(name string, args any) {
	b, _ := json.Marshal(args)
	s.mu.Lock()
	s.calls = append(s.calls, name+" "+string(b))
	s.mu.Unlock()
}

func (s *mcpServer) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

type draftIn struct {
	Title  string `json:"title" jsonschema:"the post's title"`
	Body   string `json:"body" jsonschema:"the post's text"`
	Status string `json:"status,omitempty"`
}

type deleteIn struct {
	Post int `json:"post"`
}

type echoIn struct {
	Text string `json:"text"`
}

func newMCPServer(t *testing.T, stateless bool) *mcpServer {
	s := &mcpServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "blog", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "draft_post", Description: "Draft a post."}, func(ctx context.Context, req *mcp.CallToolRequest, in draftIn) (*mcp.CallToolResult, any, error) {
		s.record("draft_post", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "drafted " + in.Title}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_post", Description: "Delete a post."}, func(ctx context.Context, req *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, any, error) {
		s.record("delete_post", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("deleted %d", in.Post)}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "wipe_all", Description: "Wipe."}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		s.record("wipe_all", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo."}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		s.record("echo", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	s.URL = ts.URL
	return s
}

// mcpEnv is a gate on an MCP route in front of a fake MCP server, with
// pages behind basic auth.
type mcpEnv struct {
	server   *mcpServer
	app      *testkit.App
	gateURL  string
	pagesURL string
}

func newMCPEnv(t *testing.T, stateless bool) *mcpEnv {
	t.Helper()
	e := &mcpEnv{server: newMCPServer(t, stateless), app: testkit.NewApp(t, []byte(secret))}
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(strings.ReplaceAll(mcpPolicy, "APP", e.app.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	gatePort, pagesPort := testkit.FreePort(t), testkit.FreePort(t)
	e.gateURL = fmt.Sprintf("http://127.0.0.1:%d/mcp", gatePort)
	pagesHost := fmt.Sprintf("127.0.0.1:%d", pagesPort)
	e.pagesURL = "http://" + pagesHost + "/toolgate"
	testkit.Run(t, fmt.Sprintf(`{
	admin off
	auto_https off
	default_bind 127.0.0.1
	log {
		level WARN
	}
	persist_config off
	grace_period 1ns
	toolgate {
		store badger %s
		secret %s
		pages %s
		action_timeout 5s
	}
}

http://127.0.0.1:%d {
	toolgate_mcp {
		policy %s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %s
}

http://%s {
	route /toolgate/* {
		basic_auth {
			ana %s
			bo %s
		}
		toolgate_pages
	}
}
`, filepath.Join(dir, "store"), secret, e.pagesURL, gatePort, pol, strings.TrimPrefix(e.server.URL, "http://"), pagesHost, hash(t, "ana-pw"), hash(t, "bo-pw")))
	return e
}

// asUser sets X-User-Id on every request, as the platform's sign-in would
// set the identity the Caddyfile's owner placeholder reads.
type asUser struct {
	user string
	base http.RoundTripper
}

func (a asUser) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if a.user != "" {
		r.Header.Set("X-User-Id", a.user)
	}
	return a.base.RoundTrip(r)
}

func (e *mcpEnv) connect(t *testing.T, user string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "ide", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: e.gateURL, HTTPClient: &http.Client{Transport: asUser{user, http.DefaultTransport}}, DisableStandaloneSSE: true}
	cs, err := c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting through the gate: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestMCPFormFilledByElicitationHandler(t *testing.T) {
	e := newMCPEnv(t, true)
	var asked []*mcp.ElicitParams
	cs := e.connect(t, "ana", &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"body": "Spring is here."}}, nil
	}}, "")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "draft_post", Arguments: map[string]any{"title": "Spring"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || resultText(res) != "drafted Spring" {
		t.Fatalf("result = %+v %q", res, resultText(res))
	}
	if len(asked) != 1 || asked[0].Message != "A few details for your post." {
		t.Fatalf("asked %+v", asked)
	}
	schema, _ := json.Marshal(asked[0].RequestedSchema)
	var form struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(schema, &form); err != nil || len(form.Properties) != 1 || form.Properties["body"] == nil || len(form.Required) != 1 {
		t.Errorf("form schema %s: want body only, required", schema)
	}
	got := e.server.Calls()
	if len(got) != 1 || got[0] != `draft_post {"title":"Spring","body":"Spring is here."}` {
		t.Errorf("server got %q", got)
	}
}
