package differential

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"
)

// The official Gemini clients as readers of Gemini answers (issue 20):
// google.golang.org/genai in Go, @google/genai and @ai-sdk/google (through
// the `ai` package) in Node (.ci/differential/parse-gemini.mjs). Each
// sends its request, as an app would, to a local server that answers
// with the bytes under test, written in the pieces the case says, and
// reports what the app saw in one canonical form (geminiSeen). The tests
// say where the three agree and where they differ (docs/gemini-clients.md
// keeps the table); the fuzz target checks that they agree on every stream
// written the way the gate may write one.

// The clients, as the tests name them.
const (
	goGenai = "go-genai"
	jsGenai = "@google/genai"
	aiSDK   = "@ai-sdk/google"
)

var geminiClients = []string{goGenai, jsGenai, aiSDK}

// geminiSeen is what the app saw, in the form parse-gemini.mjs prints.
type geminiSeen struct {
	Status     int          `json:"status"` // the HTTP status of an API error the client reported (0: none)
	Error      string       `json:"error"`  // the client's error ("" when none)
	Chunks     int          `json:"chunks"` // responses the app received (a unary answer: 1)
	Text       string       `json:"text"`
	Thought    string       `json:"thought"`
	Calls      []geminiCall `json:"calls"`
	Signatures []string     `json:"signatures"` // thoughtSignatures on parts that are not calls
	Finish     string       `json:"finish"`     // the last finishReason read, as Gemini wrote it
	Usage      *geminiUsage `json:"usage"`      // the last usageMetadata read
}

type geminiCall struct {
	Name      string `json:"name"`
	Args      string `json:"args"` // canonical JSON, keys sorted
	ID        string `json:"id"`   // "" when the answer had none (@ai-sdk/google makes one up: not counted)
	Signature string `json:"signature"`
}

type geminiUsage struct {
	Prompt     int `json:"prompt"`
	Candidates int `json:"candidates"`
	Thoughts   int `json:"thoughts"`
	Total      int `json:"total"`
}

func (s geminiSeen) String() string {
	short := func(sig string) string {
		if len(sig) > 12 {
			return sig[:12] + "…"
		}
		return sig
	}
	s.Calls = slices.Clone(s.Calls)
	for i := range s.Calls {
		s.Calls[i].Signature = short(s.Calls[i].Signature)
	}
	s.Signatures = slices.Clone(s.Signatures)
	for i := range s.Signatures {
		s.Signatures[i] = short(s.Signatures[i])
	}
	if len(s.Thought) > 40 {
		s.Thought = s.Thought[:40] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// same reports whether two readings agree on everything an app acts on;
// error messages are not compared (each client words its own).
func (s geminiSeen) same(o geminiSeen) bool {
	return (s.Error == "") == (o.Error == "") && s.Status == o.Status && s.Chunks == o.Chunks &&
		s.Text == o.Text && s.Thought == o.Thought && sameCalls(s.Calls, o.Calls) &&
		slices.Equal(s.Signatures, o.Signatures) && s.Finish == o.Finish && sameUsage(s.Usage, o.Usage)
}

func sameUsage(a, b *geminiUsage) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// callNames is the calls' names, in order.
func (s geminiSeen) callNames() []string {
	var out []string
	for _, c := range s.Calls {
		out = append(out, c.Name)
	}
	return out
}

// canonicalJSON writes v with object keys sorted and no whitespace, as
// parse-gemini.mjs's canonical() does (the two may escape a character
// differently: sameCalls compares args as values).
func canonicalJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b) // encoding/json sorts map keys
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// sameCalls reports whether two lists of calls are the same, args compared
// as JSON values.
func sameCalls(a, b []geminiCall) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Name != y.Name || x.ID != y.ID || x.Signature != y.Signature {
			return false
		}
		if x.Args != y.Args {
			var xv, yv any
			if json.Unmarshal([]byte(x.Args), &xv) != nil || json.Unmarshal([]byte(y.Args), &yv) != nil || !reflect.DeepEqual(xv, yv) {
				return false
			}
		}
	}
	return true
}

// --- the Go client --------------------------------------------------------------

// geminiModel is the model every client asks for.
const geminiModel = "gemini-2.5-flash"

// goGenaiSeen sends the request with google.golang.org/genai as an app
// would (Models.GenerateContent, or GenerateContentStream read until its
// first error) and returns what the app saw. progress, when set, is called
// after each response the app received, with their count so far.
func goGenaiSeen(ctx context.Context, baseURL string, header http.Header, stream bool, tools []string, progress func(n int)) geminiSeen {
	return goGenaiSeenClient(ctx, baseURL, header, stream, tools, progress, nil)
}

