package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/tidwall/gjson"
)

const anthToolsBody = `{"model":"claude-sonnet-4-5","max_tokens":512,"metadata":{"user_id":" user-ana "},"messages":[{"role":"user","content":"hi"}],"tools":[` +
	`{"name":"send_email","description":"Send an e-mail \u00e9","input_schema":{"type":"object","properties":{"to":{"type":["string","null"]}}}},` +
	`{"type":"web_search_20250305","name":"web_search","max_uses":3},` +
	`{"type":"custom","name":"delete_post","input_schema":{"type":"object"}},` +
	`{"name":"get_post","input_schema":{"type":"object"}}]}`

func TestAnthropicRewriteTools(t *testing.T) {
	var asked []string
	rewrite := func(name string, schema []byte) ([]byte, string, bool) {
		asked = append(asked, name+" "+string(schema))
		switch name {
		case "send_email":
			return []byte(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`), " Ask for what you miss.", true
		case "delete_post":
			return nil, " Needs a confirmation.", true
		case "web_search":
			t.Error("a server tool was offered for rewriting")
		}
		return nil, "", false
	}
	out, err := Anthropic{}.RewriteTools([]byte(anthToolsBody), rewrite)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 3 || asked[0] != `send_email {"type":"object","properties":{"to":{"type":["string","null"]}}}` {
		t.Errorf("asked %q", asked)
	}
	tools := gjson.GetBytes(out, "tools").Array()
	if tools[0].Raw != `{"name":"send_email","description":"Send an e-mail \u00e9 Ask for what you miss.","input_schema":{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}}` {
		t.Errorf("send_email = %s", tools[0].Raw)
	}
	if tools[1].Raw != `{"type":"web_search_20250305","name":"web_search","max_uses":3}` || tools[3].Raw != `{"name":"get_post","input_schema":{"type":"object"}}` {
		t.Errorf("untouched tools changed: %s", out)
	}
	if tools[2].Get("description").Str != " Needs a confirmation." || tools[2].Get("input_schema").Raw != `{"type":"object"}` {
		t.Errorf("delete_post = %s", tools[2].Raw)
	}
	var p anthropic.MessageNewParams
	if err := json.Unmarshal(out, &p); err != nil || len(p.Tools) != 4 {
		t.Errorf("SDK: %v", err)
	}
}

func TestAnthropicRewriteToolsUntouched(t *testing.T) {
	none := func(string, []byte) ([]byte, string, bool) { return nil, "", false }
	for _, body := range []string{`{"messages":[]}`, anthToolsBody, `{"tools":null}`} {
		in := []byte(body)
		out, err := Anthropic{}.RewriteTools(in, none)
		if err != nil || &out[0] != &in[0] {
			t.Errorf("%s: err %v, or not the same slice", body, err)
		}
	}
	bad := func(string, []byte) ([]byte, string, bool) { return []byte(`{"type":`), "", true }
	if _, err := (Anthropic{}).RewriteTools([]byte(anthToolsBody), bad); err == nil {
		t.Error("no error for an invalid schema")
	}
	if _, err := (Anthropic{}).RewriteTools([]byte(`{"tools":[`), none); err == nil {
		t.Error("no error for invalid JSON")
	}
}

func TestAnthropicOwnerAndToolSchema(t *testing.T) {
	if o := AnthropicOwner([]byte(anthToolsBody)); o != "user-ana" {
		t.Errorf("owner = %q", o)
	}
	for _, body := range []string{`{"metadata":{}}`, `{"metadata":{"user_id":7}}`, `{"metadata":`, `{"user":"x"}`} {
		if o := AnthropicOwner([]byte(body)); o != "" {
			t.Errorf("%s: owner %q", body, o)
		}
	}
	if s := AnthropicToolSchema([]byte(anthToolsBody), "get_post"); string(s) != `{"type":"object"}` {
		t.Errorf("schema = %s", s)
	}
	if s := AnthropicToolSchema([]byte(anthToolsBody), "web_search"); s != nil {
		t.Errorf("server tool schema = %s", s)
	}
}
