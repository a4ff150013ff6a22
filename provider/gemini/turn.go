package gemini

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/shape"
	"github.com/toolgate/toolgate/wire/turn"
)

// NewTurn returns the rewriter of the answer to one generateContent
// request (see provider.Turn), assembled from the package's functions on
// turn.Core, as the other adapters' turns are.
//
// JSON. Calls, Hold per candidate with gated calls (its Content), the
// verdict's Fates,
// Rewrite. When a single candidate has refused calls, all of them can go
// back (request known with a contents array, a follow-up left), they are
// taken out without text and Continuation gives the follow-up
// (Continuation); its answer is merged into the first (Merge). Otherwise
// the refusals' contents are shown in place, after Verdict.Text.
//
// Streams. NewStream, with Continue and WaitForStep as the turn allows:
// in the JSON-array framing for ArrayStream (the request had no alt=sse;
// a body that is no array fails), else in the framing read from the body's
// first byte ('[' is the JSON array, anything else SSE); a follow-up's stream Follows the one it continues. An
// end still withheld when the turn finishes is written then: FinishChunk
// with the refusals' contents (no follow-up sent) or the Fail text.
func (Provider) NewTurn(ctx context.Context, h provider.Holder, request []byte, continuations int) provider.Turn {
	return &gemTurn{ctx: ctx, h: h, Core: turn.Core[gemStep]{Request: request, Max: continuations}}
}

// gemStep is a response's refused calls, to send back.
type gemStep struct {
	content  []byte
	calls    []provider.Call
	fates    []Fate
	contents []string
	fallback string // the refusals' contents, shown when no follow-up is sent
}

type gemTurn struct {
	ctx context.Context
	h   provider.Holder
	turn.Core[gemStep]

	resume  bool // AllowResume
	reached bool // a call of the turn reached the app

	cur    *sniffStream // the current response's stream
	end    *Stream      // the stream whose end is withheld, not yet written
	follow *Stream      // the stream the next response's continues
	ender  gemEnd       // the withheld end, as Finish ends it
}

// allowed reports whether a response's refusals may go back to the model.
func (t *gemTurn) allowed() bool {
	return t.Done < t.Max && t.Request != nil && gjson.ValidBytes(t.Request) && arrayMember(t.Request, "contents")
}

// AllowResume implements provider.Turn.
func (t *gemTurn) AllowResume() {
	t.resume = true
	t.Core.AllowResume()
}

// JSON implements provider.Turn.
func (t *gemTurn) JSON(body []byte) error {
	out, step, err := t.rewriteJSON(body)
	if err != nil {
		return err
	}
	return t.TakeJSON(out, step, Merge)
}

// rewriteJSON judges a unary body's gated calls, candidate by candidate.
func (t *gemTurn) rewriteJSON(body []byte) ([]byte, *gemStep, error) {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' && MayHoldCall(body) {
		// A JSON-array stream (no alt=sse) the glue buffered as JSON: its
		// calls are not read here, so it fails closed.
		return nil, nil, errors.New("gemini response: a streamed JSON array holding a call, read as one JSON body")
	}
	calls, err := Calls(body)
	if err != nil || len(calls) == 0 {
		return body, nil, err
	}
	cands, err := candidates(gjson.ParseBytes(body))
	if err != nil {
		return nil, nil, err
	}
	fates := make([]Fate, len(calls))
	for i := range fates {
		fates[i] = Passed // unless judged otherwise
	}
	contents := make([]string, len(calls))
	texts := make(map[int]string)
	var step *gemStep
	var choices []int
	for _, c := range calls {
		if !slices.Contains(choices, c.Choice) {
			choices = append(choices, c.Choice)
		}
	}
	for _, ch := range choices {
		var idx []int
		var gated []provider.Call
		for i, c := range calls {
			if c.Choice == ch && t.h.Gated(c.Name) {
				idx = append(idx, i)
				gated = append(gated, c)
			}
		}
		if len(gated) == 0 {
			continue
		}
		content, err := Content(body, ch)
		if err != nil {
			return nil, nil, err
		}
		v := t.h.Hold(t.ctx, gated, content, provider.Kept{})
		gf, gc, _, _ := v.Fates(gated)
		cont := slices.Contains(gf, Refused) && len(cands) == 1 && t.allowed()
		text := v.Text
		if !cont {
			text = shownInPlace(v.Text, gf, gc)
		}
		for k, i := range idx {
			fates[i], contents[i] = gf[k], gc[k]
		}
		texts[ch] = text
		if cont {
			step = &gemStep{content: content, fallback: provider.InPlace("", gf, gc)}
			for i, c := range calls {
				if c.Choice == ch {
					step.calls = append(step.calls, c)
					step.fates = append(step.fates, fates[i])
					step.contents = append(step.contents, contents[i])
				}
			}
		}
	}
	out, err := Rewrite(body, calls, fates, texts)
	if err != nil {
		return nil, nil, err
	}
	return out, step, nil
}

