package anthropic

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
	"github.com/toolgate/toolgate/wire/sse"
	"github.com/toolgate/toolgate/wire/stream"
	"github.com/toolgate/toolgate/wire/turn"
)

// NewStream returns the rewriter of a Messages event stream
// (wire-formats.md §3.2). The upstream body may arrive in any split.
//
// Events are passed on whole, as soon as their closing blank line arrives;
// flush (may be nil) is called once after each Write that wrote any. An
// event whose bytes hold no "tool_use" is written as it came, by a byte
// search: no JSON work, no copy unless it spans two Writes; one that does
// is read alone, and written as it came unless it starts an inspected
// call. Until such a call, a stream passes byte for byte. Every event
// keeps its "event:" line (anthropic-sdk-go skips events without one).
//
// A tool_use block whose name Holder.Gated reports is inspected: from its
// content_block_start on, its events are dropped and its input collected,
// and the blocks that start after it wait (pings and the blocks already
// open go on), since a block may only start at the index after the last
// (anthropic-sdk-go's Accumulate errors on a gap). At message_delta the
// message's inspected calls go to Hold together, and in the order the
// provider sent them come: the blocks that waited, renumbered densely; each
// passed call as one tool_use block (content_block_start with the block as
// it started, one input_json_delta with the whole input, content_block_stop);
// and, at the place of the first held call, one text block (start, one
// text_delta, stop) holding Verdict.Text, after a blank line when the
// message had text before it. message_delta's stop_reason "tool_use"
// becomes "end_turn" when no tool_use block reached the app. Refusals are
// shown in that text too (a Turn sends them back to the model instead).
// ping, error, message_start and message_stop events, usage and padded JSON
// pass as they came.
//
// The message Hold gets needs every block of the response, which went out
// before any call was seen. So events that pass are also copied to a log,
// read only when an inspected call turns up, or every 256 KiB to bound it.
//
// Errors fail closed: nothing more is written. They come from invalid JSON
// in an event that carries "tool_use" or comes while an inspected call
// waits, a tool_use block without a name, a second block at one index, an
// event for no known block while a call waits, over 8 MiB held back, an
// event over 8 MiB, or dst and flush. Close reports a body that ends
// mid-line; an inspected call whose message never reached message_delta is
// simply never written or held.
func (Anthropic) NewStream(ctx context.Context, dst io.Writer, flush func() error, h provider.Holder) provider.Stream {
	s := &anthStream{ctx: ctx, h: h, hold: -1}
	s.Attach(dst, flush, "anthropic stream", s)
	return s
}

type anthStream struct {
	ctx context.Context
	h   provider.Holder
	t   *anthTurn // the turn it belongs to; nil: no continuation

	stream.Frame               // the event begun in an earlier Write, not yet complete
	log          *bytes.Buffer // passed events, not yet read (pooled)
	unended      bool          // the last event written (at Close) lacks its closing blank line

	// The current response.
	blocks     []*anthBlock // its blocks, in order of start (complete once the log is folded)
	hold       int          // position in blocks of the first inspected call waiting for message_delta; -1: none
	heldBytes  int          // bytes held back while it waits
	startUsage string       // message_start's usage (raw JSON)
	slowAll    bool         // read every event: a call was inspected, or the response continues an earlier one
	inCont     bool         // the response continues an earlier one: message_start dropped, indices after the turn's
	ending     bool         // the response's end is withheld: a continuation may follow
	finished   bool         // the response's message_delta arrived

	// The turn: the app reads one message.
	next     int   // the index the next block written gets
	toolUses int   // tool_use blocks written
	texted   bool  // text was written (the gate's text then starts after a blank line)
	sep      bool  // the response's first text needs a blank line before it
	open     []int // indices of blocks started and not stopped

	out []byte // scratch: a rewritten event
}

// anthBlock is one content block of a response.
type anthBlock struct {
	index int    // the provider's index
	out   int    // the index it is written with; -1 while it waits or when it never is
	typ   string // content_block.type
	start string // content_block as it started (raw JSON)
	id    string // tool_use
	name  string

	// What its deltas added.
	text, thinking, signature, input []byte
	citations                        []string

	gated bool     // an inspected tool_use: its events are dropped, it goes to Hold
	evs   [][]byte // events that wait (a block that started after an inspected call)
}

