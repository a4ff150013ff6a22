package testkit

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// Reply is one scripted provider response.
type Reply struct {
	ContentType string // default application/json
	Status      int    // default 200
	Body        []byte
	// Events, when set, are written one by one with a flush after each
	// (an SSE stream); Body is ignored.
	Events [][]byte
	// Gate, when set, is waited on before the event at GateAt is written:
	// the upstream holds the rest of the stream back.
	Gate   chan struct{}
	GateAt int
	Header http.Header
	// Raw, when set, sends the reply byte for byte: the header is Header
	// exactly (several values are kept, and no Content-Type is added, not
	// even the one net/http would sniff), and the body is Pieces, written
	// in order with a flush after each. Body, Events and ContentType are
	// ignored.
	Raw    bool
	Pieces [][]byte
}

// ReplyKeyHeader is the request header that picks a reply given to Serve.
const ReplyKeyHeader = "X-Testkit-Reply"

// Provider is a fake model provider: it replays scripted replies in order
// and records every request body it got. Like OpenAI, it refuses a Chat
// history whose assistant tool calls are not each answered by a tool
// message.
type Provider struct {
	*httptest.Server
	mu sync.Mutex
	// calls are the function_call call_ids of each Responses response
	// served, by response id, to check previous_response_id requests.
	calls    map[string][]string
	replies  []Reply
	keyed    map[string]Reply // Serve's replies, by ReplyKeyHeader value
	requests [][]byte
	headers  []http.Header
}

// NewProvider starts a fake provider for the test.
func NewProvider(t testing.TB) *Provider {
	p := &Provider{}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

// Enqueue adds replies to the script.
func (p *Provider) Enqueue(r ...Reply) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.replies = append(p.replies, r...)
}

// Serve answers every request whose ReplyKeyHeader is key with r, as often
// as one comes, ahead of the script: tests that send many requests at once
// (or in any order) give each its own key.
func (p *Provider) Serve(key string, r Reply) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keyed == nil {
		p.keyed = map[string]Reply{}
	}
	p.keyed[key] = r
}

// Requests returns the request bodies received so far.
func (p *Provider) Requests() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.requests...)
}

// Headers returns the request headers received so far.
func (p *Provider) Headers() []http.Header {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]http.Header(nil), p.headers...)
}

