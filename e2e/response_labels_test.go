package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolgate/toolgate/internal/testkit"
)

// labelledUpstream answers every request with status, the given
// Content-Type headers (none when empty: Go's server then sends none
// either) and body.
type labelledUpstream struct {
	status int
	types  []string
	body   []byte
}

func (u *labelledUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header()["Content-Type"] = u.types // nil: no Content-Type, and no sniffing
	w.WriteHeader(u.status)
	w.Write(u.body)
}

// upstreamGate runs one Caddy whose gated route proxies to up and returns
// its URL. The person's pages are not needed: these tests only look at
// what the app reads.
func upstreamGate(t *testing.T, up http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	pf := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pf, []byte(strings.ReplaceAll(policyYAML, "APP", "http://127.0.0.1:1")), 0o600); err != nil {
		t.Fatal(err)
	}
	api, pages := testkit.FreePort(t), testkit.FreePort(t)
	testkit.Run(t, fmt.Sprintf(`{
	admin off
	auto_https off
	default_bind 127.0.0.1
	log {
		level ERROR
	}
	persist_config off
	grace_period 1ns
	toolgate {
		store badger %s
		secret %s
		pages http://127.0.0.1:%d/toolgate
	}
}
http://127.0.0.1:%d {
	toolgate {
		policy %s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %s
}
`, filepath.Join(dir, "store"), secret, pages, api, pf, srv.URL))
	return fmt.Sprintf("http://127.0.0.1:%d", api)
}

var email = call{"call_mail", "send_email", `{"to":"team@example.com","subject":"Hi"}`, false}

func joined(evs [][]byte) []byte {
	var b []byte
	for _, ev := range evs {
		b = append(b, ev...)
	}
	return b
}

// A 2xx or 3xx answer is read whatever its label: the SDKs read a streamed
// request's answer as an event stream whatever it says, decode JSON under
// any media type holding application/json or ending in +json, and the Go
// SDKs take any status under 400 for an answer. The gated call is held
// for the app in every case.
func TestResponsesOfEveryLabelAreRead(t *testing.T) {
	stream := joined(streamEvents([]string{"Sending."}, email))
	for _, tc := range []struct {
		name   string
		up     labelledUpstream
		stream bool
	}{
		{"stream as text/plain", labelledUpstream{200, []string{"text/plain; charset=utf-8"}, stream}, true},
		{"stream without a label", labelledUpstream{200, nil, stream}, true},
		{"stream as octet-stream", labelledUpstream{200, []string{"application/octet-stream"}, stream}, true},
		{"stream under two labels", labelledUpstream{200, []string{"text/plain", "text/event-stream"}, stream}, true},
		{"JSON as +json", labelledUpstream{200, []string{"application/vnd.openai+json"}, jsonCompletion("Sending.", email)}, false},
		{"JSON with status 300", labelledUpstream{300, []string{"application/json"}, jsonCompletion("Sending.", email)}, false},
		{"JSON with status 299", labelledUpstream{299, []string{"application/json"}, jsonCompletion("Sending.", email)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := tc.up
			api := upstreamGate(t, &up)
			c := openai.NewClient(option.WithBaseURL(api+"/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0), option.WithHeader("X-User-Id", "ana"))
			var msg openai.ChatCompletionMessage
			if tc.stream {
				msg = streamWith(t, &c, userAsks("Email the team.")).Choices[0].Message
			} else {
				got, err := c.Chat.Completions.New(ctx, userAsks("Email the team."))
				if err != nil {
					t.Fatal(err)
				}
				msg = got.Choices[0].Message
			}
			if len(msg.ToolCalls) != 0 || !strings.Contains(msg.Content, "Waiting for your confirmation") {
				t.Errorf("the app reads %q with calls %v", msg.Content, callNames(msg.ToolCalls))
			}
		})
	}

	t.Run("anthropic stream as text/plain", func(t *testing.T) {
		body := sse("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}`)
		body = append(body, sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_mail","name":"send_email","input":{}}}`)...)
		body = append(body, sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"to\":\"team@example.com\",\"subject\":\"Hi\"}"}}`)...)
		body = append(body, sse("content_block_stop", `{"type":"content_block_stop","index":0}`)...)
		body = append(body, sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}`)...)
		body = append(body, sse("message_stop", `{"type":"message_stop"}`)...)
		api := upstreamGate(t, &labelledUpstream{200, []string{"text/plain"}, body})
		c := anthropic.NewClient(aoption.WithBaseURL(api), aoption.WithAPIKey("test"), aoption.WithMaxRetries(0), aoption.WithHeader("X-User-Id", "ana"))
		m := anthropicStream(t, &c, anthropicAsk("Email the team."))
		if len(toolUses(m)) != 0 || !strings.Contains(textOf(m), "Waiting for your confirmation") {
			t.Errorf("the app reads %q with calls %v", textOf(m), toolUses(m))
		}
	})
}
