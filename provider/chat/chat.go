package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
	"github.com/toolgate/toolgate/wire/keyscan"
	"github.com/toolgate/toolgate/wire/sse"
	"github.com/toolgate/toolgate/wire/stream"
	"github.com/toolgate/toolgate/wire/turn"
)

// Chat is the adapter for OpenAI Chat Completions (POST /v1/chat/completions,
// wire-formats.md §1). It matches tool calls of type "function" by
// function.name and of type "custom" by custom.name. The zero value is ready
// to use and holds no state; one Chat serves every request.
//
// The byte searches that let traffic without tool calls through untouched
// look for "tool_calls" and "function_call" (the legacy call) in any case
// or spelling a decoder reads as them (see mayHold).
type Chat struct{}

var doneData = []byte("[DONE]")

// chatKeys are the keys a Chat call needs. Their '_' is rare in a chunk:
// it appears elsewhere only in a few keys (finish_reason,
// system_fingerprint), where a quote appears forty times.
var chatKeys = keyscan.NewSet(keyscan.NewFolded(`"tool_calls"`), keyscan.NewFolded(`"function_call"`))

// chatShape is what the gate reads of a Chat response or chunk (see
// shape.ambiguity): the choices, their message or delta, its tool calls
// and legacy function_call, and their function or custom bodies.
var chatShape = func() *jsonedit.Shape {
	fn := &jsonedit.Shape{Read: []string{"name", "arguments", "input"}}
	call := &jsonedit.Shape{Read: []string{"index", "id", "type", "function", "custom"}, Into: map[string]*jsonedit.Shape{"function": fn, "custom": fn}}
	msg := &jsonedit.Shape{Read: []string{"role", "content", "tool_calls", "function_call"}, Into: map[string]*jsonedit.Shape{"tool_calls": call, "function_call": fn}}
	choice := &jsonedit.Shape{Read: []string{"index", "message", "delta", "finish_reason", "logprobs"}, Into: map[string]*jsonedit.Shape{"message": msg, "delta": msg}}
	return &jsonedit.Shape{Read: []string{"id", "choices", "usage", "error"}, Into: map[string]*jsonedit.Shape{"choices": choice}}
}()

// hasToolCalls reports whether b may hold a Chat call: "tool_calls" or
// the legacy "function_call", however a reader may read them.
func hasToolCalls(b []byte) bool { return chatKeys.MayHold(b) }

// MayHoldCalls is the fast path's byte search (hasToolCalls), for the
// tests that hold every adapter's search against the readers'.
func (Chat) MayHoldCalls(b []byte) bool { return hasToolCalls(b) }

// RewriteJSON judges the inspected calls of a chat.completion body
// (wire-formats.md §1.1) and takes out the held and refused ones; refusals
// are shown in place (a Turn sends them back to the model instead).
//
// A body without the bytes "tool_calls" is returned as is, the same slice,
// without any JSON work. Otherwise the body is validated once; invalid JSON is
// an error, because a call in it could not be checked (fail closed). When no
// choice holds an inspected call, or every one is passed and Hold gives no
// text, the body is returned unchanged, the same slice.
//
// For each choice with inspected calls, Hold gets them with the assistant
// message {"role":"assistant","content":…,"tool_calls":[every call, raw]}.
// Passed calls stay where they are, byte for byte; the others are removed
// (the key too when none is left), the text becomes the content (after the
// model's own text and a blank line, if there was any), and finish_reason
// "tool_calls" becomes "stop" when no call is left. Every other byte is kept.
// The result is a new slice; body is never modified.
func (Chat) RewriteJSON(ctx context.Context, body []byte, h provider.Holder) ([]byte, error) {
	out, _, err := rewriteChatJSON(ctx, body, h, false)
	return out, err
}

