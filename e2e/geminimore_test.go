package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/provider/gemini/geminitest"
)

// Gemini beyond the first cases (gemini_test.go): the streamed JSON array,
// shadow mode, forms, rules, Vertex AI's paths and the requests a gated
// Gemini route refuses before they go upstream.

// geminiArrayRequest is a request offering the weather tool.
const geminiArrayRequest = `{"contents":[{"role":"user","parts":[{"text":"weather in Berlin?"}]}],"tools":[{"functionDeclarations":[{"name":"weather","description":"The weather in a city","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}}}}]}]}`

// arrayClient reads a :streamGenerateContent answer without alt=sse (a
// streamed JSON array) as its readers do: element by element as they
// arrive, with encoding/json (python-api-core's response iterator and
// llm-gemini's ijson read it so; go-genai and @google/genai always ask
// for alt=sse, so neither can be the app here). raw is every byte read,
// and keepAlive is closed once the body showed a blank line after an
// element (the waiting stream's keep-alive: whitespace between elements).
type arrayClient struct {
	mu        sync.Mutex
	raw       []byte
	keepAlive chan struct{}
	once      sync.Once
}

func newArrayClient() *arrayClient { return &arrayClient{keepAlive: make(chan struct{})} }

// post sends body to path as ana and calls each with every element; it
// returns the status and, for a status other than 200, the body.
func (a *arrayClient) post(ctx context.Context, url, body string, each func(*genai.GenerateContentResponse) error) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-Id", "ana")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	dec := json.NewDecoder(&teeReader{r: resp.Body, a: a})
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return resp.StatusCode, nil, fmt.Errorf("the answer is not a JSON array: %v %v", tok, err)
	}
	for dec.More() {
		var c genai.GenerateContentResponse
		if err := dec.Decode(&c); err != nil {
			return resp.StatusCode, nil, fmt.Errorf("element: %w", err)
		}
		if err := each(&c); err != nil {
			return resp.StatusCode, nil, err
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return resp.StatusCode, nil, fmt.Errorf("the array did not end: %v %v", tok, err)
	}
	if tok, err := dec.Token(); !errors.Is(err, io.EOF) {
		return resp.StatusCode, nil, fmt.Errorf("after the array: %v %v", tok, err)
	}
	return resp.StatusCode, nil, nil
}

// bytes returns what the client read so far.
func (a *arrayClient) bytes() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return bytes.Clone(a.raw)
}

type teeReader struct {
	r io.Reader
	a *arrayClient
}

func (t *teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.a.mu.Lock()
	t.a.raw = append(t.a.raw, p[:n]...)
	if bytes.Contains(t.a.raw, []byte("}\n\n")) {
		t.a.once.Do(func() { close(t.a.keepAlive) })
	}
	t.a.mu.Unlock()
	return n, err
}

// arrayOf frames chunks as Gemini (and geminitest) frame a streamed JSON
// array.
func arrayOf(chunks ...string) []byte {
	return []byte("[" + strings.Join(chunks, "\n,\r\n") + "\n]")
}

