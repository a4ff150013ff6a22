package geminitest

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckAcceptsTheRecordedRequests: every recorded follow-up was
// answered 200 by Gemini; the checker accepts each.
func TestCheckAcceptsTheRecordedRequests(t *testing.T) {
	for name, model := range map[string]string{
		"request-parallel-function-responses.json":        "/v1beta/models/gemini-2.5-flash:",
		"request-gemini3-function-response.json":          "/v1beta/models/gemini-3.1-pro-preview:",
		"request-stream-parallel-function-responses.json": "/v1beta/models/gemini-2.5-flash:",
		"request-snake-case-client-id.json":               "/v1beta/models/gemini-2.5-flash:",
		"request-snake-case-server-id.json":               "/v1beta/models/gemini-flash-latest:",
		"vertex-request-three-function-responses.json":    "/v1beta1/projects/p/locations/l/publishers/google/models/gemini-2.5-flash:",
	} {
		if err := Check(model, read(t, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	base := read(t, "request-parallel-function-responses.json")
	g3 := read(t, "request-gemini3-function-response.json")
	set := func(b []byte, path, raw string) []byte {
		out, err := sjson.SetRawBytes(b, path, []byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	del := func(b []byte, path string) []byte {
		out, err := sjson.DeleteBytes(b, path)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct {
		name, model string
		body        []byte
		want        string
	}{
		{"a response missing", "gemini-2.5-flash", del(base, "contents.2.parts.1"), "number of function response parts"},
		{"no response turn", "gemini-2.5-flash", del(base, "contents.2"), "no response turn"},
		{"names swapped", "gemini-2.5-flash", set(base, "contents.2.parts.0.functionResponse.name", `"best_language_to_learn"`), "at its position"},
		{"response not an object", "gemini-2.5-flash", set(base, "contents.2.parts.0.functionResponse.response", `"x"`), "must be an object"},
		{"response without a call", "gemini-2.5-flash", del(base, "contents.1"), "immediately after a function call turn"},
		{"unknown id", "gemini-2.5-flash", set(base, "contents.2.parts.0.functionResponse.id", `"nope"`), "names no call"},
		{"bad role", "gemini-2.5-flash", set(base, "contents.0.role", `"assistant"`), "valid role"},
		{"gemini 3 without a signature", "gemini-3.1-pro-preview", del(g3, "contents.1.parts.0.thoughtSignature"), "missing a thought_signature"},
		{"no contents", "gemini-2.5-flash", []byte(`{"contents":[]}`), "contents is not specified"},
	} {
		err := Check("/v1beta/models/"+c.model+":", c.body)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// Gemini 2.x does not need a signature; an older turn of Gemini 3 is
	// not checked (the person wrote since).
	if err := Check("/v1beta/models/gemini-2.5-flash:", del(base, "contents.1.parts.0.thoughtSignature")); err != nil {
		t.Error(err)
	}
	later := set(del(g3, "contents.1.parts.0.thoughtSignature"), "contents.-1", `{"role":"model","parts":[{"text":"15°C."}]}`)
	later = set(later, "contents.-1", `{"role":"user","parts":[{"text":"Thanks"}]}`)
	if err := Check("/v1beta/models/gemini-3.1-pro-preview:", later); err != nil {
		t.Error(err)
	}
}

// TestServerAnswersAViolationWithGeminisError: the 400 body has the
// recorded error's shape.
func TestServerAnswersAViolationWithGeminisError(t *testing.T) {
	s := New(Response{Unary: read(t, "function-call.json")})
	defer s.Close()
	resp, err := http.Post(s.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "application/json", strings.NewReader(`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"a"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	want := gjson.ParseBytes(read(t, "stream-error-400.json")).Get("error")
	got := gjson.ParseBytes(b).Get("error")
	if resp.StatusCode != 400 || got.Get("code").Int() != want.Get("code").Int() || got.Get("status").Str != want.Get("status").Str || got.Get("message").Str == "" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if len(s.Requests()) != 1 || s.Requests()[0].Err == nil {
		t.Fatal("the request was not recorded with its violation")
	}
}

func TestServerFramings(t *testing.T) {
	c1 := []byte(`{"candidates":[{"content":{"parts":[{"text":"a"}],"role":"model"},"index":0}]}`)
	c2 := []byte(`{"candidates":[{"content":{"parts":[{"text":"b"}],"role":"model"},"finishReason":"STOP","index":0}]}`)
	s := New(Response{Chunks: [][]byte{c1, c2}})
	defer s.Close()
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	get := func(q string) string {
		resp, err := http.Post(s.URL+"/v1beta/models/m"+q, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := get(":generateContent"); got != string(c1) {
		t.Errorf("unary %q", got)
	}
	if got := get(":streamGenerateContent?alt=sse"); got != "data: "+string(c1)+"\r\n\r\ndata: "+string(c2)+"\r\n\r\n" {
		t.Errorf("sse %q", got)
	}
	arr := get(":streamGenerateContent")
	var els []json.RawMessage
	if err := json.Unmarshal([]byte(arr), &els); err != nil || len(els) != 2 || !strings.Contains(arr, "\n,\r\n") {
		t.Errorf("array %q %v", arr, err)
	}
}
