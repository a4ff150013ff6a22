package params

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestMayName: the byte filter lets through every spelling a server reads
// as the key (any case, an escape), and only those.
func TestMayName(t *testing.T) {
	for body, want := range map[string]bool{
		`{"functions":[]}`:           true,
		`{"FUNCTIONS":[]}`:           true,
		`{"\u0066unctions":[]}`:      true,
		`{"function_call":"auto"}`:   true,
		`{"functionsx":[]}`:          false,
		`{"model":"functions-1"}`:    false,
		`{"tools":[],"stream":true}`: false,
	} {
		if got := MayName([]byte(body), "functions", "function_call"); got != want {
			t.Errorf("%s: %v, want %v", body, got, want)
		}
	}
}

func TestTruthy(t *testing.T) {
	for raw, want := range map[string]bool{
		`true`: true, `1`: true, `0.5`: true, `"yes"`: true, `" On "`: true, `"t"`: true,
		`false`: false, `0`: false, `"no"`: false, `null`: false, `"2"`: false, `{}`: false,
	} {
		if got := Truthy(gjson.Parse(raw)); got != want {
			t.Errorf("%s: %v, want %v", raw, got, want)
		}
	}
}

func TestStreamsByBody(t *testing.T) {
	for body, want := range map[string]bool{`{"stream":true}`: true, `{"stream":"true"}`: false, `{}`: false} {
		if got := StreamsByBody([]byte(body)); got != want {
			t.Errorf("%s: %v, want %v", body, got, want)
		}
	}
	if StreamsByBody(nil) {
		t.Error("nil body streams")
	}
}