const (
	geminiLookText = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."}]},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
	geminiLookCall = `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"weather","args":{"city":"Berlin"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
)

func (e *env) streamPath() string {
	return e.apiURL + "/v1beta/models/" + geminiModel + ":streamGenerateContent"
}

// TestGeminiJSONArrayStreamHeldCall: a stream without alt=sse is a JSON
// array, rewritten as it arrives: the text element passes, the call's
// element carries the waiting text instead, and the app's array parses.
// The person confirms and the next request's history is restored.
func TestGeminiJSONArrayStreamHeldCall(t *testing.T) {
	e, g, c := geminiEnv(t, geminitest.Response{Chunks: [][]byte{[]byte(geminiLookText), []byte(geminiLookCall)}}, geminitest.Response{Unary: []byte(geminiSunny)})
	var text strings.Builder
	var parts []*genai.Part
	n := 0
	status, body, err := newArrayClient().post(ctx, e.streamPath(), geminiArrayRequest, func(r *genai.GenerateContentResponse) error {
		n++
		if fc := r.FunctionCalls(); len(fc) != 0 {
			return fmt.Errorf("the held call reached the app: %+v", fc[0])
		}
		text.WriteString(r.Text())
		parts = append(parts, r.Candidates[0].Content.Parts...)
		return nil
	})
	if err != nil || status != 200 {
		t.Fatalf("%d %s: %v", status, body, err)
	}
	if n != 2 || !strings.HasPrefix(text.String(), "Let me look.\n\nWaiting for your confirmation") {
		t.Errorf("%d elements, text %q", n, text.String())
	}
	if reqs := g.Requests(); len(reqs) != 1 || reqs[0].Query != "" || !strings.HasSuffix(reqs[0].Path, ":streamGenerateContent") {
		t.Fatalf("requests: %+v", reqs)
	}
	geminiConfirmAndGoOn(t, e, g, c, &genai.Content{Role: genai.RoleModel, Parts: parts}, text.String())
}

// TestGeminiJSONArrayStreamRefusedCallGoesBack: a refused call goes back
// to the provider (a follow-up request, also without alt=sse), and its
// answer's elements continue the same array, which ends once.
func TestGeminiJSONArrayStreamRefusedCallGoesBack(t *testing.T) {
	call := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."},{"functionCall":{"name":"weather","args":{"city":"Berlin"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"totalTokenCount":15},"responseId":"r1"}`
	follow := `{"candidates":[{"content":{"role":"model","parts":[{"text":"I can only look up Paris."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"totalTokenCount":7},"responseId":"r2"}`
	e, g, _ := geminiEnvWith(t, envOptions{policy: geminiParisOnly}, geminitest.Response{Chunks: [][]byte{[]byte(call)}}, geminitest.Response{Chunks: [][]byte{[]byte(follow)}})
	var text strings.Builder
	var last *genai.GenerateContentResponse
	finishes := 0
	status, body, err := newArrayClient().post(ctx, e.streamPath(), geminiArrayRequest, func(r *genai.GenerateContentResponse) error {
		if fc := r.FunctionCalls(); len(fc) != 0 {
			return fmt.Errorf("the refused call reached the app: %+v", fc[0])
		}
		if r.Candidates[0].FinishReason != "" {
			finishes++
		}
		text.WriteString(r.Text())
		last = r
		return nil
	})
	if err != nil || status != 200 {
		t.Fatalf("%d %s: %v", status, body, err)
	}
	if text.String() != "Let me look.\n\nI can only look up Paris." {
		t.Errorf("text = %q", text.String())
	}
	if finishes != 1 || last.ResponseID != "r1" || last.UsageMetadata == nil || last.UsageMetadata.TotalTokenCount != 22 {
		t.Errorf("%d finishes; last element id %q usage %+v: want one end, the first's id, the sum", finishes, last.ResponseID, last.UsageMetadata)
	}
	reqs := g.Requests()
	if len(reqs) != 2 || reqs[1].Err != nil || reqs[1].Query != "" {
		t.Fatalf("requests: %+v", reqs)
	}
	if fr := gjson.GetBytes(reqs[1].Body, "contents.2.parts.0.functionResponse"); fr.Get("name").Str != "weather" || fr.Get("response.error").Str == "" {
		t.Errorf("the refusal's functionResponse: %s", fr.Raw)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Errorf("a refused call ran: %d", n)
	}
}

