package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/provider/gemini/geminitest"
)

// The app on Gemini is go-genai (google.golang.org/genai) pointed at the
// gate, as owner; the provider is geminitest, which refuses a history
// Gemini would refuse (a functionCall without its functionResponse).

const geminiModel = "gemini-2.5-flash"

// geminiCall is a unary answer holding a call of the gated weather tool
// (Gemini 2.x: no call id).
const geminiCall = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."},{"functionCall":{"name":"weather","args":{"city":"Berlin"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`

const geminiSunny = `{"candidates":[{"content":{"role":"model","parts":[{"text":"It is sunny in Berlin."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":6,"totalTokenCount":26},"modelVersion":"gemini-2.5-flash","responseId":"r2"}`

// geminiEnv is geminiEnvWith with the default gate.
func geminiEnv(t *testing.T, answers ...geminitest.Response) (*env, *geminitest.Server, *genai.Client) {
	t.Helper()
	return geminiEnvWith(t, envOptions{}, answers...)
}

// geminiEnvWith starts geminitest answering with answers, in order, a gate
// set up with opts in front of it (opts.upstream is geminitest's URL), and
// go-genai on the Gemini API as ana's app.
func geminiEnvWith(t *testing.T, opts envOptions, answers ...geminitest.Response) (*env, *geminitest.Server, *genai.Client) {
	t.Helper()
	g := geminitest.New(answers...)
	t.Cleanup(g.Close)
	opts.upstream = g.URL
	e := newEnv(t, opts)
	return e, g, geminiClient(t, e, genai.ClientConfig{})
}

// geminiClient is go-genai pointed at the gate as ana, with cfg's backend
// (the Gemini API when unset, with a key), HTTP client and API version.
func geminiClient(t *testing.T, e *env, cfg genai.ClientConfig) *genai.Client {
	t.Helper()
	if cfg.Backend == genai.BackendUnspecified {
		cfg.Backend, cfg.APIKey = genai.BackendGeminiAPI, "k"
	}
	cfg.HTTPOptions.BaseURL = e.apiURL
	cfg.HTTPOptions.Headers = http.Header{"X-User-Id": {"ana"}}
	c, err := genai.NewClient(ctx, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// geminiVertex is go-genai on Vertex AI (project proj-1, europe-west4, API
// version v1) pointed at the gate as ana; its own http.Client keeps it
// from looking for Google credentials.
func geminiVertex(t *testing.T, e *env) *genai.Client {
	t.Helper()
	return geminiClient(t, e, genai.ClientConfig{Backend: genai.BackendVertexAI, Project: "proj-1", Location: "europe-west4",
		HTTPClient: &http.Client{}, HTTPOptions: genai.HTTPOptions{APIVersion: "v1"}})
}

// geminiParisOnly is the test policy with weather's city limited to
// Paris: a call for Berlin is refused by the schema.
var geminiParisOnly = strings.Replace(policyYAML, `  weather:
    effect: external
    card:`, `  weather:
    effect: external
    schema:
      type: object
      properties:
        city: {type: string, enum: [Paris]}
      required: [city]
    card:`, 1)

var geminiTools = &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
	Name: "weather", Description: "The weather in a city",
	ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
}}}}}

func geminiAsk(text string) []*genai.Content {
	return []*genai.Content{genai.NewContentFromText(text, genai.RoleUser)}
}

// geminiConfirmAndGoOn confirms the held call behind the text's link, checks
// that the action ran once with the model's arguments, and sends the next
// request with the app's history (its model content holds the waiting
// text): geminitest must accept the restored history.
func geminiConfirmAndGoOn(t *testing.T, e *env, g *geminitest.Server, c *genai.Client, model *genai.Content, text string) {
	t.Helper()
	l := link(t, text)
	if _, body, s := e.view(ana, l); len(s.Holds) != 1 || !strings.Contains(s.Holds[0].Card.Sentence+string(body), "weather") {
		t.Errorf("the card's page: %s", body)
	}
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	calls := e.app.Calls()
	if len(calls) != 1 || gjson.GetBytes(calls[0].Body, "city").Str != "Berlin" {
		t.Fatalf("the action endpoint got %d calls: %+v", len(calls), calls)
	}
	history := append(geminiAsk("weather in Berlin?"), model, genai.NewContentFromText("thanks, and now?", genai.RoleUser))
	resp, err := c.Models.GenerateContent(ctx, geminiModel, history, geminiTools)
	if err != nil {
		t.Fatalf("the next request: %v", err)
	}
	reqs := g.Requests()
	last := reqs[len(reqs)-1]
	if last.Err != nil {
		t.Fatalf("geminitest refused the restored history: %v\n%s", last.Err, last.Body)
	}
	if !strings.Contains(string(last.Body), `"functionCall"`) || !strings.Contains(string(last.Body), `"functionResponse"`) {
		t.Errorf("history not restored: %s", last.Body)
	}
	if strings.Contains(string(last.Body), "/toolgate/h/") {
		t.Errorf("the waiting text reached the provider: %s", last.Body)
	}
	if resp.Text() != "It is sunny in Berlin." {
		t.Errorf("reply = %q", resp.Text())
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the action ran %d times", n)
	}
}

