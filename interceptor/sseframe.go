package interceptor

import (
	"errors"
	"fmt"
	"io"

	"github.com/toolgate/toolgate/wire/sse"
)

// sseFrame is what every stream rewriter shares: it cuts the upstream
// body, arriving in any split, into whole events (sse.Splitter, the
// event-stream rules in one place), routes each through the rewriter's
// fast or slow path, and writes and flushes what goes out. Every adapter's
// stream embeds it: the framing is the same for all wire protocols, only
// what is done with an event differs (sseSink).
//
// Every event a sink sees is one every reader reads alike: its lines end
// with LF or CRLF and none starts with a BOM (the Splitter rewrites any
// other into that form). So what the gate reads is what the app's client
// reads, and an event passed as it came is read by the client as the gate
// read it.
type sseFrame struct {
	split  sse.Splitter
	joined []byte // scratch: an event's data lines joined
	evbuf  []byte // scratch: an event being written
	err    error  // sticky: once set, nothing more is written
	closed bool   // Close ran: a later Write is an error

	dst    io.Writer    // where the events go
	flush  func() error // flushes dst; nil when it cannot
	dirty  bool         // written since the last flush
	broken bool         // dst or flush failed: nothing more can reach the client
	name   string       // the stream in its errors ("chat stream")

	// stop, when set, makes the event that ends a stream the gate stops,
	// in the stream's protocol, so that the client's SDK reports an error
	// instead of taking what came before for a whole answer.
	stop interface{ stopEvent(message string) []byte }

	// names, when set (guardWith), are the gated tools: an event whose
	// bytes name one and whose data is not an event of the stream's own
	// protocol (own) fails the stream with ErrNamesGated before it goes
	// out: its client could read a call the adapter never saw.
	names *Names
	own   func(data []byte) bool
}

// guardWith makes the stream refuse events in another protocol's shape
// that name one of names (see sseFrame.names).
func (f *sseFrame) guardWith(names *Names, own func(data []byte) bool) {
	f.names, f.own = names, own
}

// foreign reports an event that names a gated tool and whose data is not
// the stream's own protocol's: a byte search first, so that the events of
// a pass-through stream are not parsed twice. An event that names one and
// has no data at all is foreign too: SSE readers skip its fields, but a
// client that reads the body as something else (its label was not
// text/event-stream) could read a call there, e.g. a JSON answer whose
// first key's colon makes it look like a field.
func (f *sseFrame) foreign(ev []byte) bool {
	if f.names == nil || f.names.Named(ev) == "" {
		return false
	}
	data, ok := f.data(ev)
	return !ok || !f.own(data)
}

// stopMessage is what the app's SDK reports when the gate stops a stream.
func stopMessage(err error) string { return "Toolgate stopped this response: " + err.Error() }

// attach points the stream at dst for a response (again, for a follow-up
// written on the same stream).
func (f *sseFrame) attach(dst io.Writer, flush func() error, name string) {
	f.dst, f.flush, f.name = dst, flush, name
	f.split.Max = maxEvent
	f.closed = false
}

// write sends b on, unless the stream failed.
func (f *sseFrame) write(b []byte) {
	if len(b) == 0 || f.err != nil {
		return
	}
	if _, err := f.dst.Write(b); err != nil {
		f.broken = true
		f.fail(fmt.Errorf("%s: writing: %w", f.name, err))
		return
	}
	f.dirty = true
}

// flushNow flushes what was written since the last flush.
func (f *sseFrame) flushNow() {
	if !f.dirty || f.err != nil {
		return
	}
	f.dirty = false
	if f.flush == nil {
		return
	}
	if err := f.flush(); err != nil {
		f.broken = true
		f.fail(fmt.Errorf("%s: flushing: %w", f.name, err))
	}
}

// fail records the stream's first error and returns it. The first error
// also ends what the client reads with the stop event, unless the client
// can no longer be reached.
func (f *sseFrame) fail(err error) error {
	if f.err != nil {
		return f.err
	}
	f.err = err
	if f.broken || f.stop == nil || f.dst == nil {
		return err
	}
	if _, werr := f.dst.Write(f.stop.stopEvent(stopMessage(err))); werr == nil && f.flush != nil {
		f.flush() // the stream is over either way
	}
	f.dirty = false
	return err
}

