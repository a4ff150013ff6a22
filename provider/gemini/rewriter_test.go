package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/gemini/geminitest"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/wire/sse"
)

// holder is providertest's Holder as these tests judge calls: the tools
// in gated inspected (nil: every tool), the gated calls of a candidate
// judged by position (fates[i], Held past the end), wait shown in place
// of held ones.
func holder(gated map[string]bool, fates ...Fate) *providertest.Holder {
	var names []string
	for n := range gated {
		names = append(names, n)
	}
	h := providertest.NewHolder(names...).ByPosition(fates...).Saying(wait)
	if gated == nil {
		h.GatingAll()
	}
	return h
}

// streamCase is one recording and how the fake judges it.
type streamCase struct {
	name    string
	body    []byte
	framing Framing
	gated   map[string]bool
	fates   []Fate
	cont    bool
	err     error    // the error every split gives (errAny: any)
	secrets []string // bytes of held calls that must never reach the app
}

var errAny = errors.New("any error")

// runStream writes body to a new Stream in the pieces cuts gives and
// closes it.
func runStream(c streamCase, cuts []int) (out []byte, s *Stream, h *providertest.Holder, err error) {
	var dst bytes.Buffer
	h = holder(c.gated, c.fates...).Watching(&dst)
	s = NewStream(context.Background(), c.framing, &dst, func() error { return nil }, h)
	s.Continue = c.cont
	prev := 0
	for _, at := range append(slices.Clone(cuts), len(c.body)) {
		if _, err = s.Write(c.body[prev:at]); err != nil {
			return dst.Bytes(), s, h, err
		}
		prev = at
	}
	err = s.Close()
	return dst.Bytes(), s, h, err
}

// splits returns the ways the body is cut in the tests: at every byte
// (two pieces), one byte at a time, and a sample of random cuts.
func splits(n int) [][]int {
	var out [][]int
	for i := 1; i < n; i++ {
		out = append(out, []int{i})
	}
	every := make([]int, 0, n)
	for i := 1; i < n; i++ {
		every = append(every, i)
	}
	out = append(out, every)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	for range 50 {
		cs := []int{r.IntN(n + 1), r.IntN(n + 1), r.IntN(n + 1), r.IntN(n + 1)}
		slices.Sort(cs)
		out = append(out, cs)
	}
	return out
}

// everySplit runs c whole, then at every split: the same bytes reach the
// app each time, and no secret ever does.
func everySplit(t *testing.T, c streamCase) (out []byte, s *Stream, h *providertest.Holder) {
	t.Helper()
	out, s, h, err := runStream(c, nil)
	check := func(out []byte, err error, cuts []int) {
		t.Helper()
		switch {
		case c.err == nil && err != nil:
			t.Fatalf("cuts %v: %v", cuts, err)
		case c.err != nil && err == nil:
			t.Fatalf("cuts %v: no error", cuts)
		case c.err != nil && c.err != errAny && !errors.Is(err, c.err):
			t.Fatalf("cuts %v: %v, want %v", cuts, err, c.err)
		}
		for _, sec := range c.secrets {
			if bytes.Contains(out, []byte(sec)) {
				t.Fatalf("cuts %v: %q reached the app:\n%s", cuts, sec, out)
			}
		}
	}
	check(out, err, nil)
	for _, cuts := range splits(len(c.body)) {
		o, _, _, err := runStream(c, cuts)
		check(o, err, cuts)
		if c.err == nil && !bytes.Equal(o, out) {
			t.Fatalf("cuts %v: the app read\n%q\nwant\n%q", cuts, o, out)
		}
	}
	return out, s, h
}

