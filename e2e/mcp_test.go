package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testkit"
)

// mcpPolicy gates tools of the fake MCP server; echo and ask_legacy are
// not declared, so they pass as they came.
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
  ask_srv:
    effect: write
    ask_for_missing: true
    ask:
      message: What is the note?
  book_room:
    effect: write
    ask_for_missing: true
    ask:
      message: Where is the room?
  schedule_post:
    effect: write
    required_for_agents: [publish_on]
  wait_read:
    effect: read
    schema:
      type: object
      properties:
        text: {type: string}
  book_desk:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        room: {type: string, title: Room}
        region: {type: string, title: Region}
      required: [room, region]
`

// mcpServer is a fake MCP server recording the calls its tools got and
// the HTTP requests it received.
type mcpServer struct {
	URL   string
	mu    sync.Mutex
	calls []string // tool name + " " + arguments JSON (+ what else the tool saw)
	reqs  []upstreamReq
}

// upstreamReq is one HTTP request the MCP server received, as it saw it.
type upstreamReq struct {
	Method    string // HTTP method
	RPC       string // JSON-RPC method; "response" for a client's JSON-RPC response
	Tool      string // params.name of a tools/call
	Session   string // Mcp-Session-Id
	Region    string // Mcp-Param-Region
	Status    int
	RespSess  string // Mcp-Session-Id the server answered with
	RespError string // a JSON-RPC error in a JSON answer
}

func (s *mcpServer) record(name string, args any, more ...string) {
	b, _ := json.Marshal(args)
	s.mu.Lock()
	s.calls = append(s.calls, strings.Join(append([]string{name, string(b)}, more...), " "))
	s.mu.Unlock()
}

// Calls returns the tool calls the server ran.
func (s *mcpServer) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// Requests returns the HTTP requests the server received.
func (s *mcpServer) Requests() []upstreamReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]upstreamReq(nil), s.reqs...)
}

// Answered returns the requests once each has its status, waiting up to
// 5 s: the client may hold a tool's result before the server has written
// the status of the POST that carried the client's own response (the
// server wakes the tool, then answers 202), so a test that reads the
// statuses right after the call saw 0 on a loaded machine.
func (s *mcpServer) Answered() []upstreamReq {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		reqs := s.Requests()
		if !slices.ContainsFunc(reqs, func(r upstreamReq) bool { return r.Status == 0 }) || time.Now().After(deadline) {
			return reqs
		}
	}
}

// ToolRequests returns the tools/call requests for one tool.
func (s *mcpServer) ToolRequests(tool string) []upstreamReq {
	var out []upstreamReq
	for _, r := range s.Requests() {
		if r.RPC == "tools/call" && r.Tool == tool {
			out = append(out, r)
		}
	}
	return out
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

// mailIn is send_mail's input (editapis_test.go).
type mailIn struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

type askSrvIn struct {
	Topic string `json:"topic"`
	Note  string `json:"note"`
}

type scheduleIn struct {
	Post      int    `json:"post"`
	PublishOn string `json:"publish_on,omitempty"`
}

// bookRoomSchema annotates region for an Mcp-Param-Region header.
const bookRoomSchema = `{"type":"object","properties":{"room":{"type":"string"},"region":{"type":"string","x-mcp-header":"Region"}},"required":["room","region"]}`

func newMCPServer(t *testing.T, o mcpEnvOptions) *mcpServer {
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
	mcp.AddTool(srv, &mcp.Tool{Name: "send_mail", Description: "Send an email."}, func(ctx context.Context, req *mcp.CallToolRequest, in mailIn) (*mcp.CallToolResult, any, error) {
		s.record("send_mail", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sent"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo."}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		s.record("echo", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	// ask_srv asks the client a question of its own (multi round-trip) on
	// first sight and completes when the answer comes back.
	mcp.AddTool(srv, &mcp.Tool{Name: "ask_srv", Description: "Write a note in a tone."}, func(ctx context.Context, req *mcp.CallToolRequest, in askSrvIn) (*mcp.CallToolResult, any, error) {
		key := "srv"
		if k, ok := strings.CutPrefix(in.Topic, "key:"); ok {
			key = k // a server that asks under a key of its choosing
		}
		ans, ok := req.Params.InputResponses[key].(*mcp.ElicitResult)
		if !ok {
			s.record("ask_srv", in, "asks", "state="+req.Params.RequestState)
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{key: &mcp.ElicitParams{
					Message:         "Which tone?",
					RequestedSchema: &jsonschemaObject{Type: "object", Properties: map[string]any{"tone": map[string]any{"type": "string"}}, Required: []string{"tone"}},
				}},
				RequestState: "s1",
			}, nil, nil
		}
		tone, _ := ans.Content["tone"].(string)
		keys := make([]string, 0, len(req.Params.InputResponses))
		for k := range req.Params.InputResponses {
			keys = append(keys, k)
		}
		s.record("ask_srv", in, "tone="+tone, "state="+req.Params.RequestState, fmt.Sprintf("responses=%v", keys))
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Note + " in a " + tone + " tone"}}}, nil, nil
	})
	// book_room's region travels in an Mcp-Param-Region header too.
	srv.AddTool(&mcp.Tool{Name: "book_room", Description: "Book a room.", InputSchema: json.RawMessage(bookRoomSchema)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in map[string]any
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		s.record("book_room", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("booked %v in %v", in["room"], in["region"])}}}, nil
	})
	// book_desk is book_room under a policy that gives its own schema
	// (without the header annotation).
	srv.AddTool(&mcp.Tool{Name: "book_desk", Description: "Book a desk.", InputSchema: json.RawMessage(bookRoomSchema)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in map[string]any
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		s.record("book_desk", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("booked %v in %v", in["room"], in["region"])}}}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "schedule_post", Description: "Schedule a post."}, func(ctx context.Context, req *mcp.CallToolRequest, in scheduleIn) (*mcp.CallToolResult, any, error) {
		s.record("schedule_post", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "scheduled"}}}, nil, nil
	})
	// ask_legacy asks the client itself (a legacy server-initiated
	// elicitation/create on the POST's SSE stream). Not gated.
	mcp.AddTool(srv, &mcp.Tool{Name: "ask_legacy", Description: "Greet someone."}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		// Bounded, so that a gate that stalls the stream fails the test
		// instead of leaving this handler (and the server's Close) waiting.
		ctx, cancel := context.WithTimeout(ctx, 12*time.Second)
		defer cancel()
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
			Message:         "Your name?",
			RequestedSchema: &jsonschemaObject{Type: "object", Properties: map[string]any{"name": map[string]any{"type": "string"}}, Required: []string{"name"}},
		})
		if err != nil {
			return nil, nil, err
		}
		name, _ := res.Content["name"].(string)
		s.record("ask_legacy", in, "action="+res.Action, "name="+name)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + name}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: o.stateless, JSONResponse: o.jsonResponse})
	ts := httptest.NewServer(s.recording(h))
	t.Cleanup(ts.Close)
	s.URL = ts.URL
	return s
}

// jsonschemaObject is a flat requestedSchema.
type jsonschemaObject struct {
	Type       string         `json:"type"`
	Properties map[string]any `json:"properties"`
	Required   []string       `json:"required,omitempty"`
}

// recording notes each request the server gets, keeping its answer
// streamed (Flush and Unwrap pass).
func (s *mcpServer) recording(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		ur := upstreamReq{Method: r.Method, RPC: msg.Method, Tool: msg.Params.Name, Session: r.Header.Get("Mcp-Session-Id"), Region: r.Header.Get("Mcp-Param-Region")}
		if r.Method == http.MethodPost && msg.Method == "" && (msg.Result != nil || msg.Error != nil) {
			ur.RPC = "response"
		}
		// Noted before it is served: the client may hold the answer
		// before this handler returns.
		s.mu.Lock()
		i := len(s.reqs)
		s.reqs = append(s.reqs, ur)
		s.mu.Unlock()
		rw := &statusWriter{ResponseWriter: w, onHeader: func(status int) {
			s.mu.Lock()
			s.reqs[i].Status, s.reqs[i].RespSess = status, w.Header().Get("Mcp-Session-Id")
			s.mu.Unlock()
		}}
		next.ServeHTTP(rw, r)
		s.mu.Lock()
		defer s.mu.Unlock()
		if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
			var ans struct {
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if json.Unmarshal(rw.body.Bytes(), &ans) == nil && ans.Error != nil {
				s.reqs[i].RespError = fmt.Sprint(ans.Error.Code)
			}
		}
	})
}

// statusWriter tells onHeader the status before the client can see it.
type statusWriter struct {
	http.ResponseWriter
	onHeader func(status int)
	status   int
	body     bytes.Buffer // the first KiB, to read a JSON-RPC error
}

func (w *statusWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
		w.onHeader(s)
	}
	w.ResponseWriter.WriteHeader(s)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.body.Len() < 1024 {
		w.body.Write(p[:min(len(p), 1024-w.body.Len())])
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// mcpEnv is a gate on an MCP route in front of a fake MCP server, with
// pages behind basic auth.
type mcpEnv struct {
	server   *mcpServer
	app      *testkit.App
	gateURL  string
	pagesURL string
	caddy    string // the Caddyfile loaded
}

type mcpEnvOptions struct {
	stateless    bool   // the MCP server speaks 2026-07-28 (else: legacy, stateful)
	jsonResponse bool   // the MCP server answers a POST with JSON, not SSE
	stateTTL     string // the toolgate_mcp block's state_ttl ("" default)
	confirmWait  string // the toolgate_mcp block's confirm_wait ("" default)
	declineNote  bool   // the policy file's decline_note (inbox_test.go)
	// policyEdit, when set, edits mcpPolicy before it is written.
	policyEdit func(string) string
}

// modern and legacy are the two eras of MCP server.
var (
	modern = mcpEnvOptions{stateless: true}
	legacy = mcpEnvOptions{stateless: false}
)

func newMCPEnv(t *testing.T, o mcpEnvOptions) *mcpEnv {
	t.Helper()
	e := &mcpEnv{server: newMCPServer(t, o), app: testkit.NewApp(t, []byte(secret))}
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	polText := mcpPolicy
	if o.declineNote {
		polText = "decline_note: true\n" + polText
	}
	if o.policyEdit != nil {
		polText = o.policyEdit(polText)
	}
	if err := os.WriteFile(pol, []byte(strings.ReplaceAll(polText, "APP", e.app.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	extra := ""
	if o.stateTTL != "" {
		extra = "\n\t\tstate_ttl " + o.stateTTL
	}
	if o.confirmWait != "" {
		extra += "\n\t\tconfirm_wait " + o.confirmWait
	}
	gatePort, pagesPort := testkit.FreePort(t), testkit.FreePort(t)
	e.gateURL = fmt.Sprintf("http://127.0.0.1:%d/mcp", gatePort)
	pagesHost := fmt.Sprintf("127.0.0.1:%d", pagesPort)
	e.pagesURL = "http://" + pagesHost + "/toolgate"
	e.caddy = fmt.Sprintf(`{
	admin off
	auto_https off
	default_bind 127.0.0.1
	log {
		level WARN
	}
	persist_config off
	grace_period 1ns
	toolgate {
		%s
		secret %s
		pages %s
		action_timeout 5s
	}
}