// rewriteChatJSON is RewriteJSON. With cont, the refused calls of a body
// with one choice are taken out without text and returned as a step, to
// be sent back to the model.
func rewriteChatJSON(ctx context.Context, body []byte, h provider.Holder, cont bool) ([]byte, *chatStep, error) {
	if !hasToolCalls(body) {
		return body, nil, nil
	}
	if !gjson.ValidBytes(body) {
		return nil, nil, errors.New("chat response: invalid JSON around tool calls")
	}
	root := gjson.ParseBytes(body)
	if err := chatShape.Ambiguity(root); err != nil {
		return nil, nil, fmt.Errorf("chat response: %w", err)
	}
	choices := root.Get("choices")
	if !choices.IsArray() {
		return body, nil, nil
	}
	type heldChoice struct {
		choice gjson.Result
		calls  []provider.Call
	}
	var held []heldChoice
	var err error
	pos := 0
	choices.ForEach(func(_, choice gjson.Result) bool {
		ci := choiceIndex(choice, pos)
		pos++
		msg := choice.Get("message")
		if err = legacyCall(msg.Get("function_call"), "", h); err != nil {
			return false
		}
		tcs := msg.Get("tool_calls")
		if !tcs.IsArray() {
			return true
		}
		var calls []provider.Call
		n := 0
		tcs.ForEach(func(_, tc gjson.Result) bool {
			if tc.IsObject() {
				var typ string
				var fn gjson.Result
				if typ, fn, err = callBody(tc, "", h); err != nil {
					return false
				}
				name := fn.Get("name").Str
				if h.Gated(name) {
					calls = append(calls, provider.Call{
						Choice:    ci,
						Position:  n,
						ID:        tc.Get("id").Str,
						Type:      typ,
						Name:      name,
						Arguments: jsonedit.Arguments(callArguments(fn)),
						Raw:       []byte(tc.Raw),
					})
				}
			}
			n++
			return true
		})
		if len(calls) > 0 {
			held = append(held, heldChoice{choice, calls})
		}
		return err == nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("chat response: %w", err)
	}
	if len(held) == 0 {
		return body, nil, nil
	}
	// Only a lone choice 0 continues: a follow-up request answers one
	// assistant message.
	cont = cont && pos == 1 && held[0].calls[0].Choice == 0
	edits := make([]jsonedit.Edit, 0, len(held))
	var step *chatStep
	for _, hc := range held {
		repl, st, err := holdChoice(ctx, hc.choice, hc.calls, h, cont)
		if err != nil {
			return nil, nil, fmt.Errorf("chat response: choice %d: %w", hc.calls[0].Choice, err)
		}
		if st != nil {
			step = st
		}
		if repl == "" {
			continue // every call passed, no text: the choice stays as it is
		}
		e, err := jsonedit.Of(body, hc.choice, repl)
		if err != nil {
			return nil, nil, fmt.Errorf("chat response: %w", err)
		}
		edits = append(edits, e)
	}
	if len(edits) == 0 {
		return body, nil, nil
	}
	return jsonedit.Apply(body, edits), step, nil
}

// holdChoice hands one choice's inspected calls to h and returns the choice
// rewritten ("" when it stays as it is). calls are in message order
// (Position ascending). With cont, refused calls (all with ids) are taken
// out without text and returned as a step.
func holdChoice(ctx context.Context, choice gjson.Result, calls []provider.Call, h provider.Holder, cont bool) (string, *chatStep, error) {
	msg := choice.Get("message")
	content := msg.Get("content")
	tcs := msg.Get("tool_calls")

	m := make([]byte, 0, len(tcs.Raw)+len(content.Raw)+64)
	m = append(m, `{"role":"assistant","content":`...)
	if content.Exists() {
		m = append(m, content.Raw...)
	} else {
		m = append(m, "null"...)
	}
	m = append(m, `,"tool_calls":`...)
	m = append(m, tcs.Raw...)
	m = append(m, '}')
	v := h.Hold(ctx, calls, m, provider.Kept{})
	fates, contents, anyRefused, ids := v.Fates(calls)
	cont = cont && anyRefused && ids
	text := v.Text
	if !cont {
		text = provider.InPlace(text, fates, contents)
	}

	var kept []byte
	var step *chatStep
	if cont {
		step = &chatStep{fallback: provider.InPlace("", fates, contents)}
		if content.Type == gjson.String {
			step.content = content.Str
		}
	}
	removed := false
	n, j := 0, 0
	tcs.ForEach(func(_, tc gjson.Result) bool {
		keep := true
		if j < len(calls) && calls[j].Position == n {
			keep = fates[j] == provider.Passed
			if fates[j] == provider.Refused && step != nil {
				step.calls = append(step.calls, []byte(tc.Raw))
				step.results = append(step.results, provider.Refusal{CallID: calls[j].ID, Content: contents[j]})
			}
			j++
		}
		if keep {
			if len(kept) > 0 {
				kept = append(kept, ',')
			}
			kept = append(kept, tc.Raw...)
		} else {
			removed = true
		}
		n++
		return true
	})
	if !removed && text == "" {
		return "", nil, nil
	}

	var err error
	out := msg.Raw
	switch {
	case !removed:
	case kept == nil:
		out, err = sjson.Delete(out, "tool_calls")
	default:
		out, err = sjson.SetRaw(out, "tool_calls", "["+string(kept)+"]")
	}
	if err != nil {
		return "", nil, err
	}
	if text != "" {
		if out, err = sjson.SetRaw(out, "content", string(appendText(nil, content, text))); err != nil {
			return "", nil, err
		}
	}
	repl, err := sjson.SetRaw(choice.Raw, "message", out)
	if err != nil {
		return "", nil, err
	}
	if kept == nil && choice.Get("finish_reason").Str == "tool_calls" {
		repl, err = sjson.SetRaw(repl, "finish_reason", `"stop"`)
	}
	return repl, step, err
}

// appendText appends the JSON string of the new content: the model's own
// text (kept byte for byte, escapes and all), a blank line, then text. Only
// a non-empty string counts as the model's text.
func appendText(dst []byte, content gjson.Result, text string) []byte {
	if content.Type != gjson.String || content.Str == "" {
		return gjson.AppendJSONString(dst, text)
	}
	dst = append(dst, content.Raw[:len(content.Raw)-1]...) // without its closing quote
	dst = append(dst, `\n\n`...)
	q := gjson.AppendJSONString(dst, text)
	// drop the opening quote of the appended string
	return append(q[:len(dst)], q[len(dst)+1:]...)
}

// choiceIndex is the choice's "index", or its position when it has none.
func choiceIndex(choice gjson.Result, pos int) int {
	if v := choice.Get("index"); v.Type == gjson.Number {
		return int(v.Int())
	}
	return pos
}

// callBody returns a tool call's type and the object that holds its name
// and arguments: "function" or "custom", or whatever "type" names, so a
// future type is still matched by name rather than let through unread.
// typ, when known from an earlier delta, is used in place of the call's
// own "type".
//
// It fails for a call the gate cannot place that names a gated tool: one
// of another type than "function" or "custom", or one whose gated name sits
// in any body its type does not point at. openai-go decodes every body of a
// call whatever its type (ChatCompletionMessageToolCallUnion) and its
// stream accumulator copies type and function.name whatever they say
// (streamaccumulator.go), as plain JSON does in the Node SDK: an app
// reading function.name would run such a call.
func callBody(tc gjson.Result, typ string, h provider.Holder) (string, gjson.Result, error) {
	if typ == "" {
		typ = tc.Get("type").Str
	}
	var body gjson.Result
	switch typ {
	case "function", "custom":
		body = tc.Get(typ)
	case "":
		for _, k := range [...]string{"function", "custom"} {
			if b := tc.Get(k); b.Exists() {
				typ, body = k, b
				break
			}
		}
	default:
		body = tc.Get(gjson.Escape(typ))
	}
	known := typ == "function" || typ == "custom"
	var err error
	tc.ForEach(func(k, v gjson.Result) bool {
		if !v.IsObject() || known && k.Str == typ {
			return true
		}
		if n := v.Get("name"); n.Type == gjson.String && h.Gated(n.Str) {
			err = fmt.Errorf("a tool call of type %q names the gated tool %q under %q, which the gate cannot place", typ, n.Str, k.Str)
		}
		return err == nil
	})
	if err != nil {
		return "", gjson.Result{}, err
	}
	return typ, body, nil
}

// legacyCall fails when a legacy function_call (the deprecated functions
// API: message.function_call or delta.function_call) names a gated tool,
// alone or after the name fragments before it (so far). The gate does not
// hold legacy calls: it refuses them (openai-go still decodes
// ChatCompletionMessage.FunctionCall and a chunk's Delta.FunctionCall,
// and the request side refuses the functions parameter).
func legacyCall(fc gjson.Result, so string, h provider.Holder) error {
	n := fc.Get("name")
	if n.Type != gjson.String || !h.Gated(n.Str) && !h.Gated(so+n.Str) {
		return nil
	}
	return fmt.Errorf("a legacy function_call names the gated tool %q; the gate refuses legacy calls", so+n.Str)
}

// callArguments is the arguments value of a call body: "arguments"
// (function) or "input" (custom).
func callArguments(fn gjson.Result) gjson.Result {
	if a := fn.Get("arguments"); a.Exists() {
		return a
	}
	return fn.Get("input")
}

// NewStream returns the rewriter of a chat.completion.chunk stream
// (wire-formats.md §1.2). The upstream body may arrive in any split.
//
// Events are passed on whole, as soon as their closing blank line arrives;
// flush (may be nil) is called once after each Write that wrote any. An event
// whose bytes hold no "tool_calls" is written as it came, by a byte search:
// no JSON work, no copy unless it spans two Writes. Only an inspected call's
// own fragments are held back: they are dropped, and the calls are handed to
// Hold when their choice's finish chunk arrives. Just before that finish
// chunk come the text Hold returns, as one content chunk (§0.2), then each
// passed call, whole, as one delta chunk (index, id, type, name, complete
// arguments, as a first delta); the finish_reason becomes "stop" if no call
// of the choice was let through (§0.3). Calls let through are numbered
// densely (§0.1), inspected ones after those that passed unread. The chunk
// envelope (id, object, created, model, system_fingerprint, service_tier) is
// copied, never changed (§0.4). Refusals are shown in place, after the text
// (a Turn sends them back to the model instead).
//
// A held call's message needs the text the model wrote before it, which went
// out before any call was seen. So events that pass and hold "content" are
// also copied to a log, read only when a tool call turns up, or every 256 KiB
// to bound it. While a held call waits for its finish chunk every event is
// read.
//
// Errors fail closed: nothing more is written. They come from invalid JSON in
// an event carrying "tool_calls", a call whose first delta has no name (it
// cannot be judged) or that grows a name after it was let through, an event
// over 8 MiB, or dst and flush. Close reports a body that ends mid-line; a
// held call whose choice never finished is simply never written or held.
func (Chat) NewStream(ctx context.Context, dst io.Writer, flush func() error, h provider.Holder) provider.Stream {
	s := &chatStream{ctx: ctx, h: h}
	s.Attach(dst, flush, "chat stream", s)
	return s
}

type chatStream struct {
	ctx context.Context
	h   provider.Holder
	t   *chatTurn // the turn it belongs to; nil: no continuation

	stream.Frame               // the event begun in an earlier Write, not yet complete
	log          *bytes.Buffer // passed events that may carry content, not yet read (pooled)
	choices      []*chatChoice // per choice index, in order of appearance
	waiting      int           // choices with held calls not yet handed to Hold

	// Continuation state (a Turn's stream only; the rest is in t).
	slowAll  bool // read every event: the response continues an earlier one, or its end is withheld
	inCont   bool // the response continues an earlier one: ids rewritten, role dropped
	ending   bool // the response's end is withheld: a continuation may follow
	finished bool // the response finished choice 0

	out   []byte          // scratch: a rewritten event
	edits []jsonedit.Edit // scratch: edits of one chunk
}

type chatChoice struct {
	index   int
	content []byte      // the text of every content delta so far (this response)
	calls   []*chatCall // in order of first appearance (this response)
	passed  int         // calls let through (the whole turn: the next dense index)
	held    int         // held calls not yet handed to Hold
	shown   bool        // text reached the app before this response, or the gate wrote some
	sep     bool        // the response's first content delta needs a blank line before it
	legacy  string      // the name fragments of a legacy function_call so far
}

type chatCall struct {
	index int  // the provider's tool_calls[].index
	dense int  // the index it is written with, if passed
	held  bool // inspected: its fragments wait for Hold
	done  bool // handed to Hold
	id    string
	typ   string
	name  string
	args  []byte
}

var (
	errMidLine    = errors.New("chat stream: body ends mid-line")
	errEventLarge = fmt.Errorf("chat stream: event over %d bytes", stream.MaxEvent)
	errClosed     = errors.New("chat stream: write after close")
)

func (s *chatStream) Write(p []byte) (int, error) {
	return s.WriteEvents(s, p, errEventLarge, errClosed)
}

// Close handles a last event left without its closing blank line, then
// gives the buffers back. It reports a body that ends mid-line (after passing
// the partial line on if it could pass) and any earlier error.
func (s *chatStream) Close() error {
	if s.MarkClosed() {
		return s.Err()
	}
	if s.CloseEvents(s) && s.Err() == nil {
		s.SetErr(errMidLine)
	}
	stream.PutBuf(s.log)
	s.log = nil
	return s.Err()
}

// Passes reports whether ev goes out unread: it names no tool call and no
// held call waits for its finish chunk. Such an event may still carry text a
// held message will need; it is copied to the log, to be read only if a
// tool call turns up (fold). Copying every event costs less than searching
// each for "content".
func (s *chatStream) Passes(ev []byte) bool {
	if s.waiting > 0 || s.slowAll || hasToolCalls(ev) {
		return false
	}
	if s.log == nil {
		s.log = stream.GetBuf()
	}
	s.log.Write(ev)
	if s.log.Len() >= stream.FoldAt {
		s.fold()
	}
	return true
}

// fold reads the content deltas of the logged events into their choices and
// empties the log. Events that are not valid chunks are skipped: they were
// passed on as they came and carried no call.
func (s *chatStream) fold() {
	b := s.log.Bytes()
	for len(b) > 0 {
		e := sse.EventLen(b)
		data, ok := s.Data(b[:e])
		b = b[e:]
		if !ok || !gjson.ValidBytes(data) {
			continue
		}
		pos := 0
		gjson.GetBytes(data, "choices").ForEach(func(_, ch gjson.Result) bool {
			c := ch.Get("delta.content")
			if c.Type == gjson.String && c.Str != "" {
				st := s.choice(choiceIndex(ch, pos))
				st.content = append(st.content, c.Str...)
			}
			pos++
			return true
		})
	}
	s.log.Reset()
}

// Slow handles an event that names a tool call, or any event while a held
// call waits for its finish chunk or a continuation is under way.
func (s *chatStream) Slow(ev []byte) {
	if s.log != nil && s.log.Len() > 0 {
		s.fold() // keep the text in order: logged deltas came first
	}
	data, ok := s.Data(ev)
	if s.ending {
		s.withhold(data, ok)
		return
	}
	if !ok {
		s.Emit(ev)
		return
	}
	if bytes.Equal(data, doneData) {
		s.writeCarry()
		s.Emit(ev)
		return
	}
	if !gjson.ValidBytes(data) {
		if hasToolCalls(data) {
			s.Fail(errors.New("chat stream: invalid JSON around tool calls"))
			return
		}
		s.Emit(ev) // not a chunk; it can hold no call
		return
	}
	repl, drop, err := s.chunk(data)
	switch {
	case err != nil:
		s.Fail(err)
	case drop:
		s.writeEvent(ev, "") // its other lines (id:, comments) stay
	case repl == "":
		s.Emit(ev)
	default:
		s.writeEvent(ev, repl)
	}
}

// withhold takes an event that comes after the finish chunk of a response
// whose end is withheld: nothing of it is written; its usage is carried to
// the turn's last usage chunk, and a [DONE] is remembered.
func (s *chatStream) withhold(data []byte, ok bool) {
	switch {
	case !ok:
	case bytes.Equal(data, doneData):
		s.t.doneSeen = true
	case gjson.ValidBytes(data):
		if u := gjson.GetBytes(data, "usage"); !jsonedit.IsNull(u) {
			s.t.carry = turn.SumUsage(s.t.carry, u.Raw)
		}
	}
}

// chunk reads one chunk into the stream state and says what to write in its
// place: repl is the new data ("" to keep the event as it is), or drop is
// true when the chunk carried nothing but held fragments (or, in a
// continuation, nothing the app needs). Content and call chunks for choices
// whose held calls it finishes are written before it returns.
func (s *chatStream) chunk(data []byte) (repl string, drop bool, err error) {
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return "", false, nil
	}
	if err := chatShape.Ambiguity(root); err != nil {
		return "", false, fmt.Errorf("chat stream: %w", err)
	}
	s.edits = s.edits[:0]
	if s.inCont {
		// One message: every chunk carries the first response's id, which
		// openai-go checks (wire-formats.md §1.3).
		if id := root.Get("id"); s.t.idRaw != "" && id.Exists() && id.Raw != s.t.idRaw {
			ed, e := jsonedit.Of(data, id, s.t.idRaw)
			if e != nil {
				return "", false, e
			}
			s.edits = append(s.edits, ed)
		}
	}
	// An event without choices (the usage chunk, an {"error":…} event that
	// ends the stream for openai-go, wire-formats.md §1.2) goes out as it is.
	// An error event that does carry choices is read like any chunk, so no
	// client that reads past the error sees a held fragment.
	choices := root.Get("choices")
	droppable, seen := true, false
	if choices.IsArray() {
		pos := 0
		choices.ForEach(func(_, ch gjson.Result) bool {
			seen = true
			ci := choiceIndex(ch, pos)
			pos++
			keep, e := s.choiceDelta(data, root, ch, ci)
			if e != nil {
				err = e
				return false
			}
			droppable = droppable && !keep
			return s.Err() == nil
		})
		if err != nil || s.Err() != nil {
			return "", false, err
		}
	}
	var usage gjson.Result // read only when it matters: most chunks are not dropped
	carried := s.ending || s.inCont && s.t.carry != ""
	if carried || seen && droppable {
		usage = root.Get("usage")
	}
	usageGone := false
	if carried && !jsonedit.IsNull(usage) {
		// The usage of a response whose end is withheld waits for the
		// turn's last usage chunk, which carries the sum.
		sum := "null"
		if s.ending {
			s.t.carry = turn.SumUsage(s.t.carry, usage.Raw)
			usageGone = true
		} else {
			sum, s.t.carry = turn.SumUsage(s.t.carry, usage.Raw), ""
		}
		ed, e := jsonedit.Of(data, usage, sum)
		if e != nil {
			return "", false, e
		}
		s.edits = append(s.edits, ed)
	}
	if seen && droppable && (jsonedit.IsNull(usage) || usageGone) || !seen && usageGone {
		return "", true, nil
	}
	if len(s.edits) == 0 {
		return "", false, nil
	}
	return string(jsonedit.Apply(data, s.edits)), false, nil
}

