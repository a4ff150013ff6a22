package responses

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
	"github.com/toolgate/toolgate/wire/stream"
	"github.com/toolgate/toolgate/wire/turn"
)

// maxRespHeld caps what one response may make us hold back while its
// inspected calls wait for the terminal event.
const maxRespHeld = 32 << 20

// respDoneData is the data of the [DONE] event a stream may end with (as
// Chat's do); one after the terminal event is withheld with it (doneSeen).
var respDoneData = []byte("[DONE]")

// respStream is the SSE rewriter of a Responses turn (see
// Responses.NewStream and NewTurn).
type respStream struct {
	t *respTurn

	stream.Frame // the event begun in an earlier Write, not yet complete

	// Across the turn's responses.
	lastSeq  int64    // the last sequence_number written; -1: none yet
	evLines  int8     // whether events carry "event:" lines: 0 not known yet, 1 yes, -1 no
	outItems []string // the output items the app read, of the responses that ended
	inCont   bool     // the response continues an earlier one
	ending   bool     // the response's end is withheld: a continuation may follow
	endData  []byte   // the withheld terminal event's data
	endType  string   // and its type
	carry    string   // the usage (raw JSON, summed) of withheld responses
	firstID  string   // the first response's id (raw JSON), once its end is withheld
	doneSeen bool     // a [DONE] was withheld
	owesDone bool     // a withheld [DONE] is still to be written

	r respResponse // the current response

	out   []byte          // scratch: a rewritten event
	edits []jsonedit.Edit // scratch
}

// respResponse is the state of one upstream response of the turn.
type respResponse struct {
	id        string
	base      int  // output items the app read before this response
	slow      bool // every event is read: it continues an earlier response
	buffering bool // an inspected call began: events wait for the verdict
	ended     bool // its terminal event arrived
	first     int  // the output_index of the first inspected call
	calls     []*respCall
	known     map[string]bool // item ids of calls let through unread
	items     map[int]string  // output_index → item, from output_item.done events read
	held      []respEvent     // events held back, in order
	heldBytes int
	added     int           // 1 + the highest output_index written (dense), in a continuation
	emitted   []respWritten // items written whole, in a continuation
}

type respEvent struct {
	ev    []byte    // the whole event, copied
	index int       // its output_index; -1 none
	call  *respCall // the inspected call it belongs to
	head  bool      // the call's first event (output_item.added)
}

type respWritten struct {
	index int
	item  string
}

var (
	errRespMidLine    = errors.New("responses stream: body ends mid-line")
	errRespEventLarge = fmt.Errorf("responses stream: event over %d bytes", stream.MaxEvent)
	errRespHeld       = fmt.Errorf("responses stream: over %d bytes held back", maxRespHeld)
	errRespClosed     = errors.New("responses stream: write after close")
)

func (s *respStream) Write(p []byte) (int, error) {
	return s.WriteEvents(s, p, errRespEventLarge, errRespClosed)
}

// Close handles a last event left without its closing blank line, writes
// what a response that never reached its terminal event held back (minus
// its inspected calls), and gives the buffers back. It reports a body that
// ends mid-line and any earlier error.
func (s *respStream) Close() error {
	if s.MarkClosed() {
		return s.Err()
	}
	if midLine, _ := s.CloseEventsKeep(s); midLine {
		s.SetErr(errRespMidLine)
	}
	if s.Err() == nil && !s.r.ended && s.r.buffering {
		s.release(nil)
	}
	s.FlushNow()
	return s.Err()
}

// Passes reports whether ev goes out unread: the response continues no
// earlier one, no inspected call has begun, and ev names no call. The
// sequence_number of an event that passes is noted (a byte search for its
// rare 'q'), for the events a rewrite adds later.
func (s *respStream) Passes(ev []byte) bool {
	if s.evLines == 0 {
		s.evLines = -1
		if bytes.HasPrefix(ev, []byte("event:")) {
			s.evLines = 1
		}
	}
	if s.r.slow || s.r.buffering || s.ending || hasCallBytes(ev) {
		return false
	}
	if n, ok := seqOf(ev); ok {
		s.lastSeq = n
	}
	return true
}