// Stream implements provider.Turn.
func (t *gemTurn) Stream(dst io.Writer, flush func() error) provider.Stream {
	t.Streaming = true
	t.cur = &sniffStream{t: t, dst: dst, flush: flush}
	return t.cur
}

// ArrayStream implements provider.ArrayTurn: the current response's body
// is a streamed JSON array (the request had no alt=sse), read as one from
// its first byte: a body that is not an array (a single JSON object, an
// event stream) fails closed, where Stream would read it as SSE.
func (t *gemTurn) ArrayStream(dst io.Writer, flush func() error) provider.Stream {
	t.Streaming = true
	t.cur = &sniffStream{t: t, dst: dst, flush: flush}
	t.cur.s = t.start(JSONArray)
	return t.cur
}

// start makes the current response's Stream in framing f.
func (t *gemTurn) start(f Framing) *Stream {
	c := t.cur
	s := NewStream(t.ctx, f, c.dst, c.flush, t.h)
	s.GuardWith(c.names, c.own)
	if t.follow != nil {
		s.Follow(t.follow)
		t.follow = nil
	}
	s.Continue = t.allowed()
	s.WaitForStep = t.resume && !t.reached && t.Done < t.Max && t.Request != nil
	return s
}

// closed notes what the current response's stream decided.
func (t *gemTurn) closed(s *Stream) {
	if !s.Withheld() {
		t.end = nil
	} else {
		t.end = s
	}
	var last *Settlement
	for i := range s.Settlements() {
		st := &s.Settlements()[i]
		last = st
		if slices.Contains(st.Fates, Passed) {
			t.reached = true
		}
	}
	if !s.Withheld() || last == nil {
		t.HoldsStep(provider.Verdict{}, false)
		return
	}
	if slices.Contains(last.Fates, Refused) {
		var refused []Fate
		var rc []string
		for k, f := range last.Fates {
			if f == Refused {
				refused = append(refused, f)
				rc = append(rc, last.Contents[k])
			}
		}
		t.Pending = &gemStep{content: last.Content, calls: last.Calls, fates: last.Fates, contents: last.Contents,
			fallback: provider.InPlace("", refused, rc)}
	}
	t.HoldsStep(last.Verdict, !t.reached && t.allowed())
}

// Continuation implements provider.Turn.
func (t *gemTurn) Continuation() ([]byte, bool) {
	ready := !t.Streaming || t.cur != nil && t.cur.s != nil && t.cur.s.err == nil && t.cur.s.closed && t.cur.s.Withheld()
	return t.FollowUp(ready, func(req []byte, s *gemStep) ([]byte, error) {
		return Continuation(req, s.content, s.calls, s.fates, s.contents)
	})
}

// Continue implements provider.Turn.
func (t *gemTurn) Continue() {
	if t.Advance() && t.Streaming && t.cur != nil && t.cur.s != nil {
		t.follow = t.cur.s
	}
}

// Resume implements provider.Turn: the last request with the waiting text
// appended as a model content (AppendResumeContent), history then
// restored by restore.
func (t *gemTurn) Resume(restore func([]byte) ([]byte, error)) ([]byte, bool) {
	return t.ResumeWith(AppendResumeContent, restore)
}

// KeepAlive is what the stream writes while it waits for the person's
// answer: a blank event in the stream's own line ending (SSE), or
// whitespace between array elements; never an SSE comment, which
// go-genai refuses.
func (t *gemTurn) KeepAlive() []byte {
	if t.cur == nil || t.cur.s == nil {
		return KeepAlive(SSE, "\r\n")
	}
	return KeepAlive(t.cur.s.framing, t.cur.s.EOL())
}

