package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP server's own input_required passes through the gate: the
// client answers our form first, then the server's question; the server's
// final call gets the merged arguments and its own answer under its own
// key and state.
func TestMCPServerInputRequiredRelayed(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  mcpEnvOptions
	}{{"sse", modern}, {"json", mcpEnvOptions{stateless: true, jsonResponse: true}}} {
		t.Run(tc.name, func(t *testing.T) { testRelayed(t, tc.env) })
	}
}

func testRelayed(t *testing.T, o mcpEnvOptions) {
	e := newMCPEnv(t, o)
	rec := &recorder{answer: func(p *mcp.ElicitParams) *mcp.ElicitResult {
		if p.Message == "Which tone?" {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"tone": "warm"}}
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"note": "Thanks all"}}
	}}
	cs := e.connect(t, "ana", &mcp.ClientOptions{ElicitationHandler: rec.handle}, "")
	res := callTool(t, cs, &mcp.CallToolParams{Name: "ask_srv", Arguments: map[string]any{"topic": "meetup"}})
	if res.IsError || res.NeedsInput() || resultText(res) != "Thanks all in a warm tone" {
		t.Fatalf("result isError=%v needsInput=%v %q", res.IsError, res.NeedsInput(), resultText(res))
	}
	asked := rec.Asked()
	if len(asked) != 2 || asked[0].Message != "What is the note?" || asked[1].Message != "Which tone?" {
		t.Fatalf("the client was asked %d times: %+v", len(asked), asked)
	}
	if props, _ := formSchema(t, asked[0]); len(props) != 1 || props["note"] == nil {
		t.Errorf("our form asks %v, want note", props)
	}
	if props, _ := formSchema(t, asked[1]); len(props) != 1 || props["tone"] == nil {
		t.Errorf("the server's question reached the client as %v", props)
	}
	want := []string{
		`ask_srv {"topic":"meetup","note":"Thanks all"} asks state=`,
		`ask_srv {"topic":"meetup","note":"Thanks all"} tone=warm state=s1 responses=[srv]`,
	}
	got := e.server.Calls()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("server saw\n%q\nwant\n%q", got, want)
	}
}

// The same by hand, to see the wire: the server's input request reaches
// the client under the server's key, its requestState wrapped in ours;
// our key never appears next to it; the wrapped state is as bound as a
// form's (tampered, other arguments, replayed: refused).
func TestMCPServerInputRequiredWire(t *testing.T) {
	e := newMCPEnv(t, modern)
	cs := e.manual(t, "ana")
	args := map[string]any{"topic": "meetup"}
	res := callTool(t, cs, &mcp.CallToolParams{Name: "ask_srv", Arguments: args})
	if !res.NeedsInput() || len(res.InputRequests) != 1 {
		t.Fatalf("first answer: needsInput=%v %v", res.NeedsInput(), res.InputRequests)
	}
	var formKey string
	for k := range res.InputRequests {
		formKey = k
	}
	res = callTool(t, cs, &mcp.CallToolParams{
		Name: "ask_srv", Arguments: args, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{formKey: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"note": "Thanks all"}}},
	})
	if !res.NeedsInput() || res.IsError {
		t.Fatalf("the server's question: needsInput=%v isError=%v %q", res.NeedsInput(), res.IsError, resultText(res))
	}
	srv, ok := res.InputRequests["srv"].(*mcp.ElicitParams)
	if len(res.InputRequests) != 1 || !ok || srv.Message != "Which tone?" {
		t.Fatalf("input requests %v, want only the server's srv", res.InputRequests)
	}
	state := res.RequestState
	if state == "s1" || state == "" || strings.Contains(state, formKey) {
		t.Fatalf("the server's requestState reached the client as %q, want it wrapped", state)
	}
	answer := mcp.InputResponseMap{"srv": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"tone": "warm"}}}
	wantToolError(t, callTool(t, cs, &mcp.CallToolParams{Name: "ask_srv", Arguments: map[string]any{"topic": "party"}, RequestState: state, InputResponses: answer}), "other arguments")
	wantToolError(t, callTool(t, cs, &mcp.CallToolParams{Name: "ask_srv", Arguments: args, RequestState: flip(state, len(state)/3), InputResponses: answer}), "requestState")
	if n := len(e.server.Calls()); n != 1 {
		t.Fatalf("server ran %d times before the answer, want once (its question)", n)
	}
	res = callTool(t, cs, &mcp.CallToolParams{Name: "ask_srv", Arguments: args, RequestState: state, InputResponses: answer})
	if res.IsError || resultText(res) != "Thanks all in a warm tone" {
		t.Fatalf("final: isError=%v %q", res.IsError, resultText(res))
	}
	wantToolError(t, callTool(t, cs, &mcp.CallToolParams{Name: "ask_srv", Arguments: args, RequestState: state, InputResponses: answer}), "already used")
	got := e.server.Calls()
	if len(got) != 2 || got[1] != `ask_srv {"topic":"meetup","note":"Thanks all"} tone=warm state=s1 responses=[srv]` {
		t.Errorf("server saw %q", got)
	}
}

