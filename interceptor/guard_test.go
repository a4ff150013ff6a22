package interceptor

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/provider"
	anthropicadapter "github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/chat"
	"github.com/toolgate/toolgate/provider/gemini"
	"github.com/toolgate/toolgate/provider/providertest"
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
	"github.com/toolgate/toolgate/wire/shape"
	"github.com/toolgate/toolgate/wire/stream"
)

// A name counts as a whole word only, wherever it stands, and a \u escape
// that could spell one counts too.
// guardRecorder counts what reached the client.
type guardRecorder struct {
	*httptest.ResponseRecorder
	wrote bool
}

func (r *guardRecorder) WriteHeader(code int) { r.wrote = true; r.ResponseRecorder.WriteHeader(code) }
func (r *guardRecorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.ResponseRecorder.Write(p)
}

// A body naming a gated tool in its first write is refused with nothing
// written; one naming it later, after the header went, is cut before the
// write that completes the name, even when the name is split between two
// writes; anything else goes through byte for byte.
func TestGuardWriter(t *testing.T) {
	names := shape.NewNames([]string{"delete_post"})
	gemini := []byte(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete_post","args":{"post":7}}}]}}]}`)
	plain := []byte(`{"candidates":[{"content":{"parts":[{"text":"Your posts: meetup draft, launch notes."}]}}]}`)

	rec := &guardRecorder{ResponseRecorder: httptest.NewRecorder()}
	g := Guard(rec, names)
	g.Header().Set("Content-Type", "application/json")
	g.WriteHeader(200)
	if _, err := g.Write(gemini); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); !errors.Is(err, stream.ErrNamesGated) || rec.wrote || g.Written() || g.Named() != "delete_post" {
		t.Errorf("first write naming it: Close %v, wrote %v %q", err, rec.wrote, rec.Body.Bytes())
	}

	for cut := 1; cut < len(gemini); cut++ {
		rec := &guardRecorder{ResponseRecorder: httptest.NewRecorder()}
		g := Guard(rec, names)
		g.WriteHeader(200)
		if err := g.FlushError(); err != nil {
			t.Fatal(err)
		}
		_, err1 := g.Write(gemini[:cut])
		_, err2 := g.Write(gemini[cut:])
		if err1 == nil && err2 == nil || !errors.Is(g.Close(), stream.ErrNamesGated) {
			t.Errorf("cut at %d: no write failed (%v, %v)", cut, err1, err2)
		}
		if bytes.Contains(rec.Body.Bytes(), []byte("delete_post")) {
			t.Errorf("cut at %d: the client got %q", cut, rec.Body.Bytes())
		}
	}

	for _, status := range []int{200, 404, 500} {
		rec := &guardRecorder{ResponseRecorder: httptest.NewRecorder()}
		g := Guard(rec, names)
		g.WriteHeader(status)
		body := plain
		if status != 200 {
			body = gemini // an error is read as an error, never a call
		}
		_, _ = g.Write(body[:10])
		_, _ = g.Write(body[10:])
		if err := g.Close(); err != nil || rec.Code != status || !bytes.Equal(rec.Body.Bytes(), body) {
			t.Errorf("status %d: Close %v, got %d %q", status, err, rec.Code, rec.Body.Bytes())
		}
	}

	rec = &guardRecorder{ResponseRecorder: httptest.NewRecorder()}
	g = Guard(rec, names)
	g.Header().Set("Content-Encoding", "gzip")
	g.WriteHeader(200)
	_, _ = g.Write([]byte{0x1f, 0x8b})
	if err := g.Close(); !errors.Is(err, ErrEncoded) || rec.wrote {
		t.Errorf("encoded: Close %v, wrote %v", err, rec.wrote)
	}
}