// TestGeminiJSONArrayStreamResumes: with resume_wait the array stays
// open while the person answers, kept alive with whitespace between
// elements (which every JSON reader skips), and the model's reply after
// the confirmation continues it.
func TestGeminiJSONArrayStreamResumes(t *testing.T) {
	e, g, _ := geminiEnvWith(t, envOptions{handler: resumeLines}, geminitest.Response{Chunks: [][]byte{[]byte(geminiLookText), []byte(geminiLookCall)}},
		geminitest.Response{Chunks: [][]byte{[]byte(geminiSunny)}})
	run, rctx := newStreamRun(t)
	client := newArrayClient()
	var mu sync.Mutex
	var text strings.Builder
	go func() {
		sent := false
		status, body, err := client.post(rctx, e.streamPath(), geminiArrayRequest, func(r *genai.GenerateContentResponse) error {
			if fc := r.FunctionCalls(); len(fc) != 0 {
				return fmt.Errorf("the held call reached the app: %+v", fc[0])
			}
			mu.Lock()
			text.WriteString(r.Text())
			s := text.String()
			mu.Unlock()
			run.seen(&sent, s)
			return nil
		})
		if err == nil && status != 200 {
			err = fmt.Errorf("status %d: %s", status, body)
		}
		run.done <- err
	}()
	l := run.waitLink(t)
	select {
	case <-client.keepAlive:
	case err := <-run.done:
		t.Fatalf("the stream ended while waiting: %v", err)
	case <-time.After(bound):
		t.Fatalf("no keep-alive: %q", client.bytes())
	}
	run.stillOpen(t)
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if err := run.wait(t); err != nil {
		t.Fatalf("the stream: %v", err)
	}
	mu.Lock()
	got := text.String()
	mu.Unlock()
	if !strings.HasPrefix(got, "Let me look.\n\nWaiting for your confirmation") || !strings.HasSuffix(got, "\n\nIt is sunny in Berlin.") {
		t.Errorf("text = %q", got)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the action ran %d times", n)
	}
	reqs := g.Requests()
	if len(reqs) != 2 || reqs[1].Err != nil || reqs[1].Query != "" || !strings.Contains(string(reqs[1].Body), `"functionResponse"`) {
		t.Fatalf("the resume request: %+v", reqs)
	}
}

// TestGeminiJSONArrayStreamOfTextPasses: an array without a call reaches
// the app byte for byte; one single JSON object in place of the array,
// call or not, is refused with 502 and nothing of it.
func TestGeminiJSONArrayStreamOfTextPasses(t *testing.T) {
	textOnly := `{"candidates":[{"content":{"role":"model","parts":[{"text":" It is sunny."}]},"finishReason":"STOP","index":0}],"responseId":"r1"}`
	e, g, _ := geminiEnv(t, geminitest.Response{Chunks: [][]byte{[]byte(geminiLookText), []byte(textOnly)}},
		geminitest.Response{Raw: []byte(geminiCall)}, geminitest.Response{Raw: []byte(geminiSunny)})
	got := e.postAs(t, "ana", "/v1beta/models/"+geminiModel+":streamGenerateContent", geminiArrayRequest)
	if want := arrayOf(geminiLookText, textOnly); !bytes.Equal(got, want) {
		t.Errorf("the app read\n%q\nwant\n%q", got, want)
	}
	for _, name := range []string{"one object with a call", "one object of text"} {
		status, body, err := newArrayClient().post(ctx, e.streamPath(), geminiArrayRequest, func(*genai.GenerateContentResponse) error { return nil })
		if err != nil || status != http.StatusBadGateway || bytes.Contains(body, []byte("Berlin")) || bytes.Contains(body, []byte("sunny")) {
			t.Errorf("%s: %d %s (%v)", name, status, body, err)
		}
	}
	if n := len(g.Requests()); n != 3 {
		t.Errorf("%d requests", n)
	}
}