// choiceDelta reads one choice of a chunk: its content, its tool call
// fragments, its finish. It adds the edits the choice needs to s.edits and
// reports whether the choice must be written (keep false: it carried only
// what was taken out).
func (s *chatStream) choiceDelta(data []byte, root, ch gjson.Result, ci int) (keep bool, err error) {
	st := s.choice(ci)
	delta := ch.Get("delta")
	if fc := delta.Get("function_call"); fc.Exists() {
		if err := legacyCall(fc, st.legacy, s.h); err != nil {
			return false, fmt.Errorf("chat stream: choice %d: %w", ci, err)
		}
		st.legacy += fc.Get("name").Str
	}
	c := delta.Get("content")
	if c.Type == gjson.String {
		st.content = append(st.content, c.Str...)
	}
	removed, newDelta, err := s.toolDeltas(st, ci, delta)
	if err != nil {
		return false, err
	}
	if s.inCont {
		// The app reads one message: no second role, and a blank line
		// between the first response's text and the follow-up's.
		d, changed := newDelta, newDelta != ""
		if !changed {
			d = delta.Raw
		}
		if delta.Get("role").Exists() {
			if d, err = sjson.Delete(d, "role"); err != nil {
				return false, err
			}
			removed, changed = true, true
		}
		if st.sep && c.Type == gjson.String && c.Str != "" {
			if d, err = sjson.SetRaw(d, "content", `"\n\n`+c.Raw[1:]); err != nil {
				return false, err
			}
			st.sep, changed = false, true
		}
		if changed {
			newDelta = d
		}
	}
	if newDelta != "" {
		ed, e := jsonedit.Of(data, delta, newDelta)
		if e != nil {
			return false, e
		}
		s.edits = append(s.edits, ed)
	}
	fr := ch.Get("finish_reason")
	finishNull := jsonedit.IsNull(fr)
	if fr.Type == gjson.String {
		if st.index == 0 {
			s.finished = true
		}
		settled := st.held > 0
		if settled {
			s.settle(root, st)
			if s.Err() != nil {
				return false, nil
			}
		}
		reason := fr.Str
		if settled || s.inCont {
			reason = finishReason(reason, st.passed > 0, s.inCont)
		}
		if s.t != nil && s.t.Withholds() && !s.ending {
			// Refused calls go back to the model, or held ones may be
			// answered while the stream waits: this response's end is
			// withheld, for the follow-up's (or Finish's) to take its place.
			s.ending, s.slowAll = true, true
			s.t.endReason = fr.Str
			s.t.endEnv = s.envelope(s.t.endEnv[:0], root)
			reason, finishNull, removed = "", true, true
		}
		if reason != fr.Str {
			repl := "null"
			if reason != "" {
				repl = strconv.Quote(reason)
			}
			ed, e := jsonedit.Of(data, fr, repl)
			if e != nil {
				return false, e
			}
			s.edits = append(s.edits, ed)
		}
	}
	if newDelta == "" {
		newDelta = delta.Raw
	}
	return !removed || !finishNull || !jsonedit.IsNull(ch.Get("logprobs")) || meaningful(newDelta), nil
}

