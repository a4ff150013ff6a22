package forms

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policies"
)

func TestChoicesFromJSON(t *testing.T) {
	got, err := ChoicesFromJSON([]byte(`[{"value":"u2","label":"Bea"},{"value":7},{"value":"u2","label":"Again"},{"value":"u1","label":null}]`))
	want := []policies.Choice{{Value: "u2", Label: "Bea"}, {Value: json.Number("7")}, {Value: "u1"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ChoicesFromJSON = %#v, %v; want %#v", got, err, want)
	}
	if got, err := ChoicesFromJSON([]byte(`[]`)); err != nil || len(got) != 0 {
		t.Errorf("empty list: %v, %v", got, err)
	}
	for _, bad := range []string{`{}`, `null`, `[{"value":true}]`, `[{"value":{"a":1}}]`, `[{"label":"x"}]`, `[{"value":"a","label":3}]`, `[] []`, `[`,
		"[" + strings.Repeat(`{"value":"a"},`, MaxChoices) + `{"value":"b"}]`} {
		if _, err := ChoicesFromJSON([]byte(bad)); err == nil {
			t.Errorf("ChoicesFromJSON(%.40q) succeeded", bad)
		}
	}
}

func TestDefaultFromJSON(t *testing.T) {
	for body, want := range map[string]any{
		`{"value":"Berlin"}`:     "Berlin",
		`{"value":3}`:            json.Number("3"),
		`{"value":true}`:         true,
		`{"value":["a",1]}`:      []any{"a", json.Number("1")},
		`{"value":null}`:         nil,
		`{"other":"x"}`:          nil,
		` {"value":"x"} `:        "x",
		`{"value":"a\u202Eb"}`:   "a\u202Eb", // Build refuses to open on it
		`{"value":"<b>x</b>"}`:   "<b>x</b>",
		`{"value":"line\nbr"}`:   "line\nbr",
		`{"value":-1.5e3}`:       json.Number("-1.5e3"),
		`{"value":""}`:           "",
		`{"value":[]}`:           []any{},
		`{"value":"x","more":1}`: "x",
	} {
		got, err := DefaultFromJSON([]byte(body))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("DefaultFromJSON(%s) = %#v, %v; want %#v", body, got, err, want)
		}
	}
	for _, bad := range []string{`"x"`, `[]`, `{"value":{"a":1}}`, `{"value":[true]}`, `{"value":[[1]]}`, `{} {}`, ``} {
		if _, err := DefaultFromJSON([]byte(bad)); err == nil {
			t.Errorf("DefaultFromJSON(%q) succeeded", bad)
		}
	}
}
