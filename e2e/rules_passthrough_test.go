package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit"
)

// neverRule is a rule that cannot be evaluated: its division by zero is
// an evaluation error whatever the call, so a call it is evaluated on is
// refused (fail closed) and the gate logs the rule.
const neverRule = "    rules: [{name: never evaluated, when: '1 / (tool.size() - tool.size()) == 1', then: deny, because: never read}]\n"

// neverRulesPolicy is the test policy with neverRule on every action but
// list_posts (an action without rules).
func neverRulesPolicy(t testing.TB) string {
	t.Helper()
	actions := strings.Count(policyYAML, "\n    effect: ")
	p := strings.ReplaceAll(policyYAML, "\n    effect: ", "\n"+neverRule+"    effect: ")
	p = strings.Replace(p, "  list_posts:\n"+neverRule, "  list_posts:\n", 1)
	if n := strings.Count(p, neverRule); n != actions-1 || actions < 10 {
		t.Fatalf("the rule is on %d of %d actions", n, actions)
	}
	return p
}

// TestRulesNotEvaluatedWithoutDeclaredCall: every action of the route's
// policy but one has a rule whose evaluation fails, so any evaluation
// would refuse a call, send the model a follow-up and log the rule. The
// responses without a declared call (only text, or the call of a tool the
// policy does not declare), JSON and streamed, on OpenAI Chat, OpenAI
// Responses and Anthropic Messages, and a call of the action without
// rules, reach the app byte for byte; the provider reads one request per
// response (no refusal went back), the app's endpoint gets nothing, the
// gate's log names no rule and the audit log has no event of them. Then a
// call of a ruled action on each API is refused with the rule's error (the
// rule is there and would fail), the log names the rule's error once per
// call, and those are the only audit events.
func TestRulesNotEvaluatedWithoutDeclaredCall(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	e := newEnv(t, envOptions{policy: neverRulesPolicy(t), logFile: logFile})
	start := time.Now().Add(-time.Second)
	const (
		chatReq      = `{"model":"gpt-4o","messages":[{"role":"user","content":"Go ahead."}]}`
		chatStream   = `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Go ahead."}]}`
		respReq      = `{"model":"gpt-5","input":"Go ahead."}`
		respStream   = `{"model":"gpt-5","stream":true,"input":"Go ahead."}`
		claudeReq    = `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"Go ahead."}]}`
		claudeStream = `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"Go ahead."}]}`
		search       = `{"q":"spring meetup"}`
	)
	undeclared := call{"call_s", "search_web", search, false}
	unruled := call{"call_l", "list_posts", `{"limit":5}`, false}
	stream := func(ev [][]byte) testkit.Reply {
		return testkit.Reply{ContentType: "text/event-stream", Events: ev}
	}
	for _, c := range []struct {
		name, path, req string
		reply           testkit.Reply
	}{
		{"chat text", "/v1/chat/completions", chatReq, testkit.Reply{Body: jsonCompletion("The meetup moved to Friday.")}},
		{"chat undeclared call", "/v1/chat/completions", chatReq, testkit.Reply{Body: jsonCompletion("Searching.", undeclared)}},
		{"chat call without rules", "/v1/chat/completions", chatReq, testkit.Reply{Body: jsonCompletion("", unruled)}},
		{"chat stream text", "/v1/chat/completions", chatStream, stream(streamEvents([]string{"The meetup ", "moved."}))},
		{"chat stream undeclared call", "/v1/chat/completions", chatStream, stream(streamEvents([]string{"Searching."}, undeclared))},
		{"responses text", "/v1/responses", respReq, testkit.Reply{Body: responsesText("resp_t", "The meetup moved to Friday.")}},
		{"responses undeclared call", "/v1/responses", respReq, testkit.Reply{Body: responsesJSON("resp_u", "call_s", "search_web", search)}},
		{"responses call without rules", "/v1/responses", respReq, testkit.Reply{Body: responsesJSON("resp_l", "call_l", "list_posts", `{"limit":5}`)}},
		{"responses stream undeclared call", "/v1/responses", respStream, stream(responsesCallStream("search_web", search))},
		{"anthropic text", "/v1/messages", claudeReq, testkit.Reply{Body: claudeMessage(`{"type":"text","text":"The meetup moved to Friday."}`, "end_turn")}},
		{"anthropic undeclared call", "/v1/messages", claudeReq, testkit.Reply{Body: claudeMessage(`{"type":"tool_use","id":"toolu_s","name":"search_web","input":`+search+`}`, "tool_use")}},
		{"anthropic call without rules", "/v1/messages", claudeReq, testkit.Reply{Body: claudeMessage(`{"type":"tool_use","id":"toolu_l","name":"list_posts","input":{"limit":5}}`, "tool_use")}},
		{"anthropic stream undeclared call", "/v1/messages", claudeStream, stream(claudeCallStream("search_web", search))},
	} {
		before := len(e.provider.Requests())
		e.provider.Enqueue(c.reply)
		got := e.postAs(t, "ana", c.path, c.req)
		if !bytes.Equal(got, direct(c.reply)) {
			t.Errorf("%s: the app read\n%s\nwant the provider's bytes\n%s", c.name, got, direct(c.reply))
		}
		if reqs := e.provider.Requests(); len(reqs) != before+1 {
			t.Errorf("%s: the provider read %d requests, want 1 (no refusal went back)", c.name, len(reqs)-before)
		}
	}
	if n := len(e.app.Calls()) + len(e.app.Reads()); n != 0 {
		t.Fatalf("the app's endpoint got %d requests", n)
	}
	if lines := ruleLogLines(t, logFile); len(lines) != 0 {
		t.Fatalf("the gate logged a rule without a declared call:\n%s", strings.Join(lines, "\n"))
	}

	// The rules are there: a call of delete_post is refused on each API.
	for _, api := range rulesAPIs {
		c := ruleCall{owner: "ana", tool: "delete_post", args: `{"post":7}`}
		if got := e.ruleOutcome(t, api, c, true); got != ruleError {
			t.Fatalf("%s: the model read %q, want %q", api, got, ruleError)
		}
	}
	ruleErrors := 0
	for _, l := range ruleLogLines(t, logFile) {
		if strings.Contains(l, `"msg":"policy error: a rule could not be evaluated; call refused"`) {
			ruleErrors++
		}
		if !strings.Contains(l, `"action":"delete_post"`) || !strings.Contains(l, `"rule":"rules[0] never evaluated"`) {
			t.Errorf("logged %s", l)
		}
	}
	if ruleErrors != len(rulesAPIs) {
		t.Fatalf("the gate logged %d rule errors, want one per refused call", ruleErrors)
	}
	events := e.auditExport(t, start)
	if len(events) != len(rulesAPIs) {
		t.Fatalf("audit events %v, want only the %d refusals of delete_post", events, len(rulesAPIs))
	}
	for _, ev := range events {
		if ev.Kind != "refused" || ev.Action != "delete_post" || ev.Reason != "rule_error" {
			t.Errorf("audit event %v (%s)", ev, ev.Reason)
		}
	}
}