// finishReason is the finish_reason the app reads: "tool_calls" only when a
// call reached it. A "stop" becomes "tool_calls" only in a continuation
// (the first response passed a call); other reasons stay.
func finishReason(reason string, called, inCont bool) string {
	switch {
	case reason == "tool_calls" && !called:
		return "stop"
	case reason == "stop" && called && inCont:
		return "tool_calls"
	}
	return reason
}

// meaningful reports whether a delta object carries anything for the app:
// a member that is neither null nor "".
func meaningful(delta string) bool {
	found := false
	gjson.Parse(delta).ForEach(func(_, v gjson.Result) bool {
		found = v.Type != gjson.Null && !(v.Type == gjson.String && v.Str == "")
		return !found
	})
	return found
}

// toolDeltas reads a delta's tool_calls into the choice's calls. It returns
// whether held fragments were removed, and the delta rewritten ("" if it is
// unchanged): held entries out (the key too if none is left), passed ones
// renumbered densely, as a gap becomes a phantom call in openai-go and a
// TypeError in openai-node (wire-formats.md §0.1, §1.3).
func (s *chatStream) toolDeltas(st *chatChoice, ci int, delta gjson.Result) (removed bool, repl string, err error) {
	tcs := delta.Get("tool_calls")
	if !tcs.IsArray() {
		return false, "", nil
	}
	var kept []byte
	nkept, changed, pos := 0, false, 0
	tcs.ForEach(func(_, tc gjson.Result) bool {
		entry := tc.Raw
		idx := pos
		pos++
		if tc.IsObject() {
			if v := tc.Get("index"); v.Type == gjson.Number {
				idx = int(v.Int())
			}
			c := st.call(idx)
			var typ string
			if c != nil {
				typ = c.typ
			}
			typ, fn, e := callBody(tc, typ, s.h)
			if e != nil {
				err = fmt.Errorf("chat stream: choice %d: %w", ci, e)
				return false
			}
			name := fn.Get("name")
			switch {
			case c == nil && name.Type != gjson.String:
				// Without a name the call cannot be judged; openai-go
				// would build a nameless call (wire-formats.md §1.3).
				err = fmt.Errorf("chat stream: choice %d: tool call %d starts without a name", ci, idx)
				return false
			case c == nil:
				c = s.addCall(st, idx, typ, name.Str, tc.Get("id").Str)
			case name.Str != "" && !c.held:
				// The name was judged on its first delta; clients append
				// later name fragments (openai-go: Name +=, wire-formats.md
				// §1.2), so a passed call could grow into a gated name.
				err = fmt.Errorf("chat stream: choice %d: tool call %d changes its name after it was let through", ci, idx)
				return false
			case name.Str != "":
				c.name += name.Str
			}
			if a := callArguments(fn); a.Type == gjson.String {
				c.args = append(c.args, a.Str...)
			} else if a.Exists() {
				c.args = append(c.args, a.Raw...)
			}
			if c.held {
				removed = true
				return true
			}
			if c.dense != idx {
				if entry, err = sjson.SetRaw(entry, "index", strconv.Itoa(c.dense)); err != nil {
					return false
				}
				changed = true
			}
		}
		if nkept > 0 {
			kept = append(kept, ',')
		}
		kept = append(kept, entry...)
		nkept++
		return true
	})
	if err != nil || (!removed && !changed) {
		return removed, "", err
	}
	if nkept == 0 {
		repl, err = sjson.Delete(delta.Raw, "tool_calls")
	} else {
		repl, err = sjson.SetRaw(delta.Raw, "tool_calls", "["+string(kept)+"]")
	}
	return removed, repl, err
}