// Finish implements provider.Turn.
func (t *gemTurn) Finish() ([]byte, error) {
	if t.Finished {
		return t.Acc, nil
	}
	t.ender.t = t
	return t.FinishWith(&t.ender, func(s *gemStep) string { return s.fallback }, AppendText)
}

// gemEnd is the turn's withheld end as turn.Ender: the stream whose end
// is withheld (gemTurn.end) ends with a FinishChunk written to the current
// response's writer. A follow-up sent (gemTurn.follow) whose stream never
// started leaves the first response's end to write.
type gemEnd struct {
	t   *gemTurn
	err error // writing or flushing the end
}

// Err implements turn.Ender: the current stream's error, or the end's.
func (e *gemEnd) Err() error {
	if c := e.t.cur; c != nil && c.s != nil && c.s.err != nil {
		return c.s.err
	}
	return e.err
}

// Ending implements turn.Ender: an end is withheld and no follow-up was
// sent after it.
func (e *gemEnd) Ending() bool { return e.t.end != nil && e.t.follow == nil }

// Continued implements turn.Ender: an end is withheld and the follow-up
// sent after it brought no stream.
func (e *gemEnd) Continued() bool { return e.t.end != nil && e.t.follow != nil }

// WriteEnd implements turn.Ender: the withheld end, if any, after text.
func (e *gemEnd) WriteEnd(text string) {
	t := e.t
	end := t.end
	if end == nil {
		return
	}
	t.end = nil
	chunk := FinishChunk(end.First(), text, end.Usage())
	var out []byte
	if end.framing == SSE {
		out = AppendEvent(nil, chunk, end.EOL())
	} else {
		if end.Elements() > 0 {
			out = append(out, ArraySep...)
		} else {
			out = append(out, ArrayOpen...)
		}
		out = append(out, chunk...)
		tail := end.Tail()
		if !bytes.Contains(tail, []byte("]")) {
			tail = append(tail, ']')
		}
		out = append(out, tail...)
	}
	c := t.cur
	if _, err := c.dst.Write(out); err != nil {
		e.err = err
		return
	}
	if c.flush != nil {
		e.err = c.flush()
	}
}

// sniffStream is a response's provider.Stream: it reads the framing from
// the body's first byte that is not blank and then hands everything to a
// Stream.
type sniffStream struct {
	t     *gemTurn
	dst   io.Writer
	flush func() error
	lead  []byte // blank bytes before the first other byte
	s     *Stream
	names *shape.Names           // GuardWith's, for s
	own   func(data []byte) bool // GuardWith's, for s
}

// GuardWith makes the response's Stream refuse chunks in another
// protocol's shape naming one of names (Stream.GuardWith).
func (w *sniffStream) GuardWith(names *shape.Names, own func(data []byte) bool) {
	w.names, w.own = names, own
	if w.s != nil {
		w.s.GuardWith(names, own)
	}
}

func (w *sniffStream) Write(p []byte) (int, error) {
	if w.s == nil {
		i := 0
		for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n') {
			i++
		}
		if i == len(p) {
			w.lead = append(w.lead, p...)
			return len(p), nil
		}
		f := SSE
		if p[i] == '[' {
			f = JSONArray
		}
		w.s = w.t.start(f)
		if len(w.lead) > 0 {
			if _, err := w.s.Write(w.lead); err != nil {
				return 0, err
			}
		}
	}
	return w.s.Write(p)
}

func (w *sniffStream) Close() error {
	if w.s == nil {
		w.s = w.t.start(SSE)
		if len(w.lead) > 0 {
			if _, err := w.s.Write(w.lead); err != nil {
				return err
			}
		}
	}
	if err := w.s.Close(); err != nil {
		return err
	}
	w.t.closed(w.s)
	return nil
}

// Interface guards
var (
	_ provider.Adapter       = Provider{}
	_ provider.ArrayTurn     = (*gemTurn)(nil)
	_ provider.KeepAliveTurn = (*gemTurn)(nil)
)
