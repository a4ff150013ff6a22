package differential

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/gemini"
	"github.com/toolgate/toolgate/wire/shape"
)

// FuzzGeminiStream: generated Gemini streams, written the way a provider
// may write one (data-only events of one data: line, whole JSON responses,
// the stream's own line ends, CRLF blank line pairs as keep-alives), go
// through the gate's writer (interceptor.Wrap with the Gemini provider, as
// the toolgate handler runs it, in the two writes the cut gives) with the
// function names the gate byte picks gated and every gated call held; what
// the gate wrote, in the pieces it flushed, is read by go-genai,
// @google/genai and @ai-sdk/google. None of them may read a gated call,
// and all three must see the same calls (name, args, id, thoughtSignature)
// and text, or all fail (a stream the gate stops ends in an error event).
// With nothing gated the gate's output is the upstream's bytes.

// geminiStreamPlan builds a stream from the fuzz input: each plan byte is
// one step, words gives the strings ("|"-separated, used in turn).
type geminiStreamPlan struct {
	words  []string
	next   int
	events [][]byte // the data of each event, or nil for a keep-alive
	parts  []map[string]any
	finish string
	usage  map[string]any
	names  []string // the function names the calls use
}

func (p *geminiStreamPlan) word() string {
	if len(p.words) == 0 {
		return "w"
	}
	w := p.words[p.next%len(p.words)]
	p.next++
	return w
}

