package gemini

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
	"github.com/toolgate/toolgate/wire/shape"
	"github.com/toolgate/toolgate/wire/sse"
	"github.com/toolgate/toolgate/wire/stream"
)

// streamMaxHeld bounds the bytes a Stream holds back while a candidate's
// gated calls wait for its finishReason, and one event or element.
const streamMaxHeld = 8 << 20

// streamMaxLog bounds the passed chunks kept unread for the model content
// Hold gets, before they are read into parts.
const streamMaxLog = 256 << 10

// Stream rewrites one streamed Gemini response body (SSE by alt=sse, or
// the JSON array; see Classify), written to it in any split, into dst. It
// implements provider.Stream: Write, then Close. flush (may be nil) is
// called once after each Write or Close that wrote anything. A Stream is
// used by one goroutine; after an error every later call returns it and
// writes nothing.
//
// Chunks (SSE events, or array elements) that MayHoldCall says no to pass
// byte for byte as they come, with no JSON work: text is not delayed. A
// chunk that may hold a call is read; its calls of tools Holder.Gated
// says no to pass with it. Once a candidate has a call of a gated tool,
// that chunk and every later chunk (of any candidate, so that their order
// stays) wait until every such candidate has its finishReason: Hold wants
// a candidate's calls at once, and Vertex sends parallel calls in
// separate chunks. At the finishReason Hold gets the candidate's gated
// calls (Position and synthetic ids counted over the whole candidate, not
// one chunk) and its model content, every part of every chunk as sent
// (ContentOf). The chunks that waited are then written through Rewrite:
// passed calls byte for byte, held and refused ones out, Verdict.Text in
// the place of the first held call (after a blank line when the
// candidate showed text before), the set's thoughtSignature moved to the
// first call that stays (also into a later chunk), finishReason and
// usageMetadata as sent. A rewritten SSE chunk is one data event in the
// line ending of the event it replaces; an array element keeps its Lead.
//
// An ungated call before the candidate's first gated call has already
// reached the app when the gated call shows up (it passed as it came, or
// it waits only because it shares the gated call's chunk): the gate does
// not inspect it, by policy, so it is not held back to wait for a call
// that may never come. Hold still sees it in the model content. Ungated
// calls after a gated one wait with it and then pass unchanged.
//
// Refusals and waiting: with Continue set (the turn can send a follow-up: a request
// body known, continuations left) and a single candidate, refused calls
// are taken out without text and the end of the response is withheld
// (WithholdFinish on every chunk from the settled one on, chunks left
// empty dropped, the array's tail kept); Withheld reports it and
// Settlements gives what Continuation needs. Otherwise refusals are shown
// in place, after Verdict.Text. With WaitForStep set, the end is also
// withheld when a single candidate's calls all wait in one step.
//
// Errors fail closed: nothing of a waiting candidate is written. They
// come from invalid JSON in a chunk that may hold a call or comes while a
// call waits, what Calls refuses (streamed arguments: ErrStreamedArguments;
// duplicate keys or ids), a malformed array, over 8 MiB held back, and dst
// or flush. Close reports a body that ends while a gated candidate has no
// finishReason (its calls are then never written), and a truncated array.
// The first error, unless it came from dst or flush, ends what the app
// reads with the gate's error (StopChunk: an SSE data event, or an array
// element with no "]" after it), so that its client reports an error
// instead of taking what came before for a whole answer; an array of
// which nothing was written yet gets no element, since the writer still
// holds its header and answers 502.
//
// With GuardWith, a chunk (an SSE event, or an array element) whose bytes
// name a gated tool and that is not a Gemini chunk (own: Provider's
// OwnsEvent) fails the stream with stream.ErrNamesGated before it goes
// out, as a stream.Frame's event does: a client of that other shape could
// read a call the gate never saw.
type Stream struct {
	// Continue lets refused calls go back to the model in a follow-up
	// (see above). Set it before the first Write.
	Continue bool
	// WaitForStep withholds the end when the answer may wait for the
	// person's answer to held calls (the turn allows resume and has a
	// follow-up left): a single candidate whose calls were all held in
	// one step (Verdict.Step), none passed. Set it before the first
	// Write; the turn's Held reads the step from Settlements.
	WaitForStep bool

	ctx     context.Context
	h       provider.Holder
	framing Framing
	dst     io.Writer
	flush   func() error

	sp      sse.Splitter
	ar      ArrayReader
	scratch []byte
	out     []byte // what this Write writes
	wrote   bool   // written to dst since the last flush
	// p, at, run, end: while Write splits p, the event being read lies at
	// p[at:] (at -1: it does not, being cut between two Writes), and the
	// events of p[run:end] pass as they came and are not yet written:
	// passNow writes the events that follow one another in one dst.Write,
	// as stream.Frame does, where a Write per event cost ~0.5 µs each
	// through Caddy's response writers.
	p            []byte
	at, run, end int
	err          error
	closed       bool
	broken       bool // dst or flush failed: nothing more reaches the app
	stopped      bool // the error that ends the stream was written

	log      [][]byte  // data of passed chunks not yet read into parts, in logBlock
	logBlock []byte    // where logChunk copies them: one allocation for many chunks
	blocks   []*[]byte // the pooled blocks the log uses (logBlocks)
	logBytes int
	cands    map[int]*streamCand // made at the first chunk read
	held     []heldChunk
	heldSize int
	elems    int // array elements written
	eol      string
	first    []byte // the first chunk's data
	usage    string // the last usageMetadata seen (raw)
	withheld bool
	tail     []byte // the array's tail, when the end is withheld
	settled  []Settlement

	// A follow-up's stream (Follow): every chunk goes through
	// ContinueChunk.
	follow bool
	carry  string // the usage of the responses before
	sep    bool   // the answer showed text: the first text after a blank line

	// names, when set (GuardWith), is the search for the gated tools over
	// this stream's chunks, and own tells a Gemini chunk from another
	// protocol's (see Stream).
	names *shape.Seq
	own   func(data []byte) bool

	// keptLen > 0: names keeps an event that named nothing and whose
	// data, keptLen bytes in place at keptOff with keptTail bytes after
	// it, held no call key; the next chunk's data is searched where the
	// events differ (mayHoldCall).
	keptOff, keptTail, keptLen int
}

