package chat

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/chat/chattest"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/wire/links"
)

// The stored message of the parallel fixture's step: both calls.
var storedParallel = `{"role":"assistant","content":null,"tool_calls":[` +
	`{"id":"call_JMW1whyEaYG438VE1OIflxA2","type":"function","function":{"name":"GetWeatherArgs","arguments":"{\"city\": \"Edinburgh\", \"country\": \"GB\", \"units\": \"c\"}"}},` +
	`{"id":"call_DNYTawLBoN8fj3KN6qU9N1Ou","type":"function","function":{"name":"get_stock_price","arguments":"{\"ticker\": \"AAPL\", \"exchange\": \"NASDAQ\"}"}}]}`

var storedOne = `{"role":"assistant","content":"I'll delete it.","tool_calls":[{"id":"call_del","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}"}}]}`

func restorer() *providertest.Restorer {
	return &providertest.Restorer{Steps: map[string]provider.Restored{
		testStep:                     {Message: []byte(storedOne), Results: []provider.Result{{CallID: "call_del", Content: "The person confirmed. Removed."}}},
		"twoaaaaaaaaaaaaaaaaaaaaaaa": {Message: []byte(storedParallel), Results: []provider.Result{{CallID: weatherID, Content: "The person declined; nothing ran."}}},
	}}
}

const waiting = `"I'll delete it.\n\n` + waitText + `"`

func TestChatRequestWithoutLinkIsUntouched(t *testing.T) {
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	r := restorer()
	out, err := Chat{}.RewriteRequest(context.Background(), body, testLink, r)
	if err != nil || &out[0] != &body[0] || len(out) != len(body) || len(r.Asked()) != 0 {
		t.Errorf("err %v, asked %v", err, r.Asked())
	}
	// An empty prefix finds nothing.
	if out, err := (Chat{}).RewriteRequest(context.Background(), body, "", r); err != nil || &out[0] != &body[0] {
		t.Errorf("empty prefix: %v", err)
	}
}

func TestChatRequestRestoresHeldCall(t *testing.T) {
	head := `{"model": "gpt-4o",  "messages" : [`
	tail := `],  "stream":true, "tools":[{"type":"function","function":{"name":"delete_post"}}]}`
	body := []byte(head +
		`{"role":"system","content":"Be brief."}, {"role":"user","content":"Delete post 7"},` +
		`{"role":"assistant","content":` + waiting + `},` +
		`{"role":"user","content":"Done?"}` + tail)
	r := restorer()
	out, err := Chat{}.RewriteRequest(context.Background(), body, testLink, r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, []byte(head)) || !bytes.HasSuffix(out, []byte(tail)) {
		t.Errorf("bytes outside messages changed:\n%s", out)
	}
	if got, want := strings.Join(chattest.Roles(t, out), " "), "system user assistant tool:call_del user"; got != want {
		t.Errorf("roles = %s, want %s", got, want)
	}
	msgs := gjson.GetBytes(out, "messages").Array()
	if msgs[2].Raw != storedOne {
		t.Errorf("assistant = %s, want the stored message", msgs[2].Raw)
	}
	if msgs[3].Get("content").Str != "The person confirmed. Removed." {
		t.Errorf("tool message = %s", msgs[3].Raw)
	}
	if len(r.Asked()) != 1 || r.Asked()[0] != (providertest.RestoreCall{Step: testStep, UserFollows: true}) {
		t.Errorf("asked %v", r.Asked())
	}
}

