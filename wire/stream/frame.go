// Package stream is the event-stream framing every stream rewriter shares:
// a Frame cuts an upstream body, arriving in any split, into whole events
// (wire/sse's Splitter), routes each through the rewriter's fast or slow
// path (its Sink), and writes, flushes and fails what goes out. Deciding
// what to do with an event is the adapter's; how events are cut, written
// and ended is this package's, once for every wire protocol.
package stream

import (
	"errors"
	"fmt"
	"io"

	"github.com/toolgate/toolgate/wire/shape"
	"github.com/toolgate/toolgate/wire/sse"
)

// MaxEvent caps one SSE event (all its lines). Model chunks are a few
// hundred bytes; a tool call's arguments arrive in many small deltas, so
// an event this large is not one a provider sends.
const MaxEvent = 8 << 20

// FoldAt is the size at which a stream's log of what it passed (the text
// it may have to give back with a held call) is read and emptied, so a
// long text answer costs a bounded buffer, not a copy of the stream.
const FoldAt = 256 << 10

// ErrNamesGated is the error of a response the gate does not read as its
// adapter's answer whose bytes name a gated tool (a Frame's event in
// another protocol's shape, see GuardWith). When nothing of the response
// was written, the caller answers 502; otherwise the response was cut
// before the bytes naming it.
var ErrNamesGated = errors.New("interceptor: the response names a gated tool in a shape the gate does not read")

// Frame is what every stream rewriter shares: it cuts the upstream body,
// arriving in any split, into whole events (sse.Splitter, the event-stream
// rules in one place), routes each through the rewriter's fast or slow
// path, and writes and flushes what goes out. Every adapter's stream
// embeds it: the framing is the same for all wire protocols, only what is
// done with an event differs (Sink).
//
// Every event a sink sees is one every reader reads alike: its lines end
// with LF or CRLF and none starts with a BOM (the Splitter rewrites any
// other into that form). So what the gate reads is what the app's client
// reads, and an event passed as it came is read by the client as the gate
// read it.
//
// A Frame is not safe for concurrent use; its zero value is ready once
// attached (Attach).
type Frame struct {
	split  sse.Splitter
	joined []byte // scratch: an event's data lines joined
	evbuf  []byte // scratch: an event being written
	err    error  // sticky: once set, nothing more is written
	closed bool   // MarkClosed ran: a later Write is an error

	dst    io.Writer    // where the events go
	flush  func() error // flushes dst; nil when it cannot
	dirty  bool         // written since the last flush
	broken bool         // dst or flush failed: nothing more can reach the client
	name   string       // the stream in its errors ("chat stream")

	// stop, when set, makes the event that ends a stream the gate stops,
	// in the stream's protocol, so that the client's SDK reports an error
	// instead of taking what came before for a whole answer.
	stop Stopper

	// names, the search for the gated tools over this stream's events
	// (set by GuardWith; nil, or over no names, finds none): an event
	// whose bytes name one and whose data is not an event of the stream's
	// own protocol (own) fails the stream with ErrNamesGated before it
	// goes out: its client could read a call the adapter never saw.
	names *shape.Seq
	own   func(data []byte) bool
}

// Sink is what a stream rewriter does with whole events.
type Sink interface {
	// Passes reports whether ev goes out as it came (the fast path).
	Passes(ev []byte) bool
	// Slow handles an event that does not pass as it came; it writes
	// through the Frame (Emit, WriteEvent, WriteReplaced, Fail).
	Slow(ev []byte)
}

// Stopper writes the event that ends a stream the gate stops, in the
// stream's protocol, carrying message.
type Stopper interface {
	StopEvent(message string) []byte
}

// GuardWith makes the stream refuse events in another protocol's shape
// that name one of names (see Frame.names).
func (f *Frame) GuardWith(names *shape.Names, own func(data []byte) bool) {
	f.names, f.own = names.NewSeq(), own
}

// foreign reports an event that names a gated tool and whose data is not
// the stream's own protocol's: a byte search first, so that the events of
// a pass-through stream are not parsed twice. An event that names one and
// has no data at all is foreign too: SSE readers skip its fields, but a
// client that reads the body as something else (its label was not
// text/event-stream) could read a call there, e.g. a JSON answer whose
// first key's colon makes it look like a field.
func (f *Frame) foreign(ev []byte) bool {
	if f.names.Named(ev) == "" {
		return false
	}
	data, ok := f.Data(ev)
	return !ok || !f.own(data)
}

// StopMessage is what the app's SDK reports when the gate stops a stream.
func StopMessage(err error) string { return "Toolgate stopped this response: " + err.Error() }

// Attach points the stream at dst for a response (again, for a follow-up
// written on the same stream). flush flushes dst (nil when it cannot),
// name names the stream in its errors, and stop, when not nil, writes the
// event that ends a stream the gate stops.
func (f *Frame) Attach(dst io.Writer, flush func() error, name string, stop Stopper) {
	f.dst, f.flush, f.name, f.stop = dst, flush, name, stop
	f.split.Max = MaxEvent
	f.closed = false
}

// Emit sends b on, unless the stream failed.
func (f *Frame) Emit(b []byte) {
	if len(b) == 0 || f.err != nil {
		return
	}
	if _, err := f.dst.Write(b); err != nil {
		f.broken = true
		f.Fail(fmt.Errorf("%s: writing: %w", f.name, err))
		return
	}
	f.dirty = true
}

