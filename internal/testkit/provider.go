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
}

// Provider is a fake model provider: it replays scripted replies in order
// and records every request body it got. Like OpenAI, it refuses a Chat
// history whose assistant tool calls are not each answered by a tool
// message.
type Provider struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []Reply
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
	var rep Reply
	ok := len(p.replies) > 0
	if ok {
		rep, p.replies = p.replies[0], p.replies[1:]
	}
	p.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":{"message":"no scripted reply"}}`, http.StatusInternalServerError)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/chat/completions") {
		if msg := checkChatHistory(body); msg != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error"}}`, msg)
			return
		}
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

// Fixture reads a recorded response from ../shared/fixtures.
func Fixture(t testing.TB, parts ...string) []byte {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "fixtures")
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