func TestChatRequestKeepsPassedCallResults(t *testing.T) {
	// The app got the stock call and answered it; the weather call was held.
	app := `{"role":"assistant","content":"` + waitText[:len(waitText)-len(testStep)] + `twoaaaaaaaaaaaaaaaaaaaaaaa","tool_calls":[` +
		`{"id":"call_DNYTawLBoN8fj3KN6qU9N1Ou","type":"function","function":{"name":"get_stock_price","arguments":"{}"}}]}`
	for _, tc := range []struct {
		name, after, want string
	}{
		{"adds the held result after the app's",
			`{"role":"tool","tool_call_id":"call_DNYTawLBoN8fj3KN6qU9N1Ou","content":"180"}`,
			"user assistant tool:call_DNYTawLBoN8fj3KN6qU9N1Ou tool:call_JMW1whyEaYG438VE1OIflxA2"},
		{"no duplicate",
			`{"role":"tool","tool_call_id":"call_JMW1whyEaYG438VE1OIflxA2","content":"x"},{"role":"tool","tool_call_id":"call_DNYTawLBoN8fj3KN6qU9N1Ou","content":"180"}`,
			"user assistant tool:call_JMW1whyEaYG438VE1OIflxA2 tool:call_DNYTawLBoN8fj3KN6qU9N1Ou"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(`{"messages":[{"role":"user","content":"go"},` + app + `,` + tc.after + `]}`)
			r := restorer()
			out, err := Chat{}.RewriteRequest(context.Background(), body, testLink, r)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(chattest.Roles(t, out), " "); got != tc.want {
				t.Errorf("roles = %s\nwant  %s", got, tc.want)
			}
			if got := gjson.GetBytes(out, "messages.1").Raw; got != storedParallel {
				t.Errorf("assistant = %s", got)
			}
			if len(r.Asked()) != 1 || r.Asked()[0].UserFollows {
				t.Errorf("asked %v, want userFollows false", r.Asked())
			}
		})
	}
}

func TestChatRequestKeepsAppOwnCalls(t *testing.T) {
	body := []byte(`{"messages":[{"role":"assistant","content":` + waiting + `,"tool_calls":[{"id":"call_app","type":"function","function":{"name":"x","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_app","content":"ok"}]}`)
	out, err := Chat{}.RewriteRequest(context.Background(), body, testLink, restorer())
	if err != nil {
		t.Fatal(err)
	}
	ids := gjson.GetBytes(out, "messages.0.tool_calls.#.id").Raw
	if ids != `["call_del","call_app"]` {
		t.Errorf("tool call ids = %s", ids)
	}
	if got := strings.Join(chattest.Roles(t, out), " "); got != "assistant tool:call_app tool:call_del" {
		t.Errorf("roles = %s", got)
	}
}

func TestChatRequestLeavesUnknownStep(t *testing.T) {
	body := []byte(`{"messages":[{"role":"assistant","content":"see ` + testLink + `zzzzzzzzzzzzzzzzzzzzzzzzzz"}]}`)
	r := restorer()
	out, err := Chat{}.RewriteRequest(context.Background(), body, testLink, r)
	if err != nil || &out[0] != &body[0] || len(out) != len(body) {
		t.Errorf("err %v, out %s", err, out)
	}
	if len(r.Asked()) != 1 {
		t.Errorf("asked %v", r.Asked())
	}
}

func TestChatRequestFindsLinks(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		restored      bool
	}{
		{"parts array", `[{"type":"text","text":"I'll delete it."},{"type":"text","text":"` + waitText + `"}]`, true},
		{"escaped slashes", `"` + strings.ReplaceAll(waitText, "/", `\/`) + `"`, true},
		{"an unknown link beside it", `"old: ` + testLink + `zzzzzzzzzzzzzzzzzzzzzzzzzz, new: ` + testLink + testStep + `."`, true},
		{"27 characters are not a step id", `"` + waitText + `a"`, false},
		{"25 characters are not a step id", `"` + waitText[:len(waitText)-1] + `"`, false},
		{"uppercase is not a step id", `"` + testLink + strings.ToUpper(testStep) + `"`, false},
		{"user messages are not read", ``, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := `{"role":"assistant","content":` + tc.content + `}`
			if tc.content == "" {
				msg = `{"role":"user","content":"` + waitText + `"}`
			}
			body := []byte(`{"messages":[` + msg + `]}`)
			r := restorer()
			out, err := Chat{}.RewriteRequest(context.Background(), body, testLink, r)
			if err != nil {
				t.Fatal(err)
			}
			restored := gjson.GetBytes(out, "messages.0").Raw == storedOne
			if restored != tc.restored {
				t.Errorf("restored = %v, asked %v\n%s", restored, r.Asked(), out)
			}
			if restored && len(r.Asked()) != max(1, strings.Count(tc.content, testLink)) {
				t.Errorf("asked %v, want every link", r.Asked())
			}
		})
	}
}

