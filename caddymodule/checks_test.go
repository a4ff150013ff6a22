package caddymodule

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// The module's handlers in a real Caddy, loaded from a Caddyfile, with a
// real store on disk: what the provider, the MCP server and the person's
// browser get from the routes, and what the gate refuses before anything
// goes on. Only the provider, the MCP server and the app are fakes.

const testSecret = "module-test-secret-0123456789"

// testPolicy: a destructive card action and a write action asked for with
// a form. APP is the fake app's URL.
const testPolicy = "app: Test blog\nactions:\n" + testkit.DeletePostAction + `  draft_post:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        title: {type: string}
        body: {type: string}
      required: [title, body]
    run:
      url: APP/drafts
`

// gateSite is one Caddy running every handler of the module.
type gateSite struct {
	provider *testkit.Provider
	app      *testkit.App
	mcp      *mcpServer
	api      string // the model route: owner and tenant from headers
	open     string // a model route without owner (the body names it) that allows batches and stored responses
	pages    string // the pages' base URL
	mcpURL   string // the MCP route
}

func newGateSite(t *testing.T) *gateSite {
	t.Helper()
	s := &gateSite{provider: testkit.NewProvider(t), app: testkit.NewApp(t, []byte(testSecret)), mcp: newMCPServer(t)}
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(strings.ReplaceAll(testPolicy, "APP", s.app.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	ports := [4]int{}
	for i := range ports {
		ports[i] = testkit.FreePort(t)
	}
	s.api = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	s.open = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	s.pages = fmt.Sprintf("http://127.0.0.1:%d/toolgate", ports[2])
	s.mcpURL = fmt.Sprintf("http://127.0.0.1:%d/mcp", ports[3])
	testkit.Run(t, fmt.Sprintf(`{
	admin off
	auto_https off
	default_bind 127.0.0.1
	persist_config off
	grace_period 1ns
	log {
		level ERROR
	}
	toolgate {
		store %[1]s
		secret %[2]s
		pages %[3]s
		action_timeout 5s
	}
}
%[4]s {
	toolgate {
		policy %[5]s
		owner {http.request.header.X-User-Id}
		tenant {http.request.header.X-Tenant}
		max_request_body 4096
	}
	reverse_proxy %[6]s
}
%[7]s {
	toolgate {
		policy %[5]s
		allow batches stored_responses
	}
	reverse_proxy %[6]s
}
http://127.0.0.1:%[8]d {
	route /toolgate/* {
		toolgate_pages {
			answerer {http.request.header.X-Person}
			tenant {http.request.header.X-Tenant}
		}
	}
}
http://127.0.0.1:%[9]d {
	toolgate_mcp {
		policy %[5]s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %[10]s
}
`, filepath.Join(dir, "store"), testSecret, s.pages, s.api, policy, s.provider.URL, s.open, ports[2], ports[3], s.mcp.URL))
	return s
}

// reply is what a request to the gate got.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// send makes a request and reads the whole answer (bounded).
func send(t *testing.T, method, url string, header map[string]string, body []byte) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

// completion is a Chat Completions answer calling delete_post for post.
func completion(post int) []byte {
	return []byte(fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"delete_post","arguments":"{\"post\":%d}"}}]},"finish_reason":"tool_calls"}]}`, post))
}

const textCompletion = `{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"FOLLOW-UP"},"finish_reason":"stop"}]}`

const userAsks = `{"model":"m","messages":[{"role":"user","content":"Delete post 7."}]}`

var linkRe = regexp.MustCompile(`http://127\.0\.0\.1:\d+/toolgate/h/[a-z2-7]{26}`)

// wantRefused fails unless r is the gate's refusal with status, naming
// says, and the provider got no request.
func (s *gateSite) wantRefused(t *testing.T, what string, r reply, status int, says string) {
	t.Helper()
	if r.status != status || gjson.GetBytes(r.body, "error.code").String() != "toolgate_refused" || !strings.Contains(gjson.GetBytes(r.body, "error.message").String(), says) {
		t.Errorf("%s: %d %s, want %d refusing with %q", what, r.status, r.body, status, says)
	}
	if n := len(s.provider.Requests()); n != 0 {
		t.Errorf("%s: the provider got %d requests", what, n)
	}
}

