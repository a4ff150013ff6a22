package cards

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/plaintext"
	"github.com/toolgate/toolgate/policies"
)

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
	c, err := Build(testCard(t), []byte(`{"title":"Spring\u202emeetup","status":"draft","stats":{"views":12}}`), nil)
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
		if _, err := Build(testCard(t), []byte(rec), nil); err != ErrRecord {
			t.Errorf("Build(%q) error = %v, want ErrRecord", rec, err)
		}
	}
}

func TestFingerprintFollowsContent(t *testing.T) {
	a, _ := Build(testCard(t), []byte(`{"title":"A","status":"draft"}`), nil)
	b, _ := Build(testCard(t), []byte(`{"status":"draft","title":"A","other":1}`), nil)
	c, _ := Build(testCard(t), []byte(`{"title":"A","status":"published"}`), nil)
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
	a, err := Build(testCard(t), []byte(`{"title":"`+long+`A"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(testCard(t), []byte(`{"title":"`+long+`B"}`), nil)
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
	c, err := Build(testCard(t), []byte(`{"title":"`+strings.Repeat("y", plaintext.MaxValue+1)+`","status":"`+strings.Repeat("z", plaintext.MaxValue)+`"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Rows[0].Cut || !strings.HasSuffix(c.Rows[0].Value, "…") || len([]rune(c.Rows[0].Value)) != plaintext.MaxValue {
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
	c, err := Build(testCard(t), []byte(`{"title":"Spring","status":"draft"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	old := `{"sentence":"Delete this post? This cannot be undone.","rows":[{"label":"Post","value":"Spring"},{"label":"Status","value":"draft"},{"label":"Views","value":""},{"label":"Missing","value":""}]}`
	sum := sha256.Sum256([]byte(old))
	if got, want := c.Fingerprint(), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("fingerprint = %s, want %s", got, want)
	}
}

// argsCard is a card without record that shows validated arguments.
func argsCard() *policies.Card {
	return &policies.Card{
		Reason: "Send this email?",
		Rows:   []policies.Row{{Label: "To", Path: "args.to", Arg: "to"}, {Label: "Subject", Path: "args.subject", Arg: "subject"}, {Label: "Odd.key", Path: "args.a.b", Arg: "a.b"}},
	}
}

func TestBuildArguments(t *testing.T) {
	long := strings.Repeat("s", plaintext.MaxValue+5)
	c, err := Build(argsCard(), nil, []byte(`{"to":"ana@example.com","subject":"`+long+`\u202e","a.b":7,"a":{"b":8}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Rows[0]; got.Value != "ana@example.com" || got.Cut {
		t.Errorf("row 0 = %+v", got)
	}
	if got := c.Rows[1]; !got.Cut || !strings.HasSuffix(got.Value, "…") || len([]rune(got.Value)) != plaintext.MaxValue || strings.ContainsRune(got.Value, '\u202e') {
		t.Errorf("row 1 = %+v, want cut to %d characters with a mark and no direction character", got, plaintext.MaxValue)
	}
	if got := c.Rows[2].Value; got != "7" {
		t.Errorf("an argument whose name holds a dot reads %q, want 7 (the top-level key, not a path)", got)
	}
	// The fingerprint covers the value in full: a change past the cut is
	// a change.
	d, _ := Build(argsCard(), nil, []byte(`{"to":"ana@example.com","subject":"`+long+`x","a.b":7}`))
	if c.Rows[1].Value != d.Rows[1].Value || c.Fingerprint() == d.Fingerprint() {
		t.Error("arguments differing past the cut share a fingerprint")
	}
	for _, args := range []string{``, `[]`, `"x"`, `{`} {
		if _, err := Build(argsCard(), nil, []byte(args)); err != ErrArguments {
			t.Errorf("Build(args %q) error = %v, want ErrArguments", args, err)
		}
	}
	mixed := testCard(t)
	mixed.Rows = append(mixed.Rows, policies.Row{Label: "To", Path: "args.to", Arg: "to"})
	if _, err := Build(mixed, []byte(`{}`), []byte(`{"to":"x"}`)); err != ErrArguments {
		t.Errorf("a card with a record showing an argument: error = %v, want ErrArguments", err)
	}
}