// genaiParts reads an SSE body with go-genai.
func genaiParts(t *testing.T, body []byte, vertex bool) ([]*genai.Part, []*genai.GenerateContentResponse) {
	t.Helper()
	srv := geminitest.New(geminitest.Response{Raw: body})
	defer srv.Close()
	var parts []*genai.Part
	var resps []*genai.GenerateContentResponse
	for resp, err := range genaiClient(t, srv.URL, vertex).Models.GenerateContentStream(context.Background(), "gemini-2.5-flash", question, nil) {
		if err != nil {
			t.Fatalf("go-genai: %v\n%q", err, body)
		}
		resps = append(resps, resp)
		if len(resp.Candidates) > 0 && resp.Candidates[0].Content != nil {
			parts = append(parts, resp.Candidates[0].Content.Parts...)
		}
	}
	return parts, resps
}

// sseOf frames chunks as Gemini does.
func sseOf(chunks ...string) []byte {
	var b []byte
	for _, c := range chunks {
		b = AppendEvent(b, []byte(c), "\r\n")
	}
	return b
}

func TestStreamHoldsAGatedCall(t *testing.T) {
	rec := read(t, "stream-function-call.sse")
	for _, lf := range []bool{false, true} {
		body := rec
		if lf {
			body = bytes.ReplaceAll(rec, []byte("\r\n"), []byte("\n"))
		}
		out, _, h := everySplit(t, streamCase{body: body, framing: SSE, secrets: []string{"52.5200", "functionCall"}})
		if lf == bytes.Contains(out, []byte("\r")) {
			t.Fatalf("line ending not kept: %q", out)
		}
		parts, resps := genaiParts(t, out, false)
		if len(parts) != 1 || parts[0].Text != wait || parts[0].ThoughtSignature != nil {
			t.Fatalf("parts %+v", parts)
		}
		last := resps[len(resps)-1]
		if last.Candidates[0].FinishReason != genai.FinishReasonStop || last.Candidates[0].FinishMessage != "" || last.UsageMetadata == nil {
			t.Fatalf("%+v", last.Candidates[0])
		}
		if len(h.Holds()) != 1 || h.Holds()[0].Calls[0].ID != SyntheticID(0) || !gjson.ValidBytes(h.Holds()[0].Message) ||
			gjson.GetBytes(h.Holds()[0].Message, "parts.0.functionCall.args.latitude").Str != "52.5200" {
			t.Fatalf("%+v", h.Holds())
		}
	}
}

func TestStreamPassesWhatItDoesNotHold(t *testing.T) {
	for _, c := range []streamCase{
		{name: "passed", body: read(t, "stream-parallel-function-calls.sse"), framing: SSE, fates: []Fate{Passed, Passed}},
		{name: "not gated", body: read(t, "stream-parallel-function-calls.sse"), framing: SSE, gated: map[string]bool{}},
		{name: "array passed", body: read(t, "stream-json-array-function-call-id.json"), framing: JSONArray, fates: []Fate{Passed}},
		{name: "gemini 3 passed", body: read(t, "stream-function-call-gemini3.sse"), framing: SSE, fates: []Fate{Passed}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _, h := everySplit(t, c)
			if !bytes.Equal(out, c.body) {
				t.Fatalf("changed:\n%q", out)
			}
			if (c.gated == nil) != (len(h.Holds()) == 1) {
				t.Fatalf("holds %d", len(h.Holds()))
			}
		})
	}
}

func TestStreamParallelFirstHeldSecondPassed(t *testing.T) {
	rec := read(t, "stream-parallel-function-calls.sse")
	out, _, h := everySplit(t, streamCase{body: rec, framing: SSE, fates: []Fate{Held, Passed}, secrets: []string{"mellon"}})
	parts, _ := genaiParts(t, out, false)
	want := sig(t, chunks(t, "stream-parallel-function-calls.sse")[0], "candidates.0.content.parts.0.thoughtSignature")
	if len(parts) != 2 || parts[0].Text != wait || parts[1].FunctionCall == nil || parts[1].FunctionCall.Args["password"] != "radiance" || !bytes.Equal(parts[1].ThoughtSignature, want) {
		t.Fatalf("parts %+v %+v", parts[0], parts[1])
	}
	if cs := h.Holds()[0].Calls; len(cs) != 2 || cs[1].Position != 1 || cs[1].ID != SyntheticID(1) {
		t.Fatalf("%+v", cs)
	}
}