// shapeBodies are answers of every shape the gate knows of, each naming
// delete_post where its clients read a call.
var shapeBodies = map[string]string{
	"chat":           `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"delete_post","arguments":"{}"}}]}}]}`,
	"responses":      `{"id":"r","object":"response","output":[{"type":"function_call","call_id":"call_1","name":"delete_post","arguments":"{}"}],"tools":[{"type":"function","name":"delete_post"}]}`,
	"anthropic":      `{"id":"m","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"delete_post","input":{}}]}`,
	"gemini":         `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete_post","args":{}}}]}}]}`,
	"assistants":     `{"id":"run_1","object":"thread.run","required_action":{"type":"submit_tool_outputs","submit_tool_outputs":{"tool_calls":[{"id":"c","type":"function","function":{"name":"delete_post","arguments":"{}"}}]}}}`,
	"ollama":         `{"model":"m","message":{"role":"assistant","tool_calls":[{"function":{"name":"delete_post","arguments":{}}}]},"done":true}`,
	"converse":       `{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"t","name":"delete_post","input":{}}}]}},"stopReason":"tool_use"}`,
	"chat+anthropic": `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"}}],"content":[{"type":"tool_use","id":"toolu_1","name":"delete_post","input":{}}]}`,
	"chat, folded":   `{"id":"c","choices":[],"Content":[{"type":"tool_use","name":"delete_post"}]}`,
	"not json":       `delete_post(post=7)`,
}

// Each adapter reads as its own only a body of its own shape: every other
// shape, and a body of two shapes at once, naming a gated tool fails
// closed. A body naming none passes unread.
func TestEveryShapeThroughEveryAdapter(t *testing.T) {
	names := shape.NewNames([]string{"delete_post"})
	own := map[string]string{"chat": "chat", "responses": "responses", "anthropic": "anthropic", "gemini": "gemini"}
	for adapterName, a := range map[string]provider.Adapter{"chat": chat.Chat{}, "responses": responsesadapter.Responses{}, "anthropic": anthropicadapter.Anthropic{}, "gemini": gemini.Provider{}} {
		for shape, body := range shapeBodies {
			err := checkShape(a, names, []byte(body))
			if want := own[shape] == adapterName; (err == nil) != want {
				t.Errorf("%s adapter, %s answer: %v, want read %v", adapterName, shape, err, want)
			}
		}
		if err := checkShape(a, names, []byte(`{"candidates":[{"content":{"parts":[{"text":"hello"}]}}]}`)); err != nil {
			t.Errorf("%s adapter, an answer naming no gated tool: %v", adapterName, err)
		}
	}
}

// Through the response writer: a JSON body of another shape naming a
// gated tool is refused (nothing written), and a newline-delimited JSON
// stream (Ollama) goes through the guard, not the adapter's SSE reader.
func TestWriterRefusesForeignShapes(t *testing.T) {
	names := shape.NewNames([]string{"delete_post"})
	for _, shape := range []string{"anthropic", "gemini", "ollama", "chat+anthropic"} {
		rec := &guardRecorder{ResponseRecorder: httptest.NewRecorder()}
		rw := Wrap(rec, chat.Chat{}, context.Background(), providertest.NewHolder("delete_post"), 0)
		rw.GuardNames(names)
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(200)
		_, _ = rw.Write([]byte(shapeBodies[shape]))
		if err := rw.Close(); !errors.Is(err, stream.ErrNamesGated) || rec.wrote {
			t.Errorf("%s on a Chat route: Close %v, wrote %q", shape, err, rec.Body.Bytes())
		}
	}
	rec := &guardRecorder{ResponseRecorder: httptest.NewRecorder()}
	rw := Wrap(rec, chat.Chat{}, context.Background(), providertest.NewHolder("delete_post"), 0)
	rw.GuardNames(names)
	rw.SetRequest([]byte(`{"model":"m","stream":true,"messages":[]}`))
	rw.Header().Set("Content-Type", "application/x-ndjson")
	rw.WriteHeader(200)
	_, err1 := rw.Write([]byte(`{"message":{"role":"assistant","content":"Sure."},"done":false}` + "\n"))
	_ = rw.FlushError()
	_, err2 := rw.Write([]byte(shapeBodies["ollama"] + "\n"))
	if err1 != nil || err2 == nil || !errors.Is(rw.Close(), stream.ErrNamesGated) || bytes.Contains(rec.Body.Bytes(), []byte("delete_post")) {
		t.Errorf("ndjson stream: writes %v, %v; the client got %q", err1, err2, rec.Body.Bytes())
	}
	if !bytes.Contains(rec.Body.Bytes(), []byte("Sure.")) {
		t.Errorf("ndjson stream: the text before the call was held back: %q", rec.Body.Bytes())
	}
}