// TestRequestsAroundTheGateAreRefused: on a model route, the endpoints and
// parameters that return tool calls the gate never sees, and an upgraded
// connection, are refused before anything reaches the provider, with an
// error naming them; where the operator allows them they pass.
func TestRequestsAroundTheGateAreRefused(t *testing.T) {
	s := newGateSite(t)
	as := map[string]string{"X-User-Id": "ana", "Content-Type": "application/json"}
	for _, tc := range []struct {
		method, path, body string
		header             map[string]string
		status             int
		says               string
	}{
		{"GET", "/v1/responses/resp_1", "", nil, 403, "GET /v1/responses/resp_1"},
		{"POST", "/v1/batches", `{"input_file_id":"f"}`, nil, 403, "allow batches"},
		{"GET", "/v1/realtime", "", nil, 403, "Realtime"},
		{"POST", "/v1/chat/completions", `{"model":"m","messages":[],"functions":[{"name":"delete_post"}]}`, nil, 400, "allow legacy_functions"},
		{"POST", "/v1/responses", `{"model":"m","input":"x","background":true}`, nil, 400, "background"},
		{"POST", "/v1/chat/completions", userAsks, map[string]string{"Connection": "Upgrade", "Upgrade": "websocket"}, 400, "WebSocket"},
	} {
		h := map[string]string{}
		for k, v := range as {
			h[k] = v
		}
		for k, v := range tc.header {
			h[k] = v
		}
		r := send(t, tc.method, s.api+tc.path, h, []byte(tc.body))
		s.wantRefused(t, tc.method+" "+tc.path, r, tc.status, tc.says)
	}
	s.provider.Enqueue(testkit.Reply{Body: []byte(`{"id":"resp_1","object":"response","output":[]}`)})
	if r := send(t, "GET", s.open+"/v1/responses/resp_1", nil, nil); r.status != 200 || len(s.provider.Requests()) != 1 {
		t.Errorf("an allowed stored response: %d %s", r.status, r.body)
	}
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestModelRequestBodyIsDecodedOrRefused: a compressed request body goes
// on decoded, described as it now is; one the gate cannot decode, or too
// large, is refused and nothing reaches the provider.
func TestModelRequestBodyIsDecodedOrRefused(t *testing.T) {
	s := newGateSite(t)
	h := map[string]string{"X-User-Id": "ana", "Content-Type": "application/json"}
	for _, tc := range []struct {
		name     string
		encoding string
		body     []byte
		status   int
		says     string
	}{
		{"brotli", "br", []byte("\x1b\x00"), 415, "cannot be checked"},
		{"broken gzip", "gzip", []byte("not gzip at all"), 400, "cannot be checked"},
		{"too large", "", []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`), 413, "over 4096 bytes"},
		{"too large once decoded", "gzip", gzipped(t, []byte(`{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("x", 5000)+`"}]}`)), 413, "cannot be checked"},
	} {
		hh := map[string]string{"Content-Encoding": tc.encoding}
		for k, v := range h {
			hh[k] = v
		}
		s.wantRefused(t, tc.name, send(t, "POST", s.api+"/v1/chat/completions", hh, tc.body), tc.status, tc.says)
	}
	s.provider.Enqueue(testkit.Reply{Body: []byte(textCompletion)})
	r := send(t, "POST", s.api+"/v1/chat/completions", map[string]string{"X-User-Id": "ana", "Content-Type": "application/json", "Content-Encoding": "gzip"}, gzipped(t, []byte(userAsks)))
	got, headers := s.provider.Requests(), s.provider.Headers()
	if r.status != 200 || len(got) != 1 || string(got[0]) != userAsks || headers[0].Get("Content-Encoding") != "" {
		t.Errorf("a gzipped request: %d; the provider got %q with Content-Encoding %q", r.status, got, headers[0].Get("Content-Encoding"))
	}
}

// TestCompressedResponseIsRefused: a compressed answer on a gated
// endpoint cannot be checked (a byte search finds no call in it, the
// app's SDK decodes it): it is refused with 502 and none of it reaches the
// app.
func TestCompressedResponseIsRefused(t *testing.T) {
	s := newGateSite(t)
	s.app.SetRecord("/posts/7", `{"title":"Spring meetup"}`)
	s.provider.Enqueue(testkit.Reply{Raw: true, Header: http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}}, Pieces: [][]byte{gzipped(t, completion(7))}})
	r := send(t, "POST", s.api+"/v1/chat/completions", map[string]string{"X-User-Id": "ana", "Content-Type": "application/json", "Accept-Encoding": "gzip"}, []byte(userAsks))
	if r.status != http.StatusBadGateway || r.header.Get("Content-Encoding") != "" || bytes.Contains(r.body, []byte{0x1f, 0x8b}) {
		t.Errorf("%d %v %q, want 502 and nothing of the answer", r.status, r.header, r.body)
	}
	if got := s.provider.Headers(); len(got) != 1 || got[0].Get("Accept-Encoding") != "identity" {
		t.Errorf("the provider was not asked for an identity body: %v", got)
	}
}