func TestStreamRefusalsInPlace(t *testing.T) {
	rec := read(t, "stream-parallel-function-calls.sse")
	out, s, _ := everySplit(t, streamCase{body: rec, framing: SSE, fates: []Fate{Refused, Refused}, secrets: []string{"mellon", "radiance"}})
	parts, resps := genaiParts(t, out, false)
	if len(parts) != 1 || parts[0].Text != "Refused: secret_retrieval_tool needs a reason.\n\nRefused: secret_retrieval_tool needs a reason." {
		t.Fatalf("%+v", parts)
	}
	if s.Withheld() || resps[len(resps)-1].Candidates[0].FinishReason != genai.FinishReasonStop {
		t.Fatal("the end was withheld without a continuation")
	}
}

func TestStreamGemini3(t *testing.T) {
	out, _, _ := everySplit(t, streamCase{body: read(t, "stream-function-call-gemini3.sse"), framing: SSE, secrets: []string{"get_country", "thoughtSignature"}})
	parts, resps := genaiParts(t, out, false)
	if len(parts) != 2 || parts[0].Text != wait || parts[0].ThoughtSignature != nil || parts[1].Text != "" {
		t.Fatalf("%+v", parts)
	}
	if last := resps[len(resps)-1]; last.Candidates[0].FinishReason != genai.FinishReasonStop || last.UsageMetadata.ThoughtsTokenCount != 202 {
		t.Fatalf("%+v", last)
	}
	// The body ends without its last blank line: the last event is read
	// at Close, as the readers do at the end of a body.
	rec := read(t, "stream-function-call-gemini3.sse")
	cut, _, _ := everySplit(t, streamCase{body: bytes.TrimSuffix(rec, []byte("\r\n\r\n")), framing: SSE, secrets: []string{"get_country"}})
	if !bytes.Equal(cut, bytes.TrimSuffix(out, []byte("\r\n\r\n"))) {
		t.Fatalf("%q", cut)
	}
}

func TestStreamJSONArray(t *testing.T) {
	for _, c := range []struct {
		file, secret string
		thought      bool
	}{
		{"stream-json-array-function-call.json", "pelican_name_generator\",", true},
		{"stream-json-array-function-call-id.json", "Alice", false},
	} {
		t.Run(c.file, func(t *testing.T) {
			body := read(t, c.file)
			out, _, _ := everySplit(t, streamCase{body: body, framing: JSONArray, secrets: []string{c.secret, "whZntcQw", "functionCall"}})
			var els []*genai.GenerateContentResponse
			if err := json.Unmarshal(out, &els); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if len(els) != 2 || !strings.Contains(string(out), "\n,\r\n") || !strings.HasSuffix(string(out), "\n]") {
				t.Fatalf("%s", out)
			}
			held := els[0].Candidates[0].Content.Parts[0]
			if c.thought {
				// The thought passed as it came; the waiting text follows
				// it without a blank line (a thought is not shown text).
				first := body[:bytes.Index(body, []byte("\n,\r\n"))]
				if !bytes.HasPrefix(out, first) || !els[0].Candidates[0].Content.Parts[0].Thought {
					t.Fatal("the thought element was not passed as it came")
				}
				held = els[1].Candidates[0].Content.Parts[0]
			}
			if held.Text != wait || held.FunctionCall != nil || els[1].Candidates[0].FinishReason != genai.FinishReasonStop {
				t.Fatalf("%s", out)
			}
		})
	}
}

// vertexNoArgs is the Vertex recording up to its no-args call, then its
// final chunk (the streamed calls between fail closed).
func vertexNoArgs(t testing.TB) []byte {
	evs := sseSplit{}.events(read(t, "vertex-stream-thought-no-args-and-partial-args.sse"))
	var b []byte
	for _, ev := range append(evs[:2:2], evs[len(evs)-1]) {
		b = append(b, ev.raw...)
	}
	return b
}

