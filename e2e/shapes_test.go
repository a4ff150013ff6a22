package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// A response the gate did not read as a call must not carry one (issue 15
// §2). answerShapes are the answers of every provider shape the gate knows
// of, each carrying a delete_post call (gated by the test policy), each
// asked for as its own clients ask.
var answerShapes = []struct {
	name, method, path, request string
	reply                       testkit.Reply
}{
	{"openai chat", "POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		testkit.Reply{Body: []byte(`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}"}}]},"finish_reason":"tool_calls"}]}`)}},
	{"openai responses", "POST", "/v1/responses", `{"model":"m","input":"x"}`,
		testkit.Reply{Body: []byte(`{"id":"resp_1","object":"response","status":"completed","model":"m","output":[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"delete_post","arguments":"{\"post\":7}","status":"completed"}]}`)}},
	{"anthropic messages", "POST", "/v1/messages", `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"x"}]}`,
		testkit.Reply{Body: []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"delete_post","input":{"post":7}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)}},
	{"gemini generateContent", "POST", "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`,
		testkit.Reply{Body: []byte(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"delete_post","args":{"post":7}}}]},"finishReason":"STOP","index":0}],"modelVersion":"gemini-2.5-flash"}`)}},
	{"gemini streamGenerateContent", "POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`,
		testkit.Reply{Events: [][]byte{[]byte("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Sure.\"}]},\"index\":0}]}\r\n\r\n"), []byte("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"delete_post\",\"args\":{\"post\":7}}}]},\"finishReason\":\"STOP\",\"index\":0}]}\r\n\r\n")}}},
	{"assistants create run", "POST", "/v1/threads/thread_1/runs", `{"assistant_id":"asst_1"}`,
		testkit.Reply{Body: []byte(assistantsRun)}},
	{"assistants get run", "GET", "/v1/threads/thread_1/runs/run_1", "", testkit.Reply{Body: []byte(assistantsRun)}},
	{"assistants get run, lower-case method", "get", "/v1/threads/thread_1/runs/run_1", "", testkit.Reply{Body: []byte(assistantsRun)}},
	{"ollama chat", "POST", "/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"x"}],"stream":false}`,
		testkit.Reply{Body: []byte(`{"model":"llama3.2","created_at":"2026-12-02T08:00:00Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"delete_post","arguments":{"post":7}}}]},"done":true}`)}},
	{"ollama chat stream", "POST", "/api/chat", `{"model":"llama3.2","messages":[{"role":"user","content":"x"}]}`,
		testkit.Reply{Raw: true, Header: http.Header{"Content-Type": {"application/x-ndjson"}}, Pieces: [][]byte{
			[]byte(`{"model":"llama3.2","message":{"role":"assistant","content":"Sure."},"done":false}` + "\n"),
			[]byte(`{"model":"llama3.2","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"delete_post","arguments":{"post":7}}}]},"done":false}` + "\n"),
			[]byte(`{"model":"llama3.2","message":{"role":"assistant","content":""},"done":true}` + "\n")}}},
	{"bedrock converse", "POST", "/model/anthropic.claude-sonnet-4/converse", `{"messages":[{"role":"user","content":[{"text":"x"}]}]}`,
		testkit.Reply{Body: []byte(`{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"delete_post","input":{"post":7}}}]}},"stopReason":"tool_use","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`)}},
	{"bedrock invoke", "POST", "/model/anthropic.claude-sonnet-4/invoke", `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"x"}]}`,
		testkit.Reply{Body: []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"delete_post","input":{"post":7}}],"stop_reason":"tool_use"}`)}},
	{"gemini answer on a path the route reads as its provider's", "POST", "/v2/generate", `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		testkit.Reply{Body: []byte(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"delete_post","args":{"post":7}}}]},"finishReason":"STOP","index":0}]}`)}},
	{"gemini stream on a path the route reads as its provider's", "POST", "/v2/generate", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`,
		testkit.Reply{Events: [][]byte{[]byte("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Sure.\"}]},\"index\":0}]}\n\n"), []byte("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"delete_post\",\"args\":{\"post\":7}}}]},\"index\":0}]}\n\n")}}},
	{"anthropic stream answering a chat path", "POST", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`,
		testkit.Reply{Events: [][]byte{
			[]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"),
			[]byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"delete_post\",\"input\":{}}}\n\n"),
			[]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"post\\\":7}\"}}\n\n"),
			[]byte("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")}}},
	{"unknown get", "GET", "/v1/agents/a1/last_answer", "", testkit.Reply{Body: []byte(`{"calls":[{"tool":"delete_post","args":{"post":7}}]}`)}},
}

const assistantsRun = `{"id":"run_1","object":"thread.run","thread_id":"thread_1","assistant_id":"asst_1","status":"requires_action","required_action":{"type":"submit_tool_outputs","submit_tool_outputs":{"tool_calls":[{"id":"call_1","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}"}}]}}}`

// routeProviders are every provider setting a route can have.
var routeProviders = []string{"", "auto", "openai-chat", "openai-responses", "anthropic"}

// carriesCall reports whether an answer the app received can carry the
// delete_post call: a status clients read as an answer, and the tool's
// name as a JSON string or its arguments, in any of the shapes above
// (also inside a JSON-encoded string).
func carriesCall(status int, body []byte) bool {
	if status >= 400 {
		return false
	}
	for _, s := range []string{`"delete_post"`, `\"delete_post\"`, `"post":7`, `\"post\":7`} {
		if bytes.Contains(body, []byte(s)) {
			return true
		}
	}
	return false
}

