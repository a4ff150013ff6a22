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
	tests := []struct {
		name string
		a    *policies.Action
		resp actions.Response
		err  error
		want string
	}{
		{"2xx reply", write, actions.Response{Status: 204}, nil, "Removed."},
		{"2xx no reply", &policies.Action{Effect: policies.External}, actions.Response{Status: 200}, nil, "Done."},
		{"2xx read body", read, actions.Response{Status: 200, Body: []byte("3 posts\nfound")}, nil, "3 posts found"},
		{"422 fields and rule words, never messages", write, actions.Response{Status: 422, Body: []byte(`{"message":"The title Secret Plan is taken.","errors":{"title":["unique","The title Secret Plan is taken."],"body":["max:5000"]}}`)}, nil,
			"The app refused the arguments: body (max:5000); title (unique); nothing ran."},
		{"422 no body", write, actions.Response{Status: 422}, nil, "The app refused the arguments; nothing ran."},
		{"403", write, actions.Response{Status: 403}, nil, "The app refused the action (HTTP 403); nothing ran."},
		{"404", write, actions.Response{Status: 404}, nil, "The app refused the action (HTTP 404); nothing ran."},
		{"500", write, actions.Response{Status: 503}, nil, "The action failed (HTTP 503)."},
		{"timeout", write, actions.Response{}, errors.New("deadline"), "The action failed: it did not answer in time. It may not have run."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runOutcome(tt.a, tt.resp, tt.err); got != tt.want {
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
