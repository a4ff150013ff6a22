package anthropictest

import (
	"os"
	"testing"

	"github.com/tidwall/sjson"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckAcceptsTheRecordedRequests: both recorded requests were
// answered 200 by Anthropic; the checker accepts each, and the follow-up
// with text after the tool_result and a next turn.
func TestCheckAcceptsTheRecordedRequests(t *testing.T) {
	req2 := read(t, "request-2.json")
	more, err := sjson.SetRawBytes(req2, "messages.2.content.-1", []byte(`{"type":"text","text":"And tomorrow?"}`))
	if err != nil {
		t.Fatal(err)
	}
	more, err = sjson.SetRawBytes(more, "messages.-1", []byte(`{"role":"assistant","content":[{"type":"text","text":"Sunny."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{
		"request-1.json":     read(t, "request-1.json"),
		"request-2.json":     req2,
		"text after results": more,
	} {
		if err := Check(body); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCheckRefuses: each broken shape of request-2.json, with Anthropic's
// message.
func TestCheckRefuses(t *testing.T) {
	base := read(t, "request-2.json")
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
	const missing = "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"no message after the call", del(base, "messages.2"), missing + "toolu_01RaX2WYWRWCbaeFHssmGJXG"},
		{"the next message is the assistant's", set(base, "messages.2.role", `"assistant"`), missing + "toolu_01RaX2WYWRWCbaeFHssmGJXG"},
		{"the result names another call", set(base, "messages.2.content.0.tool_use_id", `"toolu_other"`), missing + "toolu_01RaX2WYWRWCbaeFHssmGJXG"},
		{"the person's words instead", set(base, "messages.2.content", `[{"type":"text","text":"never mind"}]`), missing + "toolu_01RaX2WYWRWCbaeFHssmGJXG"},
		{"a second call unanswered", set(base, "messages.1.content.-1", `{"type":"tool_use","id":"toolu_second","name":"get_weather","input":{}}`), missing + "toolu_second"},
		{"the result after text", set(base, "messages.2.content", `[{"type":"text","text":"here:"},{"type":"tool_result","tool_use_id":"toolu_01RaX2WYWRWCbaeFHssmGJXG","content":"68"}]`),
			"messages.2: tool_result blocks must come first in the user message"},
	} {
		err := Check(c.body)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if _, ok := err.(Violation); err != nil && !ok {
			t.Errorf("%s: %T is not a Violation", c.name, err)
		}
	}
}
