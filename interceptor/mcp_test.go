package interceptor

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

const modernCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
  "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
           "io.modelcontextprotocol/clientInfo":{"name":"cl","version":"1"},
           "io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}},
  "name":"ask","arguments":{"a":1},"requestState":"st1","inputResponses":{"who":{"action":"accept","content":{"name":"ann"}}}}}`

func TestParseMCPRequest(t *testing.T) {
	r, err := ParseMCPRequest([]byte(modernCall))
	if err != nil {
		t.Fatal(err)
	}
	if r.Method != "tools/call" || string(r.ID) != "2" || r.Name != "ask" || string(r.Arguments) != `{"a":1}` ||
		r.Version != MCPModern || !r.Elicit.Form || r.Elicit.URL || r.State != "st1" || !r.HasState ||
		string(r.Responses["who"]) != `{"action":"accept","content":{"name":"ann"}}` {
		t.Errorf("parsed %+v", r)
	}
	if !r.Modern(MCPModern) || r.Modern("2025-11-25") || r.Modern("") {
		t.Error("Modern must need the header to agree with _meta")
	}
}

func TestElicitModes(t *testing.T) {
	for caps, want := range map[string]ElicitModes{
		`{"elicitation":{}}`:                   {Form: true},
		`{"elicitation":{"form":{}}}`:          {Form: true},
		`{"elicitation":{"url":{}}}`:           {URL: true},
		`{"elicitation":{"form":{},"url":{}}}`: {Form: true, URL: true},
		`{"sampling":{}}`:                      {},
		`{"elicitation":true}`:                 {},
	} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":` + caps + `},"name":"x"}}`
		r, err := ParseMCPRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if r.Elicit != want {
			t.Errorf("%s: %+v, want %+v", caps, r.Elicit, want)
		}
	}
}

func TestParseMCPRequestRefuses(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[1]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","requestState":7}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","inputResponses":"a"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"`,
		`[{"jsonrpc":"2.0"}]`,
	} {
		if _, err := ParseMCPRequest([]byte(body)); err == nil {
			t.Errorf("accepted %s", body)
		}
	}
}

func TestMCPMethodReadsOnlyObjects(t *testing.T) {
	if m, _, _ := MCPMethod([]byte(" {\"method\":\"tools/list\",\"id\":1}")); m != "tools/list" {
		t.Errorf("method %q", m)
	}
	if m, _, _ := MCPMethod([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)); m != "" {
		t.Errorf("a response has method %q", m)
	}
	if !IsMCPBatch([]byte("\n[{}]")) || IsMCPBatch([]byte("{}")) {
		t.Error("batch detection")
	}
	if got := MCPBatchCalls([]byte(`[{"method":"tools/call","params":{"name":"a"}},{"method":"ping"},{"method":"tools/call","params":{"name":"b"}}]`)); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("batch calls %q", got)
	}
}

