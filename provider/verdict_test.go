package provider

import (
	"fmt"
	"testing"
)

func TestVerdictFates(t *testing.T) {
	calls := []Call{{ID: "a"}, {ID: "b"}, {ID: ""}, {ID: "d"}}
	v := Verdict{Pass: []bool{true, true}, Refusals: []Refusal{{"b", "no b"}, {"zz", "nobody"}, {"", "no id"}}}
	fates, contents, any, ids := v.Fates(calls)
	if fmt.Sprint(fates) != fmt.Sprint([]Fate{Passed, Refused, Refused, Held}) || contents[1] != "no b" || contents[2] != "no id" || !any || ids {
		t.Errorf("fates %v, contents %q, any %v, ids %v", fates, contents, any, ids)
	}
	if got := InPlace("Wait.", fates, contents); got != "Wait.\n\nno b\n\nno id" {
		t.Errorf("inPlace = %q", got)
	}
}
