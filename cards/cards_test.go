package cards

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policies"
)

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

func testCard(t *testing.T) *policies.Card {
	t.Helper()
	tpl, err := policies.ParseTemplate("http://blog.internal/posts/{post}")
	if err != nil {
		t.Fatal(err)
	}
	return &policies.Card{
		Reason: "Delete this post?\nThis cannot be undone.",
		Record: tpl,
		Rows:   []policies.Row{{Label: "Post", Path: "title"}, {Label: "Status", Path: "status"}, {Label: "Views", Path: "stats.views"}, {Label: "Missing", Path: "nope"}},
	}
}

func TestBuild(t *testing.T) {
	c, err := Build(testCard(t), []byte(`{"title":"Spring\u202emeetup","status":"draft","stats":{"views":12}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sentence != "Delete this post? This cannot be undone." {
		t.Errorf("sentence = %q", c.Sentence)
	}
	want := []Row{{Label: "Post", Value: "Springmeetup"}, {Label: "Status", Value: "draft"}, {Label: "Views", Value: "12"}, {Label: "Missing", Value: ""}}
	if len(c.Rows) != len(want) {
		t.Fatalf("rows = %v", c.Rows)
	}
	for i := range want {
		if c.Rows[i] != want[i] {
			t.Errorf("row %d = %v, want %v", i, c.Rows[i], want[i])
		}
	}
}

func TestBuildRejectsNonObject(t *testing.T) {
	for _, rec := range []string{``, `[1]`, `"x"`, `{"title":`} {
		if _, err := Build(testCard(t), []byte(rec)); err != ErrRecord {
			t.Errorf("Build(%q) error = %v, want ErrRecord", rec, err)
		}
	}
}

func TestFingerprintFollowsContent(t *testing.T) {
	a, _ := Build(testCard(t), []byte(`{"title":"A","status":"draft"}`))
	b, _ := Build(testCard(t), []byte(`{"status":"draft","title":"A","other":1}`))
	c, _ := Build(testCard(t), []byte(`{"title":"A","status":"published"}`))
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("same rows gave different fingerprints")
	}
	if a.Fingerprint() == c.Fingerprint() {
		t.Error("a changed status kept the fingerprint")
	}
	if len(a.Fingerprint()) != 64 || strings.ToLower(a.Fingerprint()) != a.Fingerprint() {
		t.Errorf("fingerprint %q is not lower-case sha256 hex", a.Fingerprint())
	}
}

// TestFingerprintCoversTheCutPart: two records whose value differs only
// past the cut show the person the same row, but are not the same card:
// a change there must not run. Before Build kept the full values, both
// had one fingerprint.
func TestFingerprintCoversTheCutPart(t *testing.T) {
	long := strings.Repeat("x", 250)
	a, err := Build(testCard(t), []byte(`{"title":"`+long+`A"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(testCard(t), []byte(`{"title":"`+long+`B"}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Rows[0] != b.Rows[0] {
		t.Fatalf("the rows differ before the cut: %q / %q", a.Rows[0].Value, b.Rows[0].Value)
	}
	if a.Fingerprint() == b.Fingerprint() {
		t.Error("a change past the cut kept the fingerprint")
	}
}

// TestBuildMarksCutRows: a shortened value ends with an ellipsis and says
// it was cut; a value that fits is not marked.
func TestBuildMarksCutRows(t *testing.T) {
	c, err := Build(testCard(t), []byte(`{"title":"`+strings.Repeat("y", MaxValue+1)+`","status":"`+strings.Repeat("z", MaxValue)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Rows[0].Cut || !strings.HasSuffix(c.Rows[0].Value, "…") || len([]rune(c.Rows[0].Value)) != MaxValue {
		t.Errorf("long row = %+v", c.Rows[0])
	}
	if c.Rows[1].Cut || strings.HasSuffix(c.Rows[1].Value, "…") {
		t.Errorf("a value that fits is marked cut: %+v", c.Rows[1])
	}
}

// TestFingerprintOfUncutCardIsStable: a card whose values all fit keeps
// the fingerprint holds stored before full values were fingerprinted:
// SHA-256 of the card's JSON {sentence, rows: [{label, value}]}.
func TestFingerprintOfUncutCardIsStable(t *testing.T) {
	c, err := Build(testCard(t), []byte(`{"title":"Spring","status":"draft"}`))
	if err != nil {
		t.Fatal(err)
	}
	old := `{"sentence":"Delete this post? This cannot be undone.","rows":[{"label":"Post","value":"Spring"},{"label":"Status","value":"draft"},{"label":"Views","value":""},{"label":"Missing","value":""}]}`
	sum := sha256.Sum256([]byte(old))
	if got, want := c.Fingerprint(), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("fingerprint = %s, want %s", got, want)
	}
}