// TestOwnerComesFromTheBodyOnlyWhereConfigured: on a route whose owner is
// a header, a request without it is nobody's, whatever the body says: the
// gated call is refused and the model reads why. Where no owner is
// configured, the body's safety_identifier names the owner and the call is
// held.
func TestOwnerComesFromTheBodyOnlyWhereConfigured(t *testing.T) {
	s := newGateSite(t)
	s.app.SetRecord("/posts/7", `{"title":"Spring meetup"}`)
	body := []byte(`{"model":"m","safety_identifier":"ana","user":"ana","messages":[{"role":"user","content":"Delete post 7."}]}`)
	json := map[string]string{"Content-Type": "application/json"}

	s.provider.Enqueue(testkit.Reply{Body: completion(7)}, testkit.Reply{Body: []byte(textCompletion)})
	r := send(t, "POST", s.api+"/v1/chat/completions", json, body)
	reqs := s.provider.Requests()
	result := gjson.GetBytes(reqs[len(reqs)-1], `messages.#(role=="tool").content`).String()
	if r.status != 200 || linkRe.Match(r.body) || !strings.Contains(string(r.body), "FOLLOW-UP") || !strings.Contains(result, "could not tell whose conversation") {
		t.Errorf("no owner header: %d %s; the model read %q", r.status, r.body, result)
	}

	s.provider.Enqueue(testkit.Reply{Body: completion(7)})
	r = send(t, "POST", s.open+"/v1/chat/completions", json, body)
	link := linkRe.Find(r.body)
	if r.status != 200 || link == nil {
		t.Fatalf("the body's owner on a route without one: %d %s", r.status, r.body)
	}
	if v := send(t, "GET", string(link), map[string]string{"X-Person": "ana", "Accept": "application/json"}, nil); v.status != 200 {
		t.Errorf("ana's page: %d %s", v.status, v.body)
	}
	if n := len(s.app.Calls()); n != 0 {
		t.Errorf("the app got %d action requests", n)
	}
}

// TestOddPathsAreGated: a path a tolerant upstream routes to Chat
// Completions (case, a trailing slash, a path parameter) is gated like
// the exact one.
func TestOddPathsAreGated(t *testing.T) {
	s := newGateSite(t)
	s.app.SetRecord("/posts/7", `{"title":"Spring meetup"}`)
	for _, path := range []string{"/v1/Chat/Completions/", "/v1/chat/completions;v=1", "/v1//chat/completions"} {
		s.provider.Enqueue(testkit.Reply{Body: completion(7)})
		r := send(t, "POST", s.api+path, map[string]string{"X-User-Id": "ana", "Content-Type": "application/json"}, []byte(userAsks))
		if r.status != 200 || gjson.GetBytes(r.body, "choices.0.message.tool_calls").Exists() || !linkRe.Match(r.body) {
			t.Errorf("%s: %d %s, want the call held", path, r.status, r.body)
		}
	}
}