func (s *chatStream) choice(index int) *chatChoice {
	for _, c := range s.choices {
		if c.index == index {
			return c
		}
	}
	c := &chatChoice{index: index}
	s.choices = append(s.choices, c)
	return c
}

func (st *chatChoice) call(index int) *chatCall {
	for _, c := range st.calls {
		if c.index == index {
			return c
		}
	}
	return nil
}

// addCall records a call's first delta and judges it, once.
func (s *chatStream) addCall(st *chatChoice, index int, typ, name, id string) *chatCall {
	c := &chatCall{index: index, typ: typ, name: name, id: id, held: s.h.Gated(name)}
	if c.held {
		if st.held == 0 {
			s.waiting++
		}
		st.held++
	} else {
		c.dense = st.passed
		st.passed++
	}
	st.calls = append(st.calls, c)
	return c
}

// settle hands a finished choice's inspected calls to Hold and writes, in
// the envelope of the chunk that finished the choice (wire-formats.md
// §1.2), the text it returns as one content chunk, then each passed call as
// one delta chunk. Refused calls that can go back to the model become the
// turn's pending step; the others' refusals are shown in the text.
func (s *chatStream) settle(root gjson.Result, st *chatChoice) {
	calls := slices.Clone(st.calls)
	slices.SortStableFunc(calls, func(a, b *chatCall) int { return a.index - b.index })
	msg := []byte(`{"role":"assistant","content":`)
	if len(st.content) > 0 {
		msg = gjson.AppendJSONString(msg, string(st.content))
	} else {
		msg = append(msg, "null"...)
	}
	msg = append(msg, `,"tool_calls":[`...)
	var held []provider.Call
	var judged []*chatCall
	for i, c := range calls {
		if i > 0 {
			msg = append(msg, ',')
		}
		start := len(msg)
		msg = c.appendJSON(msg)
		if c.held && !c.done {
			c.done = true
			held = append(held, provider.Call{
				Choice:    st.index,
				Position:  c.index,
				ID:        c.id,
				Type:      c.typ,
				Name:      c.name,
				Arguments: slices.Clone(c.args),
				Raw:       slices.Clone(msg[start:]),
			})
			judged = append(judged, c)
		}
	}
	msg = append(msg, "]}"...)
	st.held = 0
	s.waiting--

	s.FlushNow() // what came before must not wait for Hold
	if s.Err() != nil {
		return
	}
	v := s.h.Hold(s.ctx, held, msg, provider.Kept{})
	fates, contents, anyRefused, ids := v.Fates(held)
	cont := anyRefused && ids && s.t != nil && len(s.choices) == 1 && st.index == 0 && s.t.allowed()
	text := v.Text
	if !cont {
		text = provider.InPlace(text, fates, contents)
	}
	if cont {
		step := &chatStep{content: string(st.content), fallback: provider.InPlace("", fates, contents)}
		for i, c := range judged {
			if fates[i] == provider.Refused {
				step.calls = append(step.calls, held[i].Raw)
				step.results = append(step.results, provider.Refusal{CallID: c.id, Content: contents[i]})
			}
		}
		s.t.Pending = step
		if s.t.idRaw == "" {
			s.t.idRaw = root.Get("id").Raw
		}
	}

	if text != "" {
		if len(st.content) > 0 || st.shown {
			text = "\n\n" + text
		}
		s.writeText(root, nil, st.index, text)
		st.shown = true
	}
	for i, c := range judged {
		if fates[i] != provider.Passed {
			continue
		}
		c.dense = st.passed
		st.passed++
		ev := append(s.out[:0], '{')
		ev = s.envelope(ev, root)
		ev = append(ev, `"choices":[{"index":`...)
		ev = strconv.AppendInt(ev, int64(st.index), 10)
		ev = append(ev, `,"delta":{"tool_calls":[`...)
		ev = c.appendDelta(ev)
		ev = append(ev, `]},"logprobs":null,"finish_reason":null}]}`...)
		s.out = ev
		s.WriteEvent("", ev)
	}
	if s.t != nil {
		s.t.HoldsStep(v, st.passed == 0 && len(s.choices) == 1 && st.index == 0 && s.t.allowed())
		if s.t.HeldStep() != "" && s.t.idRaw == "" {
			s.t.idRaw = root.Get("id").Raw
		}
	}
}