func TestGeminiUnaryHeldCall(t *testing.T) {
	e, g, c := geminiEnv(t, geminitest.Response{Unary: []byte(geminiCall)}, geminitest.Response{Unary: []byte(geminiSunny)})
	resp, err := c.Models.GenerateContent(ctx, geminiModel, geminiAsk("weather in Berlin?"), geminiTools)
	if err != nil {
		t.Fatal(err)
	}
	if fc := resp.FunctionCalls(); len(fc) != 0 {
		t.Fatalf("the held call reached the app: %+v", fc[0])
	}
	text := resp.Text()
	if !strings.HasPrefix(text, "Let me look.\n\nWaiting for your confirmation") {
		t.Errorf("text = %q", text)
	}
	if resp.UsageMetadata == nil || resp.UsageMetadata.TotalTokenCount != 15 {
		t.Errorf("usage = %+v", resp.UsageMetadata)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatalf("the action ran before the person confirmed: %d", n)
	}
	geminiConfirmAndGoOn(t, e, g, c, resp.Candidates[0].Content, text)
}

func TestGeminiStreamHeldCall(t *testing.T) {
	first := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."}]},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
	second := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"weather","args":{"city":"Berlin"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
	e, g, c := geminiEnv(t, geminitest.Response{Chunks: [][]byte{[]byte(first), []byte(second)}}, geminitest.Response{Unary: []byte(geminiSunny)})
	var text strings.Builder
	var parts []*genai.Part
	n := 0
	for resp, err := range c.Models.GenerateContentStream(ctx, geminiModel, geminiAsk("weather in Berlin?"), geminiTools) {
		if err != nil {
			t.Fatalf("stream chunk %d: %v", n, err)
		}
		n++
		if fc := resp.FunctionCalls(); len(fc) != 0 {
			t.Fatalf("the held call reached the app: %+v", fc[0])
		}
		text.WriteString(resp.Text())
		parts = append(parts, resp.Candidates[0].Content.Parts...)
	}
	if n != 2 {
		t.Errorf("%d chunks, want 2", n)
	}
	if !strings.HasPrefix(text.String(), "Let me look.\n\nWaiting for your confirmation") {
		t.Errorf("text = %q", text.String())
	}
	reqs := g.Requests()
	if len(reqs) != 1 || !strings.HasSuffix(reqs[0].Path, ":streamGenerateContent") || reqs[0].Query != "alt=sse" {
		t.Fatalf("requests: %+v", reqs)
	}
	geminiConfirmAndGoOn(t, e, g, c, &genai.Content{Role: genai.RoleModel, Parts: parts}, text.String())
}

func TestGeminiRefusedCallGoesBack(t *testing.T) {
	// An argument the schema refuses: the gate refuses the call, sends the
	// refusal back as its functionResponse, and the app reads the model's
	// follow-up as the same answer.
	e, g, c := geminiEnvWith(t, envOptions{policy: geminiParisOnly}, geminitest.Response{Unary: []byte(geminiCall)},
		geminitest.Response{Unary: []byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"I can only look up Paris."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"totalTokenCount":7},"responseId":"r2"}`)})
	resp, err := c.Models.GenerateContent(ctx, geminiModel, geminiAsk("weather in Berlin?"), geminiTools)
	if err != nil {
		t.Fatal(err)
	}
	if fc := resp.FunctionCalls(); len(fc) != 0 {
		t.Fatalf("the refused call reached the app: %+v", fc[0])
	}
	if got := resp.Text(); got != "Let me look.\n\nI can only look up Paris." {
		t.Errorf("text = %q", got)
	}
	if resp.ResponseID != "r1" || resp.UsageMetadata == nil || resp.UsageMetadata.TotalTokenCount != 15+7 {
		t.Errorf("responseId %q, usage %+v: want the first's id and the sum", resp.ResponseID, resp.UsageMetadata)
	}
	reqs := g.Requests()
	if len(reqs) != 2 || reqs[1].Err != nil {
		t.Fatalf("requests: %d, the follow-up's check: %v", len(reqs), reqs[len(reqs)-1].Err)
	}
	fr := gjson.GetBytes(reqs[1].Body, "contents.2.parts.0.functionResponse")
	if fr.Get("name").Str != "weather" || fr.Get("response.error").Str == "" || fr.Get("id").Exists() {
		t.Errorf("the refusal's functionResponse: %s", fr.Raw)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Errorf("a refused call ran: %d", n)
	}
}

// Gemini's OpenAI-compatible endpoint is Chat Completions: the Chat
// adapter reads it (openai-go as the app, base URL …/v1beta/openai/).
func TestGeminiOpenAICompatibleGoesThroughChat(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.provider.Enqueue(testkit.Reply{Body: testkit.Fixture(t, "openai-chat", "json-one-tool.json")})
	oc := openai.NewClient(option.WithBaseURL(e.apiURL+"/v1beta/openai/"), option.WithAPIKey("test"), option.WithMaxRetries(0), option.WithHeader("X-User-Id", "ana"))
	got, err := oc.Chat.Completions.New(ctx, userAsks("weather?"))
	if err != nil {
		t.Fatal(err)
	}
	msg := got.Choices[0].Message
	if len(msg.ToolCalls) != 0 || !strings.HasPrefix(msg.Content, "Waiting for your confirmation") {
		t.Errorf("calls %v, content %q: want the Chat adapter's hold", callNames(msg.ToolCalls), msg.Content)
	}
}

// A route fixed to gemini must name the owner: Gemini requests carry no
// user field.
func TestGeminiRouteWithoutOwnerFailsToLoad(t *testing.T) {
	e := newEnv(t, envOptions{})
	cfg := strings.Replace(e.caddy, "owner {http.request.header.X-User-Id}", "provider gemini", 1)
	err := testkit.Load(t, cfg)
	if err == nil || !strings.Contains(err.Error(), `provider "gemini"`) || !strings.Contains(err.Error(), "must set owner") {
		t.Fatalf("load error = %v", err)
	}
}

// Batches and cached contents carry calls around the gate: refused on a
// gated route.
func TestGeminiAroundTheGateRefused(t *testing.T) {
	e, g, _ := geminiEnv(t, geminitest.Response{Unary: []byte(geminiSunny)})
	for _, tc := range []struct{ method, path string }{
		{"POST", "/v1beta/models/gemini-2.5-flash:batchGenerateContent"},
		{"POST", "/v1beta/cachedContents"},
		{"GET", "/v1beta/cachedContents/abc"},
		{"GET", "/v1beta/batches/b1"},
	} {
		req, _ := http.NewRequest(tc.method, e.apiURL+tc.path, strings.NewReader(`{}`))
		req.Header.Set("X-User-Id", "ana")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s: %d, want 403", tc.method, tc.path, resp.StatusCode)
		}
		// Google's error shape, as go-genai decodes it (APIError).
		var body struct{ Error genai.APIError }
		if err := json.Unmarshal(b, &body); err != nil || body.Error.Code != 403 || body.Error.Status != "PERMISSION_DENIED" || !strings.Contains(body.Error.Message, "allow ") {
			t.Errorf("%s %s: refusal %s (%v)", tc.method, tc.path, b, err)
		}
	}
	if n := len(g.Requests()); n != 0 {
		t.Errorf("%d requests reached the provider", n)
	}
}

func TestGeminiStreamRefusedCallGoesBack(t *testing.T) {
	call := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."},{"functionCall":{"name":"weather","args":{"city":"Berlin"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"totalTokenCount":15},"responseId":"r1"}`
	follow := `{"candidates":[{"content":{"role":"model","parts":[{"text":"I can only look up Paris."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"totalTokenCount":7},"responseId":"r2"}`
	_, g, c := geminiEnvWith(t, envOptions{policy: geminiParisOnly}, geminitest.Response{Chunks: [][]byte{[]byte(call)}}, geminitest.Response{Chunks: [][]byte{[]byte(follow)}})
	var text strings.Builder
	var last *genai.GenerateContentResponse
	finishes := 0
	for resp, err := range c.Models.GenerateContentStream(ctx, geminiModel, geminiAsk("weather in Berlin?"), geminiTools) {
		if err != nil {
			t.Fatal(err)
		}
		if fc := resp.FunctionCalls(); len(fc) != 0 {
			t.Fatalf("the refused call reached the app: %+v", fc[0])
		}
		if resp.Candidates[0].FinishReason != "" {
			finishes++
		}
		text.WriteString(resp.Text())
		last = resp
	}
	if text.String() != "Let me look.\n\nI can only look up Paris." {
		t.Errorf("text = %q", text.String())
	}
	if finishes != 1 || last.ResponseID != "r1" || last.UsageMetadata == nil || last.UsageMetadata.TotalTokenCount != 22 {
		t.Errorf("%d finishes; last chunk id %q usage %+v: want one end, the first's id, the sum", finishes, last.ResponseID, last.UsageMetadata)
	}
	if reqs := g.Requests(); len(reqs) != 2 || reqs[1].Err != nil || reqs[1].Query != "alt=sse" {
		t.Fatalf("requests: %+v", reqs)
	}
}

// With resume_wait the streamed answer waits for the person (kept alive
// with blank events, which go-genai skips; an SSE comment would break it)
// and the model's reply after the confirmation continues it.
func TestGeminiStreamResumes(t *testing.T) {
	first := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."}]},"index":0}],"responseId":"r1"}`
	second := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"weather","args":{"city":"Berlin"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"totalTokenCount":15},"responseId":"r1"}`
	e, g, _ := geminiEnvWith(t, envOptions{handler: resumeLines}, geminitest.Response{Chunks: [][]byte{[]byte(first), []byte(second)}},
		geminitest.Response{Chunks: [][]byte{[]byte(geminiSunny)}})
	tee := &teeTransport{keepAlive: make(chan struct{})}
	c := geminiClient(t, e, genai.ClientConfig{HTTPClient: &http.Client{Transport: tee}})
	run, rctx := newStreamRun(t)
	var text strings.Builder
	go func() {
		sent := false
		for resp, err := range c.Models.GenerateContentStream(rctx, geminiModel, geminiAsk("weather in Berlin?"), geminiTools) {
			if err != nil {
				run.done <- err
				return
			}
			if fc := resp.FunctionCalls(); len(fc) != 0 {
				run.done <- fmt.Errorf("the held call reached the app: %+v", fc[0])
				return
			}
			text.WriteString(resp.Text())
			run.seen(&sent, text.String())
		}
		run.done <- nil
	}()
	l := run.waitLink(t)
	// go-genai has read a keep-alive (a blank event after the waiting
	// text) before the person answers.
	select {
	case <-tee.keepAlive:
	case err := <-run.done:
		t.Fatalf("the stream ended while waiting: %v", err)
	case <-time.After(bound):
		t.Fatal("no keep-alive")
	}
	run.stillOpen(t)
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if err := run.wait(t); err != nil {
		t.Fatalf("the stream: %v", err)
	}
	if !strings.HasSuffix(text.String(), "\n\nIt is sunny in Berlin.") || !strings.HasPrefix(text.String(), "Let me look.\n\nWaiting for your confirmation") {
		t.Errorf("text = %q", text.String())
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the action ran %d times", n)
	}
	reqs := g.Requests()
	if len(reqs) != 2 || reqs[1].Err != nil || !strings.Contains(string(reqs[1].Body), `"functionResponse"`) {
		t.Fatalf("the resume request: %d requests, %v", len(reqs), reqs[len(reqs)-1].Err)
	}
}

// teeTransport keeps what the app's client read of a response body and
// closes keepAlive once it read a blank event after a data event (the
// waiting stream's keep-alive, "\r\n\r\n" after "\r\n\r\n").
type teeTransport struct {
	keepAlive chan struct{}
	once      sync.Once
	mu        sync.Mutex
	read      []byte
}

func (tt *teeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &teeBody{ReadCloser: resp.Body, t: tt}
	}
	return resp, err
}

type teeBody struct {
	io.ReadCloser
	t *teeTransport
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.t.mu.Lock()
	b.t.read = append(b.t.read, p[:n]...)
	if bytes.Contains(b.t.read, []byte("}\r\n\r\n\r\n\r\n")) {
		b.t.once.Do(func() { close(b.t.keepAlive) })
	}
	b.t.mu.Unlock()
	return n, err
}