// TestPagesTakeThePersonFromTheConfiguredPlaceholders: the page of a hold
// made for ana in tenant acme shows to ana in acme only; without a
// signed-in person it asks for a sign-in.
func TestPagesTakeThePersonFromTheConfiguredPlaceholders(t *testing.T) {
	s := newGateSite(t)
	s.app.SetRecord("/posts/7", `{"title":"Spring meetup"}`)
	s.provider.Enqueue(testkit.Reply{Body: completion(7)})
	r := send(t, "POST", s.api+"/v1/chat/completions", map[string]string{"X-User-Id": "ana", "X-Tenant": "acme", "Content-Type": "application/json"}, []byte(userAsks))
	link := string(linkRe.Find(r.body))
	if link == "" || !strings.HasPrefix(link, s.pages) {
		t.Fatalf("no link to the pages: %s", r.body)
	}
	for _, tc := range []struct {
		person, tenant string
		status         int
	}{
		{"ana", "acme", 200},
		{"ana", "globex", 404},
		{"ana", "", 404},
		{"bo", "acme", 404},
		{"", "acme", 401},
	} {
		v := send(t, "GET", link, map[string]string{"X-Person": tc.person, "X-Tenant": tc.tenant, "Accept": "application/json"}, nil)
		if v.status != tc.status {
			t.Errorf("%s in %q: %d %s, want %d", tc.person, tc.tenant, v.status, v.body, tc.status)
		}
		if tc.status == 200 && gjson.GetBytes(v.body, "holds.0.card.rows.0.value").String() != "Spring meetup" {
			t.Errorf("ana's page: %s", v.body)
		}
	}

	// Ana confirms on the page; the app gets the call as her, in her
	// tenant, and the model's next request reads what happened.
	as := map[string]string{"X-Person": "ana", "X-Tenant": "acme", "Accept": "application/json"}
	page := send(t, "GET", link, as, nil)
	hold := gjson.GetBytes(page.body, "holds.0.id").String()
	answer := fmt.Sprintf(`{"hold":%q,"token":%q,"answer":"confirm"}`, hold, gjson.GetBytes(page.body, "tokens."+hold).String())
	as["Content-Type"] = "application/json"
	if v := send(t, "POST", link, as, []byte(answer)); v.status != 200 || gjson.GetBytes(v.body, "outcome").String() != "The person confirmed. Removed." {
		t.Fatalf("ana's confirm: %d %s", v.status, v.body)
	}
	calls := s.app.Calls()
	if len(calls) != 1 || calls[0].Method != "DELETE" || calls[0].URI != "/posts/7" || calls[0].Header.Get("X-Toolgate-Person") != "ana" || calls[0].Header.Get("X-Toolgate-Tenant") != "acme" || calls[0].SignatureErr != nil {
		t.Fatalf("the app got %+v", calls)
	}
	s.provider.Enqueue(testkit.Reply{Body: []byte(textCompletion)})
	waiting := gjson.GetBytes(r.body, "choices.0.message.content").String()
	next := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"Delete post 7."},{"role":"assistant","content":%q},{"role":"user","content":"Thanks"}]}`, waiting)
	if v := send(t, "POST", s.api+"/v1/chat/completions", map[string]string{"X-User-Id": "ana", "X-Tenant": "acme", "Content-Type": "application/json"}, []byte(next)); v.status != 200 {
		t.Fatalf("the next request: %d %s", v.status, v.body)
	}
	reqs := s.provider.Requests()
	if got := gjson.GetBytes(reqs[len(reqs)-1], `messages.#(role=="tool").content`).String(); got != "The person confirmed. Removed." {
		t.Errorf("the model read %q", got)
	}
}

// mcpServer is a fake MCP server: it records each message and answers
// tools/list with the two tools, tools/call with "ran <tool>".
type mcpServer struct {
	*httptest.Server
	mu       sync.Mutex
	messages [][]byte
	headers  []http.Header
}

func newMCPServer(t *testing.T) *mcpServer {
	m := &mcpServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.messages = append(m.messages, b)
		m.headers = append(m.headers, r.Header.Clone())
		m.mu.Unlock()
		id := gjson.GetBytes(b, "id").Raw
		w.Header().Set("Content-Type", "application/json")
		switch gjson.GetBytes(b, "method").String() {
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"delete_post","inputSchema":{"type":"object","properties":{"post":{"type":"integer"}},"required":["post"]}},{"name":"draft_post","inputSchema":{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string"}},"required":["title","body"]}},{"name":"echo","inputSchema":{"type":"object"}}]}}`, id)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ran %s"}]}}`, id, gjson.GetBytes(b, "params.name").String())
		}
	}))
	t.Cleanup(m.Close)
	return m
}

// got returns the messages the server received.
func (m *mcpServer) got() ([][]byte, []http.Header) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]byte(nil), m.messages...), append([]http.Header(nil), m.headers...)
}

func mcpCall(id int, tool, args string) []byte {
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
}

// TestMCPRouteDecidesWhatItCanRead: a gated tools/call is decided by the
// gate (here refused: the client cannot be asked) and never reaches the
// server, compressed or not; a body the gate cannot read is refused with
// a JSON-RPC error; a gated call hidden in a batch or behind a key given
// twice is refused; everything else reaches the server, decoded.
func TestMCPRouteDecidesWhatItCanRead(t *testing.T) {
	s := newGateSite(t)
	as := map[string]string{"X-User-Id": "ana", "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{}
		for k, v := range as {
			h[k] = v
		}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	gated := mcpCall(1, "delete_post", `{"post":7}`)
	for name, tc := range map[string]struct {
		header map[string]string
		body   []byte
	}{
		"plain":   {as, gated},
		"gzipped": {with(map[string]string{"Content-Encoding": "gzip"}), gzipped(t, gated)},
		"BOM":     {as, append([]byte("\ufeff"), gated...)},
	} {
		r := send(t, "POST", s.mcpURL, tc.header, tc.body)
		if r.status != 200 || !gjson.GetBytes(r.body, "result.isError").Bool() || !strings.Contains(gjson.GetBytes(r.body, "result.content.0.text").String(), "Toolgate refused delete_post") {
			t.Errorf("%s gated call: %d %s, want the gate's tool error", name, r.status, r.body)
		}
	}
	for name, tc := range map[string]struct {
		header map[string]string
		body   []byte
		status int
		says   string
	}{
		"brotli":         {with(map[string]string{"Content-Encoding": "br"}), []byte("\x1b\x00"), 415, "cannot be checked"},
		"not JSON":       {as, []byte("delete_post 7"), 400, "not a JSON-RPC"},
		"gated in batch": {as, []byte("[" + string(gated) + "]"), 400, "batch"},
		"name twice":     {as, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"delete_post","arguments":{"post":7}}}`), 400, "twice"},
	} {
		r := send(t, "POST", s.mcpURL, tc.header, tc.body)
		if r.status != tc.status || !gjson.GetBytes(r.body, "error.code").Exists() || !strings.Contains(gjson.GetBytes(r.body, "error.message").String(), tc.says) {
			t.Errorf("%s: %d %s, want %d with a JSON-RPC error saying %q", name, r.status, r.body, tc.status, tc.says)
		}
	}
	if msgs, _ := s.mcp.got(); len(msgs) != 0 {
		t.Fatalf("the server got %q", msgs)
	}

	echo := mcpCall(2, "echo", `{"x":1}`)
	r := send(t, "POST", s.mcpURL, with(map[string]string{"Content-Encoding": "gzip"}), gzipped(t, echo))
	msgs, headers := s.mcp.got()
	if r.status != 200 || len(msgs) != 1 || string(msgs[0]) != string(echo) || headers[0].Get("Content-Encoding") != "" {
		t.Errorf("a gzipped call of another tool: %d %s; the server got %q", r.status, r.body, msgs)
	}
	r = send(t, "POST", s.mcpURL, as, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`))
	desc := gjson.GetBytes(r.body, `result.tools.#(name=="draft_post").description`).String()
	if r.status != 200 || !strings.Contains(desc, "call it with what you know") {
		t.Errorf("tools/list: %d %s, want draft_post offered with the ask hint", r.status, r.body)
	}
}

