package differential

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/provider/gemini"
	"github.com/toolgate/toolgate/wire/shape"
)

// Shapes the gate has no adapter for (issue 15 §2): Gemini's
// generateContent (JSON and SSE), the Assistants API's run, Ollama's
// /api/chat (JSON and NDJSON), Bedrock's Converse; and the known shapes on
// a route that reads another. No pinned SDK on either side parses
// Gemini, Assistants runs, Ollama or Converse here, so their invariant is
// weaker than the SDKs' differential: through the gate, the answer is
// refused (an error status, or a cut) or no lenient reader of any of
// these shapes finds a gated call in what the app got (foreignCalls:
// encoding/json, which matches keys in any case, on the whole body, each
// line and each SSE data line). Each shape is tried both where no
// adapter reads it (interceptor.Guard, an unknown path) and through each
// adapter with the gated names set (a route whose Provider reads it as
// its own), as the toolgate handler does.

// foreignShape is one answer of a shape no SDK parser here reads.
type foreignShape struct {
	name, contentType string
	stream            bool // the client asked for a stream
	body              string
}

var foreignShapes = []foreignShape{
	{"gemini", "application/json", false, `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"delete_post","args":{"post":7}}}]},"finishReason":"STOP","index":0}]}`},
	{"gemini-sse", "text/event-stream", true, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Sure.\"}]}}]}\r\n\r\ndata: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"delete_post\",\"args\":{\"post\":7}}}]}}]}\r\n\r\n"},
	{"assistants-run", "application/json", false, `{"id":"run_1","object":"thread.run","status":"requires_action","required_action":{"type":"submit_tool_outputs","submit_tool_outputs":{"tool_calls":[{"id":"call_1","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}"}}]}}}`},
	{"ollama", "application/json", false, `{"model":"llama3.2","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"delete_post","arguments":{"post":7}}}]},"done":true}`},
	{"ollama-ndjson", "application/x-ndjson", true, `{"model":"llama3.2","message":{"role":"assistant","content":"Sure."},"done":false}` + "\n" + `{"model":"llama3.2","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"delete_post","arguments":{"post":7}}}]},"done":false}` + "\n"},
	{"converse", "application/json", false, `{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"delete_post","input":{"post":7}}}]}},"stopReason":"tool_use"}`},
	{"anthropic-sse", "text/event-stream", true, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"delete_post\",\"input\":{}}}\n\n"},
	{"chat-sse", "text/event-stream", true, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Sure.\"}]}}]}\r\n\r\ndata: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"delete_post\",\"arguments\":\"{}\"}}]}}]}\r\n\r\n"},
	{"chat-array", "application/json", true, `[{"candidates":[{"content":{"role":"model","parts":[{"text":"Sure."}]}}]}` + "\n,\r\n" + `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"delete_post","arguments":"{}"}}]}}]}]`},
	{"gemini+chat-array", "application/json", true, `[{"candidates":[{"content":{"role":"model","parts":[{"text":"Sure."}]}}]}` + "\n,\r\n" + `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]}}],"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"delete_post","arguments":"{}"}}]}}]}]`},
	{"polyglot", "application/json", false, `{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"}}],"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete_post"}}]}}],"message":{"tool_calls":[{"function":{"name":"delete_post"}}]}}`},
}

// foreignCalls is what lenient readers of the shapes above (and the call
// keys every provider uses) find in a body: the names of the calls.
func foreignCalls(body []byte) []string {
	var names []string
	read := func(b []byte) {
		b = bytes.TrimSpace(b)
		var v struct {
			Candidates []struct {
				Content struct {
					Parts []struct {
						FunctionCall *struct{ Name string } `json:"functionCall"`
					}
				}
			}
			RequiredAction *struct {
				SubmitToolOutputs struct {
					ToolCalls []struct{ Function struct{ Name string } } `json:"tool_calls"`
				} `json:"submit_tool_outputs"`
			} `json:"required_action"`
			Message *struct {
				ToolCalls []struct{ Function struct{ Name string } } `json:"tool_calls"`
			}
			Output *struct {
				Message struct {
					Content []struct {
						ToolUse *struct{ Name string } `json:"toolUse"`
					}
				}
			}
			ContentBlock *struct{ Type, Name string } `json:"content_block"`
			Choices      []struct {
				Delta, Message struct {
					ToolCalls []struct{ Function struct{ Name string } } `json:"tool_calls"`
				}
			}
		}
		_ = json.Unmarshal(b, &v) // a field of another type is skipped, the rest read
		for _, c := range v.Candidates {
			for _, p := range c.Content.Parts {
				if p.FunctionCall != nil {
					names = append(names, p.FunctionCall.Name)
				}
			}
		}
		if v.RequiredAction != nil {
			for _, c := range v.RequiredAction.SubmitToolOutputs.ToolCalls {
				names = append(names, c.Function.Name)
			}
		}
		if v.Message != nil {
			for _, c := range v.Message.ToolCalls {
				names = append(names, c.Function.Name)
			}
		}
		if v.Output != nil {
			for _, c := range v.Output.Message.Content {
				if c.ToolUse != nil {
					names = append(names, c.ToolUse.Name)
				}
			}
		}
		if v.ContentBlock != nil && v.ContentBlock.Type == "tool_use" {
			names = append(names, v.ContentBlock.Name)
		}
		for _, c := range v.Choices {
			for _, tc := range append(c.Delta.ToolCalls, c.Message.ToolCalls...) {
				names = append(names, tc.Function.Name)
			}
		}
	}
	// A streamed JSON array is read element by element, as its clients
	// do, up to the first that does not parse (a cut array's elements
	// before it are read).
	readArray := func(b []byte) {
		dec := json.NewDecoder(bytes.NewReader(b))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return
		}
		for dec.More() {
			var el json.RawMessage
			if dec.Decode(&el) != nil {
				return
			}
			read(el)
		}
	}
	read(body)
	readArray(body)
	for _, line := range bytes.FieldsFunc(body, func(r rune) bool { return r == '\n' || r == '\r' }) {
		read(line)
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			read(d)
		}
	}
	var gated []string
	for _, n := range names {
		if isGated(n) {
			gated = append(gated, n)
		}
	}
	return gated
}

