package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
)

const turnRequest = `{"contents":[{"role":"user","parts":[{"text":"weather in Berlin?"}]}]}`

// TestTurnUnaryHeld: a unary answer's gated call is taken out and the
// waiting text takes its place; no follow-up.
func TestTurnUnaryHeld(t *testing.T) {
	body, err := os.ReadFile("testdata/function-call.json")
	if err != nil {
		t.Fatal(err)
	}
	h := holder(nil, Held)
	tr := Provider{}.NewTurn(context.Background(), h, []byte(turnRequest), 3)
	if err := tr.JSON(body); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Continuation(); ok {
		t.Fatal("a held call made a continuation")
	}
	out, err := tr.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("functionCall")) {
		t.Errorf("the held call reached the app: %s", out)
	}
	if got := gjson.GetBytes(out, "candidates.0.content.parts.0.text").Str; got != wait {
		t.Errorf("text = %q, want the waiting text", got)
	}
	if len(h.Holds()) != 1 || len(h.Holds()[0].Calls) != 1 || h.Holds()[0].Calls[0].Name != "weather" {
		t.Errorf("Hold got %+v", h.Holds())
	}
}

// TestTurnUnaryRefusedContinues: a refused call goes back in a follow-up
// request (model content, then a functionResponse with the refusal), and
// the follow-up's answer is merged into the first.
func TestTurnUnaryRefusedContinues(t *testing.T) {
	body, _ := os.ReadFile("testdata/function-call.json")
	h := holder(nil, Refused)
	tr := Provider{}.NewTurn(context.Background(), h, []byte(turnRequest), 3)
	if err := tr.JSON(body); err != nil {
		t.Fatal(err)
	}
	next, ok := tr.Continuation()
	if !ok {
		t.Fatal("no continuation for a refused call")
	}
	c := gjson.GetBytes(next, "contents")
	if n := len(c.Array()); n != 3 {
		t.Fatalf("follow-up has %d contents: %s", n, next)
	}
	if r := c.Get("2.parts.0.functionResponse.response.error").Str; !strings.Contains(r, "needs a reason") {
		t.Errorf("functionResponse = %s", c.Get("2").Raw)
	}
	tr.Continue()
	if err := tr.JSON([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"I need a reason."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"totalTokenCount":5}}`)); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Continuation(); ok {
		t.Fatal("a second continuation")
	}
	out, err := tr.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("functionCall")) {
		t.Errorf("the refused call reached the app: %s", out)
	}
	if got := gjson.GetBytes(out, "candidates.0.content.parts.#.text").Raw; !strings.Contains(got, "I need a reason.") {
		t.Errorf("texts = %s", got)
	}
	if got := gjson.GetBytes(out, "usageMetadata.totalTokenCount").Int(); got != 239+5 {
		t.Errorf("usage = %d, want summed", got)
	}
}

// TestTurnUnaryRefusedInPlace: without a request body the refusal is shown
// in place.
func TestTurnUnaryRefusedInPlace(t *testing.T) {
	body, _ := os.ReadFile("testdata/function-call.json")
	tr := Provider{}.NewTurn(context.Background(), holder(nil, Refused), nil, 3)
	if err := tr.JSON(body); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Continuation(); ok {
		t.Fatal("a continuation without a request")
	}
	out, _ := tr.Finish()
	if got := gjson.GetBytes(out, "candidates.0.content.parts.0.text").Str; !strings.Contains(got, "needs a reason") {
		t.Errorf("text = %q", got)
	}
}

// TestTurnStreamRefusedContinues: an SSE answer's refused call goes back;
// the follow-up's chunks continue the stream, which ends once.
func TestTurnStreamRefusedContinues(t *testing.T) {
	call := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"weather","args":{}}}]},"finishReason":"STOP","index":0}],"responseId":"r1","modelVersion":"m"}`
	var dst bytes.Buffer
	tr := Provider{}.NewTurn(context.Background(), holder(nil, Refused), []byte(turnRequest), 3)
	s := tr.Stream(&dst, nil)
	if _, err := s.Write([]byte("data: " + call + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Continuation(); !ok {
		t.Fatal("no continuation")
	}
	tr.Continue()
	s = tr.Stream(&dst, nil)
	if _, err := s.Write([]byte("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Why?\"}]},\"finishReason\":\"STOP\",\"index\":0}],\"responseId\":\"r2\"}\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Continuation(); ok {
		t.Fatal("a second continuation")
	}
	if _, err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	out := dst.String()
	if strings.Contains(out, "functionCall") || !strings.Contains(out, "Why?") || strings.Count(out, "finishReason") != 1 || strings.Contains(out, `"r2"`) {
		t.Errorf("stream = %q", out)
	}
}

// TestTurnStreamFinishWritesTheWithheldEnd: a refusal that is never sent
// back (the caller finishes) is shown in a finish chunk of the stream's
// own line ending.
func TestTurnStreamFinishWritesTheWithheldEnd(t *testing.T) {
	call := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"weather","args":{}}}]},"finishReason":"STOP","index":0}]}`
	var dst bytes.Buffer
	tr := Provider{}.NewTurn(context.Background(), holder(nil, Refused), []byte(turnRequest), 3)
	s := tr.Stream(&dst, nil)
	s.Write([]byte("data: " + call + "\n\n"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	out := dst.String()
	if !strings.Contains(out, "needs a reason") || strings.Count(out, "finishReason") != 1 || strings.Contains(out, "\r\n") {
		t.Errorf("stream = %q", out)
	}
	if ka := tr.(interface{ KeepAlive() []byte }).KeepAlive(); string(ka) != "\n\n" {
		t.Errorf("keep-alive = %q", ka)
	}
}

// TestTurnJSONArrayFailsClosed: a JSON-array stream given to JSON, as one
// body (a writer not told that the request streams it: a route that allows
// an ambiguous alt, say), is refused when it may hold a call, passed when
// it cannot. A writer told reads it through ArrayStream.
func TestTurnJSONArrayFailsClosed(t *testing.T) {
	tr := Provider{}.NewTurn(context.Background(), holder(nil), []byte(turnRequest), 3)
	if err := tr.JSON([]byte(`[{"candidates":[{"content":{"parts":[{"functionCall":{"name":"weather"}}]}}]}]`)); err == nil {
		t.Error("an array holding a call passed")
	}
	tr = Provider{}.NewTurn(context.Background(), holder(nil), []byte(turnRequest), 3)
	if err := tr.JSON([]byte(`[{"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}]`)); err != nil {
		t.Errorf("an array of text: %v", err)
	}
}