// One answer can hold calls in two rounds: a held call and a refused one,
// then a held call in the model's follow-up. The app's message then
// carries two links; each step goes back in order, with its own results
// and the app's results for the calls of that step that passed.
func TestChatRequestRestoresEveryStep(t *testing.T) {
	const (
		step1 = "firstaaaaaaaaaaaaaaaaaaaaa"
		step2 = "secondaaaaaaaaaaaaaaaaaaaa"
	)
	first := `{"role":"assistant","content":"Deleting.","tool_calls":[` +
		`{"id":"call_del","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}"}},` +
		`{"id":"call_wipe","type":"function","function":{"name":"wipe_all","arguments":"{}"}},` +
		`{"id":"call_get","type":"function","function":{"name":"get_post","arguments":"{\"post\":7}"}}]}`
	second := `{"role":"assistant","content":"Archiving instead.","tool_calls":[{"id":"call_arch","type":"function","function":{"name":"archive_post","arguments":"{\"post\":7}"}}]}`
	r := &providertest.Restorer{Steps: map[string]provider.Restored{
		step1: {Message: []byte(first), Results: []provider.Result{{CallID: "call_del", Content: "The person confirmed. Removed."}, {CallID: "call_wipe", Content: "Toolgate refused wipe_all."}}},
		step2: {Message: []byte(second), Results: []provider.Result{{CallID: "call_arch", Content: "The person declined; nothing ran."}}},
	}}
	content := `Deleting.\n\nWaiting: ` + testLink + step1 + `\n\nArchiving instead.\n\nWaiting: ` + testLink + step2
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"Clean up post 7."},` +
		`{"role":"assistant","content":"` + content + `","tool_calls":[{"id":"call_get","type":"function","function":{"name":"get_post","arguments":"{\"post\":7}"}}]},` +
		`{"role":"tool","tool_call_id":"call_get","content":"Post 7: hello"},` +
		`{"role":"user","content":"Thanks."}]}`)
	out, err := Chat{}.RewriteRequest(context.Background(), body, testLink, r)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(chattest.Roles(t, out), " "); got != "user assistant tool:call_get tool:call_del tool:call_wipe assistant tool:call_arch user" {
		t.Fatalf("roles = %s\n%s", got, out)
	}
	if m := gjson.GetBytes(out, "messages.1").Raw; m != first {
		t.Errorf("first step's message = %s", m)
	}
	if m := gjson.GetBytes(out, "messages.5").Raw; m != second {
		t.Errorf("second step's message = %s", m)
	}
	if len(r.Asked()) != 2 || r.Asked()[0].Step != step1 || r.Asked()[1].Step != step2 || !r.Asked()[0].UserFollows || !r.Asked()[1].UserFollows {
		t.Errorf("asked %v", r.Asked())
	}
}

func TestChatRequestRestoresEachStepOnce(t *testing.T) {
	a := `{"role":"assistant","content":` + waiting + `}`
	body := []byte(`{"messages":[` + a + `,{"role":"user","content":"and?"},` + a + `]}`)
	r := restorer()
	out, err := Chat{}.RewriteRequest(context.Background(), body, testLink, r)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(chattest.Roles(t, out), " "); got != "assistant tool:call_del user assistant" || len(r.Asked()) != 1 {
		t.Errorf("roles = %s, asked %v", got, r.Asked())
	}
}

func TestChatRequestErrors(t *testing.T) {
	if _, err := (Chat{}).RewriteRequest(context.Background(), []byte(`{"messages":[{"content":"`+waitText+`"`), testLink, restorer()); err == nil {
		t.Error("no error for invalid JSON")
	}
	r := &providertest.Restorer{Steps: map[string]provider.Restored{testStep: {Message: []byte(`{"role":`)}}}
	body := []byte(`{"messages":[{"role":"assistant","content":"` + waitText + `"}]}`)
	if _, err := (Chat{}).RewriteRequest(context.Background(), body, testLink, r); err == nil {
		t.Error("no error for a stored message that is not JSON")
	}
}

func FuzzChatRequest(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":` + waiting + `},{"role":"tool","tool_call_id":"x","content":"1"},{"role":"user","content":"ok"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"text","text":"` + waitText + `"}],"tool_calls":[{"id":"call_app"}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":"` + strings.ReplaceAll(waitText, "/", `\/`) + `"}]}`))
	f.Add([]byte(toolsRequest))
	// The model's reply after the link (a resumed answer), with a call of
	// its own the app answered.
	f.Add([]byte(`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"I'll delete it.\n\n` + waitText + `\n\nDone: post 7 is deleted.","tool_calls":[{"id":"call_list","type":"function","function":{"name":"list_posts","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_list","content":"[]"},{"role":"user","content":"ok"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"text","text":"` + waitText + ` and then"},{"type":"text","text":"Done."}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := Chat{}.RewriteRequest(context.Background(), body, testLink, restorer())
		if err != nil {
			return
		}
		if !links.Has(body, testLink) && !bytes.Equal(out, body) {
			t.Fatal("a body without the link changed")
		}
		if !bytes.Equal(out, body) && !gjson.ValidBytes(out) {
			t.Fatalf("invalid output %q", out)
		}
		// A restored call is answered before any other message; the step's
		// link is gone.
		if !bytes.Equal(out, body) && !bytes.Contains(body, []byte("call_del")) {
			msgs := gjson.GetBytes(out, "messages").Array()
			for i, m := range msgs {
				restored := false
				forEachCall(m, func(tc gjson.Result) { restored = restored || tc.Get("id").Str == "call_del" })
				if !restored {
					continue
				}
				answered := false
				for j := i + 1; j < len(msgs) && msgs[j].Get("role").Str == "tool"; j++ {
					answered = answered || msgs[j].Get("tool_call_id").Str == "call_del"
				}
				if !answered {
					t.Fatalf("restored call unanswered:\n%s", out)
				}
			}
		}

		// The same body's tools, on their way to the provider.
		a := &askRewrite{}
		out, err = Chat{}.RewriteTools(body, a.rewrite)
		if err != nil {
			return
		}
		if !bytes.Contains(body, toolsKey) && !bytes.Equal(out, body) {
			t.Fatal("a body without tools changed")
		}
		if !bytes.Equal(out, body) && !gjson.ValidBytes(out) {
			t.Fatalf("invalid tools output %q", out)
		}
	})
}

func BenchmarkChatRequestWithoutLink(b *testing.B) {
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"system","content":"` + strings.Repeat("Be brief. ", 200) + `"},{"role":"user","content":"hi"}]}`)
	r := restorer()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Chat{}).RewriteRequest(context.Background(), body, testLink, r); err != nil {
			b.Fatal(err)
		}
	}
}

