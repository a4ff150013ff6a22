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
