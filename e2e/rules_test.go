package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// Policy rules end to end: the real SDK clients (openai-go Chat and
// Responses, anthropic-sdk-go) through real Caddy, the fake provider and
// app. delete_post's rules read every variable a rule may read (args,
// record, person.id, person.tenant, person.roles, protocol, now);
// post_note's and weather's read tool. offer_when offers send_email to
// editors only (the route's roles placeholder).
var rulesPolicyYAML = strings.NewReplacer(
	"    reply: Removed.\n", `    reply: Removed.
    rules:
      - name: archived
        when: args.post >= 1000
        then: deny
        because: Posts from 1000 on are archived; nothing ran.
      - name: cleanup bot
        when: person.id == "cleanup-bot"
        then: allow
      - name: frozen tenant
        when: person.tenant == "frozen"
        then: deny
        because: This tenant is frozen; nothing ran.
      - name: editors
        when: '"editor" in person.roles'
        then: allow
      - name: not through Claude
        when: protocol == "anthropic" && args.post == 77
        then: deny
        because: Post 77 is not deleted through Claude; nothing ran.
      - when: record.status == "draft"
        then: allow
      - name: locked
        when: has(record.locked) && record.locked == true
        then: deny
        because: The post is locked; nothing ran.
      - name: embargo
        when: has(record.embargo_until) && now < timestamp(record.embargo_until)
        then: deny
        because: The post is under embargo; nothing ran.
      - name: popular
        when: has(record.views) && record.views > 1000
        then: deny
        because: Posts read over 1,000 times stay up; nothing ran.
      - when: record.status == "broken" && record.nope == 1
        then: deny
        because: never read
`,
	"    reply: Sent.\n", "    reply: Sent.\n    offer_when: '\"editor\" in person.roles'\n",
	"  post_note:\n    effect: external\n", "  post_note:\n    effect: external\n    rules:\n      - when: tool == \"post_note\"\n        then: allow\n",
	"  weather:\n    effect: external\n", "  weather:\n    effect: external\n    rules:\n      - when: tool == \"post_note\"\n        then: allow\n",
).Replace(policyYAML)

func newRulesEnv(t *testing.T) *env {
	t.Helper()
	for _, want := range []string{"offer_when", "name: archived", "  post_note:\n    effect: external\n    rules:", "  weather:\n    effect: external\n    rules:"} {
		if !strings.Contains(rulesPolicyYAML, want) {
			t.Fatalf("the rules were not written into the policy: no %q", want)
		}
	}
	return newEnv(t, envOptions{policy: rulesPolicyYAML, handler: "roles {http.request.header.X-Roles}\n\t\ttenant {http.request.header.X-Tenant}"})
}

const (
	lockedRefusal = "Toolgate refused delete_post: The post is locked; nothing ran."
	ruleError     = "Toolgate refused delete_post: the gate's policy could not decide on this call; nothing ran."
)

// rulesAPIs are the provider APIs the rules are tried on, as their SDK
// clients call them.
var rulesAPIs = []string{"chat", "responses", "anthropic"}

// ruleCall is one call the model makes, and whose conversation it is in.
type ruleCall struct {
	owner, tenant, roles string // the person (tenant and roles through the route's placeholders)
	tool, args           string // the call
}

