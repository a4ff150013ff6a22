package outside

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/freeport"
	"github.com/toolgate/toolgate/internal/testkit/benchbody"

	"golang.org/x/crypto/bcrypt"
)

// The fakes run in the benchmark's process: the model provider and the
// app (its record GET and its action endpoint). Only these two are fake;
// the gate and Caddy are the real binaries.

// Request headers the fake provider reads (they pass through the gate and
// Caddy's reverse_proxy like any other): which post the answer's
// delete_post names, and whether to answer with a stream.
const (
	headerPost   = "X-Bench-Post"
	headerStream = "X-Bench-Stream"
)

// secret is the gate's secret in every config.
const secret = "outside-benchmark-secret-0123456789abcdef"

// password is every person's basic_auth password.
const password = "benchmark-password"

// policyYAML is the policy both builds accept: one destructive action
// whose card reads the post from the app (APP: the fake app's URL).
const policyYAML = `app: Benchmark blog
actions:
  delete_post:
    effect: destructive
    schema:
      type: object
      properties:
        post: {type: integer}
      required: [post]
    card:
      reason: Delete this post? This cannot be undone.
      record: APP/posts/{post}
      rows:
        Post: title
        Status: status
    run:
      method: DELETE
      url: APP/posts/{post}
    reply: Removed.
`

// writePolicy writes the policy for the app at appURL into dir.
func writePolicy(tb testing.TB, dir, appURL string) string {
	tb.Helper()
	pf := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pf, []byte(strings.ReplaceAll(policyYAML, "APP", appURL)), 0o600); err != nil {
		tb.Fatal(err)
	}
	return pf
}

// basicAuth is the basic_auth block's accounts: each person with the same
// password, hashed with bcrypt at cost 4 (the cheapest, so the sign-in
// costs what a fast identity check costs, not what the benchmark chose).
func basicAuth(tb testing.TB, persons []string) string {
	tb.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), 4)
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	for _, p := range persons {
		fmt.Fprintf(&b, "\t\t\t%s %s\n", p, hash)
	}
	return b.String()
}

// provider is the fake model provider: a held answer (one delete_post of
// the post in headerPost), else a 2 KB JSON text answer, or a 200-chunk
// stream when headerStream is set; on Gemini's paths (geminiPath), the
// same text answer and stream in Gemini's shape.
func provider(tb testing.TB) *httptest.Server {
	jsonBody := completion(jsonString(strings.Repeat("The meetup moved to Friday. ", 60)), "")
	events := streamEvents()
	geminiBody := benchbody.GeminiAnswer()
	geminiEvents := benchbody.GeminiStream()
	// stream writes events one at a time, each flushed, as a provider
	// streams them.
	stream := func(w http.ResponseWriter, events [][]byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, ev := range events {
			w.Write(ev)
			fl.Flush()
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch {
		case strings.HasSuffix(r.URL.Path, ":generateContent"):
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			w.Write(geminiBody)
			return
		case strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
			stream(w, geminiEvents)
			return
		}
		if post := r.Header.Get(headerPost); post != "" {
			w.Header().Set("Content-Type", "application/json")
			w.Write(completion("null", fmt.Sprintf(`,"tool_calls":[{"id":"call_%s","type":"function","function":{"name":"delete_post","arguments":%s}}]`, post, jsonString(`{"post":`+post+`}`))))
			return
		}
		if r.Header.Get(headerStream) != "" {
			stream(w, events)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(jsonBody)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// completion is a Chat completion whose message has this content (JSON)
// and these more fields (",tool_calls":...).
func completion(content, more string) []byte {
	finish := "stop"
	if more != "" {
		finish = "tool_calls"
	}
	return []byte(fmt.Sprintf(`{"id":"chatcmpl-outside","object":"chat.completion","created":1727346166,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":null%s},"logprobs":null,"finish_reason":%q}],"usage":{"prompt_tokens":149,"completion_tokens":60,"total_tokens":209},"system_fingerprint":"fp_b40fb1c6fb"}`, content, more, finish))
}

// streamEvents is a 200-event text stream: the role chunk, 196 deltas,
// the finish chunk, the usage chunk and [DONE].
func streamEvents() [][]byte {
	chunk := func(delta, finish string) []byte {
		return []byte(fmt.Sprintf(`data: {"id":"chatcmpl-outside","object":"chat.completion.chunk","created":1727346178,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5050236cbd","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]}`+"\n\n", delta, finish))
	}
	ev := [][]byte{chunk(`{"role":"assistant","content":null}`, "null")}
	for i := range 196 {
		ev = append(ev, chunk(fmt.Sprintf(`{"content":"word%d "}`, i), "null"))
	}
	ev = append(ev, chunk(`{}`, `"stop"`),
		[]byte(`data: {"id":"chatcmpl-outside","object":"chat.completion.chunk","created":1727346178,"model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30}}`+"\n\n"),
		[]byte("data: [DONE]\n\n"))
	return ev
}

// geminiPath is the Gemini API's path of a generate request, unary or
// streamed (with ?alt=sse, as the SDKs send it).
func geminiPath(stream bool) string {
	if stream {
		return "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
	}
	return "/v1beta/models/gemini-2.5-flash:generateContent"
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// linkRe finds a card's link in the waiting text.
var linkRe = regexp.MustCompile(`http://127\.0\.0\.1:\d+/toolgate/h/[a-z2-7]{26}`)

// app is the fake app: GET /posts/<n> is the card's record, any other
// method the action, counted by its Idempotency-Key (the hold id). It
// does not check the gate's signature (the scheme may differ between the
// builds compared); the gate's own tests do.
type app struct {
	*httptest.Server

	mu    sync.Mutex
	gets  []time.Duration // each record GET's time in the handler
	runs  map[string]int  // actions by Idempotency-Key
	total int
	want  int
	all   chan struct{} // closed when total reaches want
	last  time.Time     // when the want-th action arrived
}

func newApp(tb testing.TB) *app {
	a := &app{runs: map[string]int{}, all: make(chan struct{})}
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	tb.Cleanup(a.Close)
	return a
}

// expect sets how many actions close all.
func (a *app) expect(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.want = n
}

func (a *app) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	io.Copy(io.Discard, r.Body)
	if r.Method == http.MethodGet {
		post := strings.TrimPrefix(r.URL.Path, "/posts/")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%s,"title":"Post %s of the spring meetup","status":"published"}`, jsonString(post), post)
		d := time.Since(start)
		a.mu.Lock()
		a.gets = append(a.gets, d)
		a.mu.Unlock()
		return
	}
	a.mu.Lock()
	a.runs[r.Header.Get("Idempotency-Key")]++
	a.total++
	if a.total == a.want {
		a.last = time.Now()
		close(a.all)
	}
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"ok":true}`)
}

// getTimes is the record GETs' handler times so far.
func (a *app) getTimes() []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.gets)
}

// runsOf is how many actions arrived with this Idempotency-Key, and in
// all.
func (a *app) runsOf(key string) (int, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runs[key], a.total
}

// percentile is the q-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, q int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*q + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

// median is the middle of xs (the lower of the two middles).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// freePort is a loopback port nobody listens on right now.
func freePort(tb testing.TB) int { return freeport.Get(tb) }
