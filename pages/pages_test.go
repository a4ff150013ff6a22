package pages

import (
	"net/http/httptest"
	"testing"

	"github.com/toolgate/toolgate/gate"
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