func TestStreamVertexNoArgs(t *testing.T) {
	body := vertexNoArgs(t)
	out, _, h := everySplit(t, streamCase{body: body, framing: SSE, secrets: []string{"read_theme\"", "functionCall"}})
	parts, _ := genaiParts(t, out, true)
	if len(parts) != 3 || !parts[0].Thought || parts[1].Text != wait || parts[1].ThoughtSignature != nil || parts[2].Text != "" {
		t.Fatalf("%+v", parts)
	}
	if cs := h.Holds()[0].Calls; len(cs) != 1 || string(cs[0].Arguments) != "{}" || !strings.Contains(h.Holds()[0].Before, "Processing User Requests") {
		t.Fatalf("%+v; the thought had not reached the app when Hold was asked", cs)
	}
	out, _, _ = everySplit(t, streamCase{body: body, framing: SSE, fates: []Fate{Passed}})
	if !bytes.Equal(out, body) {
		t.Fatal("a passed no-args call changed")
	}
}

// TestStreamCallsInSeparateChunks: Vertex sends a parallel set one call a
// chunk: Hold gets both at the finish, positions counted over the
// candidate, and the signature of the held first call moves to the passed
// call in the later chunk.
func TestStreamCallsInSeparateChunks(t *testing.T) {
	ch := chunks(t, "stream-parallel-function-calls.sse")[0]
	p0 := gjson.GetBytes(ch, "candidates.0.content.parts.0").Raw
	p1 := gjson.GetBytes(ch, "candidates.0.content.parts.1").Raw
	body := sseOf(
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."}]}}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[`+p0+`]}}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[`+p1+`]}}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","finishMessage":"Model generated function call(s)."}],"usageMetadata":{"totalTokenCount":9}}`,
	)
	out, _, h := everySplit(t, streamCase{body: body, framing: SSE, fates: []Fate{Held, Passed}, secrets: []string{"mellon"}})
	if !bytes.Contains(out, []byte("finishMessage")) {
		t.Fatal("finishMessage dropped though a call reached the app")
	}
	if out, _, _ := everySplit(t, streamCase{body: body, framing: SSE, fates: []Fate{Held, Held}, secrets: []string{"mellon", "radiance", "finishMessage"}}); !bytes.Contains(out, []byte(`"finishReason":"STOP"`)) {
		t.Fatalf("%q", out)
	}
	parts, _ := genaiParts(t, out, true)
	want := sig(t, ch, "candidates.0.content.parts.0.thoughtSignature")
	if len(parts) != 4 || parts[0].Text != "Let me look." || parts[1].Text != "\n\n"+wait || parts[2].FunctionCall == nil ||
		parts[2].FunctionCall.Args["password"] != "radiance" || !bytes.Equal(parts[2].ThoughtSignature, want) {
		t.Fatalf("%+v", parts)
	}
	hd := h.Holds()[0]
	if len(hd.Calls) != 2 || hd.Calls[0].ID != SyntheticID(0) || hd.Calls[1].ID != SyntheticID(1) || hd.Calls[1].Position != 1 ||
		gjson.GetBytes(hd.Message, "parts.#").Int() != 4 || hd.Before != string(body[:bytes.Index(body, []byte("\r\n\r\n"))+4]) {
		t.Fatalf("%+v %s %q", hd.Calls, hd.Message, hd.Before)
	}
}

// TestStreamUngatedCallBeforeAGatedOne: an ungated call passes as it
// comes; a gated one after it waits, counted after it.
func TestStreamUngatedCallBeforeAGatedOne(t *testing.T) {
	body := sseOf(
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"lookup","args":{"q":"x"}}}]}}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"delete","args":{"path":"/etc/secret"}}}]}}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"lookup","args":{"q":"y"}}}]},"finishReason":"STOP"}]}`,
	)
	out, _, h := everySplit(t, streamCase{body: body, framing: SSE, gated: map[string]bool{"delete": true}, secrets: []string{"/etc/secret"}})
	parts, _ := genaiParts(t, out, false)
	if len(parts) != 3 || parts[0].FunctionCall.Args["q"] != "x" || parts[1].Text != wait || parts[2].FunctionCall.Args["q"] != "y" {
		t.Fatalf("%+v", parts)
	}
	if cs := h.Holds()[0].Calls; len(cs) != 1 || cs[0].Position != 1 || cs[0].ID != SyntheticID(1) || !strings.Contains(h.Holds()[0].Before, `"q":"x"`) {
		t.Fatalf("%+v", cs)
	}
}