// ruleOutcome makes the model call c on api, through the api's SDK client
// as the app, and returns what came of it: "pass" (the app's client read
// the call untouched), "held" (it read the waiting text with a link and no
// call), or the refusal the model read in the follow-up request the gate
// sent it (the app's client then read the model's follow-up, and no
// call). refused says whether a refusal is expected: the fake provider
// is given the model's follow-up only then.
func (e *env) ruleOutcome(t *testing.T, api string, c ruleCall, refused bool) string {
	t.Helper()
	const followUp = "MODEL-FOLLOW-UP"
	header := map[string]string{}
	if c.tenant != "" {
		header["X-Tenant"] = c.tenant
	}
	if c.roles != "" {
		header["X-Roles"] = c.roles
	}
	const callID = "call_rule"
	var gotCall, gotText string // the call the app's client read ("name args"), its text
	switch api {
	case "chat":
		e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", call{callID, c.tool, c.args, false})})
		if refused {
			e.provider.Enqueue(testkit.Reply{Body: textCompletion(followUp)})
		}
		var opts []option.RequestOption
		for k, v := range header {
			opts = append(opts, option.WithHeader(k, v))
		}
		got, err := e.client(c.owner).Chat.Completions.New(ctx, userAsks("Go ahead."), opts...)
		if err != nil {
			t.Fatal(err)
		}
		m := got.Choices[0].Message
		for _, tc := range m.ToolCalls {
			gotCall += tc.Function.Name + " " + tc.Function.Arguments
		}
		gotText = m.Content
	case "responses":
		e.provider.Enqueue(testkit.Reply{Body: responsesJSON("resp_rule", callID, c.tool, c.args)})
		if refused {
			e.provider.Enqueue(testkit.Reply{Body: responsesText("resp_follow", followUp)})
		}
		var opts []option.RequestOption
		for k, v := range header {
			opts = append(opts, option.WithHeader(k, v))
		}
		got, err := e.client(c.owner).Responses.New(ctx, responsesAsk("Go ahead."), opts...)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range got.Output {
			if it.Type == "function_call" {
				gotCall += it.Name + " " + it.Arguments.OfString
			}
		}
		gotText = got.OutputText()
	case "anthropic":
		body := `{"id":"msg_rule","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"` + callID + `","name":"` + c.tool + `","input":` + c.args + `}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
		e.provider.Enqueue(testkit.Reply{Body: []byte(body)})
		if refused {
			e.provider.Enqueue(testkit.Reply{Body: []byte(`{"id":"msg_follow","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"` + followUp + `"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`)})
		}
		var opts []aoption.RequestOption
		for k, v := range header {
			opts = append(opts, aoption.WithHeader(k, v))
		}
		msg, err := e.anthropicClient(c.owner).Messages.New(ctx, anthropicAsk("Go ahead."), opts...)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range msg.Content {
			if b.Type == "tool_use" {
				gotCall += b.Name + " " + string(b.Input)
			}
		}
		gotText = textOf(*msg)
	default:
		t.Fatalf("no API %q", api)
	}
	switch {
	case gotCall != "":
		if gotCall != c.tool+" "+c.args || gotText != "" {
			t.Fatalf("the app read the call %q and the text %q, want %s %s untouched", gotCall, gotText, c.tool, c.args)
		}
		return "pass"
	case refused:
		if gotText != followUp {
			t.Fatalf("the app read %q, want the model's follow-up", gotText)
		}
		reqs := e.provider.Requests()
		last := reqs[len(reqs)-1]
		switch api {
		case "chat":
			return toolResult(last, callID)
		case "responses":
			return responsesOutput(last, callID)
		default:
			return anthropicResult(last, callID)
		}
	case strings.Contains(gotText, "Waiting for your confirmation") && linkRe.MatchString(gotText):
		return "held"
	}
	t.Fatalf("the app read no call and the text %q", gotText)
	return ""
}