// goGenaiSeenClient is goGenaiSeen through the given HTTP client (nil: the
// default).
func goGenaiSeenClient(ctx context.Context, baseURL string, header http.Header, stream bool, tools []string, progress func(n int), hc *http.Client) (s geminiSeen) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			s.Error = fmt.Sprintf("panic: %v", v)
		}
	}()
	c, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:      "test",
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: baseURL, Headers: header},
		HTTPClient:  hc,
	})
	if err != nil {
		s.fail(err)
		return s
	}
	var decls []*genai.FunctionDeclaration
	for _, name := range tools {
		decls = append(decls, &genai.FunctionDeclaration{Name: name, Parameters: &genai.Schema{Type: genai.TypeObject}})
	}
	config := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: decls}}}
	if !stream {
		r, err := c.Models.GenerateContent(ctx, geminiModel, genai.Text("Go on."), config)
		if err != nil {
			s.fail(err)
			return s
		}
		s.add(r)
		return s
	}
	for r, err := range c.Models.GenerateContentStream(ctx, geminiModel, genai.Text("Go on."), config) {
		if err != nil {
			s.fail(err)
			break
		}
		s.add(r)
		if progress != nil {
			progress(s.Chunks)
		}
	}
	return s
}

func (s *geminiSeen) fail(err error) {
	var ae genai.APIError
	if errors.As(err, &ae) {
		s.Status = ae.Code
	}
	s.Error = err.Error()
	if len(s.Error) > 300 {
		s.Error = s.Error[:300]
	}
	if s.Error == "" {
		s.Error = "error"
	}
}

// add reads one response as the app does: candidates[0]'s parts, its
// finish reason and the response's usage.
func (s *geminiSeen) add(r *genai.GenerateContentResponse) {
	s.Chunks++
	if r == nil {
		return
	}
	if u := r.UsageMetadata; u != nil {
		s.Usage = &geminiUsage{int(u.PromptTokenCount), int(u.CandidatesTokenCount), int(u.ThoughtsTokenCount), int(u.TotalTokenCount)}
	}
	if len(r.Candidates) == 0 || r.Candidates[0] == nil {
		return
	}
	cand := r.Candidates[0]
	if cand.FinishReason != "" {
		s.Finish = string(cand.FinishReason)
	}
	if cand.Content == nil {
		return
	}
	for _, p := range cand.Content.Parts {
		if p == nil {
			continue
		}
		sig := ""
		if len(p.ThoughtSignature) > 0 {
			sig = base64.StdEncoding.EncodeToString(p.ThoughtSignature)
		}
		if fc := p.FunctionCall; fc != nil {
			if fc.Name != "" {
				args := any(fc.Args)
				if fc.Args == nil {
					args = map[string]any{}
				}
				s.Calls = append(s.Calls, geminiCall{Name: fc.Name, Args: canonicalJSON(args), ID: fc.ID, Signature: sig})
			}
			continue
		}
		if p.Thought {
			s.Thought += p.Text
		} else {
			s.Text += p.Text
		}
		if sig != "" {
			s.Signatures = append(s.Signatures, sig)
		}
	}
}

// --- the answers' server -----------------------------------------------------------

// geminiCaseHeader is the request header that names the case to answer.
const geminiCaseHeader = "X-Toolgate-Case"

// geminiAnswer is one answer of the local server.
type geminiAnswer struct {
	Status int // default 200
	Header http.Header
	Pieces [][]byte // the body, written in order with a flush after each
	// HoldAt, when above 0, holds the stream before the piece at HoldAt
	// until the client has shown (through the progress URL) that the app
	// read HoldSeen responses: the stream stays open and waits, as a held
	// call's stream does, and what was written before must reach the app.
	HoldAt   int
	HoldSeen int
	// Paced, with HoldAt, waits a moment between the pieces after the
	// hold, as keep-alives come one at a time: each reaches the client in
	// a read of its own (most likely; what the tests assert holds either
	// way, as the cases that join them in one write show).
	Paced bool
}

// geminiServer answers each request with the answer its case header names,
// and notes each request's method and path.
type geminiServer struct {
	*httptest.Server
	mu       sync.Mutex
	answers  map[string]geminiAnswer
	seen     map[string]chan int // progress per client request key (case + client)
	requests map[string][]string // "METHOD path?query" per case
}