func TestStreamFailsClosed(t *testing.T) {
	for _, c := range []streamCase{
		{name: "streamed arguments", body: read(t, "vertex-stream-partial-args.sse"), framing: SSE, err: ErrStreamedArguments, secrets: []string{"Boston", "getWeather"}},
		{name: "streamed arguments, not gated", body: read(t, "vertex-stream-partial-args.sse"), framing: SSE, gated: map[string]bool{}, err: ErrStreamedArguments, secrets: []string{"Boston"}},
		{name: "invalid JSON around a call", body: sseOf(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete","args":{"path":"/etc/secret"}}}]}}]}`, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"x","args":{"p":"/etc/secret"`), framing: SSE, err: errAny, secrets: []string{"/etc/secret"}},
		{name: "body ends before the finish", body: sseOf(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete","args":{"path":"/etc/secret"}}}]}}]}`), framing: SSE, err: errAny, secrets: []string{"/etc/secret"}},
		{name: "truncated array", body: []byte(`[{"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete","args":{"path":"/etc/secret"}}}]}}]}`), framing: JSONArray, err: errAny, secrets: []string{"/etc/secret"}},
		{name: "garbage in an array", body: []byte(`[{"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete","args":{"path":"/etc/secret"}}}]}}]} x`), framing: JSONArray, err: errAny, secrets: []string{"/etc/secret"}},
	} {
		t.Run(c.name, func(t *testing.T) { everySplit(t, c) })
	}
}

// TestStreamWithholdsTheEndForAContinuation: a refused call with Continue
// set: the end is withheld, Settlements gives what Continuation needs,
// and the turn's own end (FinishChunk) makes the body one answer.
func TestStreamWithholdsTheEndForAContinuation(t *testing.T) {
	for _, f := range []Framing{SSE, JSONArray} {
		body := read(t, "stream-function-call-gemini3.sse")
		if f == JSONArray {
			body = read(t, "stream-json-array-function-call-id.json")
		}
		out, s, _ := everySplit(t, streamCase{body: body, framing: f, fates: []Fate{Refused}, cont: true, secrets: []string{"functionCall", "finishReason", "Refused"}})
		if !s.Withheld() || len(s.Settlements()) != 1 || s.Usage() == "" || s.First() == nil {
			t.Fatalf("withheld %v %+v", s.Withheld(), s.Settlements())
		}
		st := s.Settlements()[0]
		req := []byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
		next, err := Continuation(req, st.Content, st.Calls, st.Fates, st.Contents)
		if err != nil || gjson.GetBytes(next, "contents.2.parts.0.functionResponse.response.error").Str != "Refused: "+st.Calls[0].Name+" needs a reason." {
			t.Fatalf("%v %s", err, next)
		}
		end := FinishChunk(s.First(), "The end.", s.Usage())
		if f == JSONArray {
			var els []*genai.GenerateContentResponse
			lead := ArraySep
			if s.Elements() == 0 {
				lead = ArrayOpen
			}
			full := append(append(append(slices.Clone(out), lead...), end...), s.Tail()...)
			if err := json.Unmarshal(full, &els); err != nil || els[len(els)-1].Candidates[0].FinishReason != genai.FinishReasonStop {
				t.Fatalf("%v %s", err, full)
			}
			continue
		}
		parts, resps := genaiParts(t, AppendEvent(slices.Clone(out), end, s.EOL()), false)
		if len(parts) != 1 || parts[0].Text != "The end." || len(resps) != 1 {
			t.Fatalf("%+v %d\n%q", parts, len(resps), out)
		}
	}
}

// FuzzStream writes any body to a Stream in the pieces cuts gives (each
// byte a piece's length), in the framing bit 0 of mode picks, with every
// tool gated and each call passed, held or refused by the bits of mode
// (Continue by bit 7): no panic, and every chunk the app reads holds no
// call but the ones Hold passed, whatever came.
func FuzzStream(f *testing.F) {
	for _, n := range []string{"stream-function-call.sse", "stream-parallel-function-calls.sse", "stream-function-call-gemini3.sse", "vertex-stream-partial-args.sse"} {
		f.Add(read(f, n), []byte{7, 200, 1}, uint8(0b0110))
		f.Add(read(f, n), []byte{}, uint8(0b1000_0100))
	}
	f.Add(vertexNoArgs(f), []byte{3, 17}, uint8(0b10))
	for _, n := range []string{"stream-json-array-function-call.json", "stream-json-array-function-call-id.json"} {
		f.Add(read(f, n), []byte{5, 90}, uint8(0b1001))
		f.Add(read(f, n), []byte{}, uint8(0b1000_0101))
	}
	f.Add([]byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"},{\"function_call\":{\"name\":\"x\"}}]}}]}\n\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"FunctionCall\":{\"name\":\"y\",\"args\":{\"k\":1}}}]},\"finishReason\":\"STOP\"}]}\r\n\r\n"), []byte{40}, uint8(0b1010))
	f.Fuzz(fuzzStream)
}

func fuzzStream(t *testing.T, body, cuts []byte, mode uint8) {
	{
		framing := SSE
		if mode&1 == 1 {
			framing = JSONArray
		}
		var dst bytes.Buffer
		passed := make(map[string]int)
		h := &judge{pick: mode >> 1, passed: passed}
		s := NewStream(context.Background(), framing, &dst, nil, h)
		s.Continue = mode&0x80 != 0
		for _, c := range cuts {
			n := min(int(c), len(body))
			if _, err := s.Write(body[:n]); err != nil {
				break
			}
			body = body[n:]
		}
		if _, err := s.Write(body); err == nil {
			_ = s.Close()
		}
		check := func(data []byte) {
			calls, err := Calls(data)
			if err != nil {
				t.Fatalf("the app reads a chunk the gate could not: %v\n%q", err, dst.Bytes())
			}
			for _, c := range calls {
				k := c.Name + "\x00" + string(c.Arguments)
				if passed[k] == 0 {
					t.Fatalf("a call Hold did not pass reached the app: %s\n%q", c.Raw, dst.Bytes())
				}
				passed[k]--
			}
		}
		if framing == SSE {
			for _, ev := range sse.Parse(dst.Bytes()) {
				check([]byte(ev.Data))
			}
			return
		}
		var r ArrayReader
		_ = r.Write(dst.Bytes(), func(e Element) bool { check(e.Value); return true })
	}
}

// judge gates every tool and judges calls by the bits of pick, in turn:
// 0 held, 1 passed; every third call refused.
type judge struct {
	pick   uint8
	n      int
	passed map[string]int
}

func (*judge) Gated(string) bool { return true }

func (j *judge) Hold(_ context.Context, calls []provider.Call, _ []byte, kept provider.Kept) provider.Verdict {
	v := provider.Verdict{Text: "wait", Pass: make([]bool, len(calls))}
	for i, c := range calls {
		j.n++
		switch {
		case j.n%3 == 0:
			v.Refusals = append(v.Refusals, provider.Refusal{CallID: c.ID, Content: "no"})
		case j.pick>>(j.n%7)&1 == 1:
			v.Pass[i] = true
			j.passed[c.Name+"\x00"+string(c.Arguments)]++
		}
	}
	return v
}

// TestStreamFollowUp: the refused call's follow-up continues the answer
// in the same body: go-genai reads one answer, one finish, the first
// responseId, the usage of both responses.
func TestStreamFollowUp(t *testing.T) {
	body := read(t, "stream-function-call-gemini3.sse")
	follow := sseOf(
		`{"candidates":[{"content":{"parts":[{"text":"I cannot look that up."}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":6,"totalTokenCount":56},"modelVersion":"gemini-3-pro-preview","responseId":"second"}`,
		`{"candidates":[{"content":{"parts":[{"text":" Sorry."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":8,"totalTokenCount":58},"modelVersion":"gemini-3-pro-preview","responseId":"second"}`,
	)
	for _, cut := range []int{1, 7, 100, len(follow) / 2} {
		var dst bytes.Buffer
		h := holder(nil, Refused)
		s := NewStream(context.Background(), SSE, &dst, nil, h)
		s.Continue = true
		if _, err := s.Write(body); err != nil || s.Close() != nil || !s.Withheld() {
			t.Fatal(err)
		}
		f := NewStream(context.Background(), SSE, &dst, nil, h)
		f.Follow(s)
		for _, p := range [][]byte{follow[:cut], follow[cut:]} {
			if _, err := f.Write(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil || f.Withheld() {
			t.Fatal(err)
		}
		parts, resps := genaiParts(t, dst.Bytes(), false)
		text := ""
		for _, p := range parts {
			text += p.Text
		}
		last := resps[len(resps)-1]
		if text != "I cannot look that up. Sorry." || last.ResponseID != "QUVVadTSNJ6_qtsPvN7J8Q0" || last.UsageMetadata.PromptTokenCount != 79 || last.UsageMetadata.ThoughtsTokenCount != 202 {
			t.Fatalf("%q %+v\n%q", text, last, dst.Bytes())
		}
		finishes := 0
		for _, r := range resps {
			if r.Candidates[0].FinishReason != "" {
				finishes++
			}
		}
		if finishes != 1 || bytes.Contains(dst.Bytes(), []byte("get_country")) {
			t.Fatalf("%d finishes\n%q", finishes, dst.Bytes())
		}
	}
}

// TestStreamTwoCandidates: each candidate's calls go to Hold at its own
// finish, and the chunks wait until neither waits.
func TestStreamTwoCandidates(t *testing.T) {
	body := sseOf(
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"delete","args":{"path":"/a/secret"}}}]},"index":0},{"content":{"role":"model","parts":[{"text":"Sure."}]},"index":1}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0},{"content":{"role":"model","parts":[{"functionCall":{"name":"delete","args":{"path":"/b/secret"}}}]},"index":1}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":1}]}`,
	)
	out, s, h := everySplit(t, streamCase{body: body, framing: SSE, cont: true, fates: []Fate{Refused}, secrets: []string{"/a/secret", "/b/secret"}})
	if len(h.Holds()) != 2 || h.Holds()[0].Calls[0].Choice != 0 || h.Holds()[1].Calls[0].Choice != 1 || h.Holds()[1].Before != "" {
		t.Fatalf("%+v", h.Holds())
	}
	if s.Withheld() {
		t.Fatal("two candidates: no continuation, the refusals are shown")
	}
	evs := sse.Parse(out)
	if len(evs) != 3 || gjson.Get(evs[0].Data, "candidates.0.content.parts.0.text").Str != "Refused: delete needs a reason." ||
		gjson.Get(evs[0].Data, "candidates.1.content.parts.0.text").Str != "Sure." ||
		gjson.Get(evs[1].Data, "candidates.1.content.parts.0.text").Str != "\n\nRefused: delete needs a reason." {
		t.Fatalf("%q", out)
	}
	var _ provider.Stream = s
}

