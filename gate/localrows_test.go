package gate

import (
	"testing"

	"golang.org/x/text/language"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/policies"
)

// TestLocalRows: a card's row labels are translated only while the card's
// rows are the ones the policy's rows give now, in order; a card built
// under other rows keeps the labels it was built with.
func TestLocalRows(t *testing.T) {
	a := &policies.Action{Card: &policies.Card{Rows: []policies.Row{
		{Label: "Post", Path: "title", Labels: policies.Texts{"en": "Post", "de": "Beitrag"}},
		{Label: "Status", Path: "status"},
	}}}
	de := []language.Tag{language.German}
	built := []cards.Row{{Label: "Post", Value: "x"}, {Label: "Status", Value: "draft"}}
	got := localRows(a, built, de)
	if len(got) != 2 || got[0] != (LocalText{Text: "Beitrag", Lang: "de"}) || got[1] != (LocalText{}) {
		t.Errorf("German rows: %+v", got)
	}
	if got := localRows(a, built, []language.Tag{language.French}); got != nil {
		t.Errorf("French (not given) rows: %+v, want none", got)
	}
	for name, rows := range map[string][]cards.Row{
		"a row fewer":      built[:1],
		"another label":    {{Label: "Title"}, {Label: "Status"}},
		"rows reordered":   {built[1], built[0]},
		"a card sans rows": nil,
	} {
		if got := localRows(a, rows, de); got != nil {
			t.Errorf("%s: %+v, want none", name, got)
		}
	}
}