// TestGeminiShadowCallPasses: in shadow mode a Gemini stream's call
// reaches the app byte for byte, in a JSON array as in SSE, and the audit
// log names what enforce mode would have held: the watching side reads the
// array as the stream it is.
func TestGeminiShadowCallPasses(t *testing.T) {
	e, g, _ := geminiEnvWith(t, envOptions{policy: "mode: shadow\n" + policyYAML}, geminitest.Response{Chunks: [][]byte{[]byte(geminiLookText), []byte(geminiLookCall)}})
	start := time.Now().Add(-time.Second)
	got := e.postAs(t, "ana", "/v1beta/models/"+geminiModel+":streamGenerateContent", geminiArrayRequest)
	if want := arrayOf(geminiLookText, geminiLookCall); !bytes.Equal(got, want) {
		t.Errorf("array: the app read\n%q\nwant\n%q", got, want)
	}
	got = e.postAs(t, "ana", "/v1beta/models/"+geminiModel+":streamGenerateContent?alt=sse", geminiArrayRequest)
	if want := "data: " + geminiLookText + "\r\n\r\ndata: " + geminiLookCall + "\r\n\r\n"; string(got) != want {
		t.Errorf("sse: the app read\n%q\nwant\n%q", got, want)
	}
	if reqs := g.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[0].Body), `"parametersJsonSchema"`) {
		t.Fatalf("requests: %+v", reqs)
	}
	var shadowed []auditLine
	for _, l := range e.auditExport(t, start) {
		switch l.Kind {
		case "shadowed":
			shadowed = append(shadowed, l)
		case "held", "refused":
			t.Errorf("shadow mode audited a %s event: %+v", l.Kind, l)
		}
	}
	if len(shadowed) != 2 {
		t.Fatalf("shadowed events: %+v, want the array's call and the stream's", shadowed)
	}
	for _, l := range shadowed {
		if l.Action != "weather" || l.Protocol != "gemini" || l.Owner != "ana" || l.HoldKind != "card" {
			t.Errorf("shadowed %+v", l)
		}
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Errorf("shadow mode ran %d actions", n)
	}
}

