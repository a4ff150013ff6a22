package gemini

// The official Go client, google.golang.org/genai, as the app against the
// fake provider: what the rewriter writes must parse in the SDK as the app
// expects (the waiting text where a held call was, the passed calls, the
// thoughtSignature bytes), in every framing the SDK reads.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"cloud.google.com/go/auth"
	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"github.com/toolgate/toolgate/provider/gemini/geminitest"
)

func genaiClient(t *testing.T, url string, vertex bool) *genai.Client {
	t.Helper()
	cfg := &genai.ClientConfig{APIKey: "test-key", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: url}}
	if vertex {
		cfg = &genai.ClientConfig{
			Backend: genai.BackendVertexAI, Project: "p", Location: "us-central1",
			Credentials: auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken{}}),
			HTTPOptions: genai.HTTPOptions{BaseURL: url},
		}
	}
	c, err := genai.NewClient(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type staticToken struct{}

func (staticToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: "test-token", Type: "Bearer"}, nil
}

var question = []*genai.Content{genai.NewContentFromText("What's the weather in Berlin and the best language to learn?", genai.RoleUser)}

// sig returns the decoded thoughtSignature of a recorded part.
func sig(t *testing.T, body []byte, path string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(gjson.GetBytes(body, path).Str)
	if err != nil || len(b) == 0 {
		t.Fatalf("signature at %s: %v", path, err)
	}
	return b
}

// rewriteStream rewrites each event of a recorded SSE stream with fates
// for the event that holds calls, as the glue will: events without calls
// pass byte for byte, a rewritten one is written with the stream's line
// ending.
func rewriteStream(t *testing.T, stream []byte, fates []Fate, text string) []byte {
	t.Helper()
	var out []byte
	var s sseSplit
	for _, ev := range s.events(stream) {
		data := ev.data
		calls, err := Calls(data)
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) == 0 {
			out = append(out, ev.raw...)
			continue
		}
		nd, err := Rewrite(data, calls, fates, map[int]string{0: text})
		if err != nil {
			t.Fatal(err)
		}
		out = AppendEvent(out, nd, EOL(ev.raw))
	}
	return out
}

type sseEvent struct{ raw, data []byte }

type sseSplit struct{}

// events cuts a recorded Gemini stream (one data line per event) into its
// events.
func (sseSplit) events(b []byte) []sseEvent {
	var out []sseEvent
	for len(b) > 0 {
		i := strings.Index(string(b), "\r\n\r\n")
		n := 4
		if j := strings.Index(string(b), "\n\n"); i < 0 || j >= 0 && j < i {
			i, n = j, 2
		}
		if i < 0 {
			break
		}
		raw := b[:i+n]
		data := strings.TrimPrefix(strings.TrimRight(string(raw), "\r\n"), "data: ")
		out = append(out, sseEvent{raw: raw, data: []byte(data)})
		b = b[i+n:]
	}
	return out
}