// GuardWith makes the stream refuse chunks in another protocol's shape
// that name one of names (see Stream; stream.Frame.GuardWith).
func (s *Stream) GuardWith(names *shape.Names, own func(data []byte) bool) {
	s.names, s.own = names.NewSeq(), own
}

// look searches a chunk's event (ev: the SSE event, or the array
// element's Value) for the gated tools and reports whether it is foreign:
// it names one and its data is not Gemini's, as stream.Frame's foreign
// does (a byte search first, so that the chunks of a pass-through stream
// are not parsed twice); an SSE event naming one with no data line is
// foreign too.
func (s *Stream) look(ev, data []byte, ok bool) (seen, bool) {
	name, from, to := s.names.Look(ev)
	return seen{ev: ev, name: name, from: from, to: to}, name != "" && (!ok || !s.own(data))
}

// seen is what look found of a chunk's event: the tool it names ("":
// none), and where it differs from the event names keeps (ev[from:to],
// shape.Seq.Look's).
type seen struct {
	ev       []byte
	name     string
	from, to int
}

// Settlement is what Hold decided for one candidate of the stream, for
// Continuation: Calls every call part of the candidate in order (ungated
// ones included, Passed), Fates and Contents one per call, Content the
// candidate's model content as sent, Verdict as Hold gave it.
type Settlement struct {
	Choice   int
	Calls    []provider.Call
	Fates    []Fate
	Contents []string
	Content  []byte
	Verdict  provider.Verdict
}

// streamCand is one candidate as the stream has seen it.
type streamCand struct {
	parts   []string // raw parts so far, in order
	texted  bool     // a visible text part among them
	calls   []provider.Call
	gated   []bool
	ids     map[string]bool
	waiting bool // a gated call seen, not yet settled
	fates   []Fate
	text    string
	placed  bool // text written (or nothing to write)
	sig     string
	sigKey  string // the removed first call's signature, to move
}

// heldChunk is a chunk that waits: raw is the SSE event or the array
// element's Lead; data the chunk (nil: an event without data, written as
// it came); calls its calls with the candidate's positions; texted per
// candidate whether it showed text before this chunk.
type heldChunk struct {
	raw, data []byte
	calls     []provider.Call
	texted    map[int]bool
}

// NewStream returns the rewriter of a streamed response in framing f (SSE
// or JSONArray).
func NewStream(ctx context.Context, f Framing, dst io.Writer, flush func() error, h provider.Holder) *Stream {
	s := &Stream{ctx: ctx, h: h, framing: f, dst: dst, flush: flush, at: -1, names: (*shape.Names)(nil).NewSeq()}
	s.sp.Max, s.ar.Max = streamMaxHeld, streamMaxHeld
	s.ar.Unchecked = true // chunk checks what it reads; the rest passes unread
	if f != SSE && f != JSONArray {
		s.err = fmt.Errorf("gemini stream: framing %v is not a stream", f)
	}
	return s
}

