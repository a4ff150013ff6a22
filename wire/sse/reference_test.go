package sse

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	anthssestream "github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// This file holds the readers the Splitter is checked against: a
// straightforward transcription of the spec, and the readers of the
// clients the gate stands in front of.

// specParse reads stream by the WHATWG HTML standard, §9.2.6
// "Interpreting an event stream", step by step: one leading BOM dropped
// (with bomEveryLine, one at the start of every line, as the Node SDKs'
// TextDecoder does); lines split at CRLF, LF or CR; at a blank line the
// event is dispatched if its data buffer is not empty (the data's last LF
// removed); ":" starts a comment; a field runs to the first colon, one
// space after it dropped, or is the whole line with an empty value; "event"
// sets the type, "data" appends value and LF; an unfinished event at the
// end is discarded. (id and retry do not change what is dispatched.)
func specParse(stream []byte, bomEveryLine bool) []Event {
	s := string(stream)
	if !bomEveryLine {
		s = strings.TrimPrefix(s, bom)
	}
	var lines []string
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			break // the last, unterminated line is never processed
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	var out []Event
	var typ, data string
	for _, line := range lines {
		if bomEveryLine {
			line = strings.TrimPrefix(line, bom)
		}
		if line == "" {
			if data == "" {
				typ = ""
				continue
			}
			out = append(out, Event{Type: typ, Data: strings.TrimSuffix(data, "\n")})
			typ, data = "", ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value := line, ""
		if i := strings.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			value = strings.TrimPrefix(value, " ")
		}
		switch name {
		case "event":
			typ = value
		case "data":
			data += value + "\n"
		}
	}
	return out
}

// nodeParse is the reader of the official Node SDKs, transcribed from
// openai-node src/core/streaming.ts (_iterSSEMessages, SSEDecoder) and
// src/internal/decoders/line.ts (LineDecoder), bytes for strings: lines
// split at CR, LF or CRLF; each line decoded alone, which drops one
// leading BOM; an event dispatched at a blank line when it has a type or
// data (events without data are left out here: JSON.parse("") throws, so
// a client never reads them); the rest flushed as a last line at the end.
func nodeParse(stream []byte) []Event {
	var out []Event
	var event *string
	var data []string
	decode := func(line string) {
		line = strings.TrimPrefix(line, bom) // TextDecoder.decode
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			if (event == nil || *event == "") && len(data) == 0 {
				return
			}
			if len(data) > 0 {
				t := ""
				if event != nil {
					t = *event
				}
				out = append(out, Event{Type: t, Data: strings.Join(data, "\n")})
			}
			event, data = nil, nil
			return
		}
		if strings.HasPrefix(line, ":") {
			return
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			v := value
			event = &v
		case "data":
			data = append(data, value)
		}
	}
	s := string(stream)
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			break
		}
		decode(s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	if s != "" {
		decode(s) // LineDecoder.flush
	}
	return out
}

// openaiGoParse reads stream with openai-go's own decoder
// (packages/ssestream), as a client of the gate does.
func openaiGoParse(stream []byte) []Event {
	d := ssestream.NewDecoder(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(stream))})
	var out []Event
	for d.Next() {
		ev := d.Event()
		out = append(out, Event{Type: ev.Type, Data: strings.TrimSuffix(string(ev.Data), "\n")})
	}
	return out
}

// anthropicGoParse reads stream with anthropic-sdk-go's own decoder
// (packages/ssestream); events without data are left out (the SDK skips
// them, bar an "error" event, which then carries no message).
func anthropicGoParse(stream []byte) []Event {
	d := anthssestream.NewDecoder(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(stream))})
	var out []Event
	for d.Next() {
		ev := d.Event()
		if len(ev.Data) == 0 {
			continue
		}
		out = append(out, Event{Type: ev.Type, Data: strings.TrimSuffix(string(ev.Data), "\n")})
	}
	return out
}