// TestNoShapeCarriesAGatedCall: every known provider shape, through a route
// of every provider setting, reaches the app only without its call: held
// (a link in its place), refused with a toolgate error, or cut.
func TestNoShapeCarriesAGatedCall(t *testing.T) {
	for _, provider := range routeProviders {
		line := "owner {http.request.header.X-User-Id}"
		if provider != "" {
			line += "\n\t\tprovider " + provider
		}
		url, prov := modelGate(t, line)
		for i, sh := range answerShapes {
			key := fmt.Sprintf("%s-%d", provider, i)
			prov.Serve(key, sh.reply)
			status, body, err := sendShape(url, sh.method, sh.path, sh.request, key)
			if err != nil {
				continue // cut: the app read a broken answer, never the call
			}
			if carriesCall(status, body) {
				t.Errorf("provider %q, %s (%s %s): the app got the call: %d %s", provider, sh.name, sh.method, sh.path, status, body)
			}
			if status >= 400 && !strings.HasPrefix(gjson.GetBytes(body, "error.message").String(), "toolgate: ") {
				t.Errorf("provider %q, %s: refused without a toolgate error: %d %s", provider, sh.name, status, body)
			}
		}
	}
}

// sendShape sends one request as its client would, with the reply key.
func sendShape(url, method, path, body, key string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(c, method, url+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-Id", "ana")
	req.Header.Set(testkit.ReplyKeyHeader, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// Unknown POST paths are refused before they reach the provider (403,
// naming allow_paths); the operator lets one through by name, and its
// answer is still refused when it names a gated tool, passed when it
// does not.
func TestUnknownPostPathsRefusedUnlessAllowed(t *testing.T) {
	url, prov := modelGate(t, "owner {http.request.header.X-User-Id}")
	// Gemini's :generateContent is the gemini provider's now
	// (gemini_test.go); a ':' method no provider serves or knows stays
	// unknown.
	for _, path := range []string{"/v1/projects/p/locations/l/publishers/google/models/m:computeTokens", "/v1/threads/thread_1/runs", "/api/chat", "/model/m/converse", "/model/m/invoke", "/v2/agents/run"} {
		status, body, err := sendShape(url, "POST", path, `{}`, "none")
		if err != nil || status != http.StatusForbidden || !strings.Contains(gjson.GetBytes(body, "error.message").String(), "allow_paths "+path) {
			t.Errorf("POST %s: %d %s %v, want 403 naming allow_paths", path, status, body, err)
		}
	}
	if n := len(prov.Requests()); n != 0 {
		t.Errorf("%d refused requests reached the provider", n)
	}
	for _, path := range []string{"/v1/embeddings", "/v1/messages/count_tokens", "/v1/moderations"} {
		prov.Serve("known", testkit.Reply{Body: []byte(`{"object":"list","data":[]}`)})
		if status, body, err := sendShape(url, "POST", path, `{"input":"x","model":"m"}`, "known"); err != nil || status != 200 {
			t.Errorf("POST %s: %d %s %v, want it passed", path, status, body, err)
		}
	}

	url, prov = modelGate(t, "owner {http.request.header.X-User-Id}\n\t\tallow_paths /api/chat /v1/projects/*")
	prov.Serve("plain", testkit.Reply{Body: []byte(`{"model":"llama3.2","message":{"role":"assistant","content":"Hello."},"done":true}`)})
	status, body, err := sendShape(url, "POST", "/api/chat", `{"model":"llama3.2"}`, "plain")
	if err != nil || status != 200 || gjson.GetBytes(body, "message.content").String() != "Hello." {
		t.Errorf("allowed /api/chat without a call: %d %s %v, want it passed", status, body, err)
	}
	for _, path := range []string{"/api/chat", "/v1/projects/p/locations/l/publishers/google/models/m:computeTokens"} {
		prov.Serve("call", testkit.Reply{Body: []byte(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete_post","args":{"post":7}}}]}}],"message":{"tool_calls":[{"function":{"name":"delete_post"}}]}}`)})
		status, body, err = sendShape(url, "POST", path, `{"model":"m"}`, "call")
		if err != nil || status != http.StatusBadGateway || !strings.Contains(gjson.GetBytes(body, "error.message").String(), "delete_post") {
			t.Errorf("allowed %s with a call: %d %s %v, want 502 naming the tool", path, status, body, err)
		}
	}
}

// A lower-case method is the method: Caddy forwards "get" as it came and
// a tolerant upstream routes it as GET, so the GET-only refusals hold for
// it, and a lower-case "post" to a gated endpoint is gated.
func TestLowerCaseMethods(t *testing.T) {
	url, prov := modelGate(t, "owner {http.request.header.X-User-Id}")
	for _, path := range []string{"/v1/chat/completions", "/v1/conversations/conv_1/items"} {
		status, body, err := sendShape(url, "get", path, "", "none")
		if err != nil || status != http.StatusForbidden || !strings.Contains(string(body), "allow stored_responses") {
			t.Errorf("get %s: %d %s %v, want 403", path, status, body, err)
		}
	}
	if n := len(prov.Requests()); n != 0 {
		t.Errorf("%d refused requests reached the provider", n)
	}
	prov.Serve("post", answerShapes[0].reply)
	status, body, err := sendShape(url, "post", "/v1/chat/completions", answerShapes[0].request, "post")
	if err != nil || carriesCall(status, body) || status != http.StatusOK || gjson.GetBytes(body, "choices.0.message.content").String() == "" {
		t.Errorf("post /v1/chat/completions: %d %s %v, want it gated (the call taken out, text in its place)", status, body, err)
	}
	status, body, err = sendShape(url, "post", "/api/chat", `{}`, "none")
	if err != nil || status != http.StatusForbidden || !strings.Contains(string(body), "allow_paths") {
		t.Errorf("post /api/chat: %d %s %v, want 403", status, body, err)
	}
}