// Write takes the body's next bytes.
func (s *Stream) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.closed {
		return 0, errors.New("gemini stream: write after Close")
	}
	s.out = s.out[:0]
	var err error
	if s.framing == SSE {
		s.p, s.run, s.end = p, 0, 0
		err = s.sp.Split(p, func(ev []byte, at int) bool {
			s.at = at
			s.event(ev)
			return s.err == nil
		})
		s.at = -1
	} else {
		err = s.ar.Write(p, func(e Element) bool {
			sn, foreign := s.look(e.Value, e.Value, true)
			if foreign {
				s.fail(stream.ErrNamesGated)
				return false
			}
			s.chunk(e.Lead, e.Value, sn)
			return s.err == nil
		})
	}
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("gemini stream: %w", err)
	}
	s.stop()
	s.emit()
	if s.err != nil {
		return 0, s.err
	}
	if s.logBytes > streamMaxLog {
		s.fold()
	}
	return len(p), nil
}

// Close ends the body.
func (s *Stream) Close() error {
	if s.err != nil {
		return s.err
	}
	if s.closed {
		return nil
	}
	s.closed = true
	s.out = s.out[:0]
	if s.framing == SSE {
		if rest := s.sp.Rest(); len(rest) > 0 {
			// The last event lacks its blank line: read it as readers do
			// at the end of the body.
			s.event(slices.Clone(rest))
		}
	} else {
		tail, err := s.ar.Close()
		switch {
		case err != nil:
			s.fail(fmt.Errorf("gemini stream: %w", err))
		case s.withheld:
			s.tail = slices.Clone(tail)
		default:
			s.tail = slices.Clone(tail)
		}
	}
	if s.err == nil {
		for i, c := range s.cands {
			if c.waiting {
				s.fail(fmt.Errorf("gemini stream: the body ended before candidate %d finished; its calls were not judged and are not written", i))
				break
			}
		}
	}
	if s.framing == JSONArray && s.err == nil && !s.withheld {
		// The array's end, once nothing waits (a candidate still waiting
		// ends it with the error instead).
		if s.elems == 0 && !bytes.Contains(s.tail, []byte("[")) {
			s.out = append(s.out, ArrayOpen...) // every element was dropped
		}
		s.out = append(s.out, s.tail...)
		s.tail = nil
	}
	s.stop()
	s.emit()
	if !s.withheld {
		// No follow-up continues this answer (Follow needs its end
		// withheld), so nothing reads the log any more.
		s.releaseLog()
	}
	return s.err
}

// stop writes, once, after the stream's first error, the error that ends
// what the app reads (StopChunk): a data event in the stream's line
// ending, or an array element after the elements written, with no "]"
// after it. Nothing is written when dst or flush failed.
func (s *Stream) stop() {
	if s.err == nil || s.stopped || s.broken {
		return
	}
	if s.framing != SSE && s.elems == 0 && !s.follow {
		// No element of the array is written or about to be: the writer
		// still holds the response's header and answers 502 instead,
		// which every client reports, without a 200 before it.
		return
	}
	s.stopped = true
	data := StopChunk(s.err)
	if s.framing == SSE {
		s.out = AppendEvent(s.out, data, s.EOL())
		return
	}
	if s.elems == 0 {
		s.out = append(s.out, ArrayOpen...)
	} else {
		s.out = append(s.out, ArraySep...)
	}
	s.out = append(s.out, data...)
}

// Withheld reports whether the end of the response was withheld for a
// follow-up (refused calls go back to the model): its finishReason and
// finishMessage were taken out, and for the JSON array the tail (Tail).
func (s *Stream) Withheld() bool { return s.withheld }

// Settlements returns what Hold decided, one per candidate that had a
// gated call, in the order they finished.
func (s *Stream) Settlements() []Settlement { return s.settled }

// First returns the first chunk of the answer (for ContinueChunk and
// FinishChunk): of this response, or of the one a follow-up continues.
func (s *Stream) First() []byte { return s.first }

// Usage returns the answer's usage so far (raw JSON, "" for none): the
// last usageMetadata this response sent, summed with the responses' before
// it (SumUsage) for a follow-up. FinishChunk takes it.
func (s *Stream) Usage() string {
	if s.carry == "" {
		return s.usage
	}
	return SumUsage(s.carry, s.usage)
}