// anthMaxHeld caps what one message may make us hold back: the inspected
// calls' input and the events of the blocks after them.
const anthMaxHeld = 8 << 20

var (
	errAnthMidLine    = errors.New("anthropic stream: body ends mid-line")
	errAnthEventLarge = fmt.Errorf("anthropic stream: event over %d bytes", stream.MaxEvent)
	errAnthHeldLarge  = fmt.Errorf("anthropic stream: over %d bytes held back", anthMaxHeld)
	errAnthClosed     = errors.New("anthropic stream: write after close")
)

func (s *anthStream) Write(p []byte) (int, error) {
	return s.WriteEvents(s, p, errAnthEventLarge, errAnthClosed)
}

// Close handles a last event left without its closing blank line, then
// gives the buffers back. It reports a body that ends mid-line (after
// passing the partial line on if it could pass) and any earlier error.
func (s *anthStream) Close() error {
	if s.MarkClosed() {
		return s.Err()
	}
	midLine, wrote := s.CloseEventsKeep(s)
	s.unended = wrote // the last event, passed on as it came, lacks its blank line
	s.FlushNow()
	if midLine && s.Err() == nil {
		s.SetErr(errAnthMidLine)
	}
	stream.PutBuf(s.log)
	s.log = nil
	return s.Err()
}