var _ http.ResponseWriter = (*guardRecorder)(nil)

// A stream's event in another protocol's shape naming a gated tool stops
// the stream before it goes out (the client's SDK reads the stop event as
// an error); the events before it went out as they came.
func TestStreamRefusesForeignEvents(t *testing.T) {
	names := shape.NewNames([]string{"delete_post"})
	text := map[string]string{
		"chat":      `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Sure."}}]}` + "\n\n",
		"responses": `data: {"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"Sure."}` + "\n\n",
		"anthropic": "event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Sure."}}` + "\n\n",
	}
	foreign := []string{
		`data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete_post","args":{}}}]}}]}` + "\n\n",
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"delete_post","input":{}},"choices":[]}` + "\n\n",
		`data: {"message":{"role":"assistant","tool_calls":[{"function":{"name":"delete_post"}}]},"type":"response.output_text.delta"}` + "\n\n",
	}
	for name, a := range map[string]provider.Adapter{"chat": chat.Chat{}, "responses": responsesadapter.Responses{}, "anthropic": anthropicadapter.Anthropic{}} {
		for i, ev := range foreign {
			rec := &guardRecorder{ResponseRecorder: httptest.NewRecorder()}
			rw := Wrap(rec, a, context.Background(), providertest.NewHolder("delete_post"), 0)
			rw.GuardNames(names)
			rw.Header().Set("Content-Type", "text/event-stream")
			rw.WriteHeader(200)
			_, _ = rw.Write([]byte(text[name]))
			_, _ = rw.Write([]byte(ev))
			err := rw.Close()
			if bytes.Contains(rec.Body.Bytes(), []byte("delete_post")) || !bytes.Contains(rec.Body.Bytes(), []byte("Sure.")) {
				t.Errorf("%s stream, foreign event %d: Close %v, the client got %q", name, i, err, rec.Body.Bytes())
			}
		}
	}
}

// A Gemini stream, in both framings (SSE with alt=sse, and the streamed
// JSON array), refuses an event or element in another protocol's shape
// naming a gated tool as the other adapters' streams do: the stream ends
// in Gemini's error (StopChunk) before it, Close returns
// stream.ErrNamesGated, and the text before it went out. Its own chunk
// naming the tool is read (and held) as before, and a foreign one naming
// nothing passes.
func TestGeminiStreamRefusesForeignEvents(t *testing.T) {
	names := shape.NewNames([]string{"delete_post"})
	text := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Sure."}]},"index":0}]}`
	foreign := map[string]string{
		"chat":            `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"delete_post","arguments":"{}"}}]}}]}`,
		"anthropic":       `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"delete_post","input":{}}}`,
		"responses":       `{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c","name":"delete_post","arguments":""}}`,
		"ollama":          `{"model":"m","message":{"role":"assistant","tool_calls":[{"function":{"name":"delete_post","arguments":{}}}]},"done":true}`,
		"gemini+chat":     `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"index":0}],"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"delete_post"}}]}}]}`,
		"gemini+Content":  `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"index":0}],"Content":[{"type":"tool_use","name":"delete_post"}]}`,
		"not an object":   `"delete_post"`,
		"no candidates":   `{"usageMetadata":{"promptTokenCount":1},"note":"delete_post"}`,
		"candidates, obj": `{"candidates":{"content":{"parts":[{"functionCall":{"name":"delete_post"}}]}}}`,
	}
	for _, framing := range []string{"sse", "array"} {
		frame := func(chunk string, first bool) string {
			if framing == "sse" {
				return "data: " + chunk + "\r\n\r\n"
			}
			if first {
				return "[" + chunk
			}
			return ",\r\n" + chunk
		}
		start := func() (*guardRecorder, *ResponseWriter) {
			rec := &guardRecorder{ResponseRecorder: httptest.NewRecorder()}
			rw := Wrap(rec, gemini.Provider{}, context.Background(), providertest.NewHolder("delete_post"), 0)
			rw.GuardNames(names)
			startGemini(rw, framing)
			return rec, rw
		}
		for name, ev := range foreign {
			rec, rw := start()
			_, err1 := rw.Write([]byte(frame(text, true)))
			_ = rw.FlushError()
			_, err2 := rw.Write([]byte(frame(ev, false)))
			err := rw.Close()
			got := rec.Body.Bytes()
			gated := errors.Is(err, stream.ErrNamesGated)
			if framing == "array" && name == "not an object" {
				gated = err != nil // the array's reader takes only objects: it fails first
			}
			if err1 != nil || err2 == nil || !gated || bytes.Contains(got, []byte("delete_post")) ||
				!bytes.Contains(got, []byte("Sure.")) || !bytes.Contains(got, []byte(`"status":"UNAVAILABLE"`)) {
				t.Errorf("%s, %s chunk: writes %v, %v, Close %v; the client got %q", framing, name, err1, err2, err, got)
			}
		}
		// A foreign chunk naming no gated tool passes as it came.
		rec, rw := start()
		other := `{"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}`
		_, _ = rw.Write([]byte(frame(text, true) + frame(other, false)))
		if framing == "array" {
			_, _ = rw.Write([]byte("]"))
		}
		if err := rw.Close(); err != nil || !bytes.Contains(rec.Body.Bytes(), []byte(other)) {
			t.Errorf("%s, a foreign chunk naming nothing: Close %v; the client got %q", framing, err, rec.Body.Bytes())
		}
	}
}

