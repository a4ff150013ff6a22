package gemini

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestToolSchema(t *testing.T) {
	req := read(t, "request-parallel-function-responses.json")
	if got := string(ToolSchema(req, "weather")); got != `{"type":"object","properties":{"latitude":{"type":"string","description":"Latitude (e.g., 52.5200)"},"longitude":{"type":"string","description":"Longitude (e.g., 13.4050)"}},"required":["latitude","longitude"]}` {
		t.Fatal(got)
	}
	if got := ToolSchema(req, "nope"); got != nil {
		t.Fatal(string(got))
	}
	js := []byte(`{"tools":[{"googleSearch":{}},{"functionDeclarations":[{"name":"a","parametersJsonSchema":{"type":"object","properties":{"x":{"type":["string","null"]}}}}]}]}`)
	if got := string(ToolSchema(js, "a")); got != `{"type":"object","properties":{"x":{"type":["string","null"]}}}` {
		t.Fatal(got)
	}
	nullable := []byte(`{"tools":[{"function_declarations":[{"name":"a","parameters":{"type":"OBJECT","properties":{"TYPE":{"type":"STRING","nullable":true,"enum":["A"]}}}}]}]}`)
	if got := string(ToolSchema(nullable, "a")); got != `{"type":"object","properties":{"TYPE":{"type":["string","null"],"enum":["A"]}}}` {
		t.Fatal(got)
	}
}

func TestRewriteTools(t *testing.T) {
	req := read(t, "request-parallel-function-responses.json")
	var seen []string
	out, err := RewriteTools(req, func(name string, params []byte) ([]byte, string, bool) {
		seen = append(seen, name+" "+gjson.GetBytes(params, "type").Str)
		if name != "weather" {
			return nil, "", false
		}
		return []byte(`{"type":"object","required":["latitude"]}`), " Needs confirmation.", true
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "weather object,best_language_to_learn object" {
		t.Fatal(seen)
	}
	d := gjson.GetBytes(out, "tools.0.functionDeclarations.0")
	if d.Get("parameters").Raw != `{"type":"object","required":["latitude"]}` || d.Get("description").Str != "Gets current weather for a location Needs confirmation." {
		t.Fatal(d.Raw)
	}
	// Only the declaration changed.
	if before, after := string(req[:strings.Index(string(req), `"tools"`)]), string(out[:strings.Index(string(out), `"tools"`)]); before != after {
		t.Fatal("bytes before tools changed")
	}
	if gjson.GetBytes(out, "tools.0.functionDeclarations.1").Raw != gjson.GetBytes(req, "tools.0.functionDeclarations.1").Raw {
		t.Fatal("the other declaration changed")
	}

	t.Run("parametersJsonSchema, description absent or null", func(t *testing.T) {
		body := []byte(`{"tools":[{"functionDeclarations":[{"name":"a","parametersJsonSchema":{}},{"name":"b","description":null}]}]}`)
		out, err := RewriteTools(body, func(name string, _ []byte) ([]byte, string, bool) {
			return []byte(`{"type":"object"}`), " x", true
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(out); got != `{"tools":[{"functionDeclarations":[{"name":"a","parametersJsonSchema":{"type":"object"},"description":" x"},{"name":"b","description":" x","parameters":{"type":"object"}}]}]}` {
			t.Fatal(got)
		}
	})
	t.Run("nothing to do: the same slice", func(t *testing.T) {
		out, err := RewriteTools(req, func(string, []byte) ([]byte, string, bool) { return nil, "", false })
		if err != nil || &out[0] != &req[0] {
			t.Fatal(err)
		}
		body := []byte(`{"contents":[]}`)
		if out, _ := RewriteTools(body, nil); &out[0] != &body[0] {
			t.Fatal("changed")
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, body := range []string{
			`{"tools":[`,
			`{"tools":[{"functionDeclarations":[{"name":"a","parameters":{},"parametersJsonSchema":{}}]}]}`,
			`{"tools":[{"functionDeclarations":[{"name":"a"}],"function_declarations":[]}]}`,
		} {
			if _, err := RewriteTools([]byte(body), func(string, []byte) ([]byte, string, bool) { return nil, "", true }); err == nil {
				t.Errorf("%s: no error", body)
			}
		}
		if _, err := RewriteTools(req, func(string, []byte) ([]byte, string, bool) { return []byte(`{`), "", true }); err == nil {
			t.Error("invalid new schema: no error")
		}
	})
}