// Passes reports whether ev goes out unread: no inspected call was seen in
// the response (nor does it continue an earlier one), and it holds no
// "tool_use" or, read alone, starts no inspected call (a tool_use block of
// another tool, a message_delta saying "tool_use"). Such an event is
// copied to the log, read only if an inspected call turns up (fold).
func (s *anthStream) Passes(ev []byte) bool {
	if s.slowAll || hasToolUse(ev) && !s.passesRead(ev) {
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

// passesRead reads an event that holds "tool_use" while nothing was
// inspected: it passes unless it starts an inspected call, or cannot be
// judged alone (invalid JSON, a tool_use block without a name, a
// message_start with content), which the slow path then handles.
func (s *anthStream) passesRead(ev []byte) bool {
	data, ok := s.Data(ev)
	if !ok {
		return true
	}
	if !gjson.ValidBytes(data) {
		return false
	}
	root := gjson.ParseBytes(data)
	if _, ok := anthType(ev, root); !ok || anthShape.Ambiguity(root) != nil {
		return false // the slow path refuses it
	}
	switch root.Get("type").Str {
	case "content_block_start":
		cb := root.Get("content_block")
		if _, stray := anthStrayCall(s.h, cb); stray {
			return false // the slow path refuses it
		}
		if cb.Get("type").Str != "tool_use" {
			return true
		}
		name := cb.Get("name")
		return name.Type == gjson.String && !s.h.Gated(name.Str)
	case "message_start":
		return !turn.HasElements(root.Get("message.content"))
	}
	return true
}

// fold reads the logged events into the response's blocks and empties the
// log. They went out as they came: their indices are the written ones.
// Events that are not valid JSON are skipped: they carried no call.
func (s *anthStream) fold() {
	b := s.log.Bytes()
	for len(b) > 0 {
		e := sse.EventLen(b)
		b0 := b[:e]
		data, ok := s.Data(b0)
		b = b[e:]
		if !ok || !gjson.ValidBytes(data) {
			continue
		}
		root := gjson.ParseBytes(data)
		typ, _ := anthType(b0, root)
		switch typ {
		case "message_start":
			s.readStart(root.Get("message"))
		case "content_block_start":
			idx, cb := root.Get("index"), root.Get("content_block")
			if idx.Type != gjson.Number || !cb.IsObject() || s.block(int(idx.Int())) != nil {
				continue
			}
			blk := s.addBlock(int(idx.Int()), cb)
			blk.out = blk.index
			s.next = max(s.next, blk.out+1)
			if blk.typ == "tool_use" {
				s.toolUses++
			}
			s.open = append(s.open, blk.out)
			s.texted = s.texted || cb.Get("text").Str != ""
		default:
			idx := root.Get("index")
			if idx.Type != gjson.Number {
				continue
			}
			if blk := s.block(int(idx.Int())); blk != nil {
				s.accumulate(blk, root)
				s.noteWritten(blk, root)
			}
		}
	}
	s.log.Reset()
}

// anthType is an event's type: its data's "type", or, without one, its
// event: line's name (readers differ in which they go by). ok is false
// when the two are both given and disagree.
func anthType(ev []byte, root gjson.Result) (typ string, ok bool) {
	name := string(sse.Type(ev))
	t := root.Get("type")
	switch {
	case t.Type != gjson.String:
		return name, true
	case name != "" && t.Str != name:
		return t.Str, false
	}
	return t.Str, true
}

// block returns the response's block with the provider's index, or nil.
func (s *anthStream) block(index int) *anthBlock {
	for i := len(s.blocks) - 1; i >= 0; i-- {
		if s.blocks[i].index == index {
			return s.blocks[i]
		}
	}
	return nil
}

func (s *anthStream) addBlock(index int, cb gjson.Result) *anthBlock {
	b := &anthBlock{index: index, out: -1, typ: cb.Get("type").Str, start: cb.Raw}
	if b.typ == "tool_use" {
		b.id, b.name = cb.Get("id").Str, cb.Get("name").Str
	}
	s.blocks = append(s.blocks, b)
	return b
}

// readStart reads a message_start's message: its usage, and any content
// blocks it already holds (the API sends none), which count as written at
// their positions. It reports an inspected call among them.
func (s *anthStream) readStart(msg gjson.Result) (gated bool) {
	s.startUsage = msg.Get("usage").Raw
	i := 0
	msg.Get("content").ForEach(func(_, cb gjson.Result) bool {
		if cb.IsObject() {
			b := s.addBlock(i, cb)
			if b.typ == "tool_use" {
				gated = gated || s.h.Gated(b.name)
				s.toolUses++
			}
			if _, stray := anthStrayCall(s.h, cb); stray {
				gated = true // refused as an inspected call there would be
			}
			b.out = s.next
			s.next++
			s.texted = s.texted || cb.Get("text").Str != ""
		}
		i++
		return true
	})
	return gated
}

// accumulate adds what a delta brings to its block, as the API's
// accumulators do (anthropic-sdk-go's Message.Accumulate).
func (s *anthStream) accumulate(b *anthBlock, root gjson.Result) {
	if root.Get("type").Str != "content_block_delta" {
		return
	}
	d := root.Get("delta")
	switch d.Get("type").Str {
	case "text_delta":
		b.text = append(b.text, d.Get("text").Str...)
	case "input_json_delta":
		b.input = append(b.input, d.Get("partial_json").Str...)
	case "thinking_delta":
		b.thinking = append(b.thinking, d.Get("thinking").Str...)
	case "signature_delta":
		b.signature = append(b.signature, d.Get("signature").Str...)
	case "citations_delta":
		if c := d.Get("citation"); c.Exists() {
			b.citations = append(b.citations, c.Raw)
		}
	}
}

// noteWritten keeps the turn's state for an event of a written block:
// text shown, blocks closed.
func (s *anthStream) noteWritten(b *anthBlock, root gjson.Result) {
	switch root.Get("type").Str {
	case "content_block_delta":
		if d := root.Get("delta"); d.Get("type").Str == "text_delta" && d.Get("text").Str != "" {
			s.texted = true
		}
	case "content_block_stop":
		s.closeIndex(b.out)
	}
}

func (s *anthStream) closeIndex(i int) {
	if k := slices.Index(s.open, i); k >= 0 {
		s.open = slices.Delete(s.open, k, k+1)
	}
}

// Slow handles an event that holds "tool_use", or any event once the
// response inspected a call or continues an earlier one.
func (s *anthStream) Slow(ev []byte) {
	if s.log != nil && s.log.Len() > 0 {
		s.fold() // the blocks so far, before this event changes them
	}
	if s.ending {
		return // after a withheld message_delta: nothing of it is written
	}
	data, ok := s.Data(ev)
	if !ok {
		if !s.inCont {
			s.Emit(ev) // comments, an id: line: nothing to read
		}
		return // a follow-up's: nothing the app needs
	}
	if !gjson.ValidBytes(data) {
		if s.hold >= 0 || hasToolUse(data) {
			s.Fail(errors.New("anthropic stream: invalid JSON around tool_use"))
			return
		}
		if !s.inCont {
			s.Emit(ev) // not an event of the message; it can hold no call
		}
		return // a follow-up's would break the app's message
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		if !s.inCont {
			s.Emit(ev)
		}
		return
	}
	if err := anthShape.Ambiguity(root); err != nil {
		s.Fail(fmt.Errorf("anthropic stream: %w", err))
		return
	}
	typ, ok := anthType(ev, root)
	if !ok && hasToolUse(data) {
		// A reader that goes by the event: line would see a block this
		// one cannot place: fail closed.
		s.Fail(errors.New("anthropic stream: an event around tool_use whose event: line and data type disagree"))
		return
	}
	switch typ {
	case "ping", "error":
		s.Emit(ev)
	case "message_start":
		s.messageStart(ev, root)
	case "content_block_start":
		s.blockStart(ev, data, root)
	case "message_delta":
		s.messageDelta(ev, data, root)
	case "message_stop":
		s.Emit(ev)
	default: // content_block_delta, content_block_stop, or a type to come
		s.blockEvent(ev, data, root)
	}
}

func (s *anthStream) messageStart(ev []byte, root gjson.Result) {
	if s.readStart(root.Get("message")) {
		s.Fail(errors.New("anthropic stream: message_start holds an inspected tool_use"))
		return
	}
	if s.inCont {
		if len(s.blocks) > 0 {
			s.Fail(errors.New("anthropic stream: a follow-up's message_start holds content"))
		}
		return // the app reads one message: the first response's start stands
	}
	s.Emit(ev)
}

func (s *anthStream) blockStart(ev, data []byte, root gjson.Result) {
	idx, cb := root.Get("index"), root.Get("content_block")
	if idx.Type != gjson.Number || !cb.IsObject() {
		if s.hold >= 0 || hasToolUse(data) {
			s.Fail(errors.New("anthropic stream: content_block_start without an index or block"))
			return
		}
		s.Emit(ev)
		return
	}
	if s.block(int(idx.Int())) != nil {
		s.Fail(fmt.Errorf("anthropic stream: a second block starts at index %d", idx.Int()))
		return
	}
	if name, stray := anthStrayCall(s.h, cb); stray {
		s.Fail(fmt.Errorf("anthropic stream: %w", errAnthStray(cb, name)))
		return
	}
	b := s.addBlock(int(idx.Int()), cb)
	if b.typ == "tool_use" {
		if cb.Get("name").Type != gjson.String {
			s.Fail(fmt.Errorf("anthropic stream: tool_use block %d starts without a name", b.index))
			return
		}
		b.gated = s.h.Gated(b.name)
	}
	switch {
	case b.gated:
		if s.hold < 0 {
			s.hold = len(s.blocks) - 1
		}
		s.slowAll = true
	case s.hold >= 0:
		s.holdBack(b, ev)
	default:
		b.out = s.next
		s.next++
		s.emit(b, ev, data, root)
	}
}

func (s *anthStream) blockEvent(ev, data []byte, root gjson.Result) {
	idx := root.Get("index")
	var b *anthBlock
	if idx.Type == gjson.Number {
		b = s.block(int(idx.Int()))
	}
	if b == nil {
		if s.hold >= 0 {
			s.Fail(fmt.Errorf("anthropic stream: %s for no known block while a call waits", root.Get("type").Str))
			return
		}
		s.Emit(ev)
		return
	}
	s.accumulate(b, root)
	switch {
	case b.gated:
		s.heldBytes += len(data)
		if s.heldBytes > anthMaxHeld {
			s.Fail(errAnthHeldLarge)
		}
	case b.out < 0:
		s.holdBack(b, ev)
	default:
		s.emit(b, ev, data, root)
	}
}

// holdBack keeps an event of a block that started after an inspected call,
// to be written once the call is judged.
func (s *anthStream) holdBack(b *anthBlock, ev []byte) {
	s.heldBytes += len(ev)
	if s.heldBytes > anthMaxHeld {
		s.Fail(errAnthHeldLarge)
		return
	}
	b.evs = append(b.evs, slices.Clone(ev))
}

// emit writes an event of a written block: its index made the written one,
// and the response's first text after a blank line when it continues text.
func (s *anthStream) emit(b *anthBlock, ev, data []byte, root gjson.Result) {
	var edits []jsonedit.Edit
	if idx := root.Get("index"); idx.Type == gjson.Number && idx.Raw != strconv.Itoa(b.out) {
		e, err := jsonedit.Of(data, idx, strconv.Itoa(b.out))
		if err != nil {
			s.Fail(fmt.Errorf("anthropic stream: %w", err))
			return
		}
		edits = append(edits, e)
	}
	var text gjson.Result
	switch root.Get("type").Str {
	case "content_block_start":
		if b.typ == "tool_use" {
			s.toolUses++
		}
		s.open = append(s.open, b.out)
		if b.typ == "text" {
			text = root.Get("content_block.text")
		}
	case "content_block_delta":
		if d := root.Get("delta"); d.Get("type").Str == "text_delta" {
			text = d.Get("text")
		}
	case "content_block_stop":
		s.closeIndex(b.out)
	}
	if text.Type == gjson.String && text.Str != "" {
		if s.sep {
			e, err := jsonedit.Of(data, text, `"\n\n`+text.Raw[1:])
			if err != nil {
				s.Fail(fmt.Errorf("anthropic stream: %w", err))
				return
			}
			edits = append(edits, e)
		}
		s.sep, s.texted = false, true
	}
	if len(edits) == 0 {
		s.Emit(ev)
		return
	}
	s.writeEvent(ev, string(jsonedit.Apply(data, edits)))
}

func (s *anthStream) messageDelta(ev, data []byte, root gjson.Result) {
	s.finished = true
	if s.hold >= 0 {
		s.settle()
		if s.Err() != nil {
			return
		}
	}
	usage := root.Get("usage")
	if s.t != nil && s.t.Withholds() && !s.ending {
		// Refused calls go back to the model, or held ones may be answered
		// while the stream waits: this response's end is withheld, for the
		// follow-up's (or Finish's) to take its place.
		s.ending, s.slowAll = true, true
		s.t.carry = turn.SumUsage(s.t.carry, anthOverlay(s.startUsage, usage.Raw))
		s.t.endData = string(data)
		return
	}
	var edits []jsonedit.Edit
	sr := root.Get("delta.stop_reason")
	if sr.Type == gjson.String {
		if r := anthStopReason(sr.Str, s.toolUses > 0, s.inCont); r != sr.Str {
			e, err := jsonedit.Of(data, sr, strconv.Quote(r))
			if err != nil {
				s.Fail(fmt.Errorf("anthropic stream: %w", err))
				return
			}
			edits = append(edits, e)
		}
	}
	out := data
	if len(edits) > 0 {
		out = jsonedit.Apply(data, edits)
	}
	if s.t != nil && s.t.carry != "" {
		// The turn's last message_delta carries the usage of every response.
		sum := turn.SumUsage(s.t.carry, anthOverlay(s.startUsage, usage.Raw))
		s.t.carry = ""
		var err error
		if out, err = sjson.SetRawBytes(slices.Clone(out), "usage", []byte(sum)); err != nil {
			s.Fail(fmt.Errorf("anthropic stream: %w", err))
			return
		}
	}
	if len(out) == len(data) && bytes.Equal(out, data) {
		s.Emit(ev)
		return
	}
	s.writeEvent(ev, string(out))
}

// settle hands the message's inspected calls to Hold and writes what
// waited, in the provider's order: blocks that started after the first
// call, renumbered; passed calls whole; the text at the first held call.
func (s *anthStream) settle() {
	var calls []provider.Call
	var judged []*anthBlock
	msg := []byte(`{"role":"assistant","content":[`)
	pos := 0
	for i, b := range s.blocks {
		if i > 0 {
			msg = append(msg, ',')
		}
		start := len(msg)
		msg = b.appendJSON(msg)
		if b.typ != "tool_use" {
			continue
		}
		if b.gated && i >= s.hold {
			calls = append(calls, provider.Call{
				Position:  pos,
				ID:        b.id,
				Type:      "function",
				Name:      b.name,
				Arguments: b.arguments(),
				Raw:       slices.Clone(msg[start:]),
			})
			judged = append(judged, b)
		}
		pos++
	}
	msg = append(msg, "]}"...)

	s.FlushNow() // what came before must not wait for Hold
	if s.Err() != nil {
		return
	}
	v := s.h.Hold(s.ctx, calls, msg, provider.Kept{})
	fates, contents, anyRefused, ids := v.Fates(calls)
	cont := anyRefused && ids && s.t != nil && s.t.allowed()
	text := v.Text
	if !cont {
		text = provider.InPlace(text, fates, contents)
	}
	fateOf := make(map[*anthBlock]provider.Fate, len(judged))
	for i, b := range judged {
		fateOf[b] = fates[i]
	}
	if cont {
		step := &anthStep{fallback: provider.InPlace("", fates, contents)}
		last := 0
		for i, b := range s.blocks {
			if f, ok := fateOf[b]; ok && f == provider.Refused {
				last = i
			}
		}
		for i, b := range s.blocks[:last+1] {
			f, ok := fateOf[b]
			switch {
			case ok && f == provider.Refused:
				step.blocks = append(step.blocks, string(calls[slices.Index(judged, b)].Raw))
				step.results = append(step.results, provider.Refusal{CallID: b.id, Content: contents[slices.Index(judged, b)]})
			case b.typ != "tool_use":
				step.blocks = append(step.blocks, string(s.blocks[i].appendJSON(nil)))
			}
		}
		s.t.Pending = step
	}

	textDone := text == ""
	for _, b := range s.blocks[s.hold:] {
		f, ok := fateOf[b]
		switch {
		case !ok:
			if b.out < 0 && !b.gated {
				b.out = s.next
				s.next++
				for _, ev := range b.evs {
					data, _ := s.Data(ev)
					s.emit(b, ev, data, gjson.ParseBytes(data))
				}
				b.evs = nil
			}
		case f == provider.Passed:
			b.out = s.next
			s.next++
			s.writeToolUse(b)
		case !textDone && (f == provider.Held || !cont):
			s.writeTextBlock(text)
			textDone = true
		}
	}
	if !textDone {
		s.writeTextBlock(text)
	}
	s.hold, s.heldBytes = -1, 0
	if s.t != nil {
		s.t.HoldsStep(v, s.toolUses == 0 && s.t.allowed())
	}
}

// writeToolUse writes a passed call whole: content_block_start with the
// block as it started, one input_json_delta with the whole input,
// content_block_stop.
func (s *anthStream) writeToolUse(b *anthBlock) {
	start := `{"type":"content_block_start","index":` + strconv.Itoa(b.out) + `,"content_block":` + b.start + "}"
	s.WriteEvent("content_block_start", []byte(start))
	ev := append(s.out[:0], `{"type":"content_block_delta","index":`...)
	ev = strconv.AppendInt(ev, int64(b.out), 10)
	ev = append(ev, `,"delta":{"type":"input_json_delta","partial_json":`...)
	ev = gjson.AppendJSONString(ev, string(b.input))
	s.out = append(ev, "}}"...)
	s.WriteEvent("content_block_delta", s.out)
	s.writeStop(b.out)
	s.toolUses++
}

// writeTextBlock writes one text block holding text at the next index,
// after a blank line when text was shown before.
func (s *anthStream) writeTextBlock(text string) {
	if s.texted {
		text = "\n\n" + text
	}
	i := s.next
	s.next++
	ev := append(s.out[:0], `{"type":"content_block_start","index":`...)
	ev = strconv.AppendInt(ev, int64(i), 10)
	s.out = append(ev, `,"content_block":{"type":"text","text":""}}`...)
	s.WriteEvent("content_block_start", s.out)
	ev = append(s.out[:0], `{"type":"content_block_delta","index":`...)
	ev = strconv.AppendInt(ev, int64(i), 10)
	ev = append(ev, `,"delta":{"type":"text_delta","text":`...)
	ev = gjson.AppendJSONString(ev, text)
	s.out = append(ev, "}}"...)
	s.WriteEvent("content_block_delta", s.out)
	s.writeStop(i)
	s.texted, s.sep = true, false
}

// writeStop writes the content_block_stop of the block written at i.
func (s *anthStream) writeStop(i int) {
	ev := append(s.out[:0], `{"type":"content_block_stop","index":`...)
	ev = strconv.AppendInt(ev, int64(i), 10)
	s.out = append(ev, '}')
	s.WriteEvent("content_block_stop", s.out)
}

// WriteEnd implements turn.Ender: it writes the end of the turn that a
// continuation withheld: a content_block_stop for each block left open,
// text (if any) as a text block, the message_delta (the first response's,
// stop_reason made right, usage the sum of every response's) and
// message_stop. A follow-up cut before its message_delta counts the usage
// its message_start gave.
func (s *anthStream) WriteEnd(text string) {
	if s.Continued() && s.startUsage != "" {
		s.t.carry = turn.SumUsage(s.t.carry, s.startUsage)
	}
	if s.unended {
		s.Emit([]byte("\n")) // the last event, passed on at Close, ends here
		s.unended = false
	}
	for _, i := range s.open {
		s.writeStop(i)
	}
	s.open = s.open[:0]
	if text != "" {
		s.writeTextBlock(text)
	}
	data := s.t.endData
	if data == "" {
		data = `{"type":"message_delta","delta":{"stop_reason":null,"stop_sequence":null},"usage":{}}`
	}
	reason := anthStopReason(gjson.Get(data, "delta.stop_reason").Str, s.toolUses > 0, true)
	if reason == "" {
		reason = "end_turn"
	}
	if d, err := sjson.Set(data, "delta.stop_reason", reason); err == nil {
		data = d
	}
	if s.t.carry != "" {
		if d, err := sjson.SetRaw(data, "usage", s.t.carry); err == nil {
			data = d
		}
		s.t.carry = ""
	}
	s.WriteEvent("message_delta", []byte(data))
	s.WriteEvent("message_stop", []byte(`{"type":"message_stop"}`))
	s.ending = false
	s.FlushNow()
}

// appendJSON appends the block as it appears in a complete message: as it
// started, with what its deltas added set over it.
func (b *anthBlock) appendJSON(dst []byte) []byte {
	raw := b.start
	cb := gjson.Parse(raw)
	set := func(key string, val []byte) {
		if r, err := sjson.SetRaw(raw, key, string(val)); err == nil {
			raw = r
		}
	}
	str := func(key string, add []byte) {
		if len(add) > 0 {
			set(key, gjson.AppendJSONString(nil, cb.Get(key).Str+string(add)))
		}
	}
	str("text", b.text)
	str("thinking", b.thinking)
	str("signature", b.signature)
	if len(b.input) > 0 {
		in := b.input
		if !gjson.ValidBytes(in) {
			in = []byte("{}") // cut off (max_tokens): the call cannot be sent back as it is
		}
		set("input", in)
	}
	if len(b.citations) > 0 {
		var cs []byte
		cs = append(cs, '[')
		cb.Get("citations").ForEach(func(_, c gjson.Result) bool {
			cs = append(append(cs, c.Raw...), ',')
			return true
		})
		for _, c := range b.citations {
			cs = append(append(cs, c...), ',')
		}
		cs[len(cs)-1] = ']'
		set("citations", cs)
	}
	return append(dst, raw...)
}

// arguments is a tool_use block's input as sent: its input_json_delta
// fragments joined (may be invalid JSON), or the input it started with.
func (b *anthBlock) arguments() []byte {
	if len(b.input) > 0 {
		return slices.Clone(b.input)
	}
	in := gjson.Get(b.start, "input")
	if !in.Exists() {
		return []byte("{}")
	}
	return []byte(in.Raw)
}

// anthStopEvent is an error event: anthropic-sdk-go ends the stream with
// an error for an event named "error" (ssestream.go), as the Node SDK
// throws an APIError (core/streaming.ts).
func anthStopEvent(message string) []byte {
	b := append([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":"), gjson.AppendJSONString(nil, message)...)
	return append(b, "}}\n\n"...)
}

func (s *anthStream) StopEvent(message string) []byte { return anthStopEvent(message) }

// writeEvent writes ev with its data replaced by data (several data lines
// when it holds line ends); its other lines (event:, id:, comments) are
// kept, in order.
func (s *anthStream) writeEvent(ev []byte, data string) {
	s.WriteReplaced(ev, []byte(data), false)
}
