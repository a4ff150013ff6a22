package differential

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testkit"
)

// The MCP side: tools/call request bodies in every encoding and framing a
// server framework might read, sent with a raw HTTP client straight to the
// go-sdk server and to the TypeScript SDK server (.ci/differential/
// mcp-server.mjs), and through toolgate_mcp in front of each. delete_post
// is gated (destructive): through the gate its handler must never run and
// the server must not even receive the request (the gate answers it). echo
// is not gated: sent the same way, through the gate it must run and answer
// as it does straight, or be refused where the case allows it.

// keyHeader carries server|tool|case|path to the servers' records.
const keyHeader = "X-Differential-Key"

// mcpServer is one MCP server of the test, with what it recorded.
type mcpServer interface {
	name() string
	url() string // the MCP endpoint
	// records returns the tool calls the handlers ran (key → "tool args")
	// and the POSTs that reached the server carrying a call, or that it
	// could not read (key → what it saw): the gate's own queries (such as
	// tools/list) are left out.
	records(t *testing.T) (calls, requests map[string][]string)
}

// goServer is the go-sdk v1.8.0 server, stateless, answering JSON.
type goServer struct {
	srv      *httptest.Server
	mu       sync.Mutex
	calls    map[string][]string
	requests map[string][]string
}

func newGoServer(t *testing.T) *goServer {
	s := &goServer{calls: map[string][]string{}, requests: map[string][]string{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "blog", Version: "1"}, nil)
	type deleteIn struct {
		Post int `json:"post"`
	}
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_post", Description: "Delete a post."}, func(ctx context.Context, req *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, any, error) {
		s.record(req, "delete_post", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("deleted %d", in.Post)}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo."}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		s.record(req, "echo", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			what := ""
			switch {
			case !json.Valid(body):
				what = fmt.Sprintf("unreadable: %.60q", body)
			case bytes.Contains(body, []byte("tools/call")) || bytes.Contains(body, []byte("delete_post")) || bytes.Contains(body, []byte("echo")):
				what = fmt.Sprintf("%.200s", body)
			}
			if what != "" {
				s.mu.Lock()
				s.requests[r.Header.Get(keyHeader)] = append(s.requests[r.Header.Get(keyHeader)], what)
				s.mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *goServer) record(req *mcp.CallToolRequest, tool string, in any) {
	key := ""
	if req.Extra != nil {
		key = req.Extra.Header.Get(keyHeader)
	}
	args, _ := json.Marshal(in)
	s.mu.Lock()
	s.calls[key] = append(s.calls[key], tool+" "+string(args))
	s.mu.Unlock()
}

func (s *goServer) name() string { return "go-sdk" }
func (s *goServer) url() string  { return s.srv.URL + "/mcp" }

func (s *goServer) records(*testing.T) (map[string][]string, map[string][]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneLists(s.calls), cloneLists(s.requests)
}

func cloneLists(m map[string][]string) map[string][]string {
	out := make(map[string][]string, len(m))
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}

// tsServer is mcp-server.mjs on Node, a process of the test.
type tsServer struct{ base string }

func startTSServer(t *testing.T, ns nodeSide) *tsServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, ns.node, "mcp-server.mjs")
	cmd.Dir = ns.dir
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the TypeScript MCP server: %v", err)
	}
	t.Cleanup(func() {
		cancel() // kills the process
		_ = cmd.Wait()
	})
	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		first <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-first:
		var hello struct{ Port int }
		if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Port == 0 {
			t.Fatalf("the TypeScript MCP server said %q (%v)\nstderr: %s", line, err, tail(stderr.String(), 2000))
		}
		return &tsServer{base: fmt.Sprintf("http://127.0.0.1:%d", hello.Port)}
	case <-time.After(30 * time.Second):
		t.Fatalf("the TypeScript MCP server did not start in 30s\nstderr: %s", tail(stderr.String(), 2000))
		return nil
	}
}

func (s *tsServer) name() string { return "ts-sdk" }
func (s *tsServer) url() string  { return s.base + "/mcp" }

