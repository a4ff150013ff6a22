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

	"github.com/toolgate/toolgate/provider/anthropic/anthropictest"
	"github.com/toolgate/toolgate/provider/chat/chattest"
	"github.com/toolgate/toolgate/provider/responses/responsestest"
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

// historyCheckers register the wire protocols' strict history checkers,
// each from the protocol's test package, with the suffix of the paths it
// checks: a protocol's test package is found here by path (the suffixes
// are disjoint). Each Provider makes its own checkers (one may learn what
// its provider served). A protocol's checker gets one line here.
var historyCheckers = []struct {
	suffix string
	new    func() historyChecker
}{
	{"/chat/completions", func() historyChecker { return stateless(chattest.Check) }},
	{"/messages", func() historyChecker { return stateless(anthropictest.Check) }},
	{"/responses", func() historyChecker { return new(responsestest.Checker) }},
}

// historyChecker checks a request's history (Check, a non-nil error whose
// text is the provider's complaint) and learns the replies served after
// the requests it accepted (Served: a JSON body, or a stream's events
// joined).
type historyChecker interface {
	Check(body []byte) error
	Served(body []byte)
}

// stateless is a history checker that learns nothing from replies.
type stateless func(body []byte) error

func (f stateless) Check(body []byte) error { return f(body) }
func (stateless) Served([]byte)             {}

// history returns this provider's checker for a request path, or nil.
func (p *Provider) history(path string) historyChecker {
	for i, h := range historyCheckers {
		if strings.HasSuffix(path, h.suffix) {
			return p.histories[i]
		}
	}
	return nil
}

// ReplyKeyHeader is the request header that picks a reply given to Serve.
const ReplyKeyHeader = "X-Testkit-Reply"

// Provider is a fake model provider: it replays scripted replies in order
// and records every request body it got. Like the real APIs, it refuses a
// history the provider refuses (a call left without its result, ...): the
// checker of the protocol the path names (historyCheckers) decides, and
// its complaint goes back in a 400.
type Provider struct {
	*httptest.Server
	// histories are this provider's history checkers, one for each of
	// historyCheckers, in its order.
	histories []historyChecker
	mu        sync.Mutex
	replies   []Reply
	keyed     map[string]Reply // Serve's replies, by ReplyKeyHeader value
	requests  [][]byte
	headers   []http.Header
}

// NewProvider starts a fake provider for the test.
func NewProvider(t testing.TB) *Provider {
	p := &Provider{}
	for _, h := range historyCheckers {
		p.histories = append(p.histories, h.new())
	}
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
	history := p.history(r.URL.Path)
	if history != nil {
		if err := history.Check(body); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"type":"error","error":{"message":%q,"type":"invalid_request_error"}}`, err.Error())
			return
		}
		if rep.Events != nil {
			history.Served(bytes.Join(rep.Events, nil))
		} else {
			history.Served(rep.Body)
		}
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