// ruleLogLines are the lines of the gate's log that name a rule (a field
// "rule", or a message about one).
func ruleLogLines(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		msg, _ := m["msg"].(string)
		if _, ok := m["rule"]; ok || strings.Contains(msg, "rule") {
			out = append(out, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// claudeMessage is an Anthropic message of one content block.
func claudeMessage(block, stop string) []byte {
	return []byte(`{"id":"msg_p","type":"message","role":"assistant","model":"m","content":[` + block + `],"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`)
}

// claudeCallStream is an Anthropic stream of one tool_use block.
func claudeCallStream(name, args string) [][]byte {
	return [][]byte{
		sse("message_start", `{"type":"message_start","message":{"id":"msg_p","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`),
		sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_s","name":"`+name+`","input":{}}}`),
		sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+jsonString(args)+`}}`),
		sse("content_block_stop", `{"type":"content_block_stop","index":0}`),
		sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}`),
		sse("message_stop", `{"type":"message_stop"}`),
	}
}

// responsesCallStream is a Responses stream of one function call.
func responsesCallStream(name, args string) [][]byte {
	item := func(status, a string) string {
		return fmt.Sprintf(`{"id":"fc_s","type":"function_call","status":%q,"arguments":%s,"call_id":"call_s","name":%q}`, status, jsonString(a), name)
	}
	return [][]byte{
		sse("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_s","object":"response","status":"in_progress","output":[]}}`),
		sse("response.output_item.added", `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":`+item("in_progress", "")+`}`),
		sse("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":2,"item_id":"fc_s","output_index":0,"delta":`+jsonString(args)+`}`),
		sse("response.function_call_arguments.done", `{"type":"response.function_call_arguments.done","sequence_number":3,"item_id":"fc_s","output_index":0,"arguments":`+jsonString(args)+`}`),
		sse("response.output_item.done", `{"type":"response.output_item.done","sequence_number":4,"output_index":0,"item":`+item("completed", args)+`}`),
		sse("response.completed", `{"type":"response.completed","sequence_number":5,"response":{"id":"resp_s","object":"response","status":"completed","output":[`+item("completed", args)+`]}}`),
	}
}
