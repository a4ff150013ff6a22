package keyscan

import "bytes"

// SkipSpace returns the place of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// SkipValue returns the place just past the JSON value at i, and false
// for a value it does not read: a string through its closing quote, an
// array or object through the bracket that closes it (counted as gjson
// counts them, strings skipped; a parenthesis, which gjson counts too, is
// not read), a number or literal through its last byte. Each string is
// skipped by a search for its closing quote, not byte by byte, so that a
// body's top-level members are walked at the cost of its strings' count.
func SkipValue(b []byte, i int) (int, bool) {
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '[' || c == '{':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				var ok bool
				if i, ok = skipString(b, i); !ok {
					return 0, false
				}
				continue
			case '[', '{':
				depth++
			case ']', '}':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			case '(', ')':
				return 0, false
			}
			i++
		}
		return 0, false
	case c == '-' || c >= '0' && c <= '9':
		for i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '-' || b[i] == '+' || b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
			i++
		}
		return i, true
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(b[i:], []byte(lit)) {
			return i + len(lit), true
		}
	}
	return 0, false
}

// skipString returns the place just past the string whose opening quote
// is at i: its closing quote is the first one after an even run of
// backslashes (none included).
func skipString(b []byte, i int) (int, bool) {
	for at := i + 1; ; {
		j := bytes.IndexByte(b[at:], '"')
		if j < 0 {
			return 0, false
		}
		q := at + j
		n := 0
		for k := q - 1; k > i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		at = q + 1
	}
}

// Members calls fn with each top-level member of the JSON object b, in
// order: its key (plain ASCII: no escape, no control byte) and its value
// as written (a string, a number, a literal, or an array or object
// skipped by its brackets, as gjson skips it). sure is false when b is
// not such an object with nothing but whitespace after it, or when fn
// returns false; fn may have been called for the members before. A key
// is found by a search for its closing quote and a value skipped as
// SkipValue skips it, so a body is walked at the cost of its strings'
// count; a caller leaves what it is not sure of to a full parser
// (shape's readsTop and eventMarksTop, gemini's arrayMember).
func Members(b []byte, fn func(key, val []byte) bool) (sure bool) {
	i := SkipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return false
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return SkipSpace(b, i+1) == len(b)
	}
	for {
		if i == len(b) || b[i] != '"' {
			return false
		}
		j := bytes.IndexByte(b[i+1:], '"')
		if j < 0 {
			return false
		}
		key := b[i+1 : i+1+j]
		for _, c := range key {
			if c == '\\' || c < 0x20 || c >= 0x7f {
				return false
			}
		}
		i = SkipSpace(b, i+2+j)
		if i == len(b) || b[i] != ':' {
			return false
		}
		i = SkipSpace(b, i+1)
		if i == len(b) {
			return false
		}
		start := i
		var ok bool
		if i, ok = SkipValue(b, i); !ok {
			return false
		}
		if !fn(key, b[start:i]) {
			return false
		}
		i = SkipSpace(b, i)
		if i == len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
			continue
		case '}':
			return SkipSpace(b, i+1) == len(b)
		}
		return false
	}
}