// Follow makes s, before its first Write, the stream of a follow-up
// response that continues prev's answer (prev withheld its end, and the
// turn sent the follow-up): every chunk is written through ContinueChunk
// (the first response's responseId and modelVersion, the usage summed
// with prev's, the first text after a blank line when the answer showed
// text), SSE events in prev's line ending, array elements after prev's
// (the follow-up's "[" becomes a separator). Continue is prev's.
func (s *Stream) Follow(prev *Stream) {
	prev.fold()
	s.follow, s.Continue = true, prev.Continue
	s.first, s.carry, s.eol, s.elems = prev.first, prev.Usage(), prev.EOL(), prev.elems
	s.sep = prev.sep
	for _, c := range prev.cands {
		s.sep = s.sep || c.texted || c.placed && c.text != ""
	}
}

// EOL returns the line ending of the response's SSE events ("\r\n" or
// "\n"; "\r\n" before any), for the events the turn writes itself.
func (s *Stream) EOL() string {
	if s.eol == "" {
		return "\r\n"
	}
	return s.eol
}

// Tail returns the JSON array's tail (its "]" and the whitespace around)
// when the end was withheld: the turn writes it after its last element.
func (s *Stream) Tail() []byte { return s.tail }

// Elements reports how many array elements were written: the turn writes
// its own with ArraySep when there were any, else ArrayOpen.
func (s *Stream) Elements() int { return s.elems }

func (s *Stream) fail(err error) {
	if s.err == nil {
		s.err = err
	}
	s.held, s.log = nil, nil
}

// emit writes what this call produced and flushes.
func (s *Stream) emit() {
	s.writeRun()
	s.p = nil
	if s.broken {
		return
	}
	if len(s.out) > 0 {
		if _, err := s.dst.Write(s.out); err != nil {
			s.broken = true
			s.fail(err)
			return
		}
		s.out = s.out[:0]
		s.wrote = true
	}
	if !s.wrote {
		return
	}
	s.wrote = false
	if s.flush != nil {
		if err := s.flush(); err != nil {
			s.broken = true
			s.fail(err)
		}
	}
}

// event handles one SSE event.
func (s *Stream) event(ev []byte) {
	if s.eol == "" {
		s.eol = EOL(ev)
	}
	data, buf, ok := sse.Data(ev, s.scratch)
	s.scratch = buf
	sn, foreign := s.look(ev, data, ok)
	if foreign {
		s.fail(stream.ErrNamesGated)
		return
	}
	if !ok {
		// A blank event (keep-alive) or a comment: nothing to read.
		if len(s.held) > 0 {
			s.hold(heldChunk{raw: slices.Clone(ev)})
			return
		}
		s.passNow(ev)
		return
	}
	s.chunk(ev, data, sn)
}

// chunk handles one chunk: raw is its SSE event, or its array Lead; data
// the GenerateContentResponse; sn what look found of its event.
func (s *Stream) chunk(raw, data []byte, sn seen) {
	if s.first == nil && !s.follow && gjson.ValidBytes(data) {
		s.first = slices.Clone(data)
	}
	if len(s.held) == 0 && !s.withheld && !s.follow && !s.mayHoldCall(data, sn) {
		if s.framing == SSE {
			s.passNow(raw)
		} else {
			s.passElement(raw, data)
		}
		s.logChunk(data)
		return
	}
	if !gjson.ValidBytes(data) {
		s.fail(errors.New("gemini stream: a chunk that may hold a call, or comes while one waits, is not valid JSON"))
		return
	}
	if u, _, err := member(gjson.ParseBytes(data), "usagemetadata"); err == nil && u.IsObject() {
		s.usage = u.Raw
	}
	calls, err := Calls(data)
	if err != nil {
		s.fail(fmt.Errorf("gemini stream: %w", err))
		return
	}
	cands, err := candidates(gjson.ParseBytes(data))
	if err != nil {
		s.fail(fmt.Errorf("gemini stream: %w", err))
		return
	}
	s.fold()
	if s.err != nil {
		return
	}
	hc := heldChunk{texted: make(map[int]bool)}
	k := 0
	var finished []int
	for _, c := range cands {
		sc := s.cand(c.index)
		hc.texted[c.index] = sc.texted
		for _, p := range c.parts {
			sc.parts = append(sc.parts, p.raw.Raw)
			sc.texted = sc.texted || p.text
			if !p.call {
				continue
			}
			call := calls[k]
			k++
			call.Position = len(sc.calls)
			if p.id == "" {
				call.ID = SyntheticID(call.Position)
			}
			if sc.ids[call.ID] {
				s.fail(fmt.Errorf("gemini stream: two calls of candidate %d have the id %q", c.index, call.ID))
				return
			}
			sc.ids[call.ID] = true
			if sc.fates != nil {
				s.fail(fmt.Errorf("gemini stream: candidate %d sent a call after its finishReason", c.index))
				return
			}
			g := s.h.Gated(call.Name)
			sc.waiting = sc.waiting || g
			sc.calls = append(sc.calls, call)
			sc.gated = append(sc.gated, g)
			hc.calls = append(hc.calls, call)
		}
		if fr, _, _ := member(c.raw, "finishreason"); fr.Type == gjson.String && fr.Str != "" {
			finished = append(finished, c.index)
		}
	}
	waiting := false
	for _, sc := range s.cands {
		waiting = waiting || sc.waiting
	}
	if !waiting && len(s.held) == 0 {
		// Nothing waits: the chunk's calls are all ungated.
		s.write(heldChunk{raw: raw, data: data}, false)
		return
	}
	hc.raw, hc.data = slices.Clone(raw), slices.Clone(data)
	s.hold(hc)
	if s.err != nil {
		return
	}
	for _, i := range finished {
		if sc := s.cands[i]; sc.waiting {
			s.settle(i, sc)
		}
	}
	for _, sc := range s.cands {
		if sc.waiting {
			return
		}
	}
	s.release()
}

