package sse

import "bytes"

// Event is one event as a reader dispatches it.
type Event struct {
	Type string // the event line's value; "" when it has none (a reader's "message")
	Data string // the data lines' values joined by "\n"
}

// Parse reads a whole stream and returns the events a reader dispatches:
// those with at least one data line, in order. An event the stream ends
// in, without its blank line, is not dispatched (the spec's rule, which
// every SDK reader follows); a blank line ended by a CR that is the
// stream's last byte does end one.
func Parse(stream []byte) []Event {
	var out []Event
	var s Splitter
	var scratch []byte
	read := func(ev []byte, _ int) bool {
		var data []byte
		var ok bool
		if data, scratch, ok = Data(ev, scratch); ok {
			out = append(out, Event{Type: string(Type(ev)), Data: string(data)})
		}
		return true
	}
	s.Split(stream, read)
	if rest := s.Rest(); string(rest) == "\n" || bytes.HasSuffix(rest, []byte("\n\n")) {
		read(rest, -1) // in canonical form: it ended with that CR
	}
	return out
}

// AppendEvent appends ev as an event: an event line when it has a Type,
// its Data as data lines (see AppendData), and the blank line that ends
// it. Type must hold no CR or LF, which would end its line.
func AppendEvent(dst []byte, ev Event) []byte {
	if ev.Type != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, ev.Type...)
		dst = append(dst, '\n')
	}
	dst = AppendData(dst, []byte(ev.Data))
	return append(dst, '\n')
}