// FlushNow flushes what was written since the last flush.
func (f *Frame) FlushNow() {
	if !f.dirty || f.err != nil {
		return
	}
	f.dirty = false
	if f.flush == nil {
		return
	}
	if err := f.flush(); err != nil {
		f.broken = true
		f.Fail(fmt.Errorf("%s: flushing: %w", f.name, err))
	}
}

// Fail records the stream's first error and returns it. The first error
// also ends what the client reads with the stop event, unless the client
// can no longer be reached.
func (f *Frame) Fail(err error) error {
	if f.err != nil {
		return f.err
	}
	f.err = err
	if f.broken || f.stop == nil || f.dst == nil {
		return err
	}
	if _, werr := f.dst.Write(f.stop.StopEvent(StopMessage(err))); werr == nil && f.flush != nil {
		f.flush() // the stream is over either way
	}
	f.dirty = false
	return err
}

// SetErr records err as the stream's error when it has none, without the
// stop event: for an ending the client reads as it is (a body that ends
// mid-line, an answer over a cap that nothing of was written).
func (f *Frame) SetErr(err error) {
	if f.err == nil {
		f.err = err
	}
}

// Err returns the stream's first error.
func (f *Frame) Err() error { return f.err }

// MarkClosed marks the stream closed, so that a later Write fails, and
// reports whether it was already.
func (f *Frame) MarkClosed() (already bool) {
	already, f.closed = f.closed, true
	return already
}

// handle routes one whole event of s through its fast or its slow path.
func (f *Frame) handle(s Sink, ev []byte) {
	if f.foreign(ev) {
		f.Fail(ErrNamesGated)
		return
	}
	if s.Passes(ev) {
		f.Emit(ev)
	} else {
		s.Slow(ev)
	}
}

// WriteEvents is the Write of a stream rewriter s: complete events in p
// are handled in place, a run of events that pass goes out in one write,
// and the unfinished rest waits in the Splitter. An event over MaxEvent
// fails the stream with tooLarge; a Write after MarkClosed is the error
// closed.
func (f *Frame) WriteEvents(s Sink, p []byte, tooLarge, closed error) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.closed {
		return 0, closed
	}
	// run, end: events of p that pass and lie in p as they came, one after
	// the other, not yet written.
	run, end := 0, 0
	err := f.split.Split(p, func(ev []byte, at int) bool {
		if f.foreign(ev) {
			f.Emit(p[run:end])
			run, end = 0, 0
			f.Fail(ErrNamesGated)
			return false
		}
		pass := s.Passes(ev)
		if pass && at >= 0 {
			if at != end {
				f.Emit(p[run:end])
				run = at
			}
			end = at + len(ev)
			return true
		}
		f.Emit(p[run:end])
		run, end = 0, 0
		if pass {
			f.Emit(ev)
		} else {
			s.Slow(ev)
		}
		return f.err == nil
	})
	f.Emit(p[run:end])
	if errors.Is(err, sse.ErrTooLarge) {
		f.Fail(tooLarge)
	}
	f.FlushNow()
	if f.err != nil {
		return 0, f.err
	}
	return len(p), nil
}

// CloseEvents handles the event the body ended in, without its closing
// blank line, if any (as a client never dispatches it, it is passed on as
// it came when it can pass), flushes, and reports whether the body ended
// inside a line.
func (f *Frame) CloseEvents(s Sink) (midLine bool) {
	midLine, _ = f.CloseEventsKeep(s)
	f.FlushNow()
	return midLine
}

// CloseEventsKeep is CloseEvents without the flush; wrote reports whether
// handling that last event wrote anything.
func (f *Frame) CloseEventsKeep(s Sink) (midLine, wrote bool) {
	ev := f.split.Rest()
	if f.err != nil || len(ev) == 0 {
		return false, false
	}
	was := f.dirty
	f.dirty = false
	f.handle(s, ev)
	wrote = f.dirty
	f.dirty = f.dirty || was
	return ev[len(ev)-1] != '\n', wrote
}

// WriteEvent writes an event the gate made: an event line naming typ
// (none when typ is ""), data as data lines, and the blank line. data may
// be a scratch buffer of the stream's.
func (f *Frame) WriteEvent(typ string, data []byte) {
	b := f.evbuf[:0]
	if typ != "" {
		b = append(b, "event: "...)
		b = append(b, typ...)
		b = append(b, '\n')
	}
	b = sse.AppendData(b, data)
	f.evbuf = append(b, '\n')
	f.Emit(f.evbuf)
}

// WriteReplaced writes ev with its data replaced (sse.AppendReplaced):
// its other lines kept, data as data lines where its first data line was;
// with drop, no data line. An event left with nothing is not written.
func (f *Frame) WriteReplaced(ev, data []byte, drop bool) {
	b, meaningful := sse.AppendReplaced(f.evbuf[:0], ev, data, drop)
	f.evbuf = b
	if meaningful {
		f.Emit(b)
	}
}

// Data returns the event's data: its data lines' values joined by "\n"
// (the SSE rule). A single data line, the usual case, is returned in
// place; more are joined in a scratch buffer of the Frame's, valid until
// the next call. ok is false when the event has no data line.
func (f *Frame) Data(ev []byte) (data []byte, ok bool) {
	data, f.joined, ok = sse.Data(ev, f.joined)
	return data, ok
}