func (s *Stream) cand(i int) *streamCand {
	sc := s.cands[i]
	if sc == nil {
		sc = &streamCand{ids: make(map[string]bool)}
		if s.cands == nil {
			s.cands = make(map[int]*streamCand) // none for an answer without a call read
		}
		s.cands[i] = sc
	}
	return sc
}

// pass writes a chunk that needs no reading as it came.
func (s *Stream) pass(raw, data []byte) {
	if s.framing == SSE {
		s.out = append(s.out, raw...)
		return
	}
	s.out = append(s.out, s.lead(raw)...)
	s.out = append(s.out, data...)
	s.elems++
}

// passNow writes an SSE event that needs no reading and waits for
// nothing: straight to dst, without a copy, unless bytes of this Write are
// still to go out before it. Only the fast path uses it: a chunk written
// while chunks wait is released (or dropped) with them, through s.out.
func (s *Stream) passNow(ev []byte) {
	if len(s.out) > 0 {
		s.out = append(s.out, ev...)
		return
	}
	if s.p != nil && s.at >= 0 {
		// ev is p[at:at+len(ev)]: it joins the run when it follows it.
		if s.at != s.end {
			s.writeRun()
			s.run = s.at
		}
		s.end = s.at + len(ev)
		return
	}
	s.writeRun()
	if _, err := s.dst.Write(ev); err != nil {
		s.broken = true
		s.fail(err)
		return
	}
	s.wrote = true
}

// writeRun writes the events of p that passNow kept back (see Stream.p).
// Everything else a Write produces goes out after them: passNow keeps
// events back only while s.out is empty, and emit writes the run first.
func (s *Stream) writeRun() {
	if s.end <= s.run {
		return
	}
	run := s.p[s.run:s.end]
	s.run, s.end = 0, 0
	if s.broken {
		return
	}
	if _, err := s.dst.Write(run); err != nil {
		s.broken = true
		s.fail(err)
		return
	}
	s.wrote = true
}

// passElement is passNow for an array element that needs no reading: its
// Lead and Value, one slice in the ArrayReader's buffer, straight to dst
// when its own Lead is written (no element before was dropped) and
// nothing of this Write waits in s.out; else through s.out (pass).
func (s *Stream) passElement(lead, data []byte) {
	if l := s.lead(lead); len(s.out) == 0 && len(l) > 0 && len(l) == len(lead) && &l[0] == &lead[0] {
		if both := joined(lead, data); both != nil {
			s.elems++
			s.passNow(both)
			return
		}
	}
	s.pass(lead, data)
}

// joined returns a and b as one slice when b follows a in memory (an
// Element's Lead and Value do), else nil.
func joined(a, b []byte) []byte {
	if len(b) == 0 || cap(a)-len(a) < len(b) {
		return nil
	}
	ab := a[:len(a)+len(b)]
	if &ab[len(a)] != &b[0] {
		return nil
	}
	return ab
}

