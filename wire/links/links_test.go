package links

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

const prefix = "https://gate.example/s/"

var (
	idA = "abcdefghijklmnopqrstuvwxyz"
	idB = "234567abcdefghijklmnopqrst"
)

func TestLinks(t *testing.T) {
	text := "Waiting: " + prefix + idA + ". Then " + prefix + idB + "  and done, 7 left"
	if got := StepsIn(text, prefix); !slices.Equal(got, []string{idA, idB}) {
		t.Errorf("StepsIn = %q", got)
	}
	if got := StepsIn(prefix+idA+"x", prefix); got != nil {
		t.Errorf("an id one character too long is no link: %q", got)
	}
	if rest, found := AfterLast(text, prefix); !found || rest != "and done, 7 left" {
		t.Errorf("AfterLast = %q, %v", rest, found)
	}
	if _, found := AfterLast("no link", prefix); found {
		t.Error("AfterLast found a link in a text without one")
	}
	if !Wordy("ok.") || Wordy(" .!") {
		t.Error("Wordy")
	}
	escaped := []byte(`{"content":"https:\/\/gate.example\/s\/` + idA + `"}`)
	if !Has(escaped, prefix) || Has([]byte(`{"content":"nothing"}`), prefix) || Has(escaped, "") {
		t.Error("Has")
	}
	content := gjson.Parse(`[{"type":"text","text":"` + prefix + idB + `"},{"type":"image","text":"` + prefix + idA + `"},{"type":"text","text":"` + prefix + idB + ` again"}]`)
	if got := Steps(content, prefix); !slices.Equal(got, []string{idB}) {
		t.Errorf("Steps = %q", got)
	}
	if raw, ok := Follow(gjson.Parse(`"`+prefix+idA+` yes, go"`), prefix, "text"); !ok || raw != `"yes, go"` {
		t.Errorf("Follow of a string = %s, %v", raw, ok)
	}
	if raw, ok := Follow(content, prefix, "text"); !ok || raw != `[{"type":"text","text":"again"}]` {
		t.Errorf("Follow of parts = %s, %v", raw, ok)
	}
	if _, ok := Follow(gjson.Parse(`"`+prefix+idA+`."`), prefix, "text"); ok {
		t.Error("a full stop after a link is no message")
	}
}

// FuzzStepsIn: every id StepsIn finds follows the prefix in the text, is a
// whole id, and AfterLast finds a link exactly when StepsIn finds one.
func FuzzStepsIn(f *testing.F) {
	f.Add("see " + prefix + idA + " now")
	f.Add(prefix + prefix + idB)
	f.Fuzz(func(t *testing.T, s string) {
		ids := StepsIn(s, prefix)
		for _, id := range ids {
			if len(id) != IDLen || !IsID(id) {
				t.Fatalf("%q: id %q", s, id)
			}
		}
		if _, found := AfterLast(s, prefix); found != (len(ids) > 0) {
			t.Fatalf("%q: AfterLast found %v, StepsIn %q", s, found, ids)
		}
	})
}

// BenchmarkHas looks for a link prefix in a 2 KB request that holds none,
// as every request on a gated route is searched: prose without a '/'
// (the pass-through benchmarks' history), and prose with a URL in each
// message.
func BenchmarkHas(b *testing.B) {
	const prefix = "http://127.0.0.1:41633/toolgate/h/" // shadows the tests' prefix
	for _, c := range []struct{ name, msg string }{
		{"prose", "Message %d: tell me about the spring meetup and what we planned."},
		{"urls", "Message %d: the plan for the spring meetup is at https://example.com/meetup/plan."},
	} {
		var msgs []string
		for i := 0; len(strings.Join(msgs, ",")) < 1900; i++ {
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","parts":[{"text":"`+c.msg+`"}]}`, i))
		}
		body := []byte(`{"contents":[` + strings.Join(msgs, ",") + `]}`)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if Has(body, prefix) {
					b.Fatal("found")
				}
			}
		})
	}
}
