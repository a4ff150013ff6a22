package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// A 2026-07-28 client (here on the wire, as a client that skips
// server/discover sends it) talking through the gate to a server that does
// not take 2026-07-28 is not asked for anything: a form or a confirmation
// for a call the server would refuse anyway. A call that needs the
// person's confirmation reads a tool error saying why, before any card is
// built; a call whose form the gate cannot build (the server's tools/list
// is refused too, so its schema is unknown) goes on and the server refuses
// it itself. Nothing runs.
func TestMCPNoAskWhenServerLacksModern(t *testing.T) {
	e := newMCPEnv(t, legacy) // the go-sdk's stateful server: sessions, no 2026-07-28
	e.app.SetRecord("/posts/7", postRecord)
	status, body := postMCP(t, e.gateURL, []byte(modernCall(4, "delete_post", `{"post":7}`)), "", "", "delete_post")
	res := gjson.GetBytes(body, "result")
	text := res.Get("content.0.text").String()
	if status != 200 || res.Get("resultType").String() == "input_required" || !res.Get("isError").Bool() {
		t.Fatalf("delete_post: got %d %s: want a tool error, no question", status, body)
	}
	for _, want := range []string{"Toolgate refused delete_post", "2026-07-28", "nothing ran"} {
		if !strings.Contains(text, want) {
			t.Errorf("tool error %q does not say %q", text, want)
		}
	}
	if n := e.cardReads("ana"); n != 0 {
		t.Errorf("the record was read %d times for a card nobody may answer", n)
	}
	if n := len(e.server.ToolRequests("delete_post")); n != 0 {
		t.Errorf("%d delete_post calls reached the server", n)
	}
	status, body = postMCP(t, e.gateURL, []byte(modernCall(5, "draft_post", `{"title":"Spring"}`)), "", "", "draft_post")
	if gjson.GetBytes(body, "result.resultType").String() == "input_required" || gjson.GetBytes(body, "error.code").Int() != -32022 {
		t.Errorf("draft_post: got %d %s: want the server's own refusal of 2026-07-28", status, body)
	}
	e.wantNoCalls(t, "draft_post", "delete_post")
}

// The same client in front of a server that speaks 2026-07-28 is asked as
// before: the gate learns that the server takes the call before it asks.
func TestMCPAskWhenServerTakesModern(t *testing.T) {
	e := newMCPEnv(t, modern)
	status, body := postMCP(t, e.gateURL, []byte(modernCall(4, "draft_post", `{"title":"Spring"}`)), "", "", "draft_post")
	if res := gjson.GetBytes(body, "result"); status != 200 || res.Get("resultType").String() != "input_required" || !res.Get("inputRequests").IsObject() {
		t.Fatalf("got %d %s: want the form", status, body)
	}
}

// A client that declares form and URL elicitation but speaks 2025-11-25
// reads the real reason it is not asked: its protocol version, not a
// capability it does declare. A 2026-07-28 client without the capability
// still reads that it declares none.
func TestMCPRefusalSaysTheRealReason(t *testing.T) {
	e := newMCPEnv(t, modern)
	e.app.SetRecord("/posts/7", postRecord)
	handler := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		t.Error("the client was asked")
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	both := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
	old := e.connect(t, "ana", &mcp.ClientOptions{Capabilities: both, ElicitationHandler: handler}, "2025-11-25")
	for _, tc := range []struct{ tool string }{{"draft_post"}, {"delete_post"}} {
		args := map[string]any{"title": "Spring"}
		if tc.tool == "delete_post" {
			args = map[string]any{"post": 7}
		}
		res := callTool(t, old, &mcp.CallToolParams{Name: tc.tool, Arguments: args})
		wantToolError(t, res, tc.tool, "2025-11-25", "2026-07-28")
		if txt := resultText(res); strings.Contains(txt, "declares no") || !strings.Contains(strings.ToLower(txt), "nothing ran") {
			t.Errorf("%s: %q blames a capability the client declares, or does not say nothing ran", tc.tool, txt)
		}
	}
	bare := e.connect(t, "ana", &mcp.ClientOptions{}, "")
	wantToolError(t, callTool(t, bare, &mcp.CallToolParams{Name: "draft_post", Arguments: map[string]any{"title": "Spring"}}), "declares no form elicitation")
	e.wantNoCalls(t, "draft_post", "delete_post")
}