var seqKey = []byte(`"sequence_number":`)

// seqOf reads the sequence_number written in ev, by a byte search.
func seqOf(ev []byte) (int64, bool) {
	i := bytes.IndexByte(ev, 'q')
	for i >= 0 {
		if start := i - 3; start >= 0 && bytes.HasPrefix(ev[start:], seqKey) {
			b := ev[start+len(seqKey):]
			for len(b) > 0 && b[0] == ' ' {
				b = b[1:]
			}
			j := 0
			for j < len(b) && j < 18 && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			n, err := strconv.ParseInt(string(b[:j]), 10, 64)
			return n, err == nil
		}
		k := bytes.IndexByte(ev[i+1:], 'q')
		if k < 0 {
			break
		}
		i += k + 1
	}
	return 0, false
}

// Slow reads one event.
func (s *respStream) Slow(ev []byte) {
	data, ok := s.Data(ev)
	if s.ending {
		// After the terminal event of a response whose end is withheld.
		if ok && bytes.Equal(data, respDoneData) {
			s.doneSeen = true
		}
		return
	}
	if !ok {
		s.other(ev)
		return
	}
	if bytes.Equal(data, respDoneData) {
		if s.r.buffering && !s.r.ended {
			s.release(nil)
		}
		s.owesDone = false
		s.Emit(ev)
		return
	}
	if !gjson.ValidBytes(data) {
		switch {
		case hasCallBytes(data):
			s.Fail(errors.New("responses stream: invalid JSON around calls"))
		case s.inCont:
			// Not an event of the answer it continues: it could be
			// neither renumbered nor merged.
		default:
			s.other(ev)
		}
		return
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		s.other(ev)
		return
	}
	if err := respShape.Ambiguity(root); err != nil {
		s.Fail(fmt.Errorf("responses stream: %w", err))
		return
	}
	index := -1
	if oi := root.Get("output_index"); oi.Exists() {
		if oi.Type != gjson.Number || oi.Int() < 0 || oi.Int() > 1<<24 || oi.Raw != strconv.FormatInt(oi.Int(), 10) {
			s.Fail(fmt.Errorf("responses stream: output_index %.20s", oi.Raw))
			return
		}
		index = int(oi.Int())
	}
	typ := root.Get("type").Str
	switch typ {
	case "response.created", "response.in_progress", "response.queued":
		if s.snapshotCalls(root) {
			return
		}
		if id := root.Get("response.id"); id.Type == gjson.String {
			s.r.id = id.Str
		}
		if s.inCont {
			return // the app reads one response
		}
		s.pass(ev, data, root, index)
	case "response.completed", "response.incomplete", "response.failed":
		s.terminal(ev, data, root, typ)
	case "response.output_item.added":
		s.itemAdded(ev, data, root, index)
	case "response.output_item.done":
		s.itemDone(ev, data, root, index)
	default:
		s.fragment(ev, data, root, typ, index)
	}
}

// other handles an event that is no JSON object (or has no data): it can
// hold no call.
func (s *respStream) other(ev []byte) {
	if s.r.buffering {
		s.hold(ev, -1, nil, false)
		return
	}
	s.Emit(ev)
}

// pass lets an event through that belongs to no inspected call: now, or in
// order once the verdict is known.
func (s *respStream) pass(ev, data []byte, root gjson.Result, index int) {
	if s.r.buffering {
		s.hold(ev, index, nil, false)
		return
	}
	d := index
	if index >= 0 {
		d += s.r.base
	}
	s.emit(ev, data, root, index, d)
}

func (s *respStream) itemAdded(ev, data []byte, root gjson.Result, index int) {
	item := root.Get("item")
	if s.stray(item) {
		return
	}
	if !isCallType(item.Get("type").Str) {
		s.pass(ev, data, root, index)
		return
	}
	if item.Get("name").Type != gjson.String {
		s.Fail(errors.New("responses stream: a call begins without a name"))
		return
	}
	c := inspectItem(s.t.h, item)
	if c == nil {
		s.letThrough(item)
		s.pass(ev, data, root, index)
		return
	}
	s.begin(c, item, index)
	s.hold(ev, index, c, true)
}