func TestResumeNextRequestChatFollowUpCalls(t *testing.T) {
	// The reply goes on with a call of the app's own, which the app ran:
	// the reply and its call come after the restored step, then the app's
	// result.
	body := []byte(`{"messages":[{"role":"user","content":"go"},` +
		`{"role":"assistant","content":` + string(gjson.AppendJSONString(nil, "I'll delete it.\n\n"+waitText+"\n\nNow the list:")) + `,"refusal":null,` +
		`"tool_calls":[{"id":"call_list","type":"function","function":{"name":"list_posts","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"call_list","content":"[]"},{"role":"user","content":"ok"}]}`)
	out, err := Chat{}.RewriteRequest(context.Background(), body, testLink, restorer())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(chattest.Roles(t, out), " "); got != "user assistant tool:call_del assistant tool:call_list user" {
		t.Fatalf("roles = %s\n%s", got, out)
	}
	follow := gjson.GetBytes(out, "messages.3")
	if follow.Get("content").Str != "Now the list:" || follow.Get("tool_calls.#").Int() != 1 || follow.Get("tool_calls.0.id").Str != "call_list" ||
		!follow.Get("refusal").Exists() {
		t.Errorf("follow-up message = %s", follow.Raw)
	}
	if gjson.GetBytes(out, "messages.1").Raw != storedOne {
		t.Errorf("the stored message took the app's call: %s", gjson.GetBytes(out, "messages.1").Raw)
	}
}