// lead returns the Lead to write before the next element: its own,
// unless an element before was dropped.
func (s *Stream) lead(l []byte) []byte {
	open := bytes.Contains(l, []byte("["))
	switch {
	case s.elems == 0 && !open:
		return []byte(ArrayOpen)
	case s.elems > 0 && open:
		return []byte(ArraySep)
	}
	return l
}

// mayHoldCall is MayHoldCall(data), searched only where the chunk's event
// differs from the one names keeps (sn, look's), when that one's data held
// no call key and lies in its event as data lies in this one: at the same
// offset after the same bytes (from >= off), with as many bytes after it
// and those the same (to within data). The events' window is then the two
// data's own (keyscan.Changed of them), unless one data is all of the
// other's first bytes and the events go on alike past it (from past
// either's end): such a data is searched whole, as is one not in place.
// It keeps the event when it named nothing and its data, in place, held
// no call key.
func (s *Stream) mayHoldCall(data []byte, sn seen) bool {
	off, placed := placeOf(sn.ev, data)
	tail := len(sn.ev) - off - len(data)
	var may bool
	if placed && s.keptLen > 0 && off == s.keptOff && tail == s.keptTail &&
		sn.from >= off && sn.from-off <= min(len(data), s.keptLen) && sn.to <= off+len(data) {
		may = mayHoldCallIn(data, sn.from-off, sn.to-off)
	} else {
		may = MayHoldCall(data)
	}
	if !may && placed && sn.name == "" && s.names.Keep(sn.ev) {
		s.keptOff, s.keptTail, s.keptLen = off, tail, len(data) // placed: len(data) > 0
	}
	return may
}

// placeOf returns where data lies in ev when it is ev's own bytes: all of
// it (an array element), or after "data:" or "data: " (sse.Data's one data
// line).
func placeOf(ev, data []byte) (int, bool) {
	if len(data) == 0 {
		return 0, false
	}
	for _, off := range [...]int{0, 5, 6} {
		if off+len(data) <= len(ev) && &ev[off] == &data[0] {
			return off, true
		}
	}
	return 0, false
}

// logChunk keeps a passed chunk for the model content, read only when a
// gated call turns up, or after a Write has flushed once the log grows
// large (so that the reading never delays text).
func (s *Stream) logChunk(data []byte) {
	if cap(s.logBlock)-len(s.logBlock) < len(data) {
		if len(data) > logBlockSize {
			s.logBlock = make([]byte, 0, len(data))
		} else {
			b := logBlocks.Get().(*[]byte)
			s.blocks = append(s.blocks, b)
			s.logBlock = (*b)[:0]
		}
	}
	if s.log == nil {
		s.log = (*logLists.Get().(*[][]byte))[:0]
	}
	at := len(s.logBlock)
	s.logBlock = append(s.logBlock, data...)
	s.log = append(s.log, s.logBlock[at:len(s.logBlock):len(s.logBlock)])
	s.logBytes += len(data)
}

// logBlockSize is the size of the blocks logChunk copies chunks into.
const logBlockSize = 16 << 10

// logBlocks are the log's blocks, kept for the next stream: the log of an
// answer that held no call is dropped unread at Close, and a folded one
// once it is read.
var logBlocks = sync.Pool{New: func() any { b := make([]byte, 0, logBlockSize); return &b }}

// logLists are the lists of logged chunks, kept for the next stream as
// its blocks are; a list that grew past maxLogList is left to the GC.
var logLists = sync.Pool{New: func() any { l := make([][]byte, 0, 256); return &l }}

const maxLogList = 4096

// releaseLog drops the log and gives its blocks back to logBlocks; nothing
// refers to them then (fold's parts are copies).
func (s *Stream) releaseLog() {
	if s.log != nil && cap(s.log) <= maxLogList {
		clear(s.log[:cap(s.log)])
		l := s.log[:0]
		logLists.Put(&l)
	}
	s.log, s.logBytes, s.logBlock = nil, 0, nil
	for _, b := range s.blocks {
		logBlocks.Put(b)
	}
	clear(s.blocks)
	s.blocks = s.blocks[:0]
}

// fold reads the logged chunks into their candidates' parts.
func (s *Stream) fold() {
	for _, d := range s.log {
		if !gjson.ValidBytes(d) {
			continue // no reader finds a part in it
		}
		cands, err := candidates(gjson.ParseBytes(d))
		if err != nil {
			continue // no call in it (MayHoldCall); a reader fails on it anyway
		}
		for _, c := range cands {
			sc := s.cand(c.index)
			for _, p := range c.parts {
				sc.parts = append(sc.parts, p.raw.Raw)
				sc.texted = sc.texted || p.text
			}
		}
	}
	s.releaseLog() // the parts read are copies (gjson.ParseBytes)
}