// letThrough remembers a call that goes out unread, whose fragments may
// follow.
func (s *respStream) letThrough(item gjson.Result) {
	if s.r.known == nil {
		s.r.known = make(map[string]bool)
	}
	s.r.known[item.Get("id").Str] = true
}

// begin records an inspected call; from the first one on, events wait for
// the verdict.
func (s *respStream) begin(c *respCall, item gjson.Result, index int) {
	if index < 0 {
		s.Fail(errors.New("responses stream: a call item without output_index"))
		return
	}
	c.index, c.head, c.raw = index, true, item.Raw
	if !s.r.buffering {
		s.r.buffering, s.r.first = true, index
	}
	s.r.calls = append(s.r.calls, c)
}

func (s *respStream) itemDone(ev, data []byte, root gjson.Result, index int) {
	item := root.Get("item")
	if s.stray(item) {
		return
	}
	if index >= 0 {
		if s.r.items == nil {
			s.r.items = make(map[int]string)
		}
		s.r.items[index] = item.Raw
	}
	id := item.Get("id").Str
	if c := s.r.callFor(id, index); c != nil {
		if !s.sameCall(c, item) {
			return
		}
		c.raw, c.doneItem = item.Raw, item.Raw
		s.hold(ev, index, c, false)
		return
	}
	if isCallType(item.Get("type").Str) {
		c := inspectItem(s.t.h, item)
		switch {
		case c != nil && s.r.known[id]:
			s.Fail(errRespRenamed)
			return
		case c != nil:
			// A call that did not begin with output_item.added: judged all
			// the same.
			s.begin(c, item, index)
			c.doneItem = item.Raw
			s.hold(ev, index, c, true)
			return
		}
		s.letThrough(item)
	}
	s.pass(ev, data, root, index)
}

var (
	errRespRenamed = errors.New("responses stream: a call changed its name or id after it was judged")
	errRespArgs    = errors.New("responses stream: a call's arguments differ between its events")
)

// sameCall reports whether item is still the call c was judged as (same
// policy key, call id and type); else the stream fails.
func (s *respStream) sameCall(c *respCall, item gjson.Result) bool {
	k := inspectItem(s.t.h, item)
	if k == nil || k.name != c.name || k.callID != c.callID || k.typ != c.typ {
		s.Fail(errRespRenamed)
		return false
	}
	return true
}

// fragment handles any other event: part of an inspected call (held with
// it), or passed.
func (s *respStream) fragment(ev, data []byte, root gjson.Result, typ string, index int) {
	id := root.Get("item_id").Str
	if c := s.r.callFor(id, index); c != nil {
		switch typ {
		case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
			c.args = append(c.args, root.Get("delta").Str...)
			c.deltas = true
		case "response.function_call_arguments.done":
			c.argsDone, c.hasDone = root.Get("arguments").Str, true
		case "response.custom_tool_call_input.done":
			c.argsDone, c.hasDone = root.Get("input").Str, true
		}
		s.hold(ev, index, c, false)
		return
	}
	if (strings.HasPrefix(typ, "response.function_call_arguments.") || strings.HasPrefix(typ, "response.custom_tool_call_input.")) && !s.r.known[id] {
		// The fragments of a call that was never judged.
		s.Fail(errors.New("responses stream: call fragments before the call began"))
		return
	}
	if s.snapshotCalls(root) {
		return
	}
	s.pass(ev, data, root, index)
}

// snapshotCalls fails the stream when an event that is no terminal event
// and belongs to no inspected call still shows an inspected call whole: an
// "item", or a "response" whose "output" lists one (an event type this
// adapter does not know, say). Passing it could hand the call to a client
// that reads it; it cannot be judged either, as the response has not ended.
func (s *respStream) snapshotCalls(root gjson.Result) bool {
	found := false
	check := func(it gjson.Result) {
		_, stray := respStrayCall(s.t.h, it)
		found = found || stray || inspectItem(s.t.h, it) != nil
	}
	if it := root.Get("item"); it.IsObject() {
		check(it)
	}
	root.Get("response.output").ForEach(func(_, it gjson.Result) bool {
		check(it)
		return !found
	})
	if found {
		s.Fail(errors.New("responses stream: an event shows a call before the response ended"))
	}
	return found
}

