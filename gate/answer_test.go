package gate

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

func TestRunOutcome(t *testing.T) {
	write := &policies.Action{Effect: policies.Destructive, Reply: "Removed."}
	read := &policies.Action{Effect: policies.Read}
	notSent := fmt.Errorf("%w: dial tcp: connection refused", actions.ErrNotSent)
	noAnswer := fmt.Errorf("%w: EOF", actions.ErrNoAnswer)
	tests := []struct {
		name string
		a    *policies.Action
		resp actions.Response
		err  error
		want string
	}{
		{"2xx reply", write, actions.Response{Status: 204}, nil, "The person confirmed. Removed."},
		{"2xx no reply", &policies.Action{Effect: policies.External}, actions.Response{Status: 200}, nil, "The person confirmed. Done."},
		{"2xx read body", read, actions.Response{Status: 200, Body: []byte("3 posts\nfound")}, nil, "The person confirmed. 3 posts found"},
		{"2xx read, no body", read, actions.Response{Status: 200}, nil, "The person confirmed. Done."},
		{"2xx read body cut short", read, actions.Response{Status: 200, Body: []byte("3 po")}, noAnswer, "The person confirmed, but the app's answer (HTTP 200) could not be read in full."},
		{"2xx write body cut short", write, actions.Response{Status: 200}, noAnswer, "The person confirmed. Removed."},
		{"422 fields and rule words, never messages", write, actions.Response{Status: 422, Body: []byte(`{"message":"The title Secret Plan is taken.","errors":{"title":["unique","The title Secret Plan is taken."],"body":["max:5000"]}}`)}, nil,
			"The person confirmed, but the app refused the arguments: body (max:5000); title (unique); nothing ran."},
		{"422 no body", write, actions.Response{Status: 422}, nil, "The person confirmed, but the app refused the arguments; nothing ran."},
		{"403", write, actions.Response{Status: 403}, nil, "The person confirmed, but the app refused the action (HTTP 403); nothing ran."},
		{"404", write, actions.Response{Status: 404}, nil, "The person confirmed, but the app refused the action (HTTP 404); nothing ran."},
		// A 5xx does not prove that nothing changed.
		{"500", write, actions.Response{Status: 500}, nil, "The person confirmed, but the app failed (HTTP 500); it may or may not have made changes; nothing was retried."},
		{"503", write, actions.Response{Status: 503}, nil, "The person confirmed, but the app failed (HTTP 503); it may or may not have made changes; nothing was retried."},
		{"dropped or timed out", write, actions.Response{}, noAnswer, "The person confirmed, but the app did not answer; it may or may not have run; nothing was retried."},
		{"never sent", write, actions.Response{}, notSent, "The person confirmed, but the app could not be reached; nothing ran."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, body := runOutcome(tt.a, tt.resp, tt.err)
			o.Person = personConfirmed
			reply := body
			switch {
			case o.Reply == replyPolicy:
				reply = tt.a.Reply
			case body == "":
				reply = "Done."
			}
			if got := o.sentence(reply); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	for err, want := range map[error]int{
		nil:               200,
		ErrNotFound:       404,
		store.ErrNotFound: 404,
		ErrChoice:         400,
		ErrNotOwner:       409,
		ErrFourEyes:       409,
		ErrBadToken:       409,
		store.ErrAnswered: 409,
		store.ErrExpired:  409,
		fmt.Errorf("%w: disk", store.ErrUnavailable): 503,
		errors.New("other"):                          500,
	} {
		if got := Status(err); got != want {
			t.Errorf("Status(%v) = %d, want %d", err, got, want)
		}
	}
}

func TestShownFieldNeverLogsArgumentValues(t *testing.T) {
	form := store.Hold{Kind: store.KindForm, Shown: []byte(`{"fields":["title","body"],"accepted":{"title":"MODEL-VALUE"}}`)}
	f := shownField(form)
	if f.Key != "form_fields" || fmt.Sprint(f.Interface) == "" {
		t.Fatalf("field = %+v", f)
	}
	enc := fmt.Sprintf("%v %v %v", f.Interface, f.String, f.Integer)
	if strings.Contains(enc, "MODEL-VALUE") {
		t.Errorf("a model value is logged: %s", enc)
	}
	card := store.Hold{Kind: store.KindCard, Shown: []byte(`{"sentence":"Delete?","rows":[{"label":"Post","value":"Spring"}]}`)}
	if f := shownField(card); f.Key != "card" {
		t.Errorf("card field = %+v", f)
	}
}