func newGeminiServer(t testing.TB) *geminiServer {
	s := &geminiServer{answers: map[string]geminiAnswer{}, seen: map[string]chan int{}, requests: map[string][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *geminiServer) answer(name string, a geminiAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[name] = a
}

// progressURL is where the client named key reports what it read.
func (s *geminiServer) progressURL(key string) string {
	return s.URL + "/progress?key=" + url.QueryEscape(key)
}

func (s *geminiServer) progress(key string) chan int {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.seen[key]
	if !ok {
		ch = make(chan int, 64)
		s.seen[key] = ch
	}
	return ch
}

func (s *geminiServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/progress" {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		select {
		case s.progress(r.URL.Query().Get("key")) <- n:
		default:
		}
		return
	}
	name := r.Header.Get(geminiCaseHeader)
	s.mu.Lock()
	a, ok := s.answers[name]
	s.requests[name] = append(s.requests[name], r.Method+" "+r.URL.RequestURI())
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no answer for case "+strconv.Quote(name), http.StatusTeapot)
		return
	}
	for k, v := range a.Header {
		w.Header()[k] = v
	}
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	key := r.Header.Get("X-Toolgate-Client")
	for i, p := range a.Pieces {
		if a.HoldAt > 0 && i == a.HoldAt {
			if !s.waitFor(r.Context(), name+" "+key, a.HoldSeen) {
				return // the client never read what came before: the stream ends unfinished
			}
		}
		if a.Paced && a.HoldAt > 0 && i > a.HoldAt {
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := w.Write(p); err != nil {
			return
		}
		_ = rc.Flush()
	}
}

// waitFor waits until the client reports n responses read, or gives up
// after a while (then the stream is cut, and the test sees the client
// never got the responses written before the hold).
func (s *geminiServer) waitFor(ctx context.Context, key string, n int) bool {
	ch := s.progress(key)
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case got := <-ch:
			if got >= n {
				return true
			}
		case <-timeout.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// requestsOf is every request the server got for a case.
func (s *geminiServer) requestsOf(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests[name])
}

// --- running the three clients ---------------------------------------------------------

// geminiCase is one answer and how the app asks for it.
type geminiCase struct {
	name   string
	stream bool
	tools  []string // the functions the app declares
	answer geminiAnswer
}

// sseAnswer is an alt=sse stream answer written in the given pieces.
func sseAnswer(pieces ...[]byte) geminiAnswer {
	return geminiAnswer{Header: http.Header{"Content-Type": {"text/event-stream"}}, Pieces: pieces}
}

// jsonAnswer is a unary answer.
func jsonAnswer(status int, body []byte) geminiAnswer {
	return geminiAnswer{Status: status, Header: http.Header{"Content-Type": {"application/json; charset=UTF-8"}}, Pieces: [][]byte{body}}
}

// geminiReadings runs every case through the three clients (the Node ones
// once for the whole batch) and returns what each app saw, by case and
// client; without the Node side only go-genai's readings are there.
func geminiReadings(t *testing.T, srv *geminiServer, cases []geminiCase) (map[string]map[string]geminiSeen, bool) {
	t.Helper()
	for _, c := range cases {
		srv.answer(c.name, c.answer)
	}
	out := map[string]map[string]geminiSeen{}
	var mu sync.Mutex
	put := func(c, client string, s geminiSeen) {
		mu.Lock()
		defer mu.Unlock()
		if out[c] == nil {
			out[c] = map[string]geminiSeen{}
		}
		out[c][client] = s
	}
	ns, withNode := findGeminiNode(t)
	var wg sync.WaitGroup
	if withNode {
		wg.Go(func() {
			var reqs []geminiNodeRequest
			for _, c := range cases {
				for _, client := range []string{jsGenai, aiSDK} {
					reqs = append(reqs, geminiNodeRequest{
						ID: c.name + " " + client, Client: client, Stream: c.stream, BaseURL: srv.URL,
						Headers: map[string]string{geminiCaseHeader: c.name, "X-Toolgate-Client": client},
						Tools:   c.tools, ProgressURL: srv.progressURL(c.name + " " + client),
					})
				}
			}
			for id, s := range ns.parseGemini(t, reqs, 150*time.Second) {
				name, client := splitID(id)
				put(name, client, s)
			}
		})
	}
	forEach(len(cases), 3, func(i int) {
		c := cases[i]
		key := c.name + " " + goGenai
		h := http.Header{geminiCaseHeader: {c.name}, "X-Toolgate-Client": {goGenai}}
		progress := func(n int) {
			resp, err := http.Get(srv.progressURL(key) + "&n=" + strconv.Itoa(n))
			if err == nil {
				resp.Body.Close()
			}
		}
		put(c.name, goGenai, goGenaiSeen(context.Background(), srv.URL, h, c.stream, c.tools, progress))
	})
	wg.Wait()
	return out, withNode
}

// splitID cuts a Node request id "case client" at the client's name.
func splitID(id string) (name, client string) {
	for _, c := range []string{jsGenai, aiSDK} {
		if n, ok := strings.CutSuffix(id, " "+c); ok {
			return n, c
		}
	}
	return id, ""
}

// sseEvents cuts a recorded alt=sse body into its events, each with its
// blank line (CRLF, as Gemini writes them).
func sseEvents(body []byte) [][]byte {
	var out [][]byte
	for _, ev := range bytes.SplitAfter(body, []byte("\r\n\r\n")) {
		if len(ev) > 0 {
			out = append(out, ev)
		}
	}
	return out
}
