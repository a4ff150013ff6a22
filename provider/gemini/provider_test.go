package gemini

import (
	"bytes"
	"net/url"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestProviderQuestions(t *testing.T) {
	p := Provider{}
	for path, want := range map[string]bool{
		"/v1beta/models/gemini-2.5-flash:generatecontent":       true,
		"/v1beta/models/gemini-2.5-flash:streamgeneratecontent": true,
		"/v1beta/models/gemini-2.5-flash:counttokens":           false,
		"/v1beta/openai/chat/completions":                       false,
		"/v1/chat/completions":                                  false,
	} {
		if got := p.Serves(path); got != want {
			t.Errorf("Serves(%s) = %v", path, got)
		}
	}
	u, _ := url.Parse("http://x/v1beta/models/m:streamGenerateContent?alt=sse")
	if !p.Streams("POST", u, nil) || p.Streams("POST", nil, []byte(`{"stream":true}`)) {
		t.Error("Streams reads the URL, and a nil URL does not stream")
	}
	for _, path := range []string{"/v1beta/models/m:batchgeneratecontent", "/v1beta/cachedcontents/c1", "/v1beta/batches/b1"} {
		segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
		if p.Around("POST", segs, len(segs)-1) == nil {
			t.Errorf("Around(%s) = nil", path)
		}
		if p.Around("POST", segs, 0) != nil {
			t.Errorf("Around(%s) answered at a segment other than the last", path)
		}
	}
	if p.OwnerFields() != nil || !p.RequiresOwner() {
		t.Error("a Gemini route needs an owner placeholder")
	}
}

func TestProviderDropTools(t *testing.T) {
	body := []byte(`{"contents":[],"tools":[{"functionDeclarations":[{"name":"a"},{"name":"b"}]},{"googleSearch":{}},{"functionDeclarations":[{"name":"c"}]}],"toolConfig":{}}`)
	out, err := Provider{}.DropTools(body, func(n string) bool { return n == "b" || n == "c" })
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(out, "tools").Raw; got != `[{"functionDeclarations":[{"name":"a"}]},{"googleSearch":{}}]` {
		t.Errorf("tools = %s", got)
	}
	out, err = Provider{}.DropTools([]byte(`{"tools":[{"function_declarations":[{"name":"a"}]}],"toolConfig":{"x":1}}`), func(string) bool { return true })
	if err != nil || gjson.GetBytes(out, "tools").Exists() || gjson.GetBytes(out, "toolConfig").Exists() {
		t.Errorf("every tool dropped: %s %v", out, err)
	}
	same := []byte(`{"tools":[{"functionDeclarations":[{"name":"a"}]}]}`)
	if out, _ := (Provider{}).DropTools(same, func(string) bool { return false }); &out[0] != &same[0] {
		t.Error("nothing dropped must return the body itself")
	}
}

func TestProviderRefusalBody(t *testing.T) {
	b, ok := Provider{}.RefusalBody("/v1beta/models/m:batchgeneratecontent", 403, "toolgate: no")
	if !ok || gjson.GetBytes(b, "error.code").Int() != 403 || gjson.GetBytes(b, "error.status").Str != "PERMISSION_DENIED" || gjson.GetBytes(b, "error.message").Str != "toolgate: no" {
		t.Errorf("refusal = %s %v", b, ok)
	}
	for _, path := range []string{"/v1/batches", "/v1/messages/batches", "/v1/chat/completions", "/v1beta/openai/chat/completions"} {
		if _, ok := (Provider{}).RefusalBody(path, 403, "x"); ok {
			t.Errorf("%s: Google's shape on another provider's path", path)
		}
	}
}

// FuzzDropTools: whatever the body, DropTools does not panic; a valid
// body stays valid JSON and keeps no declaration named "drop".
func FuzzDropTools(f *testing.F) {
	f.Add([]byte(`{"tools":[{"functionDeclarations":[{"name":"drop"},{"name":"keep"}]},{"googleSearch":{}}],"toolConfig":{}}`))
	f.Add([]byte(`{"tools":[{"function_declarations":[{"name":"drop"}]}]}`))
	f.Add([]byte(`{"Tools":[{"FunctionDeclarations":[{"name":"drop"}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := Provider{}.DropTools(body, func(n string) bool { return n == "drop" })
		if err != nil || !gjson.ValidBytes(body) {
			return
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("invalid output %s from %s", out, body)
		}
		again, err := Provider{}.DropTools(out, func(n string) bool { return n == "drop" })
		if err == nil && !bytes.Equal(again, out) {
			t.Fatalf("a declaration named drop stayed: %s", out)
		}
	})
}

// TestProviderRefusesStreamedArguments: a request asking for streamed
// function-call arguments, in either key spelling, is refused before it
// goes upstream with 400 and no allow name (its answer's calls come in
// fragments the gate cannot judge); one that does not ask passes.
func TestProviderRefusesStreamedArguments(t *testing.T) {
	p := Provider{}
	for _, body := range []string{
		`{"contents":[],"toolConfig":{"functionCallingConfig":{"mode":"AUTO","streamFunctionCallArguments":true}}}`,
		`{"contents":[],"tool_config":{"function_calling_config":{"stream_function_call_arguments":true}}}`,
	} {
		a := p.AroundParam([]byte(body))
		if a == nil || a.Status != 400 || a.Allow != "" {
			t.Errorf("%s: %+v", body, a)
			continue
		}
		if m := a.Message("POST", "/v1/x:streamGenerateContent"); !strings.Contains(m, "streamFunctionCallArguments") || strings.Contains(m, "allow") {
			t.Errorf("message %q", m)
		}
	}
	for _, body := range []string{`{"contents":[]}`, `{"toolConfig":{"functionCallingConfig":{"streamFunctionCallArguments":false}}}`} {
		if a := p.AroundParam([]byte(body)); a != nil {
			t.Errorf("%s refused: %+v", body, a)
		}
	}
}

// TestProviderURLQuestions: StreamsJSON says a stream without alt=sse is
// a JSON array; AroundURL names a stream whose alt cannot be read, with
// the allow name ambiguous_alt, and nothing else.
func TestProviderURLQuestions(t *testing.T) {
	p := Provider{}
	for raw, want := range map[string][2]bool{ // StreamsJSON, AroundURL
		"/v1beta/models/m:streamGenerateContent":                                      {true, false},
		"/v1beta/models/m:streamGenerateContent?alt=json":                             {true, false},
		"/v1beta/models/m:streamGenerateContent?alt=sse":                              {false, false},
		"/v1beta/models/m:streamGenerateContent?alt=sse&alt=sse":                      {false, false},
		"/v1beta/models/m:streamGenerateContent?alt=sse&alt=json":                     {false, true},
		"/v1beta/models/m:streamGenerateContent?alt=sse&$alt=json":                    {false, true},
		"/v1beta/models/m:streamGenerateContent?alt=proto":                            {false, true},
		"/v1beta/models/m:generateContent?alt=sse&alt=json":                           {false, false},
		"/v1/projects/p/locations/l/publishers/google/models/m:streamGenerateContent": {true, false},
	} {
		u, err := url.Parse("http://x" + raw)
		if err != nil {
			t.Fatal(err)
		}
		a := p.AroundURL("POST", u)
		if got := [2]bool{p.StreamsJSON("POST", u, nil), a != nil}; got != want {
			t.Errorf("%s: StreamsJSON, AroundURL = %v, want %v", raw, got, want)
		}
		if a != nil && (a.Allow != "ambiguous_alt" || a.Status != 400) {
			t.Errorf("%s: %+v", raw, a)
		}
	}
	if p.StreamsJSON("POST", nil, nil) || p.AroundURL("POST", nil) != nil {
		t.Error("a nil URL")
	}
}