// envelope appends a chunk's envelope members, each followed by a comma:
// id (the turn's, in a continuation), object, created, model,
// system_fingerprint, service_tier.
func (s *chatStream) envelope(dst []byte, root gjson.Result) []byte {
	for _, k := range [...]string{"id", "object", "created", "model", "system_fingerprint", "service_tier"} {
		v := root.Get(k)
		raw := v.Raw
		if k == "id" && s.t != nil && s.t.idRaw != "" {
			raw = s.t.idRaw
		} else if !v.Exists() {
			continue
		}
		dst = strconv.AppendQuote(dst, k)
		dst = append(dst, ':')
		dst = append(dst, raw...)
		dst = append(dst, ',')
	}
	return dst
}

// writeText writes one content chunk for choice ci, in the envelope env,
// or else that of the chunk root.
func (s *chatStream) writeText(root gjson.Result, env []byte, ci int, text string) {
	ev := append(s.out[:0], '{')
	if env != nil {
		ev = append(ev, env...)
	} else {
		ev = s.envelope(ev, root)
	}
	ev = append(ev, `"choices":[{"index":`...)
	ev = strconv.AppendInt(ev, int64(ci), 10)
	ev = append(ev, `,"delta":{"content":`...)
	ev = gjson.AppendJSONString(ev, text)
	ev = append(ev, `},"logprobs":null,"finish_reason":null}]}`...)
	s.out = ev
	s.WriteEvent("", ev)
}