http://127.0.0.1:%d {
	toolgate_mcp {
		policy %s
		owner {http.request.header.X-User-Id}%s
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
`, storeOption(t, filepath.Join(dir, "store")), secret, e.pagesURL, gatePort, pol, extra, strings.TrimPrefix(e.server.URL, "http://"), pagesHost, hash(t, "ana-pw"), hash(t, "bo-pw"))
	testkit.Run(t, e.caddy)
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

// callTool calls a tool with a hang guard: a gate that stalls a stream fails
// the test rather than hanging it.
func callTool(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(c, p)
	if err != nil {
		t.Fatalf("calling %s: %v", p.Name, err)
	}
	return res
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

// wantToolError checks that a result is a tool error whose text holds
// every want.
func wantToolError(t *testing.T, res *mcp.CallToolResult, want ...string) {
	t.Helper()
	txt := resultText(res)
	if !res.IsError || res.NeedsInput() {
		t.Fatalf("want a tool error, got isError=%v needsInput=%v %q", res.IsError, res.NeedsInput(), txt)
	}
	for _, w := range want {
		if !strings.Contains(txt, w) {
			t.Errorf("tool error %q does not say %q", txt, w)
		}
	}
}

// wantNoCalls checks that the MCP server ran none of these tools.
func (e *mcpEnv) wantNoCalls(t *testing.T, tools ...string) {
	t.Helper()
	for _, c := range e.server.Calls() {
		for _, tool := range tools {
			if strings.HasPrefix(c, tool+" ") {
				t.Errorf("the server ran %s", c)
			}
		}
	}
}

// recorder is an ElicitationHandler that notes what it was asked and
// answers with answer.
type recorder struct {
	mu     sync.Mutex
	asked  []*mcp.ElicitParams
	answer func(*mcp.ElicitParams) *mcp.ElicitResult
}

func (r *recorder) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	r.mu.Lock()
	r.asked = append(r.asked, req.Params)
	r.mu.Unlock()
	return r.answer(req.Params), nil
}

func (r *recorder) Asked() []*mcp.ElicitParams {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), r.asked...)
}

func accept(content map[string]any) func(*mcp.ElicitParams) *mcp.ElicitResult {
	return func(*mcp.ElicitParams) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: content}
	}
}

func answerWith(action string) func(*mcp.ElicitParams) *mcp.ElicitResult {
	return func(*mcp.ElicitParams) *mcp.ElicitResult { return &mcp.ElicitResult{Action: action} }
}

// formSchema reads a requestedSchema.
func formSchema(t *testing.T, p *mcp.ElicitParams) (props map[string]json.RawMessage, required []string) {
	t.Helper()
	b, _ := json.Marshal(p.RequestedSchema)
	var form struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(b, &form); err != nil {
		t.Fatalf("requestedSchema %s: %v", b, err)
	}
	return form.Properties, form.Required
}

func TestMCPFormFilledByElicitationHandler(t *testing.T) {
	e := newMCPEnv(t, modern)
	rec := &recorder{answer: accept(map[string]any{"body": "Spring is here."})}
	cs := e.connect(t, "ana", &mcp.ClientOptions{ElicitationHandler: rec.handle}, "")
	res := callTool(t, cs, &mcp.CallToolParams{Name: "draft_post", Arguments: map[string]any{"title": "Spring"}})
	if res.IsError || resultText(res) != "drafted Spring" {
		t.Fatalf("result = %+v %q", res, resultText(res))
	}
	asked := rec.Asked()
	if len(asked) != 1 || asked[0].Message != "A few details for your post." {
		t.Fatalf("asked %+v", asked)
	}
	props, req := formSchema(t, asked[0])
	if len(props) != 1 || props["body"] == nil || len(req) != 1 || req[0] != "body" {
		t.Errorf("form schema %v %v: want body only, required", props, req)
	}
	got := e.server.Calls()
	if len(got) != 1 || got[0] != `draft_post {"title":"Spring","body":"Spring is here."}` {
		t.Errorf("server got %q", got)
	}
}

// Clients that cannot show a form get a tool error naming the missing
// field, and the server's tool never runs: a 2026-07-28 client without an
// ElicitationHandler, and legacy (2025-11-25) clients even with one.
func TestMCPFormRefusedWithoutFormElicitation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     mcpEnvOptions
		handler bool
		version string // asked for ("": the newest the server speaks)
		want    string // the protocol version the session speaks
	}{
		{"modern client without handler", modern, false, "", "2026-07-28"},
		{"legacy server, client with handler", legacy, true, "", "2025-11-25"},
		{"client pinned to 2025-11-25 with handler", modern, true, "2025-11-25", "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newMCPEnv(t, tc.env)
			rec := &recorder{answer: accept(map[string]any{"body": "x"})}
			opts := &mcp.ClientOptions{}
			if tc.handler {
				opts.ElicitationHandler = rec.handle
			}
			cs := e.connect(t, "ana", opts, tc.version)
			if tc.want == "2025-11-25" {
				if ir := cs.InitializeResult(); ir == nil || ir.ProtocolVersion != tc.want {
					t.Fatalf("session speaks %+v, want %s", ir, tc.want)
				}
				if cs.ID() == "" && !tc.env.stateless {
					t.Error("a legacy session on a stateful server has no Mcp-Session-Id")
				}
			}
			res := callTool(t, cs, &mcp.CallToolParams{Name: "draft_post", Arguments: map[string]any{"title": "Spring"}})
			// The reason given is the real one: the capability a modern
			// client lacks, the version of a legacy one.
			reason := "declares no form elicitation"
			if tc.want == "2025-11-25" {
				reason = "speaks MCP 2025-11-25"
			}
			wantToolError(t, res, "draft_post", "body", reason)
			if n := len(rec.Asked()); n != 0 {
				t.Errorf("the client was asked %d times", n)
			}
			if got := e.server.Calls(); len(got) != 0 {
				t.Errorf("server ran %q", got)
			}
			if got := e.server.ToolRequests("draft_post"); len(got) != 0 {
				t.Errorf("the call reached the server: %+v", got)
			}
		})
	}
}

// The person declining (or closing) the form runs nothing; the model
// reads which fields were asked, never a value.
func TestMCPFormDeclined(t *testing.T) {
	for _, tc := range []struct{ action, want string }{
		{"decline", "declined to fill in body"},
		{"cancel", "closed the form"},
	} {
		t.Run(tc.action, func(t *testing.T) {
			e := newMCPEnv(t, modern)
			rec := &recorder{answer: answerWith(tc.action)}
			cs := e.connect(t, "ana", &mcp.ClientOptions{ElicitationHandler: rec.handle}, "")
			res := callTool(t, cs, &mcp.CallToolParams{Name: "draft_post", Arguments: map[string]any{"title": "Spring"}})
			wantToolError(t, res, tc.want, "nothing ran")
			if n := len(rec.Asked()); n != 1 {
				t.Errorf("the client was asked %d times, want once", n)
			}
			if got := e.server.Calls(); len(got) != 0 {
				t.Errorf("server ran %q", got)
			}
		})
	}
}

// Without an identity a gated call is refused on both eras; a tool the
// policy does not declare passes and returns its own text.
func TestMCPNoIdentity(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  mcpEnvOptions
	}{{"modern", modern}, {"legacy", legacy}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newMCPEnv(t, tc.env)
			rec := &recorder{answer: accept(map[string]any{"body": "x"})}
			cs := e.connect(t, "", &mcp.ClientOptions{ElicitationHandler: rec.handle}, "")
			res := callTool(t, cs, &mcp.CallToolParams{Name: "draft_post", Arguments: map[string]any{"title": "Spring"}})
			wantToolError(t, res, "draft_post", "who is calling")
			if n := len(rec.Asked()); n != 0 {
				t.Errorf("a caller nobody knows was asked for a form %d times", n)
			}
			text := fmt.Sprintf("plain %s text", tc.name)
			res = callTool(t, cs, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
			if res.IsError || resultText(res) != text {
				t.Errorf("echo = isError %v %q, want %q", res.IsError, resultText(res), text)
			}
			want := fmt.Sprintf(`echo {"text":%q}`, text)
			if got := e.server.Calls(); len(got) != 1 || got[0] != want {
				t.Errorf("server ran %q, want only %q", got, want)
			}
		})
	}
}

// tools/list passes through the gate with the policy applied: the
// ask-for-missing hint on draft_post, publish_on required for agents on
// schedule_post, other tools as the server lists them; on both eras (JSON
// and SSE answers).
func TestMCPToolsList(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  mcpEnvOptions
	}{{"modern", modern}, {"legacy", legacy}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newMCPEnv(t, tc.env)
			cs := e.connect(t, "ana", nil, "")
			c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			list, err := cs.ListTools(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			tools := map[string]*mcp.Tool{}
			for _, tl := range list.Tools {
				tools[tl.Name] = tl
			}
			for _, n := range []string{"draft_post", "delete_post", "wipe_all", "echo", "ask_srv", "book_room", "schedule_post", "ask_legacy"} {
				if tools[n] == nil {
					t.Fatalf("tools/list lacks %s: %v", n, tools)
				}
			}
			d := tools["draft_post"].Description
			if !strings.HasPrefix(d, "Draft a post. ") || !strings.HasSuffix(d, "call it with what you know: the person is asked for the rest.") {
				t.Errorf("draft_post description = %q", d)
			}
			for n, want := range map[string]string{"echo": "Echo.", "delete_post": "Delete a post.", "schedule_post": "Schedule a post."} {
				if got := tools[n].Description; got != want {
					t.Errorf("%s description = %q, want it as the server lists it", n, got)
				}
			}
			if req := required(t, tools["schedule_post"]); !contains(req, "publish_on") || !contains(req, "post") {
				t.Errorf("schedule_post required = %v, want post and publish_on", req)
			}
			if req := required(t, tools["echo"]); len(req) != 1 || req[0] != "text" {
				t.Errorf("echo required = %v, want as listed by the server", req)
			}
		})
	}
}

// required_for_agents binds calls too: a schedule_post without publish_on
// is refused naming it; with it the call passes.
func TestMCPRequiredForAgents(t *testing.T) {
	e := newMCPEnv(t, modern)
	rec := &recorder{answer: accept(map[string]any{"publish_on": "2026-10-01"})}
	cs := e.connect(t, "ana", &mcp.ClientOptions{ElicitationHandler: rec.handle}, "")
	res := callTool(t, cs, &mcp.CallToolParams{Name: "schedule_post", Arguments: map[string]any{"post": 3}})
	wantToolError(t, res, "schedule_post", "publish_on")
	if got := e.server.Calls(); len(got) != 0 {
		t.Errorf("server ran %q", got)
	}
	res = callTool(t, cs, &mcp.CallToolParams{Name: "schedule_post", Arguments: map[string]any{"post": 3, "publish_on": "2026-10-01"}})
	if res.IsError || resultText(res) != "scheduled" {
		t.Fatalf("complete call: isError %v %q", res.IsError, resultText(res))
	}
	if got := e.server.Calls(); len(got) != 1 || got[0] != `schedule_post {"post":3,"publish_on":"2026-10-01"}` {
		t.Errorf("server ran %q", got)
	}
}

func required(t *testing.T, tl *mcp.Tool) []string {
	t.Helper()
	b, _ := json.Marshal(tl.InputSchema)
	var s struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s inputSchema %s: %v", tl.Name, b, err)
	}
	return s.Required
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