// arrayStream is the turn's provider.ArrayTurn stream of the current
// response.
func arrayStream(t *testing.T, tr provider.Turn, dst io.Writer) provider.Stream {
	t.Helper()
	a, ok := tr.(provider.ArrayTurn)
	if !ok {
		t.Fatal("the turn reads no JSON-array stream")
	}
	return a.ArrayStream(dst, nil)
}

// TestTurnJSONArrayStreamRefusedContinues: a streamed JSON array's refused
// call goes back; the follow-up's elements continue the same array, which
// ends once, with one finishReason, no call, and the array's own closing.
func TestTurnJSONArrayStreamRefusedContinues(t *testing.T) {
	text := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."}]},"index":0}],"responseId":"r1","modelVersion":"m"}`
	call := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"weather","args":{"city":"Berlin"}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"totalTokenCount":15},"responseId":"r1","modelVersion":"m"}`
	follow := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Why?"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"totalTokenCount":7},"responseId":"r2"}`
	var dst bytes.Buffer
	tr := Provider{}.NewTurn(context.Background(), holder(nil, Refused), []byte(turnRequest), 3)
	s := arrayStream(t, tr, &dst)
	for _, p := range []string{"[" + text, ArraySep + call, ArrayClose} {
		if _, err := s.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dst.String(); got != "["+text {
		t.Fatalf("before the follow-up the app read %q: want the text element only, the array left open", got)
	}
	next, ok := tr.Continuation()
	if !ok {
		t.Fatal("no continuation")
	}
	if r := gjson.GetBytes(next, "contents.2.parts.0.functionResponse.response.error").Str; !strings.Contains(r, "needs a reason") {
		t.Errorf("follow-up request: %s", next)
	}
	tr.Continue()
	s = arrayStream(t, tr, &dst)
	if _, err := s.Write([]byte("[" + follow + ArrayClose)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Continuation(); ok {
		t.Fatal("a second continuation")
	}
	if _, err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	var chunks []map[string]any
	if err := json.Unmarshal(dst.Bytes(), &chunks); err != nil {
		t.Fatalf("the app's array does not parse: %v\n%s", err, dst.String())
	}
	out := dst.String()
	if strings.Contains(out, "functionCall") || !strings.Contains(out, `\n\nWhy?`) || strings.Count(out, "finishReason") != 1 || strings.Contains(out, `"r2"`) || len(chunks) != 2 || !strings.HasSuffix(out, ArrayClose) {
		t.Errorf("stream = %q", out)
	}
	if last := gjson.Get(out, "@reverse.0.usageMetadata.totalTokenCount").Int(); last != 22 {
		t.Errorf("last usage %d, want 15+7", last)
	}
}

// TestTurnStreamOfOneObjectFailsClosed: a response to a JSON-array stream
// request that is one JSON object, not an array, is an error before any of
// it is written, call or not: the app's array reader would not read it as
// chunks (Stream, which sniffs, would have taken it for an event stream of
// unknown fields and passed it).
func TestTurnStreamOfOneObjectFailsClosed(t *testing.T) {
	for _, body := range []string{
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"weather","args":{"city":"Berlin"}}}]},"finishReason":"STOP"}]}`,
		`  {"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}`,
		"data: {\"candidates\":[]}\r\n\r\n",
	} {
		var dst bytes.Buffer
		tr := Provider{}.NewTurn(context.Background(), holder(nil), []byte(turnRequest), 3)
		s := arrayStream(t, tr, &dst)
		_, werr := s.Write([]byte(body))
		cerr := s.Close()
		_, ferr := tr.Finish()
		if werr == nil && cerr == nil && ferr == nil {
			t.Errorf("%q passed", body)
		}
		if dst.Len() != 0 {
			t.Errorf("%q: the app read %q", body, dst.String())
		}
	}
}
