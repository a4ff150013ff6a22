package policies

import (
	"reflect"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	tests := []struct {
		name, tmpl, args, want string
	}{
		{"path escaping", "http://h/posts/{id}", `{"id":"a/b"}`, "http://h/posts/a%2Fb"},
		{"query escaping", "http://h/search?q={q}", `{"q":"a b&c"}`, "http://h/search?q=a+b%26c"},
		{"path space", "http://h/p/{id}", `{"id":"a b?c#d"}`, "http://h/p/a%20b%3Fc%23d"},
		{"integer", "http://h/posts/{id}", `{"id":7}`, "http://h/posts/7"},
		{"number as written", "http://h/n/{x}?y={y}", `{"x":-1.5e3,"y":1e+2}`, "http://h/n/-1.5e3?y=1e%2B2"},
		{"booleans", "http://h/p?notify={n}&draft={d}", `{"n":true,"d":false}`, "http://h/p?notify=true&draft=false"},
		{"unicode", "http://h/tags/{t}", `{"t":"café"}`, "http://h/tags/caf%C3%A9"},
		{"several fields", "http://h/{a}/x/{b}?c={a}", `{"a":"1","b":"2"}`, "http://h/1/x/2?c=1"},
		{"empty in query", "http://h/s?q={q}", `{"q":""}`, "http://h/s?q="},
		{"dots inside a value", "http://h/f/{f}", `{"f":"a..b"}`, "http://h/f/a..b"},
		{"no fields", "https://h/x", `{}`, "https://h/x"},
		{"field in the middle of a segment", "http://h/v{n}/x", `{"n":2}`, "http://h/v2/x"},
		{"escaped JSON string", "http://h/{s}", `{"s":"a\"\u00e9"}`, "http://h/a%22%C3%A9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := ParseTemplate(tt.tmpl)
			if err != nil {
				t.Fatalf("ParseTemplate: %v", err)
			}
			got, err := tmpl.Expand([]byte(tt.args))
			if err != nil {
				t.Fatalf("Expand: %v", err)
			}
			if got != tt.want {
				t.Errorf("Expand = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestExpandRefuses(t *testing.T) {
	tests := []struct {
		name, tmpl, args, want string
	}{
		{"missing field", "http://h/posts/{post}", `{"id":7}`, `field "post" is missing from the arguments`},
		{"object value", "http://h/posts/{post}", `{"post":{"id":7}}`, `field "post" is an object`},
		{"array value", "http://h/posts/{post}", `{"post":[7]}`, `field "post" is an array`},
		{"null value", "http://h/posts/{post}", `{"post":null}`, `field "post" is null`},
		{"not an object", "http://h/posts/{post}", `[7]`, "the arguments are not a JSON object"},
		{"not JSON", "http://h/posts/{post}", `post=7`, "the arguments are not a JSON object"},
		{"empty segment", "http://h/posts/{post}", `{"post":""}`, `field "post": an empty, "." or ".." value would change the URL path`},
		{"empty segment before more path", "http://h/posts/{post}/comments", `{"post":""}`, `field "post": an empty`},
		{"dot dot", "http://h/posts/{post}", `{"post":".."}`, `field "post": an empty`},
		{"dot", "http://h/posts/{post}/x", `{"post":"."}`, `field "post": an empty`},
		{"dots from two fields", "http://h/posts/{a}{b}", `{"a":".","b":"."}`, `field "b": an empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := ParseTemplate(tt.tmpl)
			if err != nil {
				t.Fatalf("ParseTemplate: %v", err)
			}
			got, err := tmpl.Expand([]byte(tt.args))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Expand = %q, %v; want error %q", got, err, tt.want)
			}
		})
	}
}

func TestParseTemplate(t *testing.T) {
	tmpl, err := ParseTemplate("http://h/{a}/{b}?a={a}&c={c}")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tmpl.Fields(), []string{"a", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Fields = %v; want %v", got, want)
	}
	tmpl.Fields()[0] = "changed"
	if tmpl.Fields()[0] != "a" {
		t.Error("Fields returned the template's own slice")
	}
	if tmpl.String() != "http://h/{a}/{b}?a={a}&c={c}" {
		t.Errorf("String = %q", tmpl.String())
	}
}

func TestParseTemplateRefuses(t *testing.T) {
	tests := []struct{ name, tmpl, want string }{
		{"host field", "http://{host}/x", "the scheme and host may not name fields"},
		{"host part field", "http://api.{env}.internal/x", "the scheme and host may not name fields"},
		{"port field", "http://h:{port}/x", "the scheme and host may not name fields"},
		{"user field", "http://{u}@h/x", "the scheme and host may not name fields"},
		{"host field without path", "http://h{x}", "the scheme and host may not name fields"},
		{"whole URL field", "{url}", "the scheme and host may not name fields"},
		{"scheme field", "{s}://h/x", "the scheme and host may not name fields"},
		{"unclosed", "http://h/{a", `"{" at offset 9 is not closed`},
		{"nested", "http://h/{a{b}}", `"{" at offset 9 is not closed`},
		{"stray close", "http://h/a}", `"}" at offset 10 closes no field`},
		{"empty name", "http://h/{}", "at offset 9: {} names no field"},
		{"dotted name", "http://h/{a.b}", `at offset 9: field name "a.b" may hold only letters`},
		{"relative", "/posts/{id}", "the scheme and host may not name fields"},
		{"relative literal", "/posts", "must be an absolute http or https URL"},
		{"other scheme", "file:///etc/{f}", "must be an absolute http or https URL"},
		{"no host", "http:///x", "must be an absolute http or https URL"},
		{"fragment", "http://h/x#{a}", "a URL may not have a fragment"},
		{"space", "http://h/a b", "byte 10 is a space or control character"},
		{"empty", "", "must be an absolute http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTemplate(tt.tmpl)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("ParseTemplate(%q) = %v; want %q", tt.tmpl, err, tt.want)
			}
		})
	}
}