// writeCarry writes the usage still carried from withheld responses as
// one usage chunk, before the turn's [DONE].
func (s *chatStream) writeCarry() {
	if s.t == nil || s.t.carry == "" {
		return
	}
	ev := append(s.out[:0], '{')
	ev = append(ev, s.t.endEnv...)
	ev = append(ev, `"choices":[],"usage":`...)
	ev = append(ev, s.t.carry...)
	ev = append(ev, '}')
	s.t.carry = ""
	s.out = ev
	s.WriteEvent("", ev)
}

// WriteEnd implements turn.Ender: it writes the end of the turn that a
// continuation withheld: text (if any) as a content chunk for choice 0,
// the finish chunk, the carried usage and [DONE] if the upstream sent one.
func (s *chatStream) WriteEnd(text string) {
	st := s.choice(0)
	if text != "" {
		if len(st.content) > 0 || st.shown {
			text = "\n\n" + text
		}
		s.writeText(gjson.Result{}, s.t.endEnv, 0, text)
		st.shown = true
	}
	reason := finishReason(s.t.endReason, st.passed > 0, true)
	if reason == "" {
		reason = "stop"
	}
	ev := append(s.out[:0], '{')
	ev = append(ev, s.t.endEnv...)
	ev = append(ev, `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":`...)
	ev = strconv.AppendQuote(ev, reason)
	ev = append(ev, "}]}"...)
	s.out = ev
	s.WriteEvent("", ev)
	s.writeCarry()
	if s.t.doneSeen {
		s.Emit([]byte("data: [DONE]\n\n"))
	}
	s.ending = false
	s.FlushNow()
}

