package policies

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// object is a JSON object with its key order kept: forms list fields in the
// order of the schema, and AgentSchema hands agents the schema as written.
type object []member

type member struct {
	key   string
	value any
}

// get returns the value of key; a key given twice reads as its last copy,
// as encoding/json reads it.
func (o object) get(key string) (any, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].key == key {
			return o[i].value, true
		}
	}
	return nil, false
}

// str returns the value of key when it is a string.
func (o object) str(key string) string {
	v, _ := o.get(key)
	s, _ := v.(string)
	return s
}

// set replaces every copy of key with one holding value, where the first
// copy stood, or appends it.
func (o object) set(key string, value any) object {
	out := make(object, 0, len(o)+1)
	done := false
	for _, m := range o {
		if m.key != key {
			out = append(out, m)
			continue
		}
		if !done {
			out = append(out, member{key, value})
			done = true
		}
	}
	if !done {
		out = append(out, member{key, value})
	}
	return out
}

// without returns o without key.
func (o object) without(key string) object {
	out := make(object, 0, len(o))
	for _, m := range o {
		if m.key != key {
			out = append(out, m)
		}
	}
	return out
}

// maxJSONDepth bounds the nesting decodeOrdered accepts, so a hostile schema
// from a request cannot exhaust the stack.
const maxJSONDepth = 128

var errJSONDepth = errors.New("nested too deeply")

// decodeOrdered reads one JSON value: objects as object, arrays as []any,
// numbers as json.Number, and strings, booleans and null as encoding/json
// reads them. Anything after the value is an error.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errJSONDepth
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := object{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			o = append(o, member{k, v})
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return o, nil
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := decodeValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return a, nil
	}
	return tok, nil
}

// encodeOrdered writes v, as decodeOrdered returns it, as compact JSON.
// Strings keep <, > and & readable.
func encodeOrdered(buf *bytes.Buffer, v any) {
	switch x := v.(type) {
	case object:
		buf.WriteByte('{')
		for i, m := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(buf, m.key)
			buf.WriteByte(':')
			encodeOrdered(buf, m.value)
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			encodeOrdered(buf, e)
		}
		buf.WriteByte(']')
	case string:
		writeJSONString(buf, x)
	case json.Number:
		buf.WriteString(x.String())
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	default:
		buf.WriteString("null")
	}
}

// writeJSONString writes s as a JSON string, leaving <, > and & readable.
func writeJSONString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	buf.Truncate(buf.Len() - 1)
}