// A follow-up is guarded as the first response is: after a refused call
// went back to the model, a chunk of the follow-up in another protocol's
// shape naming a gated tool ends the stream in Gemini's error, in both
// framings, and the gated name never reaches the app.
func TestGeminiFollowUpRefusesForeignEvents(t *testing.T) {
	names := shape.NewNames([]string{"delete_post", "get_weather"})
	call := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Berlin"}}}]},"finishReason":"STOP","index":0}]}`
	text := `{"candidates":[{"content":{"role":"model","parts":[{"text":"I cannot look that up."}]},"index":0}]}`
	foreign := `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"delete_post","arguments":"{}"}}]}}]}`
	for _, framing := range []string{"sse", "array"} {
		body := func(chunks ...string) string {
			if framing == "sse" {
				var b strings.Builder
				for _, c := range chunks {
					b.WriteString("data: " + c + "\r\n\r\n")
				}
				return b.String()
			}
			return "[" + strings.Join(chunks, ",\r\n") + "]"
		}
		rec := &guardRecorder{ResponseRecorder: httptest.NewRecorder()}
		h := providertest.NewHolder("delete_post").Refusing("get_weather", "Refused: get_weather needs a reason.")
		rw := Wrap(rec, gemini.Provider{}, context.Background(), h, 0)
		rw.GuardNames(names)
		rw.SetRequest([]byte(`{"contents":[{"role":"user","parts":[{"text":"weather in Berlin?"}]}]}`))
		respond := func(b string) error {
			startGemini(rw, framing)
			_, err := rw.Write([]byte(b))
			return err
		}
		if err := respond(body(call)); err != nil {
			t.Fatalf("%s: first response: %v", framing, err)
		}
		if _, ok := rw.Continuation(); !ok {
			t.Fatalf("%s: no follow-up for the refused call; the app got %q", framing, rec.Body.Bytes())
		}
		rw.Continue()
		errW := respond(body(text, foreign))
		err := rw.Close()
		got := rec.Body.Bytes()
		if errW == nil && err == nil || !errors.Is(errors.Join(errW, err), stream.ErrNamesGated) ||
			bytes.Contains(got, []byte("delete_post")) || !bytes.Contains(got, []byte("I cannot look that up.")) ||
			!bytes.Contains(got, []byte(`"status":"UNAVAILABLE"`)) {
			t.Errorf("%s: Write %v, Close %v; the client got %q", framing, errW, err, got)
		}
	}
}

// startGemini writes the header of a Gemini stream answer in framing
// ("sse", or a streamed JSON array), as the provider sends it.
func startGemini(rw *ResponseWriter, framing string) {
	if framing == "sse" {
		rw.Header().Set("Content-Type", "text/event-stream")
	} else {
		rw.SetStreamsJSON(true)
		rw.Header().Set("Content-Type", "application/json")
	}
	rw.WriteHeader(200)
}