func (p *Provider) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.requests = append(p.requests, body)
	p.headers = append(p.headers, r.Header.Clone())
	rep, ok := p.keyed[r.Header.Get(ReplyKeyHeader)]
	if !ok && len(p.replies) > 0 {
		rep, p.replies, ok = p.replies[0], p.replies[1:], true
	}
	p.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":{"message":"no scripted reply"}}`, http.StatusInternalServerError)
		return
	}
	var complaint string
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		complaint = checkChatHistory(body)
	case strings.HasSuffix(r.URL.Path, "/messages"):
		complaint = checkAnthropicHistory(body)
	case strings.HasSuffix(r.URL.Path, "/responses"):
		complaint = p.checkResponsesHistory(body)
	}
	if complaint != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"type":"error","error":{"message":%q,"type":"invalid_request_error"}}`, complaint)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/responses") {
		p.remember(rep)
	}
	if rep.Raw {
		writeRaw(w, rep)
		return
	}
	for k, v := range rep.Header {
		w.Header()[k] = v
	}
	status := rep.Status
	if status == 0 {
		status = 200
	}
	if rep.Events == nil {
		ct := rep.ContentType
		if ct == "" {
			ct = "application/json"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		w.Write(rep.Body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(status)
	fl := w.(http.Flusher)
	fl.Flush()
	for i, ev := range rep.Events {
		if rep.Gate != nil && i == rep.GateAt {
			select {
			case <-rep.Gate:
			case <-r.Context().Done():
				return
			case <-time.After(30 * time.Second):
				return
			}
		}
		w.Write(ev)
		fl.Flush()
	}
}

// writeRaw sends a Raw reply: its header as given, its pieces flushed one
// by one.
func writeRaw(w http.ResponseWriter, rep Reply) {
	h := w.Header()
	for k, v := range rep.Header {
		h[k] = v
	}
	if _, ok := rep.Header["Content-Type"]; !ok {
		h["Content-Type"] = nil // present but empty: net/http sniffs no type
	}
	status := rep.Status
	if status == 0 {
		status = 200
	}
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	for _, p := range rep.Pieces {
		if _, err := w.Write(p); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// checkChatHistory returns OpenAI's complaint about a history in which an
// assistant message's tool calls are not all answered before the next
// message of another role, or "" when the history pairs.
func checkChatHistory(body []byte) string {
	msgs := gjson.GetBytes(body, "messages").Array()
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Get("role").String() != "assistant" || !m.Get("tool_calls").Exists() {
			continue
		}
		want := map[string]bool{}
		for _, c := range m.Get("tool_calls").Array() {
			want[c.Get("id").String()] = true
		}
		j := i + 1
		for ; j < len(msgs) && msgs[j].Get("role").String() == "tool"; j++ {
			delete(want, msgs[j].Get("tool_call_id").String())
		}
		if len(want) > 0 {
			for id := range want {
				return fmt.Sprintf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", id)
			}
		}
	}
	return ""
}

// Fixture reads a recorded response from the module's testdata/fixtures
// (its README says where each came from). Found from this file, not the
// working directory, so that every package's tests read the same copy and
// nothing outside the module.
func Fixture(t testing.TB, parts ...string) []byte {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "fixtures")
	b, err := os.ReadFile(filepath.Join(append([]string{root}, parts...)...))
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	return b
}

// SSEEvents splits an SSE body into its events, each with its blank line.
func SSEEvents(body []byte) [][]byte {
	var out [][]byte
	for _, ev := range bytes.SplitAfter(body, []byte("\n\n")) {
		if len(bytes.TrimSpace(ev)) > 0 {
			out = append(out, ev)
		}
	}
	return out
}

// checkAnthropicHistory returns Anthropic's complaint about a history in
// which an assistant tool_use is not answered by a tool_result at the
// start of the next user message, or a tool_result answers nothing.
func checkAnthropicHistory(body []byte) string {
	msgs := gjson.GetBytes(body, "messages").Array()
	for i, m := range msgs {
		if m.Get("role").String() != "assistant" {
			continue
		}
		var ids []string
		for _, b := range m.Get("content").Array() {
			if b.Get("type").String() == "tool_use" {
				ids = append(ids, b.Get("id").String())
			}
		}
		if len(ids) == 0 {
			continue
		}
		if i+1 >= len(msgs) || msgs[i+1].Get("role").String() != "user" {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s", i, ids[0])
		}
		answered := map[string]bool{}
		leading := true
		for _, b := range msgs[i+1].Get("content").Array() {
			if b.Get("type").String() == "tool_result" {
				if !leading {
					return fmt.Sprintf("messages.%d: tool_result blocks must come first in the user message", i+1)
				}
				answered[b.Get("tool_use_id").String()] = true
			} else {
				leading = false
			}
		}
		for _, id := range ids {
			if !answered[id] {
				return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s", i, id)
			}
		}
	}
	return ""
}

// remember keeps the function_call call_ids of a Responses reply.
func (p *Provider) remember(rep Reply) {
	body := rep.Body
	if rep.Events != nil {
		for _, ev := range rep.Events {
			if bytes.Contains(ev, []byte(`"response.completed"`)) {
				_, data, _ := bytes.Cut(ev, []byte("data: "))
				body = []byte(gjson.GetBytes(data, "response").Raw)
			}
		}
	}
	id := gjson.GetBytes(body, "id").String()
	if id == "" {
		return
	}
	var ids []string
	for _, it := range gjson.GetBytes(body, "output").Array() {
		if t := it.Get("type").String(); t == "function_call" || t == "custom_tool_call" {
			ids = append(ids, it.Get("call_id").String())
		}
	}
	p.mu.Lock()
	if p.calls == nil {
		p.calls = map[string][]string{}
	}
	p.calls[id] = ids
	p.mu.Unlock()
}

// checkResponsesHistory returns OpenAI's complaint about a Responses
// request: a previous response's function call left without its output, a
// function_call item in input without a function_call_output, or a
// reasoning item not followed by an item.
func (p *Provider) checkResponsesHistory(body []byte) string {
	input := gjson.GetBytes(body, "input")
	outputs := map[string]bool{}
	items := input.Array()
	for _, it := range items {
		if t := it.Get("type").String(); t == "function_call_output" || t == "custom_tool_call_output" {
			outputs[it.Get("call_id").String()] = true
		}
	}
	if prev := gjson.GetBytes(body, "previous_response_id").String(); prev != "" {
		p.mu.Lock()
		ids := p.calls[prev]
		p.mu.Unlock()
		for _, id := range ids {
			if !outputs[id] {
				return "No tool output found for function call " + id + "."
			}
		}
	}
	for i, it := range items {
		switch it.Get("type").String() {
		case "function_call", "custom_tool_call":
			if !outputs[it.Get("call_id").String()] {
				return "No tool output found for function call " + it.Get("call_id").String() + "."
			}
		case "reasoning":
			if i+1 >= len(items) {
				return fmt.Sprintf("Item '%s' of type 'reasoning' was provided without its required following item.", it.Get("id").String())
			}
		case "item_reference":
			if strings.HasPrefix(it.Get("id").String(), "msg_toolgate") {
				return fmt.Sprintf("Item with id '%s' not found.", it.Get("id").String())
			}
		}
	}
	return ""
}