// stray fails the stream when item is no call this adapter inspects but
// names a gated tool (respStrayCall).
func (s *respStream) stray(item gjson.Result) bool {
	key, ok := respStrayCall(s.t.h, item)
	if ok {
		s.Fail(fmt.Errorf("responses stream: %w", errRespStray(item, key)))
	}
	return ok
}

// callFor returns the inspected call an event belongs to: by item id when
// the event names one, else by output_index.
func (r *respResponse) callFor(itemID string, index int) *respCall {
	for _, c := range r.calls {
		if itemID != "" && c.itemID == itemID || itemID == "" && index >= 0 && c.index == index {
			return c
		}
	}
	return nil
}

// hold keeps an event back until the verdict.
func (s *respStream) hold(ev []byte, index int, c *respCall, head bool) {
	if s.Err() != nil {
		return
	}
	s.r.heldBytes += len(ev)
	if s.r.heldBytes > maxRespHeld {
		s.Fail(errRespHeld)
		return
	}
	s.r.held = append(s.r.held, respEvent{ev: slices.Clone(ev), index: index, call: c, head: head})
}

// terminal ends a response: its inspected calls are judged, the events held
// back go out, and its terminal event is written (or withheld, when refused
// calls go back to the model).
func (s *respStream) terminal(ev, data []byte, root gjson.Result, typ string) {
	r := &s.r
	if r.ended {
		return // a second end of the same response: its calls were judged once
	}
	r.ended = true
	if id := root.Get("response.id"); id.Type == gjson.String && id.Str != "" {
		r.id = id.Str
	}
	output := root.Get("response.output")
	var items []gjson.Result
	if output.IsArray() {
		items = output.Array()
	} else {
		items = r.recorded()
	}
	for i, it := range items {
		if s.stray(it) {
			return
		}
		if !isCallType(it.Get("type").Str) {
			continue
		}
		id, callID := it.Get("id").Str, it.Get("call_id").Str
		var c *respCall
		for _, rc := range r.calls {
			if id != "" && rc.itemID == id || id == "" && callID != "" && rc.callID == callID {
				c = rc
				break
			}
		}
		switch {
		case c != nil:
			if !s.sameCall(c, it) {
				return
			}
			if !c.consistent(it.Raw) {
				s.Fail(errRespArgs)
				return
			}
			c.pos, c.raw = i, it.Raw
		default:
			nc := inspectItem(s.t.h, it)
			switch {
			case nc == nil:
			case id != "" && r.known[id]:
				s.Fail(errRespRenamed) // let through under another name
				return
			default:
				// A call the events never showed: judged all the same, as
				// clients take calls from this output (wire-formats.md §0.3).
				nc.index, nc.pos, nc.raw = i, i, it.Raw
				r.calls = append(r.calls, nc)
			}
		}
	}
	var v respVerdict
	changed := false
	if len(r.calls) > 0 {
		for _, c := range r.calls {
			if c.pos < 0 && !c.consistent("") {
				s.Fail(errRespArgs)
				return
			}
			c.complete()
		}
		s.FlushNow() // what came before must not wait for Hold
		if s.Err() != nil {
			return
		}
		v = judge(s.t.ctx, s.t.h, s.t, items, r.calls, r.id, typ == "response.completed")
		s.t.Pending = v.step
		changed = v.changes(r.calls)
	}
	s.release(&v)
	if s.Err() != nil {
		return
	}
	if changed {
		s.outItems = append(s.outItems, v.patch(items, r.calls)...)
	} else {
		for _, it := range items {
			s.outItems = append(s.outItems, it.Raw)
		}
	}
	if len(r.calls) > 0 {
		s.t.HoldsStep(v.held, typ == "response.completed" && !anyClientCall(s.outItems) && s.t.allowed())
	}
	usage := root.Get("response.usage")
	if s.t.Withholds() {
		if s.firstID == "" {
			s.firstID = root.Get("response.id").Raw
		}
		s.ending = true
		s.endData = append(s.endData[:0], data...)
		s.endType = typ
		s.carry = turn.SumUsage(s.carry, usage.Raw)
		return
	}
	s.edits = s.edits[:0]
	if output.IsArray() && (changed || s.inCont) {
		e, err := jsonedit.Of(data, output, joinItems(s.outItems))
		if err != nil {
			s.Fail(fmt.Errorf("responses stream: %w", err))
			return
		}
		s.edits = append(s.edits, e)
	}
	if s.carry != "" && usage.Exists() {
		e, err := jsonedit.Of(data, usage, turn.SumUsage(s.carry, usage.Raw))
		if err != nil {
			s.Fail(fmt.Errorf("responses stream: %w", err))
			return
		}
		s.edits = append(s.edits, e)
		s.carry = ""
	}
	if e, ok := s.idEdit(data, root); ok {
		s.edits = append(s.edits, e)
	}
	s.emitEdits(ev, data, root, -1, -1)
	s.endData = nil // a follow-up that ended: nothing is withheld any more
	if s.doneSeen {
		s.doneSeen, s.owesDone = false, true
	}
}

