package gemini

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testkit/benchbody"

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

// TestNamesTools: the filter before a request's tools are read finds
// "tools" in any ASCII case, anywhere (a key, text, the tail of a longer
// word), and nothing else: not an escape, not a rune that folds onto a
// letter. RewriteTools reads, and so refuses as invalid JSON, exactly the
// bodies it finds the word in.
func TestNamesTools(t *testing.T) {
	for body, want := range map[string]bool{
		`{"tools":[]}`: true,
		`{"TOOLS":[]}`: true,
		`{"ToOlS":[]}`: true,
		`{"contents":[{"parts":[{"text":"my tOOLs"}]}]}`: true,
		`{"x":"toolset"}`:                 true,
		`{"tool":"s"}`:                    false,
		`{"\u0074ools":[]}`:               false, // an escape is not looked for (as before)
		`{"tool\u0073":[]}`:               false,
		"{\"tool\u017f\":[]}":             false, // ſ folds onto s for encoding/json, not for a byte search (as before)
		`{"to_ols":[]}`:                   false,
		``:                                false,
		`tools`:                           true,
		strings.Repeat("l", 64) + "ToolS": true,
		strings.Repeat("ls", 64) + "tool": false,
		`{"tools":[`:                      true,
		`{"contents":[`:                   false,
	} {
		if got := containsFoldBytes([]byte(body), []byte("tools")); got != want {
			t.Errorf("%q: %v", body, got)
		}
		_, err := RewriteTools([]byte(body), func(string, []byte) ([]byte, string, bool) { return nil, "", true })
		if invalid := !gjson.Valid(body); (err != nil) != (want && invalid) {
			t.Errorf("%q: RewriteTools error %v", body, err)
		}
	}
}

// TestRewriteToolsAtEveryPlace: a tools key in each case, at each place in
// a request around the blocks its search reads (keyscan.IndexFold), is
// read; at the end of a body cut short, it makes the body an error.
func TestRewriteToolsAtEveryPlace(t *testing.T) {
	for _, key := range []string{"tools", "TOOLS", "ToOlS", "toolS"} {
		for pad := range 40 {
			body := `{"contents":[{"parts":[{"text":"tool ls` + strings.Repeat(" ", pad) + `"}]}],"` + key + `":[{"functionDeclarations":[{"name":"a"}]}]}`
			out, err := RewriteTools([]byte(body), func(string, []byte) ([]byte, string, bool) { return nil, " x", true })
			if err != nil || gjson.GetBytes(out, key+".0.functionDeclarations.0.description").Str != " x" {
				t.Fatalf("%s: %s, %v", body, out, err)
			}
			// Cut after the key, the body's last bytes: invalid JSON
			// carrying tools, an error.
			if cut := body[:strings.Index(body, key)+len(key)]; !containsFoldBytes([]byte(cut), []byte("tools")) {
				t.Fatalf("%s: not found", cut)
			} else if _, err := RewriteTools([]byte(cut), func(string, []byte) ([]byte, string, bool) { return nil, " x", true }); err == nil {
				t.Fatalf("%s: no error", cut)
			}
		}
	}
}

// meetupRequest is e2e's BenchmarkPassThroughGeminiJSON's request: 2 KB
// of conversation, no tools.
func meetupRequest() []byte { return benchbody.GeminiRequest() }

// BenchmarkRewriteToolsText offers the policy's tools to a 2 KB text
// request without tools, as every request on a Gemini route is offered
// them: the search for "tools" alone.
func BenchmarkRewriteToolsText(b *testing.B) {
	req := meetupRequest()
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		out, err := RewriteTools(req, func(string, []byte) ([]byte, string, bool) { return nil, "", true })
		if err != nil || &out[0] != &req[0] {
			b.Fatal("rewritten", err)
		}
	}
}
