package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A legacy session passes the gate unharmed: initialize hands out an
// Mcp-Session-Id that every later request carries; an ungated tool's
// server-initiated elicitation/create reaches the client mid-stream on the
// POST's SSE answer, and the client's JSON-RPC response (its own POST)
// reaches the server, which then finishes the stream; DELETE ends the
// session. A gate that buffered the stream would deadlock here: the call
// has a deadline so that fails rather than hangs.
func TestMCPLegacyPassThrough(t *testing.T) {
	e := newMCPEnv(t, legacy)
	rec := &recorder{answer: accept(map[string]any{"name": "Ann"})}
	cs := e.connect(t, "ana", &mcp.ClientOptions{ElicitationHandler: rec.handle}, "")
	if ir := cs.InitializeResult(); ir == nil || ir.ProtocolVersion != "2025-11-25" {
		t.Fatalf("session speaks %+v, want 2025-11-25", ir)
	}
	sid := cs.ID()
	if sid == "" {
		t.Fatal("no Mcp-Session-Id came back through the gate")
	}

	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(c, &mcp.CallToolParams{Name: "ask_legacy", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("legacy elicitation through the gate: %v", err)
	}
	if res.IsError || resultText(res) != "hello Ann" {
		t.Fatalf("result isError=%v %q", res.IsError, resultText(res))
	}
	asked := rec.Asked()
	if len(asked) != 1 || asked[0].Message != "Your name?" {
		t.Fatalf("the client was asked %+v", asked)
	}
	if props, _ := formSchema(t, asked[0]); props["name"] == nil {
		t.Errorf("the server's form lost its schema: %v", props)
	}
	if got := e.server.Calls(); len(got) != 1 || got[0] != "ask_legacy {} action=accept name=Ann" {
		t.Errorf("server ran %q", got)
	}

	// What the server received: initialize without a session, everything
	// after it with the session it handed out, the client's answer as a
	// JSON-RPC response POST (202).
	var init, toolCall, answer *upstreamReq
	reqs := e.server.Answered()
	for i := range reqs {
		r := &reqs[i]
		switch {
		case r.RPC == "initialize":
			init = r
		case r.RPC == "tools/call" && r.Tool == "ask_legacy":
			toolCall = r
		case r.RPC == "response":
			answer = r
		}
	}
	switch {
	case init == nil || toolCall == nil || answer == nil:
		t.Fatalf("server requests %+v: want initialize, the tools/call and the client's response", reqs)
	case init.Session != "" || init.RespSess != sid:
		t.Errorf("initialize carried session %q, answered %q; the client holds %q", init.Session, init.RespSess, sid)
	case toolCall.Session != sid || toolCall.Status != http.StatusOK:
		t.Errorf("tools/call: session %q status %d", toolCall.Session, toolCall.Status)
	case answer.Session != sid || answer.Status != http.StatusAccepted:
		t.Errorf("the client's response: session %q status %d", answer.Session, answer.Status)
	}
	for _, r := range reqs {
		if r.Method == http.MethodPost && r.RPC != "initialize" && r.RPC != "server/discover" && r.Session != sid {
			t.Errorf("%s %s reached the server without the session: %+v", r.Method, r.RPC, r)
		}
	}

	// The standalone GET stream of the session passes too.
	gctx, gcancel := context.WithTimeout(context.Background(), 10*time.Second)
	get, _ := http.NewRequestWithContext(gctx, http.MethodGet, e.gateURL, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", sid)
	get.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	get.Header.Set("X-User-Id", "ana")
	gresp, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatalf("GET stream: %v", err)
	}
	if gresp.StatusCode != http.StatusOK || !strings.HasPrefix(gresp.Header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("GET stream: %d %s", gresp.StatusCode, gresp.Header.Get("Content-Type"))
	}
	gcancel()
	gresp.Body.Close()
	sawGet := false
	for _, r := range e.server.Requests() {
		sawGet = sawGet || (r.Method == http.MethodGet && r.Session == sid && r.Status == http.StatusOK)
	}
	if !sawGet {
		t.Errorf("the server saw no GET stream for the session: %+v", e.server.Requests())
	}

	// Closing the session sends DELETE, which the server honours: the
	// session is gone, and a request naming it gets the server's 404.
	if err := cs.Close(); err != nil {
		t.Fatalf("closing the session: %v", err)
	}
	var del *upstreamReq
	for _, r := range e.server.Requests() {
		if r.Method == http.MethodDelete {
			del = &r
		}
	}
	if del == nil || del.Session != sid || del.Status != http.StatusNoContent {
		t.Fatalf("DELETE at the server: %+v, want 204 for session %q", del, sid)
	}
	req, _ := http.NewRequest(http.MethodPost, e.gateURL, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("X-User-Id", "ana")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request on the closed session got %d, want the server's 404", resp.StatusCode)
	}
}

// A gated tool's complete call on a legacy session passes too, its SSE
// answer intact.
func TestMCPLegacyGatedCompleteCallPasses(t *testing.T) {
	e := newMCPEnv(t, legacy)
	cs := e.connect(t, "ana", nil, "")
	res := callTool(t, cs, &mcp.CallToolParams{Name: "draft_post", Arguments: map[string]any{"title": "Spring", "body": "Spring is here."}})
	wantDrafted(t, res)
	e.wantRan(t, 1)
	if r := e.server.ToolRequests("draft_post"); len(r) != 1 || r[0].Session != cs.ID() {
		t.Errorf("draft_post requests at the server: %+v", r)
	}
}