// TestGeminiFormFilledAndReleased: a write call missing required fields
// becomes a form; the person fills it in Chromium, and the action gets the
// model's title with the person's body and status; the app's next request
// gets the call and the outcome back as Gemini accepts them.
func TestGeminiFormFilledAndReleased(t *testing.T) {
	draft := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"draft_post","args":{"title":"Launch notes"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"totalTokenCount":9},"responseId":"r1"}`
	after := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Your draft is in."}]},"finishReason":"STOP","index":0}],"responseId":"r2"}`
	e, g, c := geminiEnv(t, geminitest.Response{Unary: []byte(draft)}, geminitest.Response{Unary: []byte(after)})
	tools := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name: "draft_post", Description: "Draft a post.",
		ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}, "body": map[string]any{"type": "string"}, "status": map[string]any{"type": "string"}}},
	}}}}}
	resp, err := c.Models.GenerateContent(ctx, geminiModel, geminiAsk("draft the launch notes"), tools)
	if err != nil {
		t.Fatal(err)
	}
	if fc := resp.FunctionCalls(); len(fc) != 0 {
		t.Fatalf("the incomplete call reached the app: %+v", fc[0])
	}
	text := resp.Text()
	if !strings.HasPrefix(text, "Waiting for your answer: A few details for your post.") {
		t.Fatalf("text = %q", text)
	}
	if d := gjson.GetBytes(g.Requests()[0].Body, "tools.0.functionDeclarations.0.description").Str; !strings.Contains(d, "the person is asked for the rest") {
		t.Errorf("the tool was not offered with the ask hint: %q", d)
	}
	b := browser(t, ana)
	err = chromedp.Do(b,
		chromedp.Navigate(link(t, text)),
		chromedp.WaitVisible(chromedp.CSS(`form.answer`)),
		chromedp.SendKeys(chromedp.CSS(`#f-body`), "What shipped this week."),
		chromedp.SetValue(chromedp.CSS(`#f-status`), "published"),
		chromedp.Click(chromedp.CSS(`button.submit`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, `document.querySelector('.status') !== null`)
	calls := e.app.Calls()
	if len(calls) != 1 {
		t.Fatalf("the action ran %d times", len(calls))
	}
	var got map[string]any
	if err := json.Unmarshal(calls[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"title": "Launch notes", "body": "What shipped this week.", "status": "published"}; !reflect.DeepEqual(got, want) {
		t.Errorf("the action got %v, want %v", got, want)
	}
	history := append(geminiAsk("draft the launch notes"), resp.Candidates[0].Content, genai.NewContentFromText("thanks", genai.RoleUser))
	next, err := c.Models.GenerateContent(ctx, geminiModel, history, tools)
	if err != nil {
		t.Fatal(err)
	}
	reqs := g.Requests()
	last := reqs[len(reqs)-1]
	if last.Err != nil {
		t.Fatalf("geminitest refused the restored history: %v\n%s", last.Err, last.Body)
	}
	res := gjson.GetBytes(last.Body, "contents.2.parts.0.functionResponse")
	if res.Get("name").Str != "draft_post" || !strings.Contains(res.Raw, "The person filled in: title, body, status.") || strings.Contains(res.Raw, "What shipped") {
		t.Errorf("the outcome the model reads: %s", res.Raw)
	}
	if next.Text() != "Your draft is in." {
		t.Errorf("reply = %q", next.Text())
	}
}

// geminiRulesPolicy decides weather on its city: Paris passes, Oslo is
// refused, Berlin is asked.
var geminiRulesPolicy = strings.Replace(policyYAML, `  weather:
    effect: external
    card:
      reason: Look up the weather for you?
    run:
      url: APP/weather
`, `  weather:
    effect: external
    schema:
      type: object
      properties:
        city: {type: string}
      required: [city]
    card:
      reason: Look up the weather for you?
    run:
      url: APP/weather
    rules:
      - when: args.city == "Paris"
        then: allow
      - when: args.city == "Oslo"
        then: deny
        because: Oslo is closed; nothing ran.
      - when: args.city == "Berlin"
        then: ask
`, 1)

// TestGeminiRules: the policy's rules decide Gemini calls as any other:
// allow passes the call to the app, deny refuses it (the model reads the
// reason as the call's functionResponse and its follow-up continues the
// answer), ask holds it for the person.
func TestGeminiRules(t *testing.T) {
	if !strings.Contains(geminiRulesPolicy, "then: ask") {
		t.Fatal("the rules were not written into the policy")
	}
	callFor := func(city string) []byte {
		return []byte(strings.Replace(geminiCall, "Berlin", city, 1))
	}
	follow := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Oslo is closed."}]},"finishReason":"STOP","index":0}],"responseId":"r2"}`
	e, g, c := geminiEnvWith(t, envOptions{policy: geminiRulesPolicy}, geminitest.Response{Unary: callFor("Paris")}, geminitest.Response{Unary: callFor("Oslo")},
		geminitest.Response{Unary: []byte(follow)}, geminitest.Response{Unary: callFor("Berlin")})
	ask := func() *genai.GenerateContentResponse {
		t.Helper()
		resp, err := c.Models.GenerateContent(ctx, geminiModel, geminiAsk("weather?"), geminiTools)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if fc := ask().FunctionCalls(); len(fc) != 1 || fc[0].Name != "weather" || fc[0].Args["city"] != "Paris" {
		t.Errorf("allow: the app got %+v, want the call untouched", fc)
	}
	resp := ask()
	if fc := resp.FunctionCalls(); len(fc) != 0 || resp.Text() != "Let me look.\n\nOslo is closed." {
		t.Errorf("deny: calls %+v, text %q", fc, resp.Text())
	}
	reqs := g.Requests()
	if len(reqs) != 3 || reqs[2].Err != nil {
		t.Fatalf("deny: %d requests, the follow-up's check %v", len(reqs), reqs[len(reqs)-1].Err)
	}
	if r := gjson.GetBytes(reqs[2].Body, "contents.2.parts.0.functionResponse.response.error").Str; r != "Toolgate refused weather: Oslo is closed; nothing ran." {
		t.Errorf("deny: the model read %q", r)
	}
	resp = ask()
	if fc := resp.FunctionCalls(); len(fc) != 0 || !strings.Contains(resp.Text(), "Waiting for your confirmation") {
		t.Errorf("ask: calls %+v, text %q", fc, resp.Text())
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Errorf("the gate ran %d calls", n)
	}
}

// TestGeminiVertexPaths: go-genai in Vertex AI mode (project and
// location, API version v1) through the gate, unary and streamed, and the
// Gemini API on its v1 paths: each held call is taken out on the way.
func TestGeminiVertexPaths(t *testing.T) {
	e, g, _ := geminiEnv(t, geminitest.Response{Chunks: [][]byte{[]byte(geminiCall)}})
	vertex := geminiVertex(t, e)
	v1 := geminiClient(t, e, genai.ClientConfig{HTTPOptions: genai.HTTPOptions{APIVersion: "v1"}})
	const vertexPath = "/v1/projects/proj-1/locations/europe-west4/publishers/google/models/" + geminiModel
	for i, tc := range []struct {
		name   string
		c      *genai.Client
		stream bool
		path   string
	}{
		{"vertex unary", vertex, false, vertexPath + ":generateContent"},
		{"vertex stream", vertex, true, vertexPath + ":streamGenerateContent"},
		{"v1 unary", v1, false, "/v1/models/" + geminiModel + ":generateContent"},
		{"v1 stream", v1, true, "/v1/models/" + geminiModel + ":streamGenerateContent"},
	} {
		var text strings.Builder
		if tc.stream {
			for resp, err := range tc.c.Models.GenerateContentStream(ctx, geminiModel, geminiAsk("weather in Berlin?"), geminiTools) {
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				if fc := resp.FunctionCalls(); len(fc) != 0 {
					t.Fatalf("%s: the held call reached the app", tc.name)
				}
				text.WriteString(resp.Text())
			}
		} else {
			resp, err := tc.c.Models.GenerateContent(ctx, geminiModel, geminiAsk("weather in Berlin?"), geminiTools)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if fc := resp.FunctionCalls(); len(fc) != 0 {
				t.Fatalf("%s: the held call reached the app", tc.name)
			}
			text.WriteString(resp.Text())
		}
		if !strings.HasPrefix(text.String(), "Let me look.\n\nWaiting for your confirmation") {
			t.Errorf("%s: text %q", tc.name, text.String())
		}
		reqs := g.Requests()
		if len(reqs) != i+1 || reqs[i].Path != tc.path {
			t.Errorf("%s: the provider got %+v, want %s", tc.name, reqs[len(reqs)-1].Path, tc.path)
		}
	}
}

// geminiRefused reads a refusal in Google's error shape, as go-genai
// decodes it.
func geminiRefused(t *testing.T, name string, err error, code int, status, says string) {
	t.Helper()
	var ae genai.APIError
	if !errors.As(err, &ae) || ae.Code != code || ae.Status != status || !strings.Contains(ae.Message, says) {
		t.Errorf("%s: %v (%#v), want %d %s saying %q", name, err, ae, code, status, says)
	}
}

// TestGeminiStreamedArgumentsRefused: a request asking Vertex for
// streamed function-call arguments is refused on a gated route with 400
// in Google's error shape, before it goes upstream (no allow name lets it
// through: the gate judges a call on its whole arguments).
func TestGeminiStreamedArgumentsRefused(t *testing.T) {
	e, g, _ := geminiEnv(t, geminitest.Response{Unary: []byte(geminiSunny)})
	// go-genai sends the option in Vertex mode only.
	c := geminiVertex(t, e)
	on := true
	cfg := *geminiTools
	cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAuto, StreamFunctionCallArguments: &on}}
	_, err := c.Models.GenerateContent(ctx, geminiModel, geminiAsk("weather?"), &cfg)
	geminiRefused(t, "unary", err, 400, "INVALID_ARGUMENT", "streamFunctionCallArguments")
	for _, err := range c.Models.GenerateContentStream(ctx, geminiModel, geminiAsk("weather?"), &cfg) {
		geminiRefused(t, "stream", err, 400, "INVALID_ARGUMENT", "streamFunctionCallArguments")
		break
	}
	if b := e.postAs(t, "ana", "/v1beta/models/"+geminiModel+":generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tool_config":{"function_calling_config":{"stream_function_call_arguments":true}}}`); !strings.Contains(string(b), `"INVALID_ARGUMENT"`) {
		t.Errorf("snake case: %s", b)
	}
	if n := len(g.Requests()); n != 0 {
		t.Errorf("%d requests reached the provider", n)
	}
	if _, err := c.Models.GenerateContent(ctx, geminiModel, geminiAsk("weather?"), geminiTools); err != nil {
		t.Errorf("without streamed arguments: %v", err)
	}
}

// TestGeminiAutoRouteWithoutOwnerRefused: a route with neither owner nor
// owner_fields reads the owner from the body (OpenAI's user), which a
// Gemini request does not have: its Gemini requests are refused with 403
// in Google's error shape before they go upstream (the load-time error
// covers only a route fixed to gemini).
func TestGeminiAutoRouteWithoutOwnerRefused(t *testing.T) {
	e, g, c := geminiEnv(t, geminitest.Response{Unary: []byte(geminiSunny)})
	testkit.Run(t, strings.Replace(e.caddy, "owner {http.request.header.X-User-Id}", "", 1))
	_, err := c.Models.GenerateContent(ctx, geminiModel, geminiAsk("weather?"), geminiTools)
	geminiRefused(t, "unary", err, 403, "PERMISSION_DENIED", "owner")
	for _, err := range c.Models.GenerateContentStream(ctx, geminiModel, geminiAsk("weather?"), geminiTools) {
		geminiRefused(t, "stream", err, 403, "PERMISSION_DENIED", "owner")
		break
	}
	if n := len(g.Requests()); n != 0 {
		t.Errorf("%d requests reached the provider", n)
	}
}

// TestGeminiAmbiguousAltRefused: a stream request naming alt twice with
// different values (or one the gate cannot read) is refused with 400 in
// Google's error shape, since the gate cannot tell how the answer will be
// framed; a route that allows ambiguous_alt gates it as its answer's
// Content-Type says.
func TestGeminiAmbiguousAltRefused(t *testing.T) {
	e, g, _ := geminiEnv(t, geminitest.Response{Chunks: [][]byte{[]byte(geminiCall)}})
	base := "/v1beta/models/" + geminiModel + ":streamGenerateContent?"
	for _, q := range []string{"alt=sse&alt=json", "alt=json&$alt=sse", "alt=proto"} {
		b := e.postAs(t, "ana", base+q, geminiArrayRequest)
		var body struct{ Error genai.APIError }
		if err := json.Unmarshal(b, &body); err != nil || body.Error.Code != 400 || body.Error.Status != "INVALID_ARGUMENT" || !strings.Contains(body.Error.Message, "allow ambiguous_alt") {
			t.Errorf("%s: %s", q, b)
		}
	}
	if n := len(g.Requests()); n != 0 {
		t.Fatalf("%d requests reached the provider", n)
	}
	allowed := strings.Replace(e.caddy, "owner {http.request.header.X-User-Id}", "owner {http.request.header.X-User-Id}\n\t\tallow ambiguous_alt", 1)
	testkit.Run(t, allowed)
	waitServing(t, allowed)
	// geminitest answers alt=sse&alt=json with SSE (it reads the first);
	// the gate reads it by its label, and holds the call.
	b := e.postAs(t, "ana", base+"alt=sse&alt=json", geminiArrayRequest)
	if bytes.Contains(b, []byte("functionCall")) || !bytes.Contains(b, []byte("Waiting for your confirmation")) {
		t.Errorf("allowed: the app read %s", b)
	}
	if n := len(g.Requests()); n != 1 {
		t.Errorf("allowed: %d requests", n)
	}
}