// A server that asks under the key of the gate's own form cannot have its
// question mistaken for ours (nor ours answered by its): the call ends in a
// tool error and nothing more runs.
func TestMCPServerInputRequiredReservedKey(t *testing.T) {
	e := newMCPEnv(t, modern)
	cs := e.manual(t, "ana")
	res := callTool(t, cs, &mcp.CallToolParams{Name: "ask_srv", Arguments: map[string]any{"topic": "meetup"}})
	var formKey string
	for k := range res.InputRequests {
		formKey = k
	}
	if !res.NeedsInput() || formKey == "" {
		t.Fatalf("first answer: %v", res.InputRequests)
	}
	args := map[string]any{"topic": "key:" + formKey}
	res = callTool(t, cs, &mcp.CallToolParams{Name: "ask_srv", Arguments: args})
	res = callTool(t, cs, &mcp.CallToolParams{
		Name: "ask_srv", Arguments: args, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{formKey: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"note": "Thanks all"}}},
	})
	wantToolError(t, res, "reserves", "nothing more ran")
	got := e.server.Calls()
	if len(got) != 1 || !strings.HasSuffix(got[0], " asks state=") {
		t.Errorf("server ran %q, want only its question", got)
	}
}

// A form that fills a parameter annotated x-mcp-header: the gate sends the
// merged call with a matching Mcp-Param-Region header, which the
// 2026-07-28 server checks against the body (-32020 on a mismatch). With
// the tool listed first (the client then sends headers of its own) and
// without; with a value that must travel base64-encoded.
func TestMCPParamHeaderRecomputed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tool   string
		list   bool           // the client lists the tools first (it then sends headers of its own)
		args   map[string]any // what the model gave
		answer map[string]any // what the person fills in
		region string
		header string
	}{
		{"unlisted", "book_room", false, map[string]any{"room": "Aula"}, map[string]any{"region": "eu-west"}, "eu-west", "eu-west"},
		{"listed first", "book_room", true, map[string]any{"room": "Aula"}, map[string]any{"region": "eu-west"}, "eu-west", "eu-west"},
		{"non-ascii", "book_room", false, map[string]any{"room": "Aula"}, map[string]any{"region": "Zürich"}, "Zürich", "=?base64?WsO8cmljaA==?="},
		// The client names the region and sends its header; the form asks
		// for the room: the header stays.
		{"client sends the header", "book_room", true, map[string]any{"region": "eu-west"}, map[string]any{"room": "Aula"}, "eu-west", "eu-west"},
		// The policy's own schema has no x-mcp-header: the server's
		// annotation still decides the header.
		{"policy schema", "book_desk", false, map[string]any{"room": "Aula"}, map[string]any{"region": "eu-west"}, "eu-west", "eu-west"},
		{"policy schema, listed first", "book_desk", true, map[string]any{"room": "Aula"}, map[string]any{"region": "eu-west"}, "eu-west", "eu-west"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newMCPEnv(t, modern)
			rec := &recorder{answer: accept(tc.answer)}
			cs := e.connect(t, "ana", &mcp.ClientOptions{ElicitationHandler: rec.handle}, "")
			if tc.list {
				if _, err := cs.ListTools(t.Context(), nil); err != nil {
					t.Fatal(err)
				}
			}
			res := callTool(t, cs, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if res.IsError || resultText(res) != "booked Aula in "+tc.region {
				t.Fatalf("result isError=%v %q", res.IsError, resultText(res))
			}
			if asked := rec.Asked(); len(asked) != 1 {
				t.Fatalf("asked %d times", len(asked))
			} else if props, _ := formSchema(t, asked[0]); len(props) != 1 {
				t.Errorf("form asks %v, want one field", props)
			}
			if got := e.server.Calls(); len(got) != 1 || got[0] != tc.tool+` {"region":"`+tc.region+`","room":"Aula"}` {
				t.Errorf("server ran %q", got)
			}
			reqs := e.server.ToolRequests(tc.tool)
			if len(reqs) != 1 || reqs[0].Region != tc.header || reqs[0].RespError != "" {
				t.Errorf("%s requests at the server: %+v, want one with Mcp-Param-Region %q", tc.tool, reqs, tc.header)
			}
		})
	}
}

// A complete call passes untouched, with the header the client computed
// from the listed tool: the listing must keep the server's annotation even
// when the policy gives its own schema.
func TestMCPParamHeaderListedKept(t *testing.T) {
	for _, tool := range []string{"book_room", "book_desk"} {
		t.Run(tool, func(t *testing.T) {
			e := newMCPEnv(t, modern)
			cs := e.connect(t, "ana", nil, "")
			list, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range list.Tools {
				if tl.Name == tool {
					b, _ := json.Marshal(tl.InputSchema)
					if !strings.Contains(string(b), `"x-mcp-header":"Region"`) {
						t.Errorf("%s listed as %s: the server's x-mcp-header is gone", tool, b)
					}
				}
			}
			res := callTool(t, cs, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"room": "Aula", "region": "eu-west"}})
			if res.IsError || resultText(res) != "booked Aula in eu-west" {
				t.Fatalf("result isError=%v %q", res.IsError, resultText(res))
			}
			if reqs := e.server.ToolRequests(tool); len(reqs) != 1 || reqs[0].Region != "eu-west" {
				t.Errorf("%s requests at the server: %+v", tool, reqs)
			}
		})
	}
}