func TestRewriteMCPCall(t *testing.T) {
	out, err := RewriteMCPCall([]byte(modernCall), []byte(`{"a":1,"b":"x"}`), "", map[string][]byte{"z": []byte(`{"action":"decline"}`), "k": []byte(`{"action":"cancel"}`)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseMCPRequest(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Arguments) != `{"a":1,"b":"x"}` || r.HasState || len(r.Responses) != 2 || r.Version != MCPModern {
		t.Errorf("rewritten %s", out)
	}
	if !strings.Contains(string(out), `"inputResponses":{"k":{"action":"cancel"},"z":{"action":"decline"}}`) {
		t.Errorf("responses not in key order: %s", out)
	}
	out, _ = RewriteMCPCall([]byte(modernCall), []byte(`{}`), "up", nil)
	r, _ = ParseMCPRequest(out)
	if r.State != "up" || r.Responses != nil {
		t.Errorf("rewritten %s", out)
	}
}

func TestMCPResults(t *testing.T) {
	te := MCPToolError(`missing "body"`, true)
	if !json.Valid(te) || gjson.GetBytes(te, "content.0.text").String() != `missing "body"` || !gjson.GetBytes(te, "isError").Bool() || gjson.GetBytes(te, "resultType").String() != "complete" {
		t.Errorf("tool error %s", te)
	}
	if gjson.GetBytes(MCPToolError("x", false), "resultType").Exists() {
		t.Error("legacy results carry no resultType")
	}
	ir := MCPInputRequired([]MCPElicitation{{Key: "io.toolgate/form", Params: []byte(`{"mode":"form"}`)}, {Key: "u", Params: MCPURLElicitation("Confirm <b>", "https://p/h/X")}}, "tg1.a.b")
	if !json.Valid(ir) {
		t.Fatalf("invalid %s", ir)
	}
	state, keys, ok := MCPUpstreamInput(ir)
	if !ok || state != "tg1.a.b" || !reflect.DeepEqual(keys, []string{"io.toolgate/form", "u"}) {
		t.Errorf("read back %q %q %v", state, keys, ok)
	}
	if _, _, ok := MCPUpstreamInput([]byte(`{"resultType":"complete","content":[]}`)); ok {
		t.Error("a complete result asks for nothing")
	}
	set, err := SetMCPState(ir, "new")
	if err != nil || gjson.GetBytes(set, "requestState").String() != "new" || gjson.GetBytes(set, "inputRequests.u.params.url").String() != "https://p/h/X" {
		t.Errorf("set state: %s %v", set, err)
	}
	if r := MCPResponse([]byte(`"a"`), te); gjson.GetBytes(r, "id").String() != "a" || !gjson.GetBytes(r, "result.isError").Bool() {
		t.Errorf("response %s", r)
	}
}

func TestReadElicitAnswer(t *testing.T) {
	a, err := ReadElicitAnswer([]byte(`{"action":"accept","content":{"x":1}}`))
	if err != nil || a.Action != "accept" || string(a.Content) != `{"x":1}` {
		t.Errorf("%+v %v", a, err)
	}
	if a, err := ReadElicitAnswer([]byte(`{"action":"decline","content":{"x":1}}`)); err != nil || a.Content != nil {
		t.Errorf("decline carries no content: %+v %v", a, err)
	}
	for _, bad := range []string{`{"action":"yes"}`, `{}`, `nope`} {
		if _, err := ReadElicitAnswer([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestMCPParamHeaders(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"count":{"type":"integer","x-mcp-header":"Count"},
		"flag":{"type":"boolean","x-mcp-header":"Flag"},
		"gone":{"type":"string","x-mcp-header":"Gone"},
		"obj":{"type":"object","properties":{"inner":{"type":"string","x-mcp-header":"Inner"}}},
		"a.b":{"type":"string","x-mcp-header":"Dotted"},
		"{a)":{"type":"string","x-mcp-header":"Brace"},
		"[0]":{"type":"string","x-mcp-header":"Bracket"},
		"plain":{"type":"string"}}}`)
	args := []byte(`{"region":"Zürich ","count":3,"flag":false,"gone":null,"obj":{"inner":"in"},"a.b":"d","{a)":"b","[0]":"k","plain":"p"}`)
	got := MCPParamHeaders(schema, args)
	want := map[string]string{
		"Mcp-Param-Region": "=?base64?WsO8cmljaCA=?=",
		"Mcp-Param-Count":  "3",
		"Mcp-Param-Flag":   "false",
		"Mcp-Param-Inner":  "in",
		"Mcp-Param-Dotted": "d",
		// Keys gjson's path syntax reads as a multipath or a literal
		// unless they are escaped; the server reads them as keys.
		"Mcp-Param-Brace":   "b",
		"Mcp-Param-Bracket": "k",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("headers %v, want %v", got, want)
	}
	if h := MCPParamHeaders(schema, []byte(`{"count":1.5}`)); h != nil {
		t.Errorf("a fraction has no header: %v", h)
	}
}

func TestRewriteMCPTools(t *testing.T) {
	result := []byte(`{"tools":[{"name":"a","description":"A.","inputSchema":{"type":"object"}},{"name":"b","description":"B.","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}}]}`)
	out, err := RewriteMCPTools(result, func(name string, schema []byte) ([]byte, string, bool) {
		if name == "b" {
			return []byte(`{"type":"object","required":["x"]}`), " More.", true
		}
		return nil, "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	if gjson.GetBytes(out, "tools.1.description").String() != "B. More." || gjson.GetBytes(out, "tools.1.inputSchema.required.0").String() != "x" {
		t.Errorf("rewritten %s", out)
	}
	if gjson.GetBytes(out, "tools.0").Raw != gjson.GetBytes(result, "tools.0").Raw {
		t.Errorf("untouched tool re-encoded: %s", out)
	}
}

// flushRecorder counts flushes, to show events go out one by one.
type flushRecorder struct {
	*httptest.ResponseRecorder
	flushes int
	atFlush []string
}

func (f *flushRecorder) Flush() {
	f.flushes++
	f.atFlush = append(f.atFlush, f.Body.String())
}

func rewriteTo(s string) func([]byte) []byte {
	return func([]byte) []byte { return []byte(s) }
}

func TestMCPResultWriterJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewMCPResultWriter(rec, []byte("7"), rewriteTo(`{"ok":true}`), 1<<20)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", "99")
	w.WriteHeader(200)
	w.Write([]byte(`{"jsonrpc":"2.0",`))
	w.Write([]byte(`"id":7,"result":{"tools":[]}}`))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rec.Body.String(); got != `{"jsonrpc":"2.0","id":7,"result":{"ok":true}}` || rec.Header().Get("Content-Length") != "45" {
		t.Errorf("body %s, length %s", got, rec.Header().Get("Content-Length"))
	}

	rec = httptest.NewRecorder()
	w = NewMCPResultWriter(rec, []byte("8"), rewriteTo(`{"ok":true}`), 1<<20)
	w.Header().Set("Content-Type", "application/json")
	body := `{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}`
	w.Write([]byte(body))
	w.Close()
	if rec.Body.String() != body {
		t.Errorf("another id's answer changed: %s", rec.Body.String())
	}

	rec = httptest.NewRecorder()
	w = NewMCPResultWriter(rec, []byte("7"), rewriteTo(`{}`), 10)
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write([]byte(body)); err == nil || w.Close() == nil || rec.Body.Len() != 0 {
		t.Errorf("an answer over the cap must fail with nothing written; wrote %q", rec.Body.String())
	}
}

func TestMCPResultWriterSSE(t *testing.T) {
	events := []string{
		"id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n",
		"id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"elicitation/create\",\"params\":{\"message\":\"result\"}}\n\n",
		"id: 3\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"tools\":[]}}\n\n",
	}
	rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	w := NewMCPResultWriter(rec, []byte("5"), rewriteTo(`{"x":1}`), 1<<20)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	for _, ev := range events {
		for i := 0; i < len(ev); i += 7 { // any split
			end := min(i+7, len(ev))
			if _, err := w.Write([]byte(ev[i:end])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := events[0] + events[1] + "id: 3\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"x\":1}}\n\n"
	if rec.Body.String() != want {
		t.Errorf("stream\n%q\nwant\n%q", rec.Body.String(), want)
	}
	// The server's own request went out (and was flushed) before the
	// response arrived: a legacy elicitation is never held back.
	seen := false
	for _, at := range rec.atFlush {
		if strings.HasSuffix(at, events[0]+events[1]) {
			seen = true
		}
	}
	if !seen {
		t.Errorf("the elicitation was not flushed on its own; flushes: %q", rec.atFlush)
	}
}

func TestMCPResultWriterPassesOtherAnswers(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewMCPResultWriter(rec, []byte("5"), rewriteTo(`{}`), 1<<20)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	body := `{"jsonrpc":"2.0","id":5,"error":{"code":-32020,"message":"header mismatch"}}`
	w.Write([]byte(body))
	w.Close()
	if rec.Code != 400 || rec.Body.String() != body {
		t.Errorf("a 400 must pass unchanged: %d %s", rec.Code, rec.Body.String())
	}
}

func TestMCPMethodRefusesAmbiguity(t *testing.T) {
	for body, want := range map[string][3]string{
		`{"method":"tools/call","params":{"name":"a"}}`:                             {"tools/call", "a", "ok"},
		`{"method":"ping","method":"tools/call","params":{"name":"a"}}`:             {"", "", ""},
		`{"method":"tools/call","Method":"ping"}`:                                   {"", "", ""},
		`{"method":"tools/call","params":{"name":"echo","name":"wipe"}}`:            {"tools/call", "", ""},
		`{"method":"tools/call","params":{"name":"echo"},"params":{"name":"wipe"}}`: {"", "", ""},
		`{"method":"tools\/call","params":{"n\u0061me":"wipe"}}`:                    {"tools/call", "wipe", "ok"},
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                                      {"", "", "ok"},
	} {
		m, tool, ok := MCPMethod([]byte(body))
		if ok != (want[2] == "ok") || (ok && (m != want[0] || tool != want[1])) {
			t.Errorf("%s: %q %q %v, want %v", body, m, tool, ok, want)
		}
	}
	if _, err := ParseMCPRequest([]byte(`{"method":"tools/call","params":{"name":"x","arguments":{"post":7,"post":8}}}`)); err == nil {
		t.Error("a call with a key twice in its arguments was read")
	}
}

func TestParseMCPRequestRefusesCaseVariants(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","Params":{"name":"wipe_all"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"wipe_all"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","Arguments":{"post":8}}}`,
		`{"jsonrpc":"2.0","ID":1,"method":"tools/call","params":{"name":"x"}}`,
		// Keys spelt in camel case: the fold must meet them folded too
		// (found by FuzzParseMCPRequest: "requestStAte" was read as no state).
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","requestStAte":"tg1.a.b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","requeststate":"tg1.a.b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","InputResponses":{"a":{"action":"accept"}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","inputresponses":{"a":{"action":"accept"}}}}`,
	} {
		if _, err := ParseMCPRequest([]byte(body)); err == nil {
			t.Errorf("read %s", body)
		}
	}
}