// TestRulesEndToEnd: each outcome on each provider API, as the app's SDK
// reads it, and each variable a rule reads changing the outcome of the
// same call: the arguments, the record (its state, a field the rule
// compares with now), the person's id, tenant and roles, the tool, the
// protocol. An evaluation error (a field that is not there, a field of the
// wrong type) refuses the call: the model reads why, nothing runs.
func TestRulesEndToEnd(t *testing.T) {
	e := newRulesEnv(t)
	const (
		published = `{"title":"Spring meetup","status":"published"}`
		draft     = `{"title":"Spring meetup","status":"draft"}`
		locked    = `{"title":"Spring meetup","status":"published","locked":true}`
	)
	del := func(post string) ruleCall {
		return ruleCall{owner: "ana", tool: "delete_post", args: `{"post":` + post + `}`}
	}
	as := func(c ruleCall, owner, tenant, roles string) ruleCall {
		c.owner, c.tenant, c.roles = owner, tenant, roles
		return c
	}
	for _, c := range []struct {
		name   string
		record string // post 7's record ("" none)
		call   ruleCall
		want   string            // pass, held, or the refusal the model reads
		on     map[string]string // what one API gives instead of want
	}{
		// No rule matches: the effect decides (a card).
		{name: "no rule", record: published, call: del("7"), want: "held"},
		// args: the same person, record and tool; another post.
		{name: "args", record: published, call: del("1000"), want: "Toolgate refused delete_post: Posts from 1000 on are archived; nothing ran."},
		// record: the same call, the record in another state.
		{name: "record allow", record: draft, call: del("7"), want: "pass"},
		{name: "record deny", record: locked, call: del("7"), want: lockedRefusal},
		// now: a record field the rule compares with the gate's clock.
		{name: "now before the embargo", record: `{"title":"Spring meetup","status":"published","embargo_until":"2999-01-01T00:00:00Z"}`, call: del("7"),
			want: "Toolgate refused delete_post: The post is under embargo; nothing ran."},
		{name: "now after the embargo", record: `{"title":"Spring meetup","status":"published","embargo_until":"2000-01-01T00:00:00Z"}`, call: del("7"), want: "held"},
		// person.id, person.tenant, person.roles: the same call and record,
		// another person.
		{name: "person.id", record: published, call: as(del("7"), "cleanup-bot", "", ""), want: "pass"},
		{name: "person.tenant", record: draft, call: as(del("7"), "ana", "frozen", ""), want: "Toolgate refused delete_post: This tenant is frozen; nothing ran."},
		{name: "person.tenant other", record: draft, call: as(del("7"), "ana", "acme", ""), want: "pass"},
		{name: "person.roles", record: locked, call: as(del("7"), "ana", "", "viewer, editor"), want: "pass"},
		{name: "person.roles other", record: locked, call: as(del("7"), "ana", "", "viewer"), want: lockedRefusal},
		// protocol: the same call, person and record on another API.
		{name: "protocol", record: draft, call: del("77"), want: "pass",
			on: map[string]string{"anthropic": "Toolgate refused delete_post: Post 77 is not deleted through Claude; nothing ran."}},
		// tool: the same rule on two actions.
		{name: "tool", call: ruleCall{owner: "ana", tool: "post_note", args: `{"text":"Hi"}`}, want: "pass"},
		{name: "tool other", call: ruleCall{owner: "ana", tool: "weather", args: `{"city":"Oslo"}`}, want: "held"},
		// A rule whose record field has the type it compares.
		{name: "record views", record: `{"title":"Spring meetup","status":"published","views":5000}`, call: del("7"),
			want: "Toolgate refused delete_post: Posts read over 1,000 times stay up; nothing ran."},
		// Evaluation errors fail closed.
		{name: "evaluation error no such field", record: `{"title":"Spring meetup","status":"broken"}`, call: del("7"), want: ruleError},
		{name: "evaluation error wrong type", record: `{"title":"Spring meetup","status":"published","views":"many"}`, call: del("7"), want: ruleError},
	} {
		for _, api := range rulesAPIs {
			want := c.want
			if w, ok := c.on[api]; ok {
				want = w
			}
			t.Run(api+" "+c.name, func(t *testing.T) {
				if c.record != "" {
					e.app.SetRecord("/posts/7", c.record)
					e.app.SetRecord("/posts/77", c.record)
				}
				if got := e.ruleOutcome(t, api, c.call, want != "pass" && want != "held"); got != want {
					t.Fatalf("%s: got %q, want %q", api, got, want)
				}
				if n := len(e.app.Calls()); n != 0 {
					t.Fatalf("the gate ran %d calls itself", n)
				}
			})
		}
	}
}

