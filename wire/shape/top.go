package shape

import "bytes"

// readsTop answers Reads for the bodies it can read without decoding
// anything, given an ASCII answerKey (every adapter's is): a JSON object
// whose top-level keys are plain ASCII (no escape), each value a string, a number, a literal, or an array or
// object skipped by its brackets, and nothing after it but whitespace.
// sure is false for any other body (a key with an escape or a byte past
// ASCII, a byte no JSON has there, a parenthesis, a body cut short),
// which Reads then reads with gjson as before. Every answer a provider
// sends is of the first kind, and reading it this way takes a search for
// each string's closing quote, not a byte-by-byte walk: the gate asks it
// of every JSON answer on a gated route (interceptor's checkShape), where
// the name search it spares took ~2.5 us of a 2 KB answer.
// FuzzReadsTopAsReads holds it to gjson's reading.
func readsTop(answerKey string, b []byte) (reads, sure bool) {
	for k := 0; k < len(answerKey); k++ {
		if answerKey[k] >= 0x80 {
			return false, false // ſ and K fold onto ASCII letters: gjson's reading compares it
		}
	}
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return false, false
	}
	i = skipSpace(b, i+1)
	own, foreign := false, false
	if i < len(b) && b[i] == '}' {
		return false, skipSpace(b, i+1) == len(b)
	}
	for {
		if i == len(b) || b[i] != '"' {
			return false, false
		}
		j := bytes.IndexByte(b[i+1:], '"')
		if j < 0 {
			return false, false
		}
		key := b[i+1 : i+1+j]
		for _, c := range key {
			if c == '\\' || c < 0x20 || c >= 0x7f {
				return false, false
			}
		}
		i = skipSpace(b, i+2+j)
		if i == len(b) || b[i] != ':' {
			return false, false
		}
		i = skipSpace(b, i+1)
		if i == len(b) {
			return false, false
		}
		first := b[i]
		var ok bool
		if i, ok = skipValue(b, i); !ok {
			return false, false
		}
		switch {
		case asciiEqualFold(key, answerKey):
			own = first == '['
			foreign = foreign || !own
		case isCallKey(key):
			foreign = true
		}
		i = skipSpace(b, i)
		if i == len(b) {
			return false, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
			continue
		case '}':
			if skipSpace(b, i+1) != len(b) {
				return false, false
			}
			return own && !foreign, true
		}
		return false, false
	}
}

// skipSpace returns the place of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipValue returns the place just past the value at i, and false for a
// value it does not read: a string through its closing quote, an array or
// object through the bracket that closes it (counted as gjson counts
// them, strings skipped; a parenthesis, which gjson counts too, is not
// read), a number or literal through its last byte.
func skipValue(b []byte, i int) (int, bool) {
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

// asciiEqualFold reports whether the ASCII key equals s in any case.
func asciiEqualFold(key []byte, s string) bool {
	if len(key) != len(s) {
		return false
	}
	for i := range key {
		c, d := key[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// isCallKey is IsCallKey of an ASCII key.
func isCallKey(key []byte) bool {
	for _, c := range callKeys {
		if asciiEqualFold(key, c) {
			return true
		}
	}
	return false
}
