package gemini

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

const turnRequest = `{"contents":[{"role":"user","parts":[{"text":"weather in Berlin?"}]}]}`

// TestTurnUnaryHeld: a unary answer's gated call is taken out and the
// waiting text takes its place; no follow-up.
func TestTurnUnaryHeld(t *testing.T) {
	body, err := os.ReadFile("testdata/function-call.json")
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHolder{fates: []Fate{Held}}
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
	if len(h.holds) != 1 || len(h.holds[0].calls) != 1 || h.holds[0].calls[0].Name != "weather" {
		t.Errorf("Hold got %+v", h.holds)
	}
}

// TestTurnUnaryRefusedContinues: a refused call goes back in a follow-up
// request (model content, then a functionResponse with the refusal), and
// the follow-up's answer is merged into the first.
func TestTurnUnaryRefusedContinues(t *testing.T) {
	body, _ := os.ReadFile("testdata/function-call.json")
	h := &fakeHolder{fates: []Fate{Refused}}
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
	tr := Provider{}.NewTurn(context.Background(), &fakeHolder{fates: []Fate{Refused}}, nil, 3)
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
	tr := Provider{}.NewTurn(context.Background(), &fakeHolder{fates: []Fate{Refused}}, []byte(turnRequest), 3)
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
	tr := Provider{}.NewTurn(context.Background(), &fakeHolder{fates: []Fate{Refused}}, []byte(turnRequest), 3)
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

// TestTurnJSONArrayFailsClosed: a JSON-array stream buffered as one JSON
// body is refused when it may hold a call, passed when it cannot.
func TestTurnJSONArrayFailsClosed(t *testing.T) {
	tr := Provider{}.NewTurn(context.Background(), &fakeHolder{}, []byte(turnRequest), 3)
	if err := tr.JSON([]byte(`[{"candidates":[{"content":{"parts":[{"functionCall":{"name":"weather"}}]}}]}]`)); err == nil {
		t.Error("an array holding a call passed")
	}
	tr = Provider{}.NewTurn(context.Background(), &fakeHolder{}, []byte(turnRequest), 3)
	if err := tr.JSON([]byte(`[{"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}]`)); err != nil {
		t.Errorf("an array of text: %v", err)
	}
}