func TestGenaiReadsARewrittenUnaryResponse(t *testing.T) {
	body := read(t, "parallel-function-calls.json")
	calls, _ := Calls(body)
	out, err := Rewrite(body, calls, []Fate{Held, Passed}, map[int]string{0: wait})
	if err != nil {
		t.Fatal(err)
	}
	srv := geminitest.New(geminitest.Response{Unary: out})
	defer srv.Close()
	resp, err := genaiClient(t, srv.URL, false).Models.GenerateContent(context.Background(), "gemini-2.5-flash", question, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps := resp.Candidates[0].Content.Parts
	if len(ps) != 2 || ps[0].Text != wait || ps[0].FunctionCall != nil || ps[0].ThoughtSignature != nil {
		t.Fatalf("part 0: %+v", ps[0])
	}
	if ps[1].FunctionCall == nil || ps[1].FunctionCall.Name != "best_language_to_learn" || string(ps[1].ThoughtSignature) != string(sig(t, body, "candidates.0.content.parts.0.thoughtSignature")) {
		t.Fatalf("part 1: %+v", ps[1])
	}
	if fc := resp.FunctionCalls(); len(fc) != 1 || fc[0].Name != "best_language_to_learn" {
		t.Fatalf("FunctionCalls %+v", fc)
	}
	if resp.Candidates[0].FinishReason != genai.FinishReasonStop || resp.UsageMetadata.TotalTokenCount != 296 {
		t.Fatalf("finish %v usage %+v", resp.Candidates[0].FinishReason, resp.UsageMetadata)
	}
	if q := srv.Requests()[0]; q.Path != "/v1beta/models/gemini-2.5-flash:generateContent" || q.Header.Get("x-goog-api-key") != "test-key" {
		t.Fatalf("request %s %v", q.Path, q.Header)
	}
}

func TestGenaiReadsARewrittenVertexResponse(t *testing.T) {
	body := read(t, "vertex-parallel-function-calls-3.json")
	calls, _ := Calls(body)
	out, err := Rewrite(body, calls, []Fate{Held, Passed, Held}, map[int]string{0: wait})
	if err != nil {
		t.Fatal(err)
	}
	srv := geminitest.New(geminitest.Response{Unary: out})
	defer srv.Close()
	resp, err := genaiClient(t, srv.URL, true).Models.GenerateContent(context.Background(), "gemini-2.5-flash", question, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps := resp.Candidates[0].Content.Parts
	if len(ps) != 2 || ps[0].Text != wait || ps[1].FunctionCall.Name != "dice_roll" || string(ps[1].ThoughtSignature) != string(sig(t, body, "candidates.0.content.parts.0.thoughtSignature")) {
		t.Fatalf("parts %+v %+v", ps[0], ps[1])
	}
	if q := srv.Requests()[0]; q.Path != "/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent" {
		t.Fatalf("path %s", q.Path)
	}
	if e := Classify("POST", srv.Requests()[0].Path, ""); e.Kind != Generate || e.Streams() {
		t.Fatalf("the SDK's path reads as %+v", e)
	}
}

// collect reads a stream with the SDK.
func collect(t *testing.T, c *genai.Client, model string) (parts []*genai.Part, last *genai.GenerateContentResponse, err error) {
	t.Helper()
	for resp, err := range c.Models.GenerateContentStream(context.Background(), model, question, nil) {
		if err != nil {
			return parts, last, err
		}
		last = resp
		if len(resp.Candidates) > 0 && resp.Candidates[0].Content != nil {
			parts = append(parts, resp.Candidates[0].Content.Parts...)
		}
	}
	return parts, last, nil
}

func TestGenaiReadsARewrittenStream(t *testing.T) {
	t.Run("parallel, the signed call held", func(t *testing.T) {
		rec := read(t, "stream-parallel-function-calls.sse")
		out := rewriteStream(t, rec, []Fate{Held, Passed}, wait)
		srv := geminitest.New(geminitest.Response{Raw: out})
		defer srv.Close()
		parts, last, err := collect(t, genaiClient(t, srv.URL, false), "gemini-2.5-flash")
		if err != nil {
			t.Fatal(err)
		}
		data := gjson.Get(strings.TrimPrefix(strings.TrimSpace(string(rec)), "data: "), "@this").Raw
		want := sig(t, []byte(data), "candidates.0.content.parts.0.thoughtSignature")
		if len(parts) != 2 || parts[0].Text != wait || parts[1].FunctionCall == nil ||
			parts[1].FunctionCall.Args["password"] != "radiance" || string(parts[1].ThoughtSignature) != string(want) {
			t.Fatalf("parts %+v %+v", parts[0], parts[1])
		}
		if last.Candidates[0].FinishReason != genai.FinishReasonStop {
			t.Fatal(last.Candidates[0].FinishReason)
		}
		if q := srv.Requests()[0]; q.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || q.Query != "alt=sse" {
			t.Fatalf("request %s?%s", q.Path, q.Query)
		}
	})
	t.Run("gemini 3, the finish in a later event", func(t *testing.T) {
		out := rewriteStream(t, read(t, "stream-function-call-gemini3.sse"), []Fate{Held}, wait)
		srv := geminitest.New(geminitest.Response{Raw: out})
		defer srv.Close()
		parts, last, err := collect(t, genaiClient(t, srv.URL, false), "gemini-3-pro-preview")
		if err != nil {
			t.Fatal(err)
		}
		if len(parts) != 2 || parts[0].Text != wait || parts[0].FunctionCall != nil || parts[1].Text != "" {
			t.Fatalf("parts %+v", parts)
		}
		if last.Candidates[0].FinishReason != genai.FinishReasonStop || last.UsageMetadata.ThoughtsTokenCount != 202 {
			t.Fatalf("%+v", last)
		}
	})
	t.Run("vertex, passed call with no args", func(t *testing.T) {
		rec := read(t, "vertex-stream-thought-no-args-and-partial-args.sse")
		// The events up to the no-args call, then the final one: the
		// streamed calls between fail closed on a gated route.
		evs := sseSplit{}.events(rec)
		var stream []byte
		for _, ev := range append(evs[:2:2], evs[len(evs)-1]) {
			stream = append(stream, ev.raw...)
		}
		out := rewriteStream(t, stream, []Fate{Passed}, "")
		srv := geminitest.New(geminitest.Response{Raw: out})
		defer srv.Close()
		parts, _, err := collect(t, genaiClient(t, srv.URL, true), "gemini-3-flash-preview")
		if err != nil {
			t.Fatal(err)
		}
		if len(parts) != 3 || !parts[0].Thought || parts[1].FunctionCall.Name != "read_theme" || len(parts[1].ThoughtSignature) == 0 {
			t.Fatalf("parts %+v", parts)
		}
	})
}

// TestGenaiStreamTolerance pins down what go-genai v1.77.0 takes in an SSE
// body (see stream.go): blank events in the stream's own line ending pass,
// a comment or an "event:" line is an error, and an LF event in a CRLF
// stream breaks the events before it.
func TestGenaiStreamTolerance(t *testing.T) {
	a := `{"candidates":[{"content":{"parts":[{"text":"a"}],"role":"model"},"index":0}]}`
	b := `{"candidates":[{"content":{"parts":[{"text":"b"}],"role":"model"},"finishReason":"STOP","index":0}]}`
	for _, c := range []struct {
		name, body string
		ok         bool
	}{
		{"crlf", "data: " + a + "\r\n\r\ndata: " + b + "\r\n\r\n", true},
		{"crlf keep-alives", "\r\n\r\ndata: " + a + "\r\n\r\n" + string(KeepAlive(SSE, "\r\n")) + string(KeepAlive(SSE, "\r\n")) + "data: " + b + "\r\n\r\n", true},
		{"lf keep-alives", "data: " + a + "\n\n\n\ndata: " + b + "\n\n", true},
		{"comment keep-alive", "data: " + a + "\r\n\r\n: keep-alive\r\n\r\ndata: " + b + "\r\n\r\n", false},
		{"event line", "event: message\r\ndata: " + a + "\r\n\r\n", false},
		{"lf event in a crlf stream", "data: " + a + "\r\n\r\ndata: " + b + "\n\n", false},
		{"lf keep-alive in a crlf stream", "data: " + a + "\r\n\r\n\n\ndata: " + b + "\r\n\r\n", false},
		{"two data lines", "data: " + a + "\r\ndata: " + b + "\r\n\r\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := geminitest.New(geminitest.Response{Raw: []byte(c.body)})
			defer srv.Close()
			parts, _, err := collect(t, genaiClient(t, srv.URL, false), "m")
			if c.ok && (err != nil || len(parts) != 2 || parts[0].Text != "a" || parts[1].Text != "b") {
				t.Fatalf("%v %+v", err, parts)
			}
			if !c.ok && err == nil {
				t.Fatalf("no error, parts %+v", parts)
			}
		})
	}
}

// TestGenaiReadsTheJSONArrayElements: go-genai always asks for alt=sse, so
// it never reads the JSON-array framing; its types decode each element
// the ArrayReader cuts from a rewritten array.
func TestGenaiReadsTheJSONArrayElements(t *testing.T) {
	rec := read(t, "stream-json-array-function-call-id.json")
	var r ArrayReader
	var out []byte
	err := r.Write(rec, func(e Element) bool {
		v := e.Value
		calls, err := Calls(v)
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) > 0 {
			if v, err = Rewrite(v, calls, []Fate{Held}, map[int]string{0: wait}); err != nil {
				t.Fatal(err)
			}
		}
		out = append(append(out, e.Lead...), v...)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	tail, err := r.Close()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, tail...)
	var els []*genai.GenerateContentResponse
	if err := json.Unmarshal(out, &els); err != nil {
		t.Fatal(err)
	}
	if len(els) != 2 || els[0].Candidates[0].Content.Parts[0].Text != wait || els[0].Candidates[0].Content.Parts[0].FunctionCall != nil || els[1].Candidates[0].FinishReason != genai.FinishReasonStop {
		t.Fatalf("%s", out)
	}
	if !strings.Contains(string(out), "\n,\r\n") || !strings.HasSuffix(string(out), "\n]") {
		t.Fatal("separators not kept")
	}
}

// TestGenaiGetsTheFakesError: a history the fake refuses reaches the SDK
// as Gemini's APIError.
func TestGenaiGetsTheFakesError(t *testing.T) {
	srv := geminitest.New(geminitest.Response{Unary: read(t, "function-call.json")})
	defer srv.Close()
	contents := append(question[:1:1], &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{genai.NewPartFromFunctionCall("weather", nil)}})
	_, err := genaiClient(t, srv.URL, false).Models.GenerateContent(context.Background(), "gemini-2.5-flash", contents, nil)
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 400 || apiErr.Status != "INVALID_ARGUMENT" || !strings.Contains(apiErr.Message, "function call turn") {
		t.Fatalf("%v", err)
	}
}

