package interceptor

import (
	"bytes"
	"fmt"
	"io"
)

// sseFrame cuts an upstream SSE body, arriving in any split, into whole
// events for a stream rewriter. It holds the event begun in an earlier
// Write and not yet complete (in a pooled buffer). Every adapter's stream
// embeds it: the framing is the same for all wire protocols, only what is
// done with an event differs (sseSink).
type sseFrame struct {
	pend      *bytes.Buffer // the event begun in an earlier Write, not yet complete (pooled)
	lineStart int           // where the current, unfinished line starts in pend
	joined    []byte        // scratch: an event's data lines joined
	err       error         // sticky: once set, nothing more is written
	closed    bool          // Close ran: a later Write is an error

	dst   io.Writer    // where the events go
	flush func() error // flushes dst; nil when it cannot
	dirty bool         // written since the last flush
	name  string       // the stream in its errors ("chat stream")
}

// attach points the stream at dst for a response (again, for a follow-up
// written on the same stream).
func (f *sseFrame) attach(dst io.Writer, flush func() error, name string) {
	f.dst, f.flush, f.name = dst, flush, name
	f.closed = false
}

// write sends b on, unless the stream failed.
func (f *sseFrame) write(b []byte) {
	if len(b) == 0 || f.err != nil {
		return
	}
	if _, err := f.dst.Write(b); err != nil {
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
		f.fail(fmt.Errorf("%s: flushing: %w", f.name, err))
	}
}

// fail records the stream's first error and returns it.
func (f *sseFrame) fail(err error) error {
	if f.err == nil {
		f.err = err
	}
	return f.err
}

// failed returns the stream's first error.
func (f *sseFrame) failed() error { return f.err }

// handle routes one whole event of s through its fast or its slow path.
func (f *sseFrame) handle(s sseSink, ev []byte) {
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
// the unfinished rest waits in the frame. An event over maxEvent fails the
// stream with tooLarge; a Write after Close is the error closed.
func (f *sseFrame) frameWrite(s sseSink, p []byte, tooLarge, closed error) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.closed {
		return 0, closed
	}
	n := len(p)
	if f.pend != nil && f.pend.Len() > 0 {
		end := f.pendingEnd(p)
		if end < 0 {
			if f.pend.Len()+len(p) > maxEvent {
				return 0, s.fail(tooLarge)
			}
			if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
				f.lineStart = f.pend.Len() + i + 1
			}
			f.pend.Write(p)
			return n, nil
		}
		if f.pend.Len()+end > maxEvent {
			return 0, s.fail(tooLarge)
		}
		f.pend.Write(p[:end])
		f.handle(s, f.pend.Bytes())
		f.pend.Reset()
		f.lineStart = 0
		p = p[end:]
	}

	// Complete events inside p are handled in place; a run of events that
	// pass goes out in one Write.
	run, off := 0, 0
	for off < len(p) && s.failed() == nil {
		e := eventEnd(p[off:])
		if e < 0 {
			break
		}
		if e > maxEvent {
			s.write(p[run:off])
			s.fail(tooLarge)
			break
		}
		ev := p[off : off+e]
		if !s.passes(ev) {
			s.write(p[run:off])
			s.slow(ev)
			run = off + e
		}
		off += e
	}
	s.write(p[run:off])
	if s.failed() == nil && off < len(p) {
		rest := p[off:]
		if len(rest) > maxEvent {
			s.fail(tooLarge)
		} else {
			if f.pend == nil {
				f.pend = getBuf()
			}
			f.lineStart = 0
			if i := bytes.LastIndexByte(rest, '\n'); i >= 0 {
				f.lineStart = i + 1
			}
			f.pend.Write(rest)
		}
	}
	s.flushNow()
	if err := s.failed(); err != nil {
		return 0, err
	}
	return n, nil
}

// pendingEnd returns how many bytes of p complete the event begun in pend,
// or -1. Only the line begun in pend needs both halves; the rest is in p.
func (f *sseFrame) pendingEnd(p []byte) int {
	j := bytes.IndexByte(p, '\n')
	if j < 0 {
		return -1
	}
	a := f.pend.Bytes()[f.lineStart:]
	switch len(a) + j {
	case 0:
		return j + 1
	case 1:
		if (len(a) == 1 && a[0] == '\r') || (j == 1 && p[0] == '\r') {
			return j + 1
		}
	}
	e := eventEnd(p[j+1:])
	if e < 0 {
		return -1
	}
	return j + 1 + e
}

// data returns the event's data: its data lines' values joined by "\n" (the
// SSE rule). A single data line, the usual case, is returned in place; more
// are joined in f.joined. ok is false when the event has no data line.
func (f *sseFrame) data(ev []byte) (data []byte, ok bool) {
	lines := 0
	for b := ev; len(b) > 0; {
		var line []byte
		line, b = nextLine(b)
		name, value := field(line)
		if string(name) != "data" {
			continue
		}
		switch lines++; lines {
		case 1:
			data = value
		case 2:
			f.joined = append(append(append(f.joined[:0], data...), '\n'), value...)
			data = f.joined
		default:
			f.joined = append(append(f.joined, '\n'), value...)
			data = f.joined
		}
	}
	return data, lines > 0
}