func (s *Stream) hold(hc heldChunk) {
	s.heldSize += len(hc.raw) + len(hc.data)
	if s.heldSize > streamMaxHeld {
		s.fail(errors.New("gemini stream: over 8 MiB held back while calls wait"))
		return
	}
	s.held = append(s.held, hc)
}

// settle hands candidate i's gated calls to Hold.
func (s *Stream) settle(i int, sc *streamCand) {
	var gated []provider.Call
	for k, c := range sc.calls {
		if sc.gated[k] {
			gated = append(gated, c)
		}
	}
	content := ContentOf(sc.parts)
	s.emit() // what came before must not wait for Hold
	if s.err != nil {
		return
	}
	v := s.h.Hold(s.ctx, gated, content, provider.Kept{})
	gf, gc, _, _ := v.Fates(gated)
	anyRefused := slices.Contains(gf, Refused)
	cont := s.Continue && anyRefused && len(s.cands) == 1
	text := v.Text
	if !cont {
		text = shownInPlace(v.Text, gf, gc)
	}
	sc.fates = make([]Fate, len(sc.calls))
	contents := make([]string, len(sc.calls))
	k := 0
	for j := range sc.calls {
		sc.fates[j] = Passed // not inspected
		if sc.gated[j] {
			sc.fates[j], contents[j] = gf[k], gc[k]
			k++
		}
	}
	sc.text, sc.placed, sc.waiting = text, text == "", false
	if cont || s.WaitForStep && v.Step != "" && len(s.cands) == 1 && !slices.Contains(sc.fates, Passed) {
		s.withheld = true
	}
	s.settled = append(s.settled, Settlement{Choice: i, Calls: sc.calls, Fates: sc.fates, Contents: contents, Content: content, Verdict: v})
}

// shownInPlace is provider.InPlace for refusals that cannot go back to
// the model, and marks them Held: they are shown where the held calls were.
func shownInPlace(text string, fates []Fate, contents []string) string {
	text = provider.InPlace(text, fates, contents)
	for k, f := range fates {
		if f == Refused {
			fates[k] = Held
		}
	}
	return text
}

// release writes the chunks that waited, rewritten, once no candidate
// waits. Nothing is written unless all of them could be.
func (s *Stream) release() {
	at := len(s.out)
	held := s.held
	s.held, s.heldSize = nil, 0
	// The last chunk of each candidate, where its text goes when it held
	// no call.
	lastOf := make(map[int]int)
	for j, hc := range held {
		for ch := range hc.texted {
			lastOf[ch] = j
		}
	}
	for j, hc := range held {
		if hc.data == nil {
			s.out = append(s.out, hc.raw...)
			continue
		}
		s.writeHeld(j, hc, lastOf)
		if s.err != nil {
			s.out = s.out[:at]
			return
		}
	}
}