// TestGenaiReadsAContinuedStream: a stream whose refused call went back to
// the model reads, in the SDK, as one answer: the first response's end
// withheld (its empty finish chunk dropped), the follow-up's chunks
// continuing it with the first's responseId, the usage summed, its text
// after a blank line; one finish.
func TestGenaiReadsAContinuedStream(t *testing.T) {
	first := chunks(t, "stream-function-call-gemini3.sse")
	var out []byte
	carry := ""
	for _, c := range first {
		calls, err := Calls(c)
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) > 0 {
			if c, err = Rewrite(c, calls, []Fate{Refused}, nil); err != nil {
				t.Fatal(err)
			}
		}
		c, had, empty, err := WithholdFinish(c)
		if err != nil {
			t.Fatal(err)
		}
		carry = gjson.GetBytes(c, "usageMetadata").Raw // repeated; the last is final
		if had && empty {
			continue
		}
		out = AppendEvent(out, c, "\r\n")
	}
	// Text was shown before? Here none: the follow-up's text needs no
	// blank line, but a second text chunk must not get one either.
	follow := [][]byte{
		[]byte(`{"candidates":[{"content":{"parts":[{"text":"I cannot look that up."}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":6,"totalTokenCount":56},"modelVersion":"gemini-3-pro-preview","responseId":"second"}`),
		[]byte(`{"candidates":[{"content":{"parts":[{"text":" Sorry."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":8,"totalTokenCount":58},"modelVersion":"gemini-3-pro-preview","responseId":"second"}`),
	}
	for _, c := range follow {
		nc, _, err := ContinueChunk(c, first[0], carry, false)
		if err != nil {
			t.Fatal(err)
		}
		out = AppendEvent(out, nc, "\r\n")
	}
	srv := geminitest.New(geminitest.Response{Raw: out})
	defer srv.Close()
	var text string
	var resps []*genai.GenerateContentResponse
	for resp, err := range genaiClient(t, srv.URL, false).Models.GenerateContentStream(context.Background(), "gemini-3-pro-preview", question, nil) {
		if err != nil {
			t.Fatal(err)
		}
		resps = append(resps, resp)
		text += resp.Text()
		if len(resp.FunctionCalls()) > 0 {
			t.Fatal("a refused call reached the app")
		}
	}
	last := resps[len(resps)-1]
	if text != "I cannot look that up. Sorry." || last.ResponseID != "QUVVadTSNJ6_qtsPvN7J8Q0" {
		t.Fatalf("%q %s", text, last.ResponseID)
	}
	finishes := 0
	for _, r := range resps {
		if r.Candidates[0].FinishReason != "" {
			finishes++
		}
	}
	// 29 prompt tokens of the first response and 50 of the follow-up.
	if finishes != 1 || last.UsageMetadata.PromptTokenCount != 79 || last.UsageMetadata.ThoughtsTokenCount != 202 {
		t.Fatalf("finishes %d usage %+v", finishes, last.UsageMetadata)
	}

	// The gate's own end, when no follow-up was sent.
	srv2 := geminitest.New(geminitest.Response{Raw: AppendEvent(nil, FinishChunk(first[0], "Refused: no.", carry), "\r\n")})
	defer srv2.Close()
	parts, last2, err := collect(t, genaiClient(t, srv2.URL, false), "gemini-3-pro-preview")
	if err != nil || len(parts) != 1 || parts[0].Text != "Refused: no." || last2.Candidates[0].FinishReason != genai.FinishReasonStop || last2.UsageMetadata.PromptTokenCount != 29 {
		t.Fatalf("%v %+v", err, parts)
	}
}
