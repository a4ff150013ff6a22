package gate

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// TestExplainSaysWhatHoldDoes: for each call, what Explain says is what the
// gate then does with it: a pass passes, a refusal is refused with the
// same words, a card is held as a card with the rows Explain names, a form
// as a form with its fields.
func TestExplainSaysWhatHoldDoes(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    provider.Call
		want string
	}{
		{"a card", call(0, 7), "card"},
		{"a form", call(0, 0), "form"},
		{"a complete write", provider.Call{ID: "c", Name: "draft_post", Arguments: []byte(`{"title":"T","body":"B"}`)}, "pass"},
		{"an incomplete destructive call", provider.Call{ID: "c", Name: "delete_post", Arguments: []byte(`{}`)}, "refuse"},
		{"a key twice", provider.Call{ID: "c", Name: "delete_post", Arguments: []byte(`{"post":7,"post":8}`)}, "refuse"},
		{"not an object", provider.Call{ID: "c", Name: "delete_post", Arguments: []byte(`[7]`)}, "refuse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOptions{})
			r.app.SetRecord("/posts/7", `{"title":"Seven"}`)
			e := Explain(r.policy, tc.c.Name, tc.c.Arguments)
			if e.Outcome != tc.want {
				t.Fatalf("Explain says %q (%+v), want %q", e.Outcome, e, tc.want)
			}
			step, v := r.hold(ana, tc.c)
			switch e.Outcome {
			case "pass":
				if step != "" || len(v.Pass) != 1 || !v.Pass[0] {
					t.Fatalf("Explain says pass; Hold gave %+v", v)
				}
				return
			case "refuse":
				if len(v.Refusals) != 1 || v.Refusals[0].Content != e.Refusal {
					t.Fatalf("Explain says the model reads %q; Hold gave %+v", e.Refusal, v.Refusals)
				}
				return
			}
			if step == "" {
				t.Fatalf("Explain says %s; Hold held nothing: %+v", e.Outcome, v)
			}
			h := r.step(step)[0]
			switch e.Outcome {
			case "card":
				var c cards.Card
				if err := json.Unmarshal(h.Shown, &c); err != nil || h.Kind != store.KindCard {
					t.Fatalf("held as %s (%v)", h.Kind, err)
				}
				var labels []string
				for _, row := range e.Card.Rows {
					labels = append(labels, row.Label)
				}
				var shown []string
				for _, row := range c.Rows {
					shown = append(shown, row.Label)
				}
				if !slices.Equal(labels, shown) || c.Sentence != e.Card.Reason {
					t.Errorf("Explain's card %q %v; the held card %q %v", e.Card.Reason, labels, c.Sentence, shown)
				}
				if want := r.app.URL + "/posts/7"; e.Record != want || !strings.HasSuffix(e.Run, "/posts/7") || e.Method != "DELETE" {
					t.Errorf("record %q, run %s %q", e.Record, e.Method, e.Run)
				}
			case "form":
				s, err := readShown(h.Shown)
				if err != nil || h.Kind != store.KindForm {
					t.Fatalf("held as %s (%v)", h.Kind, err)
				}
				if !slices.Equal(s.Fields, e.Fields) {
					t.Errorf("Explain's fields %v; the held form's %v", e.Fields, s.Fields)
				}
			}
		})
	}
}

// FuzzExplain: any tool name and arguments get one of the four outcomes,
// each with what it needs, and never a panic.
func FuzzExplain(f *testing.F) {
	f.Add("delete_post", `{"post":7}`)
	f.Add("delete_post", `{"post":"7/../x"}`)
	f.Add("draft_post", `{"title":"T"}`)
	f.Add("draft_post", `{"title":1,"body":null}`)
	f.Add("other", `{}`)
	f.Add("delete_post", `{"post":7,"post":8}`)
	r := newRig(f, rigOptions{})
	f.Fuzz(func(t *testing.T, tool, args string) {
		e := Explain(r.policy, tool, []byte(args))
		declared := r.policy.Action(tool) != nil
		switch {
		case e.Gated != declared:
			t.Fatalf("Gated %v for a tool the policy declares: %v", e.Gated, declared)
		case e.Outcome == "pass":
		case e.Outcome == "refuse" && strings.HasPrefix(e.Refusal, "Toolgate refused "+tool+": "):
		case e.Outcome == "card" && e.Card != nil && declared:
		case e.Outcome == "form" && len(e.Fields) > 0 && declared:
		default:
			t.Fatalf("Explain(%q, %q) = %+v", tool, args, e)
		}
	})
}