// gatedSearch is the gate's name search for the test policy's tools.
var gatedSearch = shape.NewNames(gatedTools)

// routes are where a foreign answer can arrive: a path no adapter reads
// ("guard"), or a path a route reads as one adapter's.
// The Gemini routes: generateContent or its stream with alt=sse
// ("gemini-sse"), and its stream without it, a JSON array
// ("gemini-array"), as the handler tells the writer.
var foreignRoutes = []string{"guard", chat, responses, anthropic, "gemini-sse", "gemini-array"}

// throughRoute runs an answer through the gate as the toolgate handler
// would on the route, and returns what the app receives (a 502 when the
// gate refused it before anything was written) and whether the gate cut
// it.
func throughRoute(route string, stream bool, header http.Header, pieces [][]byte) (answer, bool) {
	w := &headerWriter{ResponseRecorder: httptest.NewRecorder()}
	var (
		rw interface {
			http.ResponseWriter
			FlushError() error
			Close() error
		}
	)
	if route == "guard" {
		rw = interceptor.Guard(w, gatedSearch)
	} else {
		a := adapters[route]
		if strings.HasPrefix(route, "gemini") {
			a = gemini.Provider{}
		}
		iw := interceptor.Wrap(w, a, context.Background(), holdGated{}, 0)
		iw.GuardNames(gatedSearch)
		if strings.HasPrefix(route, "gemini") {
			iw.SetStreams(stream)
			iw.SetStreamsJSON(stream && route == "gemini-array")
		}
		req := `{"model":"m","stream":false}`
		if stream {
			req = `{"model":"m","stream":true}`
		}
		iw.SetRequest([]byte(req))
		rw = iw
	}
	for k, v := range header {
		rw.Header()[k] = v
	}
	rw.WriteHeader(http.StatusOK)
	cut := false
	for _, p := range pieces {
		if _, err := rw.Write(p); err != nil {
			cut = true // reverse_proxy aborts the connection
			break
		}
		_ = rw.FlushError()
	}
	if err := rw.Close(); err != nil && !w.wrote {
		return answer{status: http.StatusBadGateway, header: http.Header{}}, false
	}
	return answer{status: w.Code, header: w.Header().Clone(), body: w.Body.Bytes()}, cut
}

// TestForeignShapesNeverCarryAGatedCall: every foreign shape, on every
// route, written whole and cut at every byte in two writes, reaches the
// app refused, cut, or without its call; and the same shapes naming no
// gated tool pass byte for byte where no adapter reads them.
func TestForeignShapesNeverCarryAGatedCall(t *testing.T) {
	for _, sh := range foreignShapes {
		body := []byte(sh.body)
		if names := foreignCalls(body); len(names) == 0 {
			t.Fatalf("%s: the lenient readers find no call in the shape itself", sh.name)
		}
		header := http.Header{"Content-Type": {sh.contentType}}
		for _, route := range foreignRoutes {
			for k := 0; k < len(body); k++ {
				pieces := [][]byte{body}
				if k > 0 {
					pieces = [][]byte{body[:k], body[k:]}
				}
				out, cut := throughRoute(route, sh.stream, header, pieces)
				if out.status < 300 && !cut {
					if names := foreignCalls(out.body); len(names) > 0 {
						t.Errorf("%s through %s, cut at %d: the app read %v in %q", sh.name, route, k, names, out.body)
						break
					}
				}
			}
		}
		plain := bytes.ReplaceAll(body, []byte("delete_post"), []byte(ungatedPrefix+"post"))
		out, cut := throughRoute("guard", sh.stream, header, [][]byte{plain[:len(plain)/2], plain[len(plain)/2:]})
		if cut || out.status != http.StatusOK || !bytes.Equal(out.body, plain) {
			t.Errorf("%s without a gated call, where no adapter reads it: %d cut %v %q", sh.name, out.status, cut, out.body)
		}
	}
}

// FuzzForeignShape mutates the foreign shapes (bytes, label, where one cut
// between two writes falls, the route) and asserts the invariant of
// TestForeignShapesNeverCarryAGatedCall: refused, cut, or no gated call
// any lenient reader finds.
func FuzzForeignShape(f *testing.F) {
	for i, sh := range foreignShapes {
		f.Add(byte(i), sh.contentType, sh.stream, []byte(sh.body), uint16(len(sh.body)/2))
	}
	f.Fuzz(func(t *testing.T, r byte, contentType string, stream bool, body []byte, cut uint16) {
		if len(body) > 64<<10 {
			t.Skip("over 64 KiB")
		}
		route := foreignRoutes[int(r)%len(foreignRoutes)]
		pieces := [][]byte{body}
		if k := int(cut); k > 0 && k < len(body) {
			pieces = [][]byte{body[:k], body[k:]}
		}
		out, wasCut := throughRoute(route, stream, headerOf(contentType), pieces)
		if out.status >= 300 || wasCut {
			return
		}
		if names := foreignCalls(out.body); len(names) > 0 {
			t.Errorf("through %s (Content-Type %q, %d pieces) the app read %s in %.300q from %.300q", route, contentType, len(pieces), strings.Join(names, ", "), out.body, body)
		}
	})
}