// TestStreamUngatedCandidateWaitsUnchanged: a candidate without a gated
// call whose chunks waited for another's is written as it came.
func TestStreamUngatedCandidateWaitsUnchanged(t *testing.T) {
	body := sseOf(
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Sure."}]},"index":1}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"delete","args":{"path":"/a/secret"}}}]},"index":0},{"content":{"role":"model","parts":[{"text":" Done."}]},"index":1}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0},{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":1}]}`,
	)
	out, _, _ := everySplit(t, streamCase{body: body, framing: SSE, secrets: []string{"/a/secret"}})
	evs := sse.Parse(out)
	if len(evs) != 3 || gjson.Get(evs[1].Data, "candidates.1.content.parts.#").Int() != 1 || evs[2].Data != string(chunks0(body)[2]) {
		t.Fatalf("%q", out)
	}
}

func chunks0(body []byte) [][]byte {
	var out [][]byte
	for _, ev := range sse.Parse(body) {
		out = append(out, []byte(ev.Data))
	}
	return out
}

// TestStreamWaitsForTheStep: every call held in one step, resume allowed:
// the end is withheld for the person's answer; a passed call reached the
// app: it is not.
func TestStreamWaitsForTheStep(t *testing.T) {
	for _, c := range []struct {
		file  string
		fates []Fate
		wait  bool
	}{
		{"stream-function-call.sse", []Fate{Held}, true},
		{"stream-function-call-gemini3.sse", []Fate{Held}, true},
		{"stream-parallel-function-calls.sse", []Fate{Held, Passed}, false},
	} {
		var dst bytes.Buffer
		h := holder(nil, c.fates...)
		s := NewStream(context.Background(), SSE, &dst, nil, h)
		s.WaitForStep = true
		if _, err := s.Write(read(t, c.file)); err != nil || s.Close() != nil {
			t.Fatal(err)
		}
		if s.Withheld() != c.wait || bytes.Contains(dst.Bytes(), []byte("finishReason")) == c.wait || s.Settlements()[0].Verdict.Step != step {
			t.Fatalf("%s: withheld %v\n%q", c.file, s.Withheld(), dst.Bytes())
		}
		if c.wait {
			parts, _ := genaiParts(t, AppendEvent(slices.Clone(dst.Bytes()), FinishChunk(s.First(), "", s.Usage()), s.EOL()), false)
			if len(parts) != 1 || parts[0].Text != wait {
				t.Fatalf("%+v", parts)
			}
		}
	}
}

// countingWriter counts the Writes it gets.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// TestStreamWritesPassedEventsTogether: the events of one Write that pass
// on the fast path (no call key in them) go to the app in one Write of the
// response (each Write costs a pass through Caddy's response writers),
// unchanged; a held call among them splits them, in order.
func TestStreamWritesPassedEventsTogether(t *testing.T) {
	rec := read(t, "stream-parallel-function-calls.sse")
	text := []byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"before\"}],\"role\":\"model\"}}]}\r\n\r\n")
	body := append(bytes.Repeat(text, 3), ": a comment\r\n\r\n"...)
	var dst countingWriter
	flushes := 0
	s := NewStream(context.Background(), SSE, &dst, func() error { flushes++; return nil }, holder(map[string]bool{}))
	if _, err := s.Write(body); err != nil {
		t.Fatal(err)
	}
	if dst.writes != 1 || flushes != 1 || !bytes.Equal(dst.Bytes(), body) {
		t.Fatalf("%d writes, %d flushes:\n%q", dst.writes, flushes, dst.Bytes())
	}

	body = append(append(slices.Clone(text), rec...), text...)
	whole, _, _, err := runStream(streamCase{body: body, framing: SSE, fates: []Fate{Held, Passed}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var apart []int // every event in a Write of its own: no run
	for at := 0; ; {
		i := bytes.Index(body[at:], []byte("\r\n\r\n"))
		if i < 0 {
			break
		}
		at += i + 4
		apart = append(apart, at)
	}
	one, _, _, err := runStream(streamCase{body: body, framing: SSE, fates: []Fate{Held, Passed}}, apart)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(whole, one) || !bytes.HasPrefix(whole, text) || !bytes.HasSuffix(whole, text) || bytes.Equal(whole, body) {
		t.Fatalf("one Write:\n%q\nan event per Write:\n%q", whole, one)
	}
}
