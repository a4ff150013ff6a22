package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// modelGate runs the toolgate handler (the test policy, the given lines
// in its block) in front of a fake provider and returns the route's URL
// and the provider.
func modelGate(t *testing.T, lines string) (string, *testkit.Provider) {
	t.Helper()
	prov := testkit.NewProvider(t)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(strings.ReplaceAll(policyYAML, "APP", "http://127.0.0.1:1")), 0o600); err != nil {
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
	toolgate {
		policy %s
		%s
	}
	reverse_proxy %s
}
`, filepath.Join(dir, "store"), secret, port, pol, lines, prov.URL))
	return fmt.Sprintf("http://127.0.0.1:%d", port), prov
}

// aroundTheGate are requests to endpoints that return tool calls the gate
// never rewrites, with the allow name that lets each through.
var aroundTheGate = []struct {
	name, allow, method, path, body string
	upgrade                         bool
	status                          int
}{
	{"legacy functions", "legacy_functions", "POST", "/v1/chat/completions", `{"model":"gpt-4o","functions":[{"name":"delete_post","parameters":{"type":"object"}}],"messages":[{"role":"user","content":"x"}]}`, false, 400},
	{"legacy function_call", "legacy_functions", "POST", "/v1/chat/completions", `{"model":"gpt-4o","function_call":{"name":"delete_post"},"messages":[{"role":"user","content":"x"}]}`, false, 400},
	{"openai batch", "batches", "POST", "/v1/batches", `{"input_file_id":"file-1","endpoint":"/v1/chat/completions","completion_window":"24h"}`, false, 403},
	{"openai batch output", "batches", "GET", "/v1/files/file-out/content", "", false, 403},
	{"anthropic batch", "batches", "POST", "/v1/messages/batches", `{"requests":[]}`, false, 403},
	{"anthropic batch results", "batches", "GET", "/v1/messages/batches/msgbatch_1/results", "", false, 403},
	{"stored response", "stored_responses", "GET", "/v1/responses/resp_1", "", false, 403},
	{"stored response input items", "stored_responses", "GET", "/v1/responses/resp_1/input_items", "", false, 403},
	{"cancelled background response", "stored_responses", "POST", "/v1/responses/resp_1/cancel", "", false, 403},
	{"conversation items", "stored_responses", "GET", "/v1/conversations/conv_1/items", "", false, 403},
	{"stored chat completion", "stored_responses", "GET", "/v1/chat/completions/chatcmpl-1", "", false, 403},
	{"background response", "stored_responses", "POST", "/v1/responses", `{"model":"gpt-4o","background":true,"input":"x"}`, false, 400},
	{"realtime websocket", "realtime", "GET", "/v1/realtime", "", true, 403},
	{"realtime call", "realtime", "POST", "/v1/realtime/calls", "v=0", false, 403},
	{"realtime client secret", "realtime", "POST", "/v1/realtime/client_secrets", `{}`, false, 403},
}

func sendAround(t *testing.T, url, method, path, body string, upgrade bool) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-Id", "ana")
	if upgrade {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	}
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(c))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// By default each is refused with a status and an error naming it and the
// way to allow it; nothing reaches the provider.
func TestEndpointsAroundTheGateRefused(t *testing.T) {
	url, prov := modelGate(t, "owner {http.request.header.X-User-Id}")
	for _, tc := range aroundTheGate {
		status, body := sendAround(t, url, tc.method, tc.path, tc.body, tc.upgrade)
		msg := gjson.GetBytes(body, "error.message").String()
		if status != tc.status || !strings.Contains(msg, "allow "+tc.allow) || !strings.HasPrefix(msg, "toolgate: ") {
			t.Errorf("%s: got %d %s, want %d naming `allow %s`", tc.name, status, body, tc.status, tc.allow)
		}
	}
	if n := len(prov.Requests()); n != 0 {
		t.Errorf("%d refused requests reached the provider", n)
	}
}

// Allowed by the operator, each goes to the provider as it came.
func TestEndpointsAroundTheGateAllowed(t *testing.T) {
	url, prov := modelGate(t, "owner {http.request.header.X-User-Id}\n\t\tallow legacy_functions batches stored_responses realtime")
	for _, tc := range aroundTheGate {
		before := len(prov.Requests())
		prov.Enqueue(testkit.Reply{Body: []byte(`{"id":"x","object":"thing"}`)})
		status, body := sendAround(t, url, tc.method, tc.path, tc.body, tc.upgrade)
		reqs := prov.Requests()
		if len(reqs) != before+1 || string(reqs[len(reqs)-1]) != tc.body {
			t.Errorf("%s: the provider got %d requests, last %q; want it as sent", tc.name, len(reqs)-before, reqs[len(reqs)-1:])
		}
		if strings.Contains(string(body), "toolgate") {
			t.Errorf("%s: %d %s", tc.name, status, body)
		}
	}
}

// Each allow name opens only its own endpoints.
func TestEachAllowOpensItsOwn(t *testing.T) {
	url, prov := modelGate(t, "owner {http.request.header.X-User-Id}\n\t\tallow batches")
	for _, tc := range aroundTheGate {
		before := len(prov.Requests())
		prov.Enqueue(testkit.Reply{Body: []byte(`{"id":"x"}`)})
		status, _ := sendAround(t, url, tc.method, tc.path, tc.body, tc.upgrade)
		reached := len(prov.Requests()) > before
		if reached != (tc.allow == "batches") {
			t.Errorf("%s: reached the provider %v (status %d) with only batches allowed", tc.name, reached, status)
		}
	}
}

// The official SDKs surface the refusal: status and message.
func TestEndpointRefusalReadBySDKs(t *testing.T) {
	url, _ := modelGate(t, "owner {http.request.header.X-User-Id}")
	oc := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0), option.WithHeader("X-User-Id", "ana"))
	_, err := oc.Batches.New(ctx, openai.BatchNewParams{InputFileID: "file-1", Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	var oerr *openai.Error
	if !errors.As(err, &oerr) || oerr.StatusCode != 403 || !strings.Contains(oerr.Message, "batch") || !strings.Contains(oerr.Message, "allow batches") {
		t.Errorf("openai-go read %v", err)
	}
	_, err = oc.Responses.Get(ctx, "resp_1", responses.ResponseGetParams{})
	if !errors.As(err, &oerr) || oerr.StatusCode != 403 || !strings.Contains(oerr.Message, "/v1/responses/resp_1") {
		t.Errorf("openai-go read %v", err)
	}
	ac := anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("test"), aoption.WithMaxRetries(0), aoption.WithHeader("X-User-Id", "ana"))
	_, err = ac.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{})
	var aerr *anthropic.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != 403 || !strings.Contains(aerr.Message, "allow batches") || aerr.Type() != "permission_error" {
		t.Errorf("anthropic-sdk-go read %v", err)
	}
}
