package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/toolgate/toolgate/provider/gemini/geminitest"
	"github.com/toolgate/toolgate/wire/sse"
)

// A stream the gate stops (here: the upstream body ends while a gated
// call waits for its candidate's finishReason) must end in an error the
// app's client reports, not in a clean end that reads as a whole answer
// without its call.

// cutBeforeFinish is a text chunk, then a gated call's chunk without
// finishReason, then the end of the body.
func cutBeforeFinish(eol string) []byte {
	var b []byte
	b = AppendEvent(b, []byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."}]},"index":0}],"responseId":"r1"}`), eol)
	return AppendEvent(b, []byte(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"delete","args":{"path":"/etc/secret"}}}]},"index":0}],"responseId":"r1"}`), eol)
}

// TestStreamCutBeforeTheFinishEndsInAnError: the stream's output, at
// every split, ends with one {"error":…} data event in the stream's line
// ending, which go-genai reports as an APIError after the text before
// the call; the call never reaches it.
func TestStreamCutBeforeTheFinishEndsInAnError(t *testing.T) {
	for _, eol := range []string{"\r\n", "\n"} {
		body := cutBeforeFinish(eol)
		for _, cuts := range append(splits(len(body)), nil) {
			out, _, _, err := runStream(streamCase{body: body, framing: SSE}, cuts)
			if err == nil {
				t.Fatalf("cuts %v: no error", cuts)
			}
			if bytes.Contains(out, []byte("/etc/secret")) {
				t.Fatalf("cuts %v: the call reached the app: %q", cuts, out)
			}
			evs := sse.Parse(out)
			if len(evs) != 2 || !strings.HasPrefix(evs[1].Data, `{"error":{"code":502,`) || !bytes.HasSuffix(out, []byte(eol+eol)) ||
				eol == "\n" && bytes.Contains(out, []byte("\r")) {
				t.Fatalf("cuts %v: want the text event, then one error event: %q", cuts, out)
			}
			var e struct{ Error genai.APIError }
			if err := json.Unmarshal([]byte(evs[1].Data), &e); err != nil || e.Error.Status != "UNAVAILABLE" || !strings.Contains(e.Error.Message, "Toolgate stopped this response") {
				t.Fatalf("cuts %v: error event %s (%v)", cuts, evs[1].Data, err)
			}
		}
		srv := geminitest.New(geminitest.Response{Raw: func() []byte { out, _, _, _ := runStream(streamCase{body: body, framing: SSE}, nil); return out }()})
		var text strings.Builder
		var apiErr genai.APIError
		for resp, err := range genaiClient(t, srv.URL, false).Models.GenerateContentStream(context.Background(), "gemini-2.5-flash", question, nil) {
			if err != nil {
				if !errors.As(err, &apiErr) {
					t.Fatalf("go-genai: %v, want an APIError", err)
				}
				break
			}
			if len(resp.FunctionCalls()) != 0 {
				t.Fatal("the call reached go-genai")
			}
			text.WriteString(resp.Text())
		}
		srv.Close()
		if apiErr.Code != 502 || text.String() != "Let me look." {
			t.Fatalf("go-genai read %q and error %+v: want the text, then the gate's error", text.String(), apiErr)
		}
	}
}

// TestStreamCutArrayEndsInAnError: a JSON-array stream whose array closes
// while a gated call waits ends with an error element and no "]": a JSON
// reader of the array fails instead of reading an answer without the call.
func TestStreamCutArrayEndsInAnError(t *testing.T) {
	body := []byte(`[{"candidates":[{"content":{"parts":[{"text":"Let me look."}]}}]},` + "\n" + `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete","args":{"path":"/etc/secret"}}}]}}]}]`)
	for _, cuts := range append(splits(len(body)), nil) {
		out, _, _, err := runStream(streamCase{body: body, framing: JSONArray}, cuts)
		if err == nil {
			t.Fatalf("cuts %v: no error", cuts)
		}
		if bytes.Contains(out, []byte("/etc/secret")) || bytes.HasSuffix(bytes.TrimSpace(out), []byte("]")) || !bytes.Contains(out, []byte(ArraySep+`{"error":{"code":502,`)) {
			t.Fatalf("cuts %v: %q", cuts, out)
		}
		var v []any
		if json.Unmarshal(out, &v) == nil {
			t.Fatalf("cuts %v: the app reads a whole array: %q", cuts, out)
		}
	}
}

// TestTurnStreamCutEndsInAnError: the same through the turn (its Close
// and Finish), as the glue drives it: Close reports the failure, and what
// the app read ends in the error event; Finish writes nothing more.
func TestTurnStreamCutEndsInAnError(t *testing.T) {
	h := holder(nil, Held)
	tr := Provider{}.NewTurn(context.Background(), h, []byte(turnRequest), 3)
	var dst bytes.Buffer
	s := tr.Stream(&dst, func() error { return nil })
	if _, err := s.Write(cutBeforeFinish("\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err == nil {
		t.Fatal("Close: no error")
	}
	if _, ok := tr.Continuation(); ok {
		t.Fatal("a continuation after a failed stream")
	}
	n := dst.Len()
	if _, err := tr.Finish(); err == nil {
		t.Fatal("Finish: no error")
	}
	evs := sse.Parse(dst.Bytes())
	if dst.Len() != n || len(evs) != 2 || !strings.HasPrefix(evs[1].Data, `{"error":`) || len(h.Holds()) != 0 {
		t.Fatalf("the app read %q; holds %d", dst.Bytes(), len(h.Holds()))
	}
}

// TestStreamArrayFailingInItsFirstWriteEndsInAnError: elements that pass
// and an error in the same Write (nothing written to dst yet): the
// elements reach the app, so the error element must follow them; only an
// array of which no element is written is left to the writer's 502.
func TestStreamArrayFailingInItsFirstWriteEndsInAnError(t *testing.T) {
	body := []byte(`[{"candidates":[{"content":{"parts":[{"text":"Let me look."}]}}]},` + "\n" + `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete","args":{"path":}}}]}}]}]`)
	out, _, _, err := runStream(streamCase{body: body, framing: JSONArray}, nil)
	if err == nil {
		t.Fatal("no error")
	}
	if !bytes.Contains(out, []byte("Let me look.")) || !bytes.Contains(out, []byte(ArraySep+`{"error":{"code":502,`)) {
		t.Fatalf("the app read %q", out)
	}
}
