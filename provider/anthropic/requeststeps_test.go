package anthropic

import (
	"context"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/anthropic/anthropictest"
	"github.com/toolgate/toolgate/provider/providertest"
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
	out, err := Anthropic{}.RewriteRequest(context.Background(), body, testLink, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := anthropictest.HistoryError(out); err != nil {
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