// complete gives a call whose item never arrived whole (no output_item.done,
// no terminal output) the arguments its fragments carried.
func (c *respCall) complete() {
	it := gjson.Parse(c.raw)
	key := "arguments"
	if c.typ == "custom" {
		key = "input"
	}
	if a := it.Get(key); a.Type == gjson.String && a.Str == "" && len(c.args) > 0 {
		if e, err := jsonedit.Of([]byte(c.raw), a, string(gjson.AppendJSONString(nil, string(c.args)))); err == nil {
			c.raw = string(jsonedit.Apply([]byte(c.raw), []jsonedit.Edit{e}))
		}
	}
}

// recorded returns the items read from output_item.done events, in
// output_index order, for a terminal event without output.
func (r *respResponse) recorded() []gjson.Result {
	idx := make([]int, 0, len(r.items))
	for i := range r.items {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	out := make([]gjson.Result, len(idx))
	for k, i := range idx {
		out[k] = gjson.Parse(r.items[i])
	}
	return out
}

// release writes the events held back, with the verdict v (nil: none was
// reached; every inspected call is dropped): the events of held and refused
// calls dropped, the message in place of the slot, output_index dense.
func (s *respStream) release(v *respVerdict) {
	r := &s.r
	if !r.buffering {
		return
	}
	r.buffering = false
	kept := func(c *respCall) (slot, keep bool) {
		if v == nil {
			return false, false
		}
		return c == v.slot && c.head, c.fate == provider.Passed
	}
	// Dense indices: from the first inspected call on, items that stay
	// (or the message) take the next index in order.
	var idx []int
	for _, e := range r.held {
		if e.index >= r.first && (e.call == nil || e.head) {
			idx = append(idx, e.index)
		}
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	dense := make(map[int]int, len(idx))
	d := r.base + r.first
	for _, u := range idx {
		var c *respCall
		for _, rc := range r.calls {
			if rc.index == u && rc.head {
				c = rc
				break
			}
		}
		if c != nil {
			if slot, keep := kept(c); !slot && !keep {
				continue
			}
		}
		dense[u] = d
		d++
	}
	held := r.held
	r.held, r.heldBytes = nil, 0
	for _, e := range held {
		if s.Err() != nil {
			return
		}
		if e.call != nil {
			slot, keep := kept(e.call)
			switch {
			case slot && e.head:
				s.writeMessage(dense[e.index], v.msgID, v.text)
				continue
			case !keep:
				continue
			}
		}
		data, ok := s.Data(e.ev)
		if !ok || !gjson.ValidBytes(data) {
			s.Emit(e.ev)
			continue
		}
		root := gjson.ParseBytes(data)
		dd := e.index
		switch {
		case e.index < 0:
		case e.index < r.first:
			dd = r.base + e.index
		default:
			var ok bool
			if dd, ok = dense[e.index]; !ok {
				continue // an item that held only fragments of a removed call
			}
		}
		s.emit(e.ev, data, root, e.index, dd)
	}
}

// emit writes an event with its output_index set to d and its
// sequence_number above the last one written.
func (s *respStream) emit(ev, data []byte, root gjson.Result, index, d int) {
	s.edits = s.edits[:0]
	s.emitEdits(ev, data, root, index, d)
}

// emitEdits is emit with more edits already in s.edits.
func (s *respStream) emitEdits(ev, data []byte, root gjson.Result, index, d int) {
	if seq := root.Get("sequence_number"); seq.Type == gjson.Number {
		n := seq.Int()
		if s.lastSeq >= 0 && n <= s.lastSeq || seq.Raw != strconv.FormatInt(n, 10) {
			n = s.lastSeq + 1
			e, err := jsonedit.Of(data, seq, strconv.FormatInt(n, 10))
			if err != nil {
				s.Fail(fmt.Errorf("responses stream: %w", err))
				return
			}
			s.edits = append(s.edits, e)
		}
		s.lastSeq = n
	}
	if index >= 0 && d != index {
		e, err := jsonedit.Of(data, root.Get("output_index"), strconv.Itoa(d))
		if err != nil {
			s.Fail(fmt.Errorf("responses stream: %w", err))
			return
		}
		s.edits = append(s.edits, e)
	}
	if s.inCont && d >= 0 {
		switch root.Get("type").Str {
		case "response.output_item.added":
			s.r.added = max(s.r.added, d+1)
		case "response.output_item.done":
			s.r.emitted = append(s.r.emitted, respWritten{d, root.Get("item").Raw})
		}
	}
	if len(s.edits) == 0 {
		s.Emit(ev)
		return
	}
	s.writeEvent(ev, jsonedit.Apply(data, s.edits))
}

// writeMessage writes the events of a message item holding text at output
// index d, shaped as the provider's own (wire-formats.md §2.2).
func (s *respStream) writeMessage(d int, id, text string) {
	idq := gjson.AppendJSONString(nil, id)
	tq := gjson.AppendJSONString(nil, text)
	part := func(b []byte, final bool) []byte {
		b = append(b, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
		if final {
			b = append(b, tq...)
		} else {
			b = append(b, `""`...)
		}
		return append(b, '}')
	}
	head := func(typ string, item bool) []byte {
		s.lastSeq++
		b := append(s.out[:0], `{"type":"`...)
		b = append(b, typ...)
		b = append(b, `","sequence_number":`...)
		b = strconv.AppendInt(b, s.lastSeq, 10)
		if !item {
			b = append(b, `,"item_id":`...)
			b = append(b, idq...)
		}
		b = append(b, `,"output_index":`...)
		b = strconv.AppendInt(b, int64(d), 10)
		if !item {
			b = append(b, `,"content_index":0`...)
		}
		return b
	}
	b := head("response.output_item.added", true)
	b = append(b, `,"item":{"id":`...)
	b = append(b, idq...)
	b = append(b, `,"type":"message","status":"in_progress","content":[],"role":"assistant"}}`...)
	s.writeMade("response.output_item.added", b)

	b = head("response.content_part.added", false)
	b = append(b, `,"part":`...)
	b = append(part(b, false), '}')
	s.writeMade("response.content_part.added", b)

	b = head("response.output_text.delta", false)
	b = append(b, `,"delta":`...)
	b = append(b, tq...)
	b = append(b, `,"logprobs":[]}`...)
	s.writeMade("response.output_text.delta", b)

	b = head("response.output_text.done", false)
	b = append(b, `,"text":`...)
	b = append(b, tq...)
	b = append(b, `,"logprobs":[]}`...)
	s.writeMade("response.output_text.done", b)

	b = head("response.content_part.done", false)
	b = append(b, `,"part":`...)
	b = append(part(b, true), '}')
	s.writeMade("response.content_part.done", b)

	b = head("response.output_item.done", true)
	b = append(b, `,"item":`...)
	item := messageItem(id, text)
	b = append(b, item...)
	b = append(b, '}')
	s.writeMade("response.output_item.done", b)

	if s.inCont {
		s.r.added = max(s.r.added, d+1)
		s.r.emitted = append(s.r.emitted, respWritten{d, item})
	}
}

// writeMade writes an event the gate made: an "event:" line (unless the
// upstream sends none) and its data. data may be s.out.
func (s *respStream) writeMade(typ string, data []byte) {
	s.out = data
	if s.evLines < 0 {
		typ = ""
	}
	s.WriteEvent(typ, data)
}

// StopEvent is an error event: the Node SDK throws an APIError for an
// event named "error" (core/streaming.ts); openai-go ends the stream with
// an error only for data holding "error" (ssestream.go), which the API's
// own error event lacks, so the gate's has both forms.
func (s *respStream) StopEvent(message string) []byte {
	m := gjson.AppendJSONString(nil, message)
	b := append([]byte("event: error\ndata: {\"type\":\"error\",\"sequence_number\":"), strconv.FormatInt(s.lastSeq+1, 10)...)
	b = append(b, `,"code":"response_refused","message":`...)
	b = append(b, m...)
	b = append(b, `,"param":null,"error":{"type":"toolgate_error","code":"response_refused","message":`...)
	b = append(b, m...)
	return append(b, "}}\n\n"...)
}

// writeEvent writes ev with its data replaced by data (several data lines
// when it holds line ends); its other lines (event:, id:, comments) are
// kept, in order.
func (s *respStream) writeEvent(ev, data []byte) {
	s.WriteReplaced(ev, data, false)
}

// writeEnd writes the end that a continuation withheld: text (if any) as a
// message item after every item written, then the withheld terminal event,
// its output the merged output and its usage the sum, and [DONE] if the
// upstream sent one.
func (s *respStream) writeEnd(text string) {
	items := s.outItems
	d := len(items)
	if s.inCont && !s.r.ended {
		// A follow-up that never ended: what it wrote stands.
		s.release(nil)
		slices.SortStableFunc(s.r.emitted, func(a, b respWritten) int { return a.index - b.index })
		for _, w := range s.r.emitted {
			items = append(items, w.item)
		}
		d = max(len(items), s.r.added)
	}
	if text != "" {
		id := synthID(text, gjson.GetBytes(s.endData, "response.id").Str+"/end/"+strconv.Itoa(d))
		s.writeMessage(d, id, text)
		items = append(items, messageItem(id, text))
	}
	s.ending = false
	data := s.endData
	if data == nil || !gjson.ValidBytes(data) {
		return
	}
	root := gjson.ParseBytes(data)
	s.edits = s.edits[:0]
	if output := root.Get("response.output"); output.IsArray() {
		if e, err := jsonedit.Of(data, output, joinItems(items)); err == nil {
			s.edits = append(s.edits, e)
		}
	}
	if usage := root.Get("response.usage"); usage.Exists() && s.carry != "" {
		if e, err := jsonedit.Of(data, usage, s.carry); err == nil {
			s.edits = append(s.edits, e)
		}
	}
	if e, ok := s.idEdit(data, root); ok {
		s.edits = append(s.edits, e)
	}
	if seq := root.Get("sequence_number"); seq.Type == gjson.Number {
		s.lastSeq++
		if e, err := jsonedit.Of(data, seq, strconv.FormatInt(s.lastSeq, 10)); err == nil {
			s.edits = append(s.edits, e)
		}
	}
	s.carry = ""
	s.writeMade(s.endType, jsonedit.Apply(data, s.edits))
	s.endData = nil
	if s.doneSeen {
		s.doneSeen, s.owesDone = false, true
	}
}

// idEdit is the edit that gives the turn's terminal event the first
// response's id, as response.created said (see NewTurn); ok is false when
// none is needed.
func (s *respStream) idEdit(data []byte, root gjson.Result) (jsonedit.Edit, bool) {
	if !s.inCont || s.firstID == "" || s.t.mode == 'p' {
		return jsonedit.Edit{}, false
	}
	id := root.Get("response.id")
	if !id.Exists() || id.Raw == s.firstID {
		return jsonedit.Edit{}, false
	}
	e, err := jsonedit.Of(data, id, s.firstID)
	return e, err == nil
}

// continueResponse readies the stream for the follow-up response, which
// continues the same answer.
func (s *respStream) continueResponse() {
	s.r = respResponse{base: len(s.outItems), slow: true, first: -1}
	s.inCont = true
	s.ending = false
}
