package sse

import "bytes"

// The functions below read and rewrite one event as a Splitter hands it on
// (or as a Writer writes it): every line ends with LF or CRLF, no other CR,
// no BOM at a line start. On such bytes every reader agrees, so a plain
// split at LF is the spec's.

// NextLine splits the first line off b, without its LF or CRLF; rest is
// what follows. Without a line end, line is all of b.
func NextLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		line, rest = b[:i], b[i+1:]
	} else {
		line = b
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

// Field splits a line into its field name and value: the name runs to the
// first colon, and one space after the colon is dropped. A line without a
// colon is a name with an empty value; a comment has an empty name.
func Field(line []byte) (name, value []byte) {
	name, value, _ = bytes.Cut(line, []byte{':'})
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return name, value
}

// Data returns an event's data: its data lines' values joined by "\n".
// A single data line, the usual case, is returned in place; more are
// joined into scratch (grown as needed), which is returned so the caller
// can reuse it. ok is false when the event has no data line, so a reader
// dispatches nothing.
func Data(ev, scratch []byte) (data, buf []byte, ok bool) {
	// An event of one data line and its blank line, as every provider
	// streams text, is read without the loop over its lines: the loop's
	// second round only finds the blank line empty.
	if len(ev) >= 5 && string(ev[:5]) == "data:" {
		line, rest := NextLine(ev)
		if len(rest) == 0 || string(rest) == "\n" || string(rest) == "\r\n" {
			data = line[5:]
			if len(data) > 0 && data[0] == ' ' {
				data = data[1:]
			}
			return data, scratch, true
		}
	}
	return dataLines(ev, scratch)
}

// dataLines is Data's loop over every line of ev.
func dataLines(ev, scratch []byte) (data, buf []byte, ok bool) {
	lines := 0
	for b := ev; len(b) > 0; {
		var line []byte
		line, b = NextLine(b)
		name, value := Field(line)
		if string(name) != "data" {
			continue
		}
		switch lines++; lines {
		case 1:
			data = value
		case 2:
			scratch = append(append(append(scratch[:0], data...), '\n'), value...)
			data = scratch
		default:
			scratch = append(append(scratch, '\n'), value...)
			data = scratch
		}
	}
	return data, scratch, lines > 0
}

// Type returns the value of an event's last "event" line, or "" (a reader
// then calls it "message").
func Type(ev []byte) []byte {
	var typ []byte
	for b := ev; len(b) > 0; {
		var line []byte
		line, b = NextLine(b)
		if name, value := Field(line); string(name) == "event" {
			typ = value
		}
	}
	return typ
}

// EventLen returns the length of the first event in b, bytes that a
// Splitter handed on, through its blank line; all of b when it holds no
// blank line.
func EventLen(b []byte) int {
	var st state
	if n := st.scan(b, true); n >= 0 {
		return n
	}
	return len(b)
}

// AppendData appends data as the data lines of an event: "data: " and
// each line of data (a CR, LF or CRLF in data starts a new line, which a
// reader joins back with "\n").
func AppendData(dst, data []byte) []byte {
	for {
		j := eol(data, true)
		dst = append(dst, "data: "...)
		if j < 0 {
			dst = append(dst, data...)
			return append(dst, '\n')
		}
		dst = append(dst, data[:j]...)
		dst = append(dst, '\n')
		if data[j] == '\r' && j+1 < len(data) && data[j+1] == '\n' {
			j++
		}
		data = data[j+1:]
	}
}

// AppendReplaced appends ev with its data replaced: the other lines
// (event, id, retry, comments, unknown fields) stay as they were, in
// order, and data is written as data lines (AppendData) where the first
// data line was; with drop, no data line is written. meaningful reports
// whether anything but the closing blank line was written: an event left
// with nothing need not be written at all.
func AppendReplaced(dst, ev, data []byte, drop bool) (out []byte, meaningful bool) {
	wrote := drop
	for b := ev; len(b) > 0; {
		full := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			full, b = b[:i+1], b[i+1:]
		} else {
			b = nil
		}
		line, _ := NextLine(full)
		if len(line) == 0 {
			dst = append(dst, full...)
			continue
		}
		if name, _ := Field(line); string(name) != "data" {
			dst = append(dst, full...)
			meaningful = true
			continue
		}
		if !wrote {
			dst = AppendData(dst, data)
			wrote, meaningful = true, true
		}
	}
	return dst, meaningful
}