// TestOfferWhenEndToEnd: on each provider API, as its SDK client sends
// the request, send_email is taken out of the tools the provider is
// offered for a person without the editor role and kept for an editor
// (delete_post, offered to all, stays); a call of send_email the model
// makes anyway for the person it is not offered to is refused: the model
// reads why, the app's client reads no call, the action's endpoint gets
// nothing. For the editor the same call is held as usual.
func TestOfferWhenEndToEnd(t *testing.T) {
	e := newRulesEnv(t)
	schema := map[string]any{"type": "object", "properties": map[string]any{}}
	offered := func(t *testing.T, api, roles string) string {
		t.Helper()
		var err error
		switch api {
		case "chat":
			e.provider.Enqueue(testkit.Reply{Body: textCompletion("ok")})
			params := userAsks("Hi")
			params.Tools = []openai.ChatCompletionToolUnionParam{
				openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "delete_post"}),
				openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "send_email"}),
			}
			_, err = e.client("ana").Chat.Completions.New(ctx, params, option.WithHeader("X-Roles", roles))
		case "responses":
			e.provider.Enqueue(testkit.Reply{Body: responsesText("resp_ok", "ok")})
			params := responsesAsk("Hi")
			params.Tools = []responses.ToolUnionParam{
				responses.ToolParamOfFunction("delete_post", schema, false),
				responses.ToolParamOfFunction("send_email", schema, false),
			}
			_, err = e.client("ana").Responses.New(ctx, params, option.WithHeader("X-Roles", roles))
		case "anthropic":
			e.provider.Enqueue(testkit.Reply{Body: []byte(`{"id":"msg_ok","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`)})
			params := anthropicAsk("Hi")
			params.Tools = []anthropic.ToolUnionParam{
				anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{}, "delete_post"),
				anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{}, "send_email"),
			}
			_, err = e.anthropicClient("ana").Messages.New(ctx, params, aoption.WithHeader("X-Roles", roles))
		}
		if err != nil {
			t.Fatal(err)
		}
		reqs := e.provider.Requests()
		var names []string
		for _, tool := range gjson.GetBytes(reqs[len(reqs)-1], "tools").Array() {
			name := tool.Get("name")
			if api == "chat" {
				name = tool.Get("function.name")
			}
			names = append(names, name.String())
		}
		return strings.Join(names, ",")
	}
	send := ruleCall{owner: "ana", tool: "send_email", args: `{"to":"a@b.c","subject":"Hi"}`}
	for _, api := range rulesAPIs {
		t.Run(api, func(t *testing.T) {
			if got := offered(t, api, "viewer"); got != "delete_post" {
				t.Errorf("offered to a viewer: %s, want delete_post", got)
			}
			if got := offered(t, api, "viewer, editor"); got != "delete_post,send_email" {
				t.Errorf("offered to an editor: %s, want delete_post,send_email", got)
			}
			viewer := send
			viewer.roles = "viewer"
			if got := e.ruleOutcome(t, api, viewer, true); got != "Toolgate refused send_email: it is not offered to this person; nothing ran." {
				t.Errorf("the model read %q", got)
			}
			editor := send
			editor.roles = "editor"
			if got := e.ruleOutcome(t, api, editor, false); got != "held" {
				t.Errorf("the editor's call: %s, want held", got)
			}
			if n := len(e.app.Calls()); n != 0 {
				t.Errorf("the action's endpoint got %d calls", n)
			}
		})
	}
}

// TestOfferWhenMCP: with the MCP go-sdk as the client, tools/list leaves
// out a tool offer_when does not offer the caller, keeps it for the
// caller it offers it to, and a call of it anyway is a tool error; the
// server gets nothing.
func TestOfferWhenMCP(t *testing.T) {
	o := modern
	o.policyEdit = func(p string) string {
		return strings.Replace(p, "  wipe_all:\n    effect: destructive\n", "  wipe_all:\n    effect: destructive\n    offer_when: 'person.id == \"ana\"'\n", 1)
	}
	e := newMCPEnv(t, o)
	listed := func(user string) bool {
		t.Helper()
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		list, err := e.connect(t, user, nil, "").ListTools(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range list.Tools {
			if tl.Name == "wipe_all" {
				return true
			}
		}
		return false
	}
	if !listed("ana") {
		t.Error("wipe_all is not listed for ana, whom offer_when offers it to")
	}
	if listed("bo") {
		t.Error("wipe_all is listed for bo")
	}
	res := callTool(t, e.connect(t, "bo", nil, ""), &mcp.CallToolParams{Name: "wipe_all", Arguments: map[string]any{}})
	if !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "it is not offered to this person; nothing ran.") {
		t.Fatalf("bo's call: %+v", res)
	}
	e.wantNoCalls(t, "wipe_all")
}