// failed returns the stream's first error.
func (f *sseFrame) failed() error { return f.err }

// handle routes one whole event of s through its fast or its slow path.
func (f *sseFrame) handle(s sseSink, ev []byte) {
	if f.foreign(ev) {
		s.fail(ErrNamesGated)
		return
	}
	if s.passes(ev) {
		s.write(ev)
	} else {
		s.slow(ev)
	}
}

// sseSink is what a stream rewriter does with whole events.
type sseSink interface {
	// passes reports whether ev goes out as it came (the fast path).
	passes(ev []byte) bool
	// slow handles an event that does not pass as it came.
	slow(ev []byte)
	// write sends bytes on; flushNow flushes what was written.
	write(b []byte)
	flushNow()
	// fail records the first error; failed returns it.
	fail(err error) error
	failed() error
}

// frameWrite is the Write of a stream rewriter s: complete events in p are
// handled in place, a run of events that pass goes out in one write, and
// the unfinished rest waits in the Splitter. An event over maxEvent fails
// the stream with tooLarge; a Write after Close is the error closed.
func (f *sseFrame) frameWrite(s sseSink, p []byte, tooLarge, closed error) (int, error) {
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
			s.write(p[run:end])
			run, end = 0, 0
			s.fail(ErrNamesGated)
			return false
		}
		pass := s.passes(ev)
		if pass && at >= 0 {
			if at != end {
				s.write(p[run:end])
				run = at
			}
			end = at + len(ev)
			return true
		}
		s.write(p[run:end])
		run, end = 0, 0
		if pass {
			s.write(ev)
		} else {
			s.slow(ev)
		}
		return s.failed() == nil
	})
	s.write(p[run:end])
	if errors.Is(err, sse.ErrTooLarge) {
		s.fail(tooLarge)
	}
	s.flushNow()
	if err := s.failed(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// frameClose handles the event the body ended in, without its closing
// blank line, if any (as a client never dispatches it, it is passed on as
// it came when it can pass), flushes, and reports whether the body ended
// inside a line.
func (f *sseFrame) frameClose(s sseSink) (midLine bool) {
	midLine = f.frameCloseKeep(s)
	f.flushNow()
	return midLine
}

// frameCloseKeep is frameClose without the flush.
func (f *sseFrame) frameCloseKeep(s sseSink) (midLine bool) {
	ev := f.split.Rest()
	if f.err != nil || len(ev) == 0 {
		return false
	}
	f.handle(s, ev)
	return ev[len(ev)-1] != '\n'
}

// writeNew writes an event the gate made: an event line naming typ (none
// when typ is ""), data as data lines, and the blank line. data may be a
// scratch buffer of the stream's.
func (f *sseFrame) writeNew(typ string, data []byte) {
	b := f.evbuf[:0]
	if typ != "" {
		b = append(b, "event: "...)
		b = append(b, typ...)
		b = append(b, '\n')
	}
	b = sse.AppendData(b, data)
	f.evbuf = append(b, '\n')
	f.write(f.evbuf)
}

// writeReplaced writes ev with its data replaced (sse.AppendReplaced):
// its other lines kept, data as data lines where its first data line was;
// with drop, no data line. An event left with nothing is not written.
func (f *sseFrame) writeReplaced(ev, data []byte, drop bool) {
	b, meaningful := sse.AppendReplaced(f.evbuf[:0], ev, data, drop)
	f.evbuf = b
	if meaningful {
		f.write(b)
	}
}

// data returns the event's data: its data lines' values joined by "\n"
// (the SSE rule). A single data line, the usual case, is returned in place;
// more are joined in f.joined. ok is false when the event has no data line.
func (f *sseFrame) data(ev []byte) (data []byte, ok bool) {
	data, f.joined, ok = sse.Data(ev, f.joined)
	return data, ok
}