// writeHeld writes the j-th chunk that waited, rewritten.
func (s *Stream) writeHeld(j int, hc heldChunk, lastOf map[int]int) {
	data := hc.data
	fates := make([]Fate, len(hc.calls))
	passedIn := make(map[int]bool) // candidates with a passed call in this chunk
	heldIn := make(map[int]bool)
	for k, c := range hc.calls {
		fates[k] = Passed
		if sc := s.cands[c.Choice]; sc.fates != nil {
			fates[k] = sc.fates[c.Position]
		}
		switch fates[k] {
		case Passed:
			passedIn[c.Choice] = true
		case Held:
			heldIn[c.Choice] = true
		}
	}
	cands, err := candidates(gjson.ParseBytes(data))
	if err != nil {
		s.fail(fmt.Errorf("gemini stream: %w", err))
		return
	}
	texts := make(map[int]string)
	var edits []jsonedit.Edit
	k := 0
	for _, c := range cands {
		sc := s.cands[c.index]
		visible := false // text before the first held call, in this chunk
		seenHeld := false
		for _, p := range c.parts {
			if !p.call {
				visible = visible || p.text && !seenHeld
				continue
			}
			f := fates[k]
			k++
			seenHeld = seenHeld || f == Held
			if f == Passed && sc.sigKey != "" {
				// The removed first call's signature moves to the first
				// call that stays, in a later chunk.
				if !p.sig.Exists() {
					raw, err := sjson.SetRaw(p.raw.Raw, gjson.Escape(sc.sigKey), sc.sig)
					if err != nil {
						s.fail(fmt.Errorf("gemini stream: %w", err))
						return
					}
					e, err := jsonedit.Of(data, p.raw, raw)
					if err != nil {
						s.fail(fmt.Errorf("gemini stream: %w", err))
						return
					}
					edits = append(edits, e)
				}
				sc.sig, sc.sigKey = "", ""
			}
		}
		if sc == nil || sc.fates == nil || sc.placed {
			continue // no gated call, or its text written
		}
		if heldIn[c.index] || lastOf[c.index] == j && !slices.Contains(sc.fates, Held) {
			t := sc.text
			if hc.texted[c.index] && !visible {
				t = "\n\n" + t
			}
			texts[c.index] = t
			sc.placed = true
		}
	}
	if len(edits) > 0 {
		data = jsonedit.Apply(data, edits)
	}
	out, err := Rewrite(data, hc.calls, fates, texts)
	if err != nil {
		s.fail(fmt.Errorf("gemini stream: %w", err))
		return
	}
	if out, err = s.dropFinishMessage(out); err != nil {
		s.fail(fmt.Errorf("gemini stream: %w", err))
		return
	}
	// A signature on the candidate's first call, removed with no call
	// after it in this chunk that stays, moves on to a later chunk.
	for k, c := range hc.calls {
		if c.Position != 0 || fates[k] == Passed {
			continue
		}
		after := false
		for m := k + 1; m < len(hc.calls); m++ {
			after = after || hc.calls[m].Choice == c.Choice && fates[m] == Passed
		}
		if after {
			continue
		}
		if p, err := readPart(gjson.ParseBytes(c.Raw)); err == nil && p.sig.Exists() {
			sc := s.cands[c.Choice]
			sc.sig, sc.sigKey = p.sig.Raw, p.sigKey
		}
	}
	s.write(heldChunk{raw: hc.raw, data: out}, len(out) != len(hc.data) || &out[0] != &hc.data[0])
}

// write writes a chunk that was read: as it came unless changed, else
// rewritten in the framing (SSE: one data event in the line ending of the
// event it replaces; array: after its Lead). Once the end is withheld,
// finishReason and finishMessage come out, and a chunk left with no part
// to read (its finish taken out, or its calls: the refused call of a
// Gemini 3 stream leaves an empty chunk) is dropped; its usageMetadata is
// in Usage.
func (s *Stream) write(hc heldChunk, changed bool) {
	data := hc.data
	if s.follow {
		out, done, err := ContinueChunk(data, s.first, s.carry, s.sep)
		if err != nil {
			s.fail(fmt.Errorf("gemini stream: %w", err))
			return
		}
		s.sep = s.sep && !done
		data, changed = out, true
	}
	if s.withheld {
		out, had, empty, err := WithholdFinish(data)
		if err != nil {
			s.fail(fmt.Errorf("gemini stream: %w", err))
			return
		}
		if empty && (had || changed) {
			return // its finish withheld, or its calls taken out: nothing left to read
		}
		changed = changed || had
		data = out
	}
	if !changed {
		s.pass(hc.raw, data)
		return
	}
	if s.framing == SSE {
		eol := s.EOL()
		if bytes.HasSuffix(hc.raw, []byte("\n")) {
			eol = EOL(hc.raw)
		}
		s.out = AppendEvent(s.out, data, eol)
		return
	}
	s.out = append(s.out, s.lead(hc.raw)...)
	s.out = append(s.out, data...)
	s.elems++
}

// dropFinishMessage takes finishMessage ("Model generated function
// call(s).") off the candidates of a chunk none of whose calls reached
// the app, over the whole candidate: Rewrite sees one chunk, and Vertex
// sends the finish in a chunk of its own.
func (s *Stream) dropFinishMessage(chunk []byte) ([]byte, error) {
	cands, err := candidates(gjson.ParseBytes(chunk))
	if err != nil {
		return nil, err
	}
	var edits []jsonedit.Edit
	for _, c := range cands {
		sc := s.cands[c.index]
		fm := keyOf(c.raw, "finishmessage", "")
		if sc == nil || sc.fates == nil || fm == "" || slices.Contains(sc.fates, Passed) {
			continue
		}
		out, err := sjson.Delete(c.raw.Raw, fm)
		if err != nil {
			return nil, err
		}
		e, err := jsonedit.Of(chunk, c.raw, out)
		if err != nil {
			return nil, err
		}
		edits = append(edits, e)
	}
	if len(edits) == 0 {
		return chunk, nil
	}
	return jsonedit.Apply(chunk, edits), nil
}
