package interceptor

import (
	"context"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	anthropicadapter "github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/providertest"
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
)

// Two steps in one message (a held call and a refused one, then a held
// call in the model's follow-up): each goes back, in order, with the
// results of its own calls, in a history the provider accepts.

const (
	stepOne  = "firstaaaaaaaaaaaaaaaaaaaaa"
	stepTwo  = "secondaaaaaaaaaaaaaaaaaaaa"
	twoLinks = `Deleting.\n\nWaiting: ` + testLink + stepOne + `\n\nArchiving instead.\n\nWaiting: ` + testLink + stepTwo
)

func TestAnthropicRequestRestoresEveryStep(t *testing.T) {
	first := `{"role":"assistant","content":[{"type":"text","text":"Deleting."},` +
		`{"type":"tool_use","id":"toolu_del","name":"delete_post","input":{"post":7}},` +
		`{"type":"tool_use","id":"toolu_wipe","name":"wipe_all","input":{}},` +
		`{"type":"tool_use","id":"toolu_get","name":"get_post","input":{"post":7}}]}`
	second := `{"role":"assistant","content":[{"type":"text","text":"Archiving instead."},{"type":"tool_use","id":"toolu_arch","name":"archive_post","input":{"post":7}}]}`
	r := &providertest.Restorer{Steps: map[string]provider.Restored{
		stepOne: {Message: []byte(first), Results: []provider.Result{{CallID: "toolu_del", Content: "The person confirmed. Removed."}, {CallID: "toolu_wipe", Content: "Toolgate refused wipe_all."}}},
		stepTwo: {Message: []byte(second), Results: []provider.Result{{CallID: "toolu_arch", Content: "The person declined; nothing ran."}}},
	}}
	body := []byte(`{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"Clean up post 7."},` +
		`{"role":"assistant","content":[{"type":"text","text":"` + twoLinks + `"},{"type":"tool_use","id":"toolu_get","name":"get_post","input":{"post":7}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_get","content":"Post 7: hello"},{"type":"text","text":"Thanks."}]}]}`)
	out, err := anthropicadapter.Anthropic{}.RewriteRequest(context.Background(), body, testLink, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := anthHistoryError(out); err != nil {
		t.Fatalf("the provider refuses the history: %v\n%s", err, out)
	}
	var got []string
	gjson.GetBytes(out, "messages").ForEach(func(_, m gjson.Result) bool {
		parts := []string{"string"}
		if c := m.Get("content"); c.IsArray() {
			parts = nil
			c.ForEach(func(_, b gjson.Result) bool {
				parts = append(parts, b.Get("type").Str+":"+b.Get("id").Str+b.Get("tool_use_id").Str)
				return true
			})
		}
		got = append(got, m.Get("role").Str+"["+strings.Join(parts, " ")+"]")
		return true
	})
	want := "user[string] " +
		"assistant[text: tool_use:toolu_del tool_use:toolu_wipe tool_use:toolu_get] " +
		"user[tool_result:toolu_get tool_result:toolu_del tool_result:toolu_wipe] " +
		"assistant[text: tool_use:toolu_arch] " +
		"user[tool_result:toolu_arch text:]"
	if strings.Join(got, " ") != want {
		t.Fatalf("messages:\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if asked := r.Asked(); len(asked) != 2 || asked[0].Step != stepOne || asked[1].Step != stepTwo || !asked[0].UserFollows {
		t.Errorf("asked %v", asked)
	}
}

func TestResponsesRequestRestoresEveryStep(t *testing.T) {
	first := `[{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Deleting."}],"role":"assistant"},` +
		`{"id":"fc_del","type":"function_call","status":"completed","arguments":"{\"post\":7}","call_id":"call_del","name":"delete_post"},` +
		`{"id":"fc_wipe","type":"function_call","status":"completed","arguments":"{}","call_id":"call_wipe","name":"wipe_all"}]`
	second := `[{"id":"msg_2","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Archiving instead."}],"role":"assistant"},` +
		`{"id":"fc_arch","type":"function_call","status":"completed","arguments":"{\"post\":7}","call_id":"call_arch","name":"archive_post"}]`
	r := &providertest.Restorer{Steps: map[string]provider.Restored{
		stepOne: {Message: []byte(first), Results: []provider.Result{{CallID: "call_del", Content: "The person confirmed. Removed."}, {CallID: "call_wipe", Content: "Toolgate refused wipe_all."}}},
		stepTwo: {Message: []byte(second), Results: []provider.Result{{CallID: "call_arch", Content: "The person declined; nothing ran."}}},
	}}
	// The app joined the answer's text into one assistant message.
	body := []byte(`{"model":"gpt-4o","input":[{"role":"user","content":"Clean up post 7."},` +
		`{"role":"assistant","content":"` + twoLinks + `"},{"role":"user","content":"Thanks."}]}`)
	out, err := responsesadapter.Responses{}.RewriteRequest(context.Background(), body, testLink, r)
	if err != nil {
		t.Fatal(err)
	}
	want := "user message:msg_1 function_call:fc_del function_call:fc_wipe function_call_output:call_del function_call_output:call_wipe " +
		"message:msg_2 function_call:fc_arch function_call_output:call_arch user"
	if got := strings.Join(inputKinds(out), " "); got != want {
		t.Fatalf("input:\n%s\nwant\n%s", got, want)
	}
}
