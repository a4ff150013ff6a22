package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/internal/testkit/benchbody"
)

// benchEnv runs one Caddy with two routes to the same upstream: one
// through the gate, one plain reverse_proxy. Both serve the same
// non-gated chat completion, so the difference is the gate's pass-through
// cost.
type benchEnv struct {
	gated, plain string
	ruled        string // the gate with a policy that has rules (startBenchRules); "" none
	client       *http.Client
}

func newBenchEnv(b *testing.B, body []byte, events [][]byte) *benchEnv {
	b.Helper()
	return startBenchRules(b, benchUpstream(body, events), policyYAML, "", "toolgate")
}

// benchUpstream answers body, or events when the request asks for a
// stream.
func benchUpstream(body []byte, events [][]byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		// A stream: the benchmark's ?stream (OpenAI, Anthropic), or
		// Gemini's :streamGenerateContent, which says it in the path.
		if strings.Contains(r.URL.RequestURI(), "stream") {
			w.Header().Set("Content-Type", "text/event-stream")
			fl := w.(http.Flusher)
			for _, ev := range events {
				w.Write(ev)
				fl.Flush()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
}

// startBench serves up behind one Caddy with two routes: one through the
// gate's directive (toolgate or toolgate_mcp) with policy, one plain
// reverse_proxy.
func startBench(b *testing.B, upstream http.Handler, policy, directive string) *benchEnv {
	b.Helper()
	return startBenchRules(b, upstream, policy, "", directive)
}

// startBenchRules is startBench with, when rules is not "", a third route
// through the gate with the policy rules (benchEnv.ruled).
func startBenchRules(b *testing.B, upstream http.Handler, policy, rules, directive string) *benchEnv {
	b.Helper()
	up := httptest.NewServer(upstream)
	b.Cleanup(up.Close)
	dir := b.TempDir()
	write := func(name, policy string) string {
		pf := filepath.Join(dir, name)
		if err := os.WriteFile(pf, []byte(strings.ReplaceAll(policy, "APP", "http://127.0.0.1:1")), 0o600); err != nil {
			b.Fatal(err)
		}
		return pf
	}
	pf := write("policy.yaml", policy)
	gp, pp, pages := testkit.FreePort(b), testkit.FreePort(b), testkit.FreePort(b)
	third, rp := "", 0
	if rules != "" {
		rp = testkit.FreePort(b)
		third = fmt.Sprintf(`
http://127.0.0.1:%d {
	%s {
		policy %s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %s
}
`, rp, directive, write("rules.yaml", rules), up.URL)
	}
	testkit.Run(b, fmt.Sprintf(`{
	admin off
	auto_https off
	default_bind 127.0.0.1
	log {
		level ERROR
	}
	toolgate {
		store %s
		secret %s
		pages http://127.0.0.1:%d/toolgate
	}
}
http://127.0.0.1:%d {
	%s {
		policy %s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %s
}
http://127.0.0.1:%d {
	reverse_proxy %s
}
`, filepath.Join(dir, "store"), secret, pages, gp, directive, pf, up.URL, pp, up.URL)+third)
	e := &benchEnv{
		gated:  fmt.Sprintf("http://127.0.0.1:%d", gp),
		plain:  fmt.Sprintf("http://127.0.0.1:%d", pp),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
	}
	if rules != "" {
		e.ruled = fmt.Sprintf("http://127.0.0.1:%d", rp)
	}
	return e
}

func (e *benchEnv) do(b *testing.B, url string, req []byte, want int) time.Duration {
	start := time.Now()
	resp, err := e.client.Post(url, "application/json", bytes.NewReader(req))
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if resp.StatusCode != 200 || int(n) != want {
		b.Fatalf("%s: status %d, %d bytes, want %d", url, resp.StatusCode, n, want)
	}
	return d
}

// compare alternates plain and gated requests in one run (so both see the
// same machine state) and reports each one's time per request and their
// ratio.
func (e *benchEnv) compare(b *testing.B, query string, req []byte, want int) {
	for range 20 { // warm both routes' connections
		e.do(b, e.plain+query, req, want)
		e.do(b, e.gated+query, req, want)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var plain, gated time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			plain += e.do(b, e.plain+query, req, want)
			gated += e.do(b, e.gated+query, req, want)
		} else {
			gated += e.do(b, e.gated+query, req, want)
			plain += e.do(b, e.plain+query, req, want)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(plain.Nanoseconds())/n, "plain-ns/req")
	b.ReportMetric(float64(gated.Nanoseconds())/n, "toolgate-ns/req")
	b.ReportMetric(float64(gated)/float64(plain), "toolgate/plain")
}

// compareRules is compare over three routes in one run: plain Caddy, the
// gate, and the gate with a policy that has rules (e.ruled). Each round
// sends one request to each, starting with another route each time, so a
// change in the machine's load falls on all three; it reports each one's
// time per request and their ratios.
func (e *benchEnv) compareRules(b *testing.B, query string, req []byte, want int) {
	routes := []string{e.plain + query, e.gated + query, e.ruled + query}
	for range 20 { // warm the routes' connections
		for _, u := range routes {
			e.do(b, u, req, want)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var took [3]time.Duration
	for i := 0; b.Loop(); i++ {
		for k := range routes {
			j := (i + k) % len(routes)
			took[j] += e.do(b, routes[j], req, want)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(took[0].Nanoseconds())/n, "plain-ns/req")
	b.ReportMetric(float64(took[1].Nanoseconds())/n, "toolgate-ns/req")
	b.ReportMetric(float64(took[2].Nanoseconds())/n, "rules-ns/req")
	b.ReportMetric(float64(took[1])/float64(took[0]), "toolgate/plain")
	b.ReportMetric(float64(took[2])/float64(took[0]), "rules/plain")
}

// BenchmarkPassThroughJSON: a 2 KB non-gated JSON completion.
func BenchmarkPassThroughJSON(b *testing.B) {
	text := strings.Repeat("The meetup moved to Friday. ", 60)
	body := jsonCompletion(text)
	e := newBenchEnv(b, body, nil)
	e.compare(b, "/v1/chat/completions", benchbody.ChatRequest(false), len(body))
}

// BenchmarkPassThroughJSONRules is BenchmarkPassThroughJSON with a third
// route whose policy gives every action but one a rule
// (neverRulesPolicy): the rule's evaluation fails, so a response the gate
// evaluated it on would not be the provider's bytes and the benchmark
// would stop. A response without a declared call evaluates no rule: the
// rules/plain ratio is toolgate/plain's, within the noise.
func BenchmarkPassThroughJSONRules(b *testing.B) {
	body := jsonCompletion(strings.Repeat("The meetup moved to Friday. ", 60))
	e := startBenchRules(b, benchUpstream(body, nil), policyYAML, neverRulesPolicy(b), "toolgate")
	e.compareRules(b, "/v1/chat/completions", benchbody.ChatRequest(false), len(body))
}

// BenchmarkPassThroughStreamRules is BenchmarkPassThroughStream with the
// route of BenchmarkPassThroughJSONRules' rules.
func BenchmarkPassThroughStreamRules(b *testing.B) {
	words := make([]string, 196)
	for i := range words {
		words[i] = fmt.Sprintf("word%d ", i)
	}
	events := streamEvents(words)
	e := startBenchRules(b, benchUpstream(nil, events), policyYAML, neverRulesPolicy(b), "toolgate")
	e.compareRules(b, "/v1/chat/completions?stream", benchbody.ChatRequest(true), eventsLen(events))
}

// BenchmarkPassThroughStream: a non-gated 200-chunk text stream.
func BenchmarkPassThroughStream(b *testing.B) {
	words := make([]string, 196)
	for i := range words {
		words[i] = fmt.Sprintf("word%d ", i)
	}
	events := streamEvents(words) // role chunk + 196 deltas + finish + usage + [DONE] = 200 events
	want := 0
	for _, ev := range events {
		want += len(ev)
	}
	e := newBenchEnv(b, nil, events)
	e.compare(b, "/v1/chat/completions?stream", benchbody.ChatRequest(true), want)
}

func eventsLen(events [][]byte) int {
	n := 0
	for _, ev := range events {
		n += len(ev)
	}
	return n
}

func sse(typ, data string) []byte { return []byte("event: " + typ + "\ndata: " + data + "\n\n") }

// BenchmarkPassThroughAnthropicJSON: a 2 KB text message.
func BenchmarkPassThroughAnthropicJSON(b *testing.B) {
	body := []byte(`{"id":"msg_bench","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":` + jsonString(strings.Repeat("The meetup moved to Friday. ", 60)) + `}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":300}}`)
	e := newBenchEnv(b, body, nil)
	e.compare(b, "/v1/messages", benchbody.ChatRequest(false), len(body))
}

// BenchmarkPassThroughAnthropicStream: a 200-event text stream.
func BenchmarkPassThroughAnthropicStream(b *testing.B) {
	ev := [][]byte{
		sse("message_start", `{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`),
		sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
	}
	for i := range 194 {
		ev = append(ev, sse("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word%d "}}`, i)))
	}
	ev = append(ev,
		sse("content_block_stop", `{"type":"content_block_stop","index":0}`),
		sse("ping", `{"type": "ping"}`),
		sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":200}}`),
		sse("message_stop", `{"type":"message_stop"}`))
	e := newBenchEnv(b, nil, ev)
	e.compare(b, "/v1/messages?stream", benchbody.ChatRequest(true), eventsLen(ev))
}

// BenchmarkPassThroughResponsesJSON: a 2 KB message response.
func BenchmarkPassThroughResponsesJSON(b *testing.B) {
	body := responsesText("resp_bench", strings.Repeat("The meetup moved to Friday. ", 60))
	e := newBenchEnv(b, body, nil)
	e.compare(b, "/v1/responses", benchbody.ChatRequest(false), len(body))
}

// BenchmarkPassThroughResponsesStream: a 200-event message stream.
func BenchmarkPassThroughResponsesStream(b *testing.B) {
	seq := 0
	next := func(typ, rest string) []byte {
		d := fmt.Sprintf(`{"type":%q,"sequence_number":%d,%s}`, typ, seq, rest)
		seq++
		return sse(typ, d)
	}
	ev := [][]byte{
		next("response.created", `"response":{"id":"resp_bench","object":"response","status":"in_progress","output":[]}`),
		next("response.in_progress", `"response":{"id":"resp_bench","object":"response","status":"in_progress","output":[]}`),
		next("response.output_item.added", `"output_index":0,"item":{"id":"msg_b","type":"message","status":"in_progress","content":[],"role":"assistant"}`),
		next("response.content_part.added", `"item_id":"msg_b","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}`),
	}
	for i := range 192 {
		ev = append(ev, next("response.output_text.delta", fmt.Sprintf(`"item_id":"msg_b","output_index":0,"content_index":0,"delta":"word%d "`, i)))
	}
	ev = append(ev,
		next("response.output_text.done", `"item_id":"msg_b","output_index":0,"content_index":0,"text":"..."`),
		next("response.content_part.done", `"item_id":"msg_b","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":"..."}`),
		next("response.output_item.done", `"output_index":0,"item":{"id":"msg_b","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"..."}],"role":"assistant"}`),
		next("response.completed", `"response":{"id":"resp_bench","object":"response","status":"completed","output":[{"id":"msg_b","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"..."}],"role":"assistant"}]}`))
	e := newBenchEnv(b, nil, ev)
	e.compare(b, "/v1/responses?stream", benchbody.ChatRequest(true), eventsLen(ev))
}

// BenchmarkPassThroughGeminiJSON: a 2 KB generateContent text answer.
func BenchmarkPassThroughGeminiJSON(b *testing.B) {
	body := benchbody.GeminiAnswer()
	e := newBenchEnv(b, body, nil)
	e.compare(b, "/v1beta/models/gemini-2.5-flash:generateContent", benchbody.GeminiRequest(), len(body))
}

// BenchmarkPassThroughGeminiStream: a 200-event alt=sse text stream, in
// Gemini's CRLF framing.
func BenchmarkPassThroughGeminiStream(b *testing.B) {
	ev := benchbody.GeminiStream()
	e := newBenchEnv(b, nil, ev)
	e.compare(b, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", benchbody.GeminiRequest(), eventsLen(ev))
}
