package pages

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/store"
)

func TestStepFromPath(t *testing.T) {
	for path, want := range map[string]string{
		"/toolgate/h/abcdefghijklmnopqrstuvwxyz": "abcdefghijklmnopqrstuvwxyz",
		"/h/a2345672345672345672345672":          "a2345672345672345672345672",
		"/toolgate/h/ABCDEFGHIJKLMNOPQRSTUVWXYZ": "",
		"/toolgate/h/abc":                        "",
		"/toolgate/h/abcdefghijklmnopqrstuvwxy1": "",
		"/toolgate/x/abcdefghijklmnopqrstuvwxyz": "",
	} {
		got, ok := stepFromPath(path)
		if got != want || ok != (want != "") {
			t.Errorf("stepFromPath(%q) = %q, %v", path, got, ok)
		}
	}
}

func TestSameOrigin(t *testing.T) {
	tests := []struct {
		headers map[string]string
		want    bool
	}{
		{map[string]string{}, true}, // not a browser
		{map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "null"}, true},
		{map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{map[string]string{"Sec-Fetch-Site": "same-site"}, false},
		{map[string]string{"Sec-Fetch-Site": "none"}, false},
		{map[string]string{"Origin": "http://gate.example"}, true},
		{map[string]string{"Origin": "http://evil.example"}, false},
		{map[string]string{"Origin": "null"}, false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "http://gate.example/toolgate/h/x", nil)
		for k, v := range tt.headers {
			r.Header.Set(k, v)
		}
		if got := sameOrigin(r); got != tt.want {
			t.Errorf("sameOrigin(%v) = %v, want %v", tt.headers, got, tt.want)
		}
	}
}

func TestTokenIsBoundToHoldOwnerAndTenant(t *testing.T) {
	p := &Pages{Secret: []byte("0123456789abcdef")}
	ana := gate.Person{Owner: "ana", Tenant: "acme"}
	a := p.Token("hold1", ana)
	if a != p.Token("hold1", ana) {
		t.Fatal("token not stable")
	}
	for _, other := range []string{
		p.Token("hold2", ana),
		p.Token("hold1", gate.Person{Owner: "bo", Tenant: "acme"}),
		p.Token("hold1", gate.Person{Owner: "ana", Tenant: "globex"}),
		p.Token("hold1", gate.Person{Owner: "ana"}),
		p.Token("hold1", gate.Person{Owner: "anaacme"}),
		(&Pages{Secret: []byte("another-secret-x")}).Token("hold1", ana),
	} {
		if other == a {
			t.Error("token does not depend on hold, owner, tenant and secret")
		}
	}
}

func TestWantsJSON(t *testing.T) {
	for accept, want := range map[string]bool{
		"application/json":                  true,
		"text/html,application/xhtml+xml":   false,
		"text/html, application/json;q=0.9": false,
		"application/json, text/html;q=0.9": true,
		"":                                  false,
		"*/*":                               false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept", accept)
		if got := wantsJSON(r); got != want {
			t.Errorf("wantsJSON(%q) = %v", accept, got)
		}
	}
}

// TestCutRowIsMarked: a shortened value is shown with a visible
// "shortened" mark next to it (text, so a screen reader reads it too),
// both while the card waits and after it was answered; a full value is
// not marked.
func TestCutRowIsMarked(t *testing.T) {
	card := &cards.Card{Sentence: "Delete this post?", Rows: []cards.Row{
		{Label: "Post", Value: "Spring…", Cut: true},
		{Label: "Status", Value: "draft"},
	}}
	for _, state := range []store.State{store.Waiting, store.Settled} {
		v := gate.StepView{StepID: "s", Holds: []gate.HoldView{{ID: "h1", Kind: store.KindCard, Card: card, State: state}}}
		var b strings.Builder
		if err := pageTemplate.Execute(&b, newPage(v, map[string]string{"h1": "t"}, "", nil, "n")); err != nil {
			t.Fatal(err)
		}
		html := b.String()
		if !strings.Contains(html, `<dd>Spring… <span class="cut" title="The full value is longer than shown here.">shortened</span></dd>`) {
			t.Errorf("%s: the cut row is not marked:\n%s", state, html)
		}
		if !strings.Contains(html, "<dd>draft</dd>") {
			t.Errorf("%s: a full value is marked or missing:\n%s", state, html)
		}
	}
}

// TestPersonStatusSaysWhatIsTrue: the person reads the same outcome the
// model does, without the person's own part: a failure is never "Confirmed:
// The action failed", a record that could not be read is not "changed".
func TestPersonStatusSaysWhatIsTrue(t *testing.T) {
	for _, tt := range []struct {
		answer, outcome, want string
	}{
		{store.AnswerConfirm, "The person confirmed. Removed.", "Confirmed: Removed."},
		{store.AnswerConfirm, "The person confirmed, but the app failed (HTTP 500); it may or may not have made changes; nothing was retried.",
			"Confirmed, but the app failed (HTTP 500); it may or may not have made changes; nothing was retried."},
		{store.AnswerConfirm, "The person confirmed, but the app did not answer; it may or may not have run; nothing was retried.",
			"Confirmed, but the app did not answer; it may or may not have run; nothing was retried."},
		{store.AnswerConfirm, "The person confirmed, but the record could not be checked (not found); nothing ran.",
			"Confirmed, but the record could not be checked (not found); nothing ran."},
		{store.AnswerConfirm, gate.OutcomeChanged, "Not run: the record changed while waiting"},
		{store.AnswerSubmit, "The person filled in: title, body. Drafted. Thanks, but the rest later.", "Submitted: Drafted. Thanks, but the rest later."},
		{store.AnswerSubmit, "The person filled in: title, body, but the app could not be reached; nothing ran.", "Submitted, but the app could not be reached; nothing ran."},
		{store.AnswerSubmit, "The person submitted the form without filling in a field. Done.", "Submitted: Done."},
		{store.AnswerDecline, gate.OutcomeDeclined, "Declined: nothing ran"},
	} {
		h := gate.HoldView{State: store.Settled, Answer: tt.answer, Outcome: tt.outcome}
		if got := personStatus(h); got != tt.want {
			t.Errorf("personStatus(%q)\n got  %q\n want %q", tt.outcome, got, tt.want)
		}
	}
}