func (s *tsServer) records(t *testing.T) (map[string][]string, map[string][]string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(s.base + "/calls")
	if err != nil {
		t.Fatalf("reading the TypeScript server's records: %v", err)
	}
	defer resp.Body.Close()
	var rec struct {
		Calls []struct {
			Key, Tool string
			Args      json.RawMessage
		}
		Requests []struct{ Key, What string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil {
		t.Fatalf("reading the TypeScript server's records: %v", err)
	}
	calls, requests := map[string][]string{}, map[string][]string{}
	for _, c := range rec.Calls {
		calls[c.Key] = append(calls[c.Key], c.Tool+" "+compactJSON(c.Args))
	}
	for _, r := range rec.Requests {
		requests[r.Key] = append(requests[r.Key], r.What)
	}
	return calls, requests
}

// startMCPGate runs toolgate_mcp (modelPolicy, owner from X-User-Id) in
// front of each server, and returns each gate route's MCP URL by server
// name.
func startMCPGate(t *testing.T, servers []mcpServer) map[string]string {
	t.Helper()
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(modelPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	var sites strings.Builder
	urls := map[string]string{}
	for _, s := range servers {
		port := testkit.FreePort(t)
		urls[s.name()] = fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
		fmt.Fprintf(&sites, `
http://127.0.0.1:%d {
	toolgate_mcp {
		policy %s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %s
}
`, port, pol, strings.TrimSuffix(strings.TrimPrefix(s.url(), "http://"), "/mcp"))
	}
	testkit.Run(t, fmt.Sprintf(`{
	admin off
	auto_https off
	default_bind 127.0.0.1
	persist_config off
	grace_period 1ns
	log {
		output file %s
		level ERROR
	}
	toolgate {
		store badger %s
		secret %s
		pages http://127.0.0.1:1/toolgate
	}
}
%s`, caddyLog(t, dir), filepath.Join(dir, "store"), secret, sites.String()))
	return urls
}

// mcpAnswer is what the client got for one request.
type mcpAnswer struct {
	Status   int
	Messages []string // the JSON-RPC messages of the answer (JSON or SSE), compact
	Err      string   // a transport error
}

func (a mcpAnswer) String() string {
	return fmt.Sprintf("HTTP %d %s%s", a.Status, strings.Join(a.Messages, " "), a.Err)
}

// refusal reports whether the answer refuses the call: an HTTP error, a
// JSON-RPC error, a tool error, or a request for input (a form or a
// confirmation).
func (a mcpAnswer) refusal() bool {
	if a.Status >= 400 {
		return true
	}
	for _, m := range a.Messages {
		var msg struct {
			Error  json.RawMessage `json:"error"`
			Result struct {
				IsError    bool   `json:"isError"`
				ResultType string `json:"resultType"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(m), &msg) == nil &&
			(msg.Error != nil || msg.Result.IsError || msg.Result.ResultType == "input_required") {
			return true
		}
	}
	return false
}

// send posts one case's body as the client would, with a bound.
func send(url string, c mcpCase, key string) mcpAnswer {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(c.Body))
	if err != nil {
		return mcpAnswer{Err: err.Error()}
	}
	req.Header = c.Header.Clone()
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("X-User-Id", "ana")
	req.Header.Set(keyHeader, key)
	req.Close = true // a refused body's unread rest must not meet the next request
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return mcpAnswer{Err: err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	a := mcpAnswer{Status: resp.StatusCode}
	if err != nil {
		a.Err = err.Error()
	}
	var payloads [][]byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, ev := range bytes.Split(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\n\n")) {
			var data [][]byte
			for l := range bytes.SplitSeq(ev, []byte("\n")) {
				if v, ok := bytes.CutPrefix(l, []byte("data:")); ok {
					data = append(data, bytes.TrimPrefix(v, []byte(" ")))
				}
			}
			if data != nil {
				payloads = append(payloads, bytes.Join(data, []byte("\n")))
			}
		}
	} else if len(bytes.TrimSpace(body)) > 0 {
		payloads = append(payloads, body)
	}
	for _, p := range payloads {
		a.Messages = append(a.Messages, compactJSON(p))
	}
	return a
}

// TestMCPRequestBodies sends the MCP corpus straight and through the gate
// to the go-sdk server and, when Node is there, the TypeScript SDK server.
// Each case is a subtest named server/tool/case.
func TestMCPRequestBodies(t *testing.T) {
	servers := []mcpServer{newGoServer(t)}
	if ns, ok := findNode(t); ok {
		servers = append(servers, startTSServer(t, ns))
	}
	gates := startMCPGate(t, servers)
	cases := mcpCorpus(t)

	type result struct{ direct, gated mcpAnswer }
	results := map[string]result{}
	key := func(s mcpServer, c mcpCase, path string) string {
		return s.name() + "|" + c.Tool + "|" + c.Name + "|" + path
	}
	for _, s := range servers {
		for _, c := range cases {
			results[key(s, c, "")] = result{
				direct: send(s.url(), c, key(s, c, "direct")),
				gated:  send(gates[s.name()], c, key(s, c, "gated")),
			}
		}
	}

	for _, s := range servers {
		calls, requests := s.records(t)
		readable := 0
		for _, c := range cases {
			r := results[key(s, c, "")]
			ran, ranGated := calls[key(s, c, "direct")], calls[key(s, c, "gated")]
			reached := requests[key(s, c, "gated")]
			if c.Tool == "delete_post" && len(ran) > 0 {
				readable++
			}
			t.Run(s.name()+"/"+c.Tool+"/"+c.Name, func(t *testing.T) {
				if c.Tool == "delete_post" {
					if len(ranGated) > 0 {
						t.Errorf("the %s server ran %s through the gate; the client got %s (straight: ran %v, %s)", s.name(), ranGated, r.gated, ran, r.direct)
						return
					}
					if len(reached) > 0 {
						t.Errorf("the gate forwarded a gated call it did not decide on: the %s server received %q; the client got %s (straight: ran %v, %s)", s.name(), reached, r.gated, ran, r.direct)
					}
					if !r.gated.refusal() {
						t.Errorf("the gate's answer is no decision: %s", r.gated)
					}
					return
				}
				if len(ran) == 0 {
					return // the server cannot read it straight: nothing to match
				}
				if slices.Equal(ranGated, ran) && slices.Equal(r.gated.Messages, r.direct.Messages) && r.gated.Status == r.direct.Status {
					return
				}
				if c.MayRefuse && len(ranGated) == 0 && r.gated.refusal() {
					return
				}
				t.Errorf("the %s server answered an ungated call differently through the gate\n gated:  ran %v, %s\n direct: ran %v, %s", s.name(), ranGated, r.gated, ran, r.direct)
			})
		}
		t.Logf("%s: of %d encodings, the server runs delete_post straight from %d", s.name(), len(cases)/2, readable)
	}
}
