// Package links finds this gate's links in the text of a model's messages,
// as the app sends them back: a link is the gate's link prefix followed by
// a step id (26 characters of lower-case base32). It tells whether a body
// may hold one, the step ids of a message's links in order, and what words
// follow the last one. It knows no provider's message shape beyond a
// content that is a string or an array of text parts.
package links

import (
	"bytes"
	"slices"
	"strings"
	"unicode"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/wire/keyscan"
)

// IDLen is the length of a step id in a link: 26 characters of
// [a-z2-7], 128 random bits in lower-case base32.
const IDLen = 26

// Follow returns, as raw JSON, what follows the last of this gate's
// links in a message's content: a string's rest, or the rest of the text
// part holding the link (as a text part of type part) followed by the
// parts after it. ok is false when no words follow (a full stop after a
// link is no message, nor a part without text alone).
func Follow(content gjson.Result, prefix, part string) (raw string, ok bool) {
	if content.Type == gjson.String {
		rest, found := AfterLast(content.Str, prefix)
		if !found || !Wordy(rest) {
			return "", false
		}
		return string(gjson.AppendJSONString(nil, rest)), true
	}
	if !content.IsArray() {
		return "", false
	}
	parts := content.Array()
	at, rest := -1, ""
	for i, p := range parts {
		if r, found := AfterLast(p.Get("text").Str, prefix); found {
			at, rest = i, r
		}
	}
	if at < 0 {
		return "", false
	}
	var out []string
	words := Wordy(rest)
	if words {
		b := append([]byte(`{"type":`), gjson.AppendJSONString(nil, part)...)
		b = append(b, `,"text":`...)
		b = gjson.AppendJSONString(b, rest)
		out = append(out, string(append(b, '}')))
	}
	for _, p := range parts[at+1:] {
		text := p.Get("text")
		if text.Type != gjson.String || Wordy(text.Str) {
			out = append(out, p.Raw)
			words = words || text.Type == gjson.String
		}
	}
	if !words {
		return "", false // no words: a call after the link stays with the step, as it came
	}
	return "[" + strings.Join(out, ",") + "]", true
}

// AfterLast returns what follows the last link in s (prefix and a
// step id), blank space at its start dropped; found is false when s holds
// no link.
func AfterLast(s, prefix string) (rest string, found bool) {
	if prefix == "" {
		return "", false
	}
	end := -1
	for i := 0; ; {
		j := strings.Index(s[i:], prefix)
		if j < 0 {
			break
		}
		at := i + j + len(prefix)
		if len(s)-at >= IDLen && IsID(s[at:at+IDLen]) && (len(s) == at+IDLen || !IsIDChar(s[at+IDLen])) {
			end = at + IDLen
		}
		i = at
	}
	if end < 0 {
		return "", false
	}
	return strings.TrimLeft(s[end:], " \t\r\n"), true
}

// Wordy reports whether s holds a letter or a digit: words, not just the
// punctuation an app may put after a link.
func Wordy(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// Has reports whether body holds prefix, plainly or JSON-escaped with
// "\/" for "/".
func Has(body []byte, prefix string) bool {
	if prefix == "" {
		return false
	}
	if keyscan.Contains(body, []byte(prefix)) {
		return true
	}
	if !strings.Contains(prefix, "/") || !bytes.Contains(body, []byte(`\/`)) {
		return false
	}
	return keyscan.Contains(body, []byte(strings.ReplaceAll(prefix, "/", `\/`)))
}

// Steps returns the step ids of the links in a message's content, in
// the order they appear, each once. content is a string or an array of
// parts, of which "text" parts are read.
func Steps(content gjson.Result, prefix string) []string {
	var steps []string
	add := func(s string) {
		for _, id := range StepsIn(s, prefix) {
			if !slices.Contains(steps, id) {
				steps = append(steps, id)
			}
		}
	}
	switch {
	case content.Type == gjson.String:
		add(content.Str)
	case content.IsArray():
		content.ForEach(func(_, part gjson.Result) bool {
			if part.Get("type").Str == "text" {
				add(part.Get("text").Str)
			}
			return true
		})
	}
	return steps
}

// StepsIn returns the step ids of the links in s, in order: prefix
// followed by exactly IDLen step characters.
func StepsIn(s, prefix string) []string {
	var steps []string
	for {
		i := strings.Index(s, prefix)
		if i < 0 {
			return steps
		}
		s = s[i+len(prefix):]
		if len(s) >= IDLen && IsID(s[:IDLen]) && (len(s) == IDLen || !IsIDChar(s[IDLen])) {
			steps = append(steps, s[:IDLen])
		}
	}
}

// IsID reports whether s is made of step characters only.
func IsID(s string) bool {
	for i := 0; i < len(s); i++ {
		if !IsIDChar(s[i]) {
			return false
		}
	}
	return true
}

// IsIDChar reports a step character: lower-case base32.
func IsIDChar(c byte) bool { return ('a' <= c && c <= 'z') || ('2' <= c && c <= '7') }
