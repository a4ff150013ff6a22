package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// Policy rules end to end: the real SDK clients (openai-go Chat and
// Responses, anthropic-sdk-go) through real Caddy, the fake provider and
// app. The rules decide delete_post on the record's state; offer_when
// offers send_email to editors only (the route's roles placeholder).
var rulesPolicyYAML = strings.NewReplacer(
	"    reply: Removed.\n", `    reply: Removed.
    rules:
      - when: record.status == "draft"
        then: allow
      - name: locked
        when: has(record.locked) && record.locked == true
        then: deny
        because: The post is locked; nothing ran.
      - when: record.status == "broken" && record.nope == 1
        then: deny
        because: never read
`,
	"    reply: Sent.\n", "    reply: Sent.\n    offer_when: '\"editor\" in person.roles'\n",
).Replace(policyYAML)

func newRulesEnv(t *testing.T) *env {
	t.Helper()
	if !strings.Contains(rulesPolicyYAML, "offer_when") || !strings.Contains(rulesPolicyYAML, "rules:") {
		t.Fatal("the rules were not written into the policy")
	}
	return newEnv(t, envOptions{policy: rulesPolicyYAML, handler: "roles {http.request.header.X-Roles}"})
}

const (
	lockedRefusal = "Toolgate refused delete_post: The post is locked; nothing ran."
	ruleError     = "Toolgate refused delete_post: the gate's policy could not decide on this call; nothing ran."
)

// TestRulesEndToEnd: each outcome on each provider API, as the app's SDK
// reads it.
func TestRulesEndToEnd(t *testing.T) {
	e := newRulesEnv(t)
	for _, c := range []struct {
		record string
		want   string // pass, held, or the refusal the model reads
	}{
		{`{"title":"Spring meetup","status":"draft"}`, "pass"},
		{`{"title":"Spring meetup","status":"published","locked":true}`, lockedRefusal},
		{`{"title":"Spring meetup","status":"broken"}`, ruleError},
		{`{"title":"Spring meetup","status":"published"}`, "held"},
	} {
		e.app.SetRecord("/posts/7", c.record)
		refused := c.want != "pass" && c.want != "held"
		t.Run("chat "+c.want, func(t *testing.T) {
			switch c.want {
			case "pass":
				e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", del7)})
				got, err := e.client("ana").Chat.Completions.New(ctx, userAsks("Delete it."))
				if err != nil {
					t.Fatal(err)
				}
				if tc := got.Choices[0].Message.ToolCalls; len(tc) != 1 || tc[0].Function.Name != "delete_post" || tc[0].Function.Arguments != `{"post":7}` {
					t.Fatalf("the app got %+v, want the call untouched", got.Choices[0].Message)
				}
			case "held":
				if l, _ := e.hold(t, "ana"); l == "" {
					t.Fatal("no link")
				}
			default:
				if res, _ := e.refusedWith(t, "ana", "call_del7", del7); res != c.want {
					t.Fatalf("the model read %q, want %q", res, c.want)
				}
			}
		})
		t.Run("responses "+c.want, func(t *testing.T) {
			e.provider.Enqueue(testkit.Reply{Body: responsesJSON("resp_1", "call_r7", "delete_post", `{"post":7}`)})
			if refused {
				e.provider.Enqueue(testkit.Reply{Body: responsesText("resp_2", "MODEL-FOLLOW-UP")})
			}
			got, err := e.client("ana").Responses.New(ctx, responsesAsk("Delete it."))
			if err != nil {
				t.Fatal(err)
			}
			calls := functionCalls(*got)
			switch c.want {
			case "pass":
				if len(calls) != 1 {
					t.Fatalf("output %q, want the call untouched", got.OutputText())
				}
			case "held":
				if len(calls) != 0 || !strings.Contains(got.OutputText(), "Waiting for your confirmation") {
					t.Fatalf("output %q", got.OutputText())
				}
			default:
				reqs := e.provider.Requests()
				last := reqs[len(reqs)-1]
				if len(calls) != 0 || !strings.Contains(string(last), jsonString(c.want)) {
					t.Fatalf("the model's follow-up request %s\nwant it to carry %q", last, c.want)
				}
			}
		})
		t.Run("anthropic "+c.want, func(t *testing.T) {
			body := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_7","name":"delete_post","input":{"post":7}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
			follow := `{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"MODEL-FOLLOW-UP"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
			e.provider.Enqueue(testkit.Reply{Body: []byte(body)})
			if refused {
				e.provider.Enqueue(testkit.Reply{Body: []byte(follow)})
			}
			msg, err := e.anthropicClient("ana").Messages.New(ctx, anthropicAsk("Delete it."))
			if err != nil {
				t.Fatal(err)
			}
			switch c.want {
			case "pass":
				if uses := toolUses(*msg); len(uses) != 1 {
					t.Fatalf("content %+v, want the call untouched", msg.Content)
				}
			case "held":
				if len(toolUses(*msg)) != 0 || !strings.Contains(textOf(*msg), "Waiting for your confirmation") {
					t.Fatalf("text %q", textOf(*msg))
				}
			default:
				reqs := e.provider.Requests()
				last := reqs[len(reqs)-1]
				if len(toolUses(*msg)) != 0 || !strings.Contains(string(last), jsonString(c.want)) {
					t.Fatalf("the model's follow-up request %s\nwant it to carry %q", last, c.want)
				}
			}
		})
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatalf("the gate ran %d calls itself", n)
	}
}

// TestOfferWhenEndToEnd: send_email is taken out of the tools the
// provider is offered for a person without the editor role, kept for an
// editor, and a call of it by the model anyway is refused.
func TestOfferWhenEndToEnd(t *testing.T) {
	e := newRulesEnv(t)
	params := userAsks("Hi")
	params.Tools = []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "delete_post"}),
		openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "send_email"}),
	}
	offered := func(roles string) []string {
		t.Helper()
		e.provider.Enqueue(testkit.Reply{Body: textCompletion("ok")})
		var opts []option.RequestOption
		if roles != "" {
			opts = append(opts, option.WithHeader("X-Roles", roles))
		}
		if _, err := e.client("ana").Chat.Completions.New(ctx, params, opts...); err != nil {
			t.Fatal(err)
		}
		reqs := e.provider.Requests()
		var names []string
		for _, tool := range gjson.GetBytes(reqs[len(reqs)-1], "tools").Array() {
			names = append(names, tool.Get("function.name").String())
		}
		return names
	}
	if got := offered(""); strings.Join(got, ",") != "delete_post" {
		t.Errorf("offered to ana without roles: %v", got)
	}
	if got := offered("viewer, editor"); strings.Join(got, ",") != "delete_post,send_email" {
		t.Errorf("offered to an editor: %v", got)
	}
	send := call{"call_send", "send_email", `{"to":"a@b.c","subject":"Hi"}`, false}
	if res, _ := e.refusedWith(t, "ana", "call_send", send); res != "Toolgate refused send_email: it is not offered to this person; nothing ran." {
		t.Errorf("the model read %q", res)
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