// TestMCPRouteAsksForAForm: a 2026-07-28 client that can show a form gets
// one for the fields a call leaves out; its retry with the answer reaches
// the server once, with the person's values; the same retry again is
// refused.
func TestMCPRouteAsksForAForm(t *testing.T) {
	s := newGateSite(t)
	h := map[string]string{"X-User-Id": "ana", "Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28"}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
	r := send(t, "POST", s.mcpURL, h, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+meta+`,"name":"draft_post","arguments":{"title":"Hi"}}}`))
	state := gjson.GetBytes(r.body, "result.requestState").String()
	form := gjson.GetBytes(r.body, `result.inputRequests.io\.toolgate/form.params`)
	if r.status != 200 || gjson.GetBytes(r.body, "result.resultType").String() != "input_required" || state == "" || !form.Get("requestedSchema.properties.body").Exists() {
		t.Fatalf("the call: %d %s, want a form asking for body", r.status, r.body)
	}
	msgs, _ := s.mcp.got()
	for _, m := range msgs {
		if gjson.GetBytes(m, "method").String() == "tools/call" {
			t.Fatalf("the server got the call before the answer: %s", m)
		}
	}
	retry := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{%s,"name":"draft_post","arguments":{"title":"Hi"},"requestState":%q,"inputResponses":{"io.toolgate/form":{"action":"accept","content":{"body":"Spring"}}}}}`, meta, state))
	r = send(t, "POST", s.mcpURL, h, retry)
	if r.status != 200 || gjson.GetBytes(r.body, "result.content.0.text").String() != "ran draft_post" {
		t.Fatalf("the retry: %d %s", r.status, r.body)
	}
	msgs, _ = s.mcp.got()
	last := msgs[len(msgs)-1]
	if gjson.GetBytes(last, "params.arguments").Raw != `{"title":"Hi","body":"Spring"}` || gjson.GetBytes(last, "params.requestState").Exists() || gjson.GetBytes(last, "params.inputResponses").Exists() {
		t.Errorf("the server got %s", last)
	}
	r = send(t, "POST", s.mcpURL, h, retry)
	if !gjson.GetBytes(r.body, "result.isError").Bool() || !strings.Contains(string(r.body), "already used") {
		t.Errorf("the same retry again: %d %s", r.status, r.body)
	}
	if again, _ := s.mcp.got(); len(again) != len(msgs) {
		t.Errorf("the replay reached the server: %s", again[len(again)-1])
	}
}