// name makes a function name Gemini allows (letters, digits, _ . : -,
// starting with a letter or _, at most 64).
func (p *geminiStreamPlan) name() string {
	var b strings.Builder
	for _, r := range p.word() {
		if r < 128 && (r == '_' || r == '.' || r == ':' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
	}
	n := b.String()
	if n == "" || !(n[0] == '_' || n[0] >= 'a' && n[0] <= 'z' || n[0] >= 'A' && n[0] <= 'Z') {
		n = "f" + n
	}
	if len(n) > 64 {
		n = n[:64]
	}
	if !slices.Contains(p.names, n) {
		p.names = append(p.names, n)
	}
	return n
}

func (p *geminiStreamPlan) signature() string {
	return base64.StdEncoding.EncodeToString([]byte(p.word()))
}

func (p *geminiStreamPlan) flush() {
	if len(p.parts) == 0 && p.finish == "" && p.usage == nil {
		return
	}
	cand := map[string]any{"content": map[string]any{"parts": p.parts, "role": "model"}, "index": 0}
	if p.finish != "" {
		cand["finishReason"] = p.finish
	}
	r := map[string]any{"candidates": []any{cand}, "modelVersion": "gemini-3-pro-preview", "responseId": "fuzz"}
	if p.usage != nil {
		r["usageMetadata"] = p.usage
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	p.events = append(p.events, b)
	p.parts, p.finish, p.usage = nil, "", nil
}

// geminiStream makes the stream's body: the events, framed with the line
// end given.
func geminiStream(plan []byte, words string, lf, noSpace bool) (body []byte, names []string) {
	p := &geminiStreamPlan{words: strings.Split(words, "|")}
	for _, op := range plan {
		switch op % 10 {
		case 0:
			p.flush()
		case 1:
			p.parts = append(p.parts, map[string]any{"text": p.word()})
		case 2:
			p.parts = append(p.parts, map[string]any{"text": p.word(), "thought": true})
		case 3:
			p.parts = append(p.parts, map[string]any{"functionCall": map[string]any{"name": p.name(), "args": map[string]any{p.word(): p.word()}}})
		case 4:
			p.parts = append(p.parts, map[string]any{"functionCall": map[string]any{"name": p.name(), "args": map[string]any{}, "id": p.word()}, "thoughtSignature": p.signature()})
		case 5:
			p.flush()
			p.events = append(p.events, nil)
		case 6:
			p.finish = "STOP"
		case 7:
			n := len(p.events) + 1
			p.usage = map[string]any{"promptTokenCount": 10, "candidatesTokenCount": n, "totalTokenCount": 10 + n}
		case 8:
			p.parts = append(p.parts, map[string]any{"text": "", "thoughtSignature": p.signature()})
		case 9:
			p.parts = append(p.parts, map[string]any{"functionCall": map[string]any{"name": p.name()}})
		}
	}
	p.flush()
	end := "\r\n"
	if lf {
		end = "\n"
	}
	prefix := "data: "
	if noSpace {
		prefix = "data:"
	}
	var out bytes.Buffer
	for _, ev := range p.events {
		if ev == nil {
			out.WriteString(end + end) // the keep-alive all three ignore
			continue
		}
		out.WriteString(prefix)
		out.Write(ev)
		out.WriteString(end + end)
	}
	return out.Bytes(), p.names
}

// The fuzz worker's Node side and local server, started once.
var (
	fuzzGeminiOnce sync.Once
	fuzzGeminiNode *geminiNodeServer
	fuzzGeminiSrv  *geminiServer
	fuzzGeminiErr  error
	fuzzGeminiN    atomic.Int64
)

// processTB is a testing.TB whose cleanups never run: the fuzz worker's
// server lives as long as the process.
type processTB struct{ testing.TB }

func (processTB) Cleanup(func()) {}

func FuzzGeminiStream(f *testing.F) {
	ns, ok := findGeminiNode(f)
	if !ok {
		f.Skip("the Node Gemini clients are not installed (see the log line above)")
	}
	f.Add([]byte{3, 6, 7, 0}, "get_weather|city|Paris", uint16(40), false, false, uint8(1))
	f.Add([]byte{2, 0, 5, 4, 3, 0, 5, 5, 8, 6, 7}, "t|delete_post|post|42|call_1|sig", uint16(0), false, false, uint8(0b11))
	f.Add([]byte{1, 1, 0, 3, 9, 0, 1, 6}, "Hello, |wörld \"quoted\"\n|f.x:y-z|k|v|n", uint16(123), true, true, uint8(0b10))
	f.Add([]byte{4, 4, 4, 6}, "a|id-a|s1|b|id-b|s2", uint16(7), false, true, uint8(0b101))
	f.Add([]byte{1, 0, 3, 7}, "Let me look.|weather|city|Berlin", uint16(90), false, false, uint8(1)) // cut before the finish
	f.Add([]byte{1, 0, 3, 4, 0, 6}, "x|ok|k|v|delete|id|sig", uint16(0), false, false, uint8(0b10))
	// Each worker process starts its Node side before its first input, so
	// that Node's start (seconds on a loaded machine) is not taken for a
	// hung input.
	fuzzGeminiOnce.Do(func() { startFuzzGemini(f, ns) })
	f.Fuzz(func(t *testing.T, plan []byte, words string, cut uint16, lf, noSpace bool, gate uint8) {
		if len(plan) > 64 || len(words) > 4096 {
			t.Skip("too long")
		}
		fuzzGeminiOnce.Do(func() { startFuzzGemini(t, ns) })
		if fuzzGeminiErr != nil {
			t.Fatalf("starting parse-gemini.mjs: %v", fuzzGeminiErr)
		}
		body, names := geminiStream(plan, words, lf, noSpace)
		upstream := [][]byte{body}
		if k := int(cut); k > 0 && k < len(body) {
			upstream = [][]byte{body[:k], body[k:]}
		}
		gated := make(map[string]bool)
		for i, n := range names {
			if gate>>(i%8)&1 == 1 {
				gated[n] = true
			}
		}
		pieces := geminiThroughGate(upstream, gated)
		if len(gated) == 0 && !passedOrStopped(body, bytes.Join(pieces, nil)) {
			t.Fatalf("nothing gated, and the gate changed the stream:\n%q\n%q", body, bytes.Join(pieces, nil))
		}
		name := "fuzz-" + strconv.FormatInt(fuzzGeminiN.Add(1), 10)
		srv := fuzzGeminiSrv
		srv.answer(name, sseAnswer(pieces...))
		defer func() {
			srv.mu.Lock()
			delete(srv.answers, name)
			delete(srv.requests, name)
			srv.mu.Unlock()
		}()
		var reqs []geminiNodeRequest
		for _, client := range []string{jsGenai, aiSDK} {
			reqs = append(reqs, geminiNodeRequest{ID: name + " " + client, Client: client, Stream: true, BaseURL: srv.URL,
				Headers: map[string]string{geminiCaseHeader: name, "X-Toolgate-Client": client}, Tools: names})
		}
		node, err := fuzzGeminiNode.read(reqs...)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]geminiSeen{
			goGenai: goGenaiSeen(context.Background(), srv.URL, http.Header{geminiCaseHeader: {name}}, true, names, nil),
			jsGenai: node[0],
			aiSDK:   node[1],
		}
		failed := 0
		for _, c := range geminiClients {
			for _, call := range got[c].Calls {
				if gated[call.Name] {
					t.Fatalf("%s read the gated call %s through the gate (upstream %.600q)\ngate wrote %.600q\n %s", c, call.Name, body, bytes.Join(pieces, nil), got[c])
				}
			}
			if got[c].Error != "" {
				failed++
			}
		}
		if failed == len(geminiClients) {
			return
		}
		g := got[goGenai]
		for _, c := range geminiClients[1:] {
			o := got[c]
			if failed > 0 || !sameCalls(o.Calls, g.Calls) || o.Text != g.Text {
				t.Errorf("the Gemini clients read the gate's stream differently (upstream %.600q)\ngate wrote %d pieces: %.600q\n %s: %s\n %s: %s\n %s: %s",
					body, len(pieces), bytes.Join(pieces, nil), goGenai, got[goGenai], jsGenai, got[jsGenai], aiSDK, got[aiSDK])
				return
			}
		}
	})
}

// startFuzzGemini starts the process's local server and parse-gemini.mjs,
// and has it read one stream, so that its clients are loaded.
func startFuzzGemini(tb testing.TB, ns nodeSide) {
	fuzzGeminiSrv = newGeminiServer(processTB{tb})
	if fuzzGeminiNode, fuzzGeminiErr = ns.startGemini(); fuzzGeminiErr != nil {
		return
	}
	body, _ := geminiStream([]byte{1, 6}, "warm", false, false)
	fuzzGeminiSrv.answer("warm-up", sseAnswer(body))
	_, fuzzGeminiErr = fuzzGeminiNode.read(geminiNodeRequest{ID: "warm-up", Client: jsGenai, Stream: true, BaseURL: fuzzGeminiSrv.URL,
		Headers: map[string]string{geminiCaseHeader: "warm-up"}})
}

// geminiWait is the waiting text the fuzzed gate writes for a held call.
const geminiWait = "Waiting for your confirmation: http://127.0.0.1:1/toolgate/h/aaaaaaaaaaaaaaaaaaaaaaaaaa"

// holdNames gates the names in its map and holds every gated call.
type holdNames map[string]bool

func (h holdNames) Gated(name string) bool { return h[name] }

func (holdNames) Hold(context.Context, []provider.Call, []byte, provider.Kept) provider.Verdict {
	return provider.Verdict{Text: geminiWait}
}

// geminiStreamURL is the path go-genai asks a stream at.
var geminiStreamURL = &url.URL{Path: "/v1beta/models/" + geminiModel + ":streamGenerateContent", RawQuery: "alt=sse"}

// geminiThroughGate writes an upstream Gemini stream (200, text/event-stream,
// in the writes given) through the gate's writer with the Gemini provider
// and the names gated, as the toolgate handler does (no follow-up: the
// request is not given), and returns what it wrote, one piece per flush.
func geminiThroughGate(upstream [][]byte, gated map[string]bool) [][]byte {
	w := &pieceWriter{ResponseRecorder: httptest.NewRecorder()}
	var prov provider.Provider = gemini.Provider{}
	rw := interceptor.Wrap(w, prov, context.Background(), holdNames(gated), 0)
	rw.SetStreams(prov.Streams(http.MethodPost, geminiStreamURL, nil))
	var tools []string
	for n := range gated {
		tools = append(tools, n)
	}
	rw.GuardNames(shape.NewNames(tools))
	rw.Header().Set("Content-Type", "text/event-stream")
	rw.WriteHeader(http.StatusOK)
	for _, p := range upstream {
		if _, err := rw.Write(p); err != nil {
			break // reverse_proxy stops copying at a write error
		}
		_ = rw.FlushError()
	}
	_ = rw.Close() // a failure is in the body: the stream's error event
	w.Flush()
	return w.pieces
}

// passedOrStopped reports whether the gate wrote a stream without gated
// calls as it came, or stopped it (a stream it refuses whatever the
// policy, e.g. two calls with one id): the events before, as they came,
// then its error event.
func passedOrStopped(upstream, out []byte) bool {
	if bytes.Equal(upstream, out) {
		return true
	}
	i := bytes.LastIndex(out, []byte(`data: {"error":{"code":502,"message":"Toolgate stopped this response: `))
	return i >= 0 && bytes.HasPrefix(upstream, out[:i])
}

// pieceWriter records a response's body one piece per flush.
type pieceWriter struct {
	*httptest.ResponseRecorder
	pieces [][]byte
	at     int
}

func (w *pieceWriter) Flush() {
	b := w.Body.Bytes()
	if len(b) > w.at {
		w.pieces = append(w.pieces, bytes.Clone(b[w.at:]))
		w.at = len(b)
	}
}
