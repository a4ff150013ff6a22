package plaintext

import "testing"

func TestClean(t *testing.T) {
	tests := []struct {
		name, in, want string
		max            int
	}{
		{"plain", "Spring meetup", "Spring meetup", 100},
		{"newlines become one space", "a\n\n\tb\r\nc", "a b c", 100},
		{"bidi override removed", "evil\u202Egnp.exe", "evilgnp.exe", 100},
		{"isolates and zero width removed", "\u2066a\u2069\u200Bb\uFEFF", "ab", 100},
		{"line separators", "a\u2028b\u2029c", "a b c", 100},
		{"controls removed", "a\x00b\x1bc\x7f", "abc", 100},
		{"invalid utf8 dropped", "a\xffb", "ab", 100},
		{"trimmed", "  a  ", "a", 100},
		{"capped", "abcdefghij", "abcd…", 5},
		{"exactly max", "abcde", "abcde", 5},
		{"html kept as text", "<b>x</b>", "<b>x</b>", 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Clean(tt.in, tt.max); got != tt.want {
				t.Errorf("Clean(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}