// appendJSON appends the call as it appears in a complete message.
func (c *chatCall) appendJSON(b []byte) []byte {
	typ, args := c.typ, "arguments"
	switch typ {
	case "":
		typ = "function"
	case "custom":
		args = "input"
	}
	b = append(b, `{"id":`...)
	b = gjson.AppendJSONString(b, c.id)
	b = append(b, `,"type":`...)
	b = gjson.AppendJSONString(b, typ)
	b = append(b, ',')
	b = gjson.AppendJSONString(b, typ)
	b = append(b, `:{"name":`...)
	b = gjson.AppendJSONString(b, c.name)
	b = append(b, ',', '"')
	b = append(b, args...)
	b = append(b, `":`...)
	b = gjson.AppendJSONString(b, string(c.args))
	return append(b, "}}"...)
}

// appendDelta appends the call as the first delta of a stream carrying it
// whole: index (dense), id, type, name and the complete arguments.
func (c *chatCall) appendDelta(b []byte) []byte {
	start := len(b)
	b = c.appendJSON(b) // {"id":…}
	index := strconv.AppendInt([]byte(`"index":`), int64(c.dense), 10)
	return slices.Insert(b, start+1, append(index, ',')...)
}

// chatStopEvent is an error chunk: openai-go ends the stream with an error
// for an event whose data has "error" (ssestream.go), the Node SDK throws
// an APIError for one whose data.error is set (core/streaming.ts).
func chatStopEvent(message string) []byte {
	b := append([]byte(`data: {"error":{"message":`), gjson.AppendJSONString(nil, message)...)
	return append(b, `,"type":"toolgate_error","param":null,"code":"response_refused"}}`+"\n\n"...)
}

func (s *chatStream) StopEvent(message string) []byte { return chatStopEvent(message) }

// writeEvent writes ev with its data replaced by data (several data
// lines when it holds line ends); its other lines (id:, comments) are
// kept, in order. With no data ("") its data lines are dropped, and an
// event left with nothing is not written.
func (s *chatStream) writeEvent(ev []byte, data string) {
	s.WriteReplaced(ev, []byte(data), data == "")
}
