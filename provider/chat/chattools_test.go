package chat

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

const toolsRequest = `{"model":"gpt-4o", "messages":[{"role":"user","content":"hi"}],` +
	` "tools":[` +
	`{"type":"function","function":{"name":"create_post","description":"Creates a post \u00e9.","parameters":{"type":"object","properties":{"title":{"type":["string","null"]}}},"strict":false}},` +
	`{"type":"function","function":{"name":"get_post","parameters":{"type":"object"}}},` +
	`{"type":"function","function":{"name":"ping"}},` +
	`{"type":"custom","custom":{"name":"create_post","description":"x"}}],` +
	` "tool_choice":"auto"}`

// askRewrite rewrites create_post and ping; it records what it was asked.
type askRewrite struct{ asked []string }

func (a *askRewrite) rewrite(name string, params []byte) ([]byte, string, bool) {
	a.asked = append(a.asked, name+" "+string(params))
	switch name {
	case "create_post":
		return []byte(`{"type":"object","required":["title"],"properties":{"title":{"type":"string"}}}`), " Call it with what you know; the person fills in the rest.", true
	case "ping":
		return nil, "\nNo arguments.", true
	}
	return nil, "", false
}

func TestRewriteTools(t *testing.T) {
	body := []byte(toolsRequest)
	a := &askRewrite{}
	out, err := Chat{}.RewriteTools(body, a.rewrite)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`create_post {"type":"object","properties":{"title":{"type":["string","null"]}}}`,
		`get_post {"type":"object"}`,
		`ping `,
	}
	if strings.Join(a.asked, "|") != strings.Join(want, "|") {
		t.Errorf("asked %q\nwant  %q", a.asked, want)
	}
	if !gjson.ValidBytes(out) {
		t.Fatalf("invalid output: %s", out)
	}
	tools := gjson.GetBytes(out, "tools").Array()
	if got := tools[0].Get("function.parameters.required").Raw; got != `["title"]` {
		t.Errorf("parameters = %s", tools[0].Get("function.parameters").Raw)
	}
	if got := tools[0].Get("function.description").Str; got != "Creates a post é. Call it with what you know; the person fills in the rest." {
		t.Errorf("description = %q", got)
	}
	if !strings.Contains(string(out), `"description":"Creates a post \u00e9. Call it`) || !strings.Contains(string(out), `"strict":false`) {
		t.Errorf("the description's own bytes or other members changed:\n%s", out)
	}
	if tools[1].Raw != gjson.Get(toolsRequest, "tools.1").Raw || tools[3].Raw != gjson.Get(toolsRequest, "tools.3").Raw {
		t.Errorf("tools not rewritten changed:\n%s", out)
	}
	if got := tools[2].Get("function.description").Str; got != "\nNo arguments." || tools[2].Get("function.parameters").Exists() {
		t.Errorf("ping = %s", tools[2].Raw)
	}
	// Bytes outside the rewritten function objects are kept.
	head := toolsRequest[:strings.Index(toolsRequest, `{"name":"create_post"`)]
	tail := toolsRequest[strings.Index(toolsRequest, `,{"type":"custom"`):]
	if !bytes.HasPrefix(out, []byte(head)) || !bytes.HasSuffix(out, []byte(tail)) {
		t.Errorf("bytes outside the tools changed:\n%s", out)
	}
}

func TestRewriteToolsUntouched(t *testing.T) {
	never := func(string, []byte) ([]byte, string, bool) { return nil, "", false }
	for _, body := range []string{
		`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		toolsRequest,
		`{"tools":null}`,
	} {
		b := []byte(body)
		out, err := Chat{}.RewriteTools(b, never)
		if err != nil || &out[0] != &b[0] || len(out) != len(b) {
			t.Errorf("%s: err %v, not the same slice", body, err)
		}
	}
	// ok with nothing to change: the same bytes.
	b := []byte(toolsRequest)
	out, err := Chat{}.RewriteTools(b, func(string, []byte) ([]byte, string, bool) { return nil, "", true })
	if err != nil || !bytes.Equal(out, b) {
		t.Errorf("err %v, out %s", err, out)
	}
}

func TestRewriteToolsErrors(t *testing.T) {
	a := &askRewrite{}
	if _, err := (Chat{}).RewriteTools([]byte(`{"tools":[{"type":"function"`), a.rewrite); err == nil {
		t.Error("no error for invalid JSON")
	}
	bad := func(string, []byte) ([]byte, string, bool) { return []byte(`{"type":`), "", true }
	if _, err := (Chat{}).RewriteTools([]byte(toolsRequest), bad); err == nil {
		t.Error("no error for invalid new parameters")
	}
}
