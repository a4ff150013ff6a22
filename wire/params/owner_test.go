package params

import "testing"

func TestBodyField(t *testing.T) {
	for _, tc := range []struct {
		body, path, want string
		ok               bool
	}{
		{`{"user":"ana"}`, "user", "ana", true},
		{`{"metadata":{"user_id":"ana"}}`, "metadata.user_id", "ana", true},
		{`{"user":7}`, "user", "", true},
		{`{"other":"x"}`, "user", "", true},
		{`{"metadata":"x"}`, "metadata.user_id", "", true},
		{`{"user":"ana","user":"bo"}`, "user", "", false},
		{`{"user":"ana","USER":"bo"}`, "user", "", false},
		{`{"User":"bo"}`, "user", "", true},
		{`{"metadata":{"user_id":"ana"},"Metadata":{"user_id":"bo"}}`, "metadata.user_id", "", false},
		{`{"metadata":{"user_id":"ana","user_id":"bo"}}`, "metadata.user_id", "", false},
		{`{"\u0075ser":"ana","user":"bo"}`, "user", "", false},
	} {
		got, ok := BodyField([]byte(tc.body), tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s %s: %q %v, want %q %v", tc.body, tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

// TestOwner: the first owner field that names someone does, trimmed; an
// ambiguous field read before it names nobody.
func TestOwner(t *testing.T) {
	fields := OpenAIOwnerFields
	for _, tc := range []struct{ body, want string }{
		{`{"safety_identifier":" ana ","user":"bo"}`, "ana"},
		{`{"safety_identifier":"  ","user":"bo"}`, "bo"},
		{`{"safety_identifier":7,"user":"bo"}`, "bo"},
		{`{"user":"bo"}`, "bo"},
		{`{}`, ""},
		{`{"safety_identifier":"ana","Safety_Identifier":"x","user":"bo"}`, ""},
		{`{"safety_identifier":"ana","user":"bo","USER":"x"}`, "ana"},
	} {
		if got := Owner([]byte(tc.body), fields); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.body, got, tc.want)
		}
	}
	if got := Owner([]byte(`{"user":"bo"}`), nil); got != "" {
		t.Errorf("no fields: %q", got)
	}
}
