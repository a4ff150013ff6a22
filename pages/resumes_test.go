package pages

import (
	"html/template"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/store"
)

// TestPageSaysTheAssistantWaits: while the app's answer waits for the
// step, the card says the assistant goes on once the person answers, in
// their language; not when nothing waits, nor once nothing is left to
// answer.
func TestPageSaysTheAssistantWaits(t *testing.T) {
	card := &cards.Card{Sentence: "Delete this post?"}
	for _, tc := range []struct {
		name    string
		lang    string
		state   store.State
		waiting bool
		want    bool
	}{
		{"a stream waits", "en", store.Waiting, true, true},
		{"a stream waits, in German", "de", store.Waiting, true, true},
		{"no stream waits", "en", store.Waiting, false, false},
		{"answered", "en", store.Settled, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := speak(tc.lang)
			v := gate.StepView{StepID: "s", AssistantWaiting: tc.waiting, Holds: []gate.HoldView{{ID: "h1", Kind: store.KindCard, Card: card, State: tc.state}}}
			var b strings.Builder
			if err := pageTemplate.Execute(&b, newPage(sp, v, map[string]string{"h1": "t"}, "", nil, "n")); err != nil {
				t.Fatal(err)
			}
			line := template.HTMLEscapeString(sp.W.Resumes)
			if got := strings.Contains(b.String(), line); got != tc.want {
				t.Errorf("the line shown: %v, want %v\n%s", got, tc.want, b.String())
			}
		})
	}
}
