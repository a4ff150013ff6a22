package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/provider/responses/responsestest"
)

// stateRestorer is a providertest.Restorer that also answers for stored responses.
type stateRestorer struct {
	*providertest.Restorer
	byResponse map[string]provider.Restored
	asked      []string
}

func (r *stateRestorer) RestoreState(_ context.Context, responseID, conversationID string, userFollows bool) []provider.Restored {
	r.asked = append(r.asked, fmt.Sprintf("%s|%s|%v", responseID, conversationID, userFollows))
	if res, ok := r.byResponse[responseID+conversationID]; ok {
		return []provider.Restored{res}
	}
	return nil
}

const respConfirmed = "The person confirmed. 19."

// restorer is a Restorer without RestoreState that knows the test step
// (a Chat message, as the other adapters' tests have it).
func restorer() *providertest.Restorer {
	return &providertest.Restorer{Steps: map[string]provider.Restored{
		providertest.Step: {Message: []byte(storedOne), Results: []provider.Result{{CallID: "call_del", Content: "The person confirmed. Removed."}}},
	}}
}

const storedOne = `{"role":"assistant","content":"I'll delete it.","tool_calls":[{"id":"call_del","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}"}}]}`

// step1Hold runs the reasoning fixture through the gate and returns the
// rewritten stream and the message Hold got: what the store keeps.
func step1Hold(t *testing.T) (out []byte, stored []byte, final *responses.Response) {
	t.Helper()
	h := providertest.NewHolder("calculator")
	out, err := respRewrite(respFixture(t, "reasoning-encrypted-step1.sse"), h)
	if err != nil || len(h.Holds()) != 1 {
		t.Fatalf("err %v, holds %d", err, len(h.Holds()))
	}
	return out, h.Holds()[0].Message, responsestest.Decode(t, out).Final
}

// appItems is what an openai-go app appends to its input from a response:
// each output item as a param (ToParam keeps ids).
func appItems(t *testing.T, r *responses.Response) []string {
	t.Helper()
	var items []string
	for _, it := range r.Output {
		var p any
		switch it.Type {
		case "message":
			p = it.AsMessage().ToParam()
		case "reasoning":
			p = it.AsReasoning().ToParam()
		case "function_call":
			p = it.AsFunctionCall().ToParam()
		default:
			t.Fatalf("unexpected item %s", it.Type)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, string(b))
	}
	return items
}

func respRestorer(stored []byte, callID string) *providertest.Restorer {
	return &providertest.Restorer{Steps: map[string]provider.Restored{
		providertest.Step: {Message: stored, Results: []provider.Result{{CallID: callID, Content: respConfirmed}}},
	}}
}

// inputKinds lists a request's input items as type[:id-or-call_id].
func inputKinds(body []byte) []string {
	var k []string
	gjson.GetBytes(body, "input").ForEach(func(_, it gjson.Result) bool {
		s := it.Get("type").Str
		if s == "" {
			s = it.Get("role").Str
		}
		if id := it.Get("id").Str; id != "" {
			s += ":" + id
		} else if c := it.Get("call_id").Str; c != "" {
			s += ":" + c
		}
		k = append(k, s)
		return true
	})
	return k
}

func TestResponsesRequestRestoresReasoningAndCall(t *testing.T) {
	_, stored, final := step1Hold(t)
	api := &responsestest.API{}
	api.Learn("resp_01830d662ab3856501693c321345c88190b0de00f3b9975691", string(respFixtureOutput(t, "reasoning-encrypted-step1.sse")))
	const rs, fc = "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9", "fc_01830d662ab3856501693c32151234819091cfca267e98cc5f"
	const callID = "call_AB6AaRZ1FYZB2RwS6A5vbdqn"
	items := appItems(t, final)
	user := `{"role":"user","content":"What is (12+7)*3*10?"}`
	next := `{"role":"user","content":"Done?"}`
	for _, tc := range []struct {
		name  string
		input []string
		store string
		want  string
	}{
		{"openai-go items", append(append([]string{user}, items...), next), "",
			"[user reasoning:" + rs + " function_call:" + fc + " function_call_output:" + callID + " user]"},
		{"item references (AI SDK, store on)", []string{user, `{"type":"item_reference","id":"` + rs + `"}`, `{"type":"item_reference","id":"` + SyntheticPrefix + providertest.Step + `"}`, next}, "",
			"[user reasoning:" + rs + " function_call:" + fc + " function_call_output:" + callID + " user]"},
		{"the waiting text only, no ids", []string{user, `{"role":"assistant","content":` + string(gjson.AppendJSONString(nil, providertest.WaitText)) + `}`, next}, "",
			"[user reasoning:" + rs + " function_call:" + fc + " function_call_output:" + callID + " user]"},
		{"reasoning dropped by the app", []string{user, items[1], next}, "",
			"[user reasoning:" + rs + " function_call:" + fc + " function_call_output:" + callID + " user]"},
		{"store false keeps encrypted reasoning", append(append([]string{user}, items...), next), `"store":false,`,
			"[user reasoning:" + rs + " function_call:" + fc + " function_call_output:" + callID + " user]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(`{"model":"gpt-5.1-codex-max",` + tc.store + `"input":[` + strings.Join(tc.input, ",") + `],"tools":[]}`)
			if err := api.Check(body); err == nil && !strings.Contains(tc.name, "no ids") {
				t.Error("the API accepts the history before the rewrite")
			}
			r := respRestorer(stored, callID)
			out, err := Responses{}.RewriteRequest(context.Background(), body, providertest.Link, r)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(inputKinds(out)); got != tc.want {
				t.Errorf("input = %s\nwant    %s", got, tc.want)
			}
			if err := api.Check(out); err != nil {
				t.Errorf("the API would refuse: %v\n%s", err, out)
			}
			if len(r.Asked()) != 1 || r.Asked()[0] != (providertest.RestoreCall{Step: providertest.Step, UserFollows: true}) {
				t.Errorf("asked %v", r.Asked())
			}
			if gjson.GetBytes(out, "input.3.output").Str != respConfirmed {
				t.Errorf("result = %s", gjson.GetBytes(out, "input.3").Raw)
			}
			// Verbatim: the stored reasoning item, encrypted content and all.
			if !bytes.Contains(out, []byte(gjson.ParseBytes(stored).Get("0").Raw)) {
				t.Error("the reasoning item is not the stored one")
			}
			if !bytes.HasPrefix(out, []byte(`{"model":"gpt-5.1-codex-max",`+tc.store+`"input":[`)) || !bytes.HasSuffix(out, []byte(`],"tools":[]}`)) {
				t.Errorf("bytes outside input changed: %s", out)
			}
		})
	}
}

// respFixtureOutput is the output of a recorded stream's terminal event.
func respFixtureOutput(t *testing.T, name string) []byte {
	t.Helper()
	return []byte(gjson.GetBytes(lastData(respFixture(t, name)), "response.output").Raw)
}

func TestResponsesRequestKeepsOtherItems(t *testing.T) {
	// Text, a held call and a passed one: the app ran the passed call.
	in := responsestest.NewSyn().Text("msg_1", "Sure.").Fn("held", "delete_post", `{"post":7}`).Fn("pass", "get_post", `{}`)
	h := providertest.NewHolder("delete_post").Passing("get_post")
	out, err := respRewrite([]byte(in.Completed()), h)
	if err != nil {
		t.Fatal(err)
	}
	final := responsestest.Decode(t, out).Final
	items := appItems(t, final)
	api := &responsestest.API{}
	api.Learn("resp_syn", "["+strings.Join(in.Items, ",")+"]")
	body := []byte(`{"input":[{"role":"user","content":"go"},` + strings.Join(items, ",") +
		`,{"type":"function_call_output","call_id":"call_pass","output":"post 8"},{"role":"user","content":"and?"}]}`)
	r := respRestorer(h.Holds()[0].Message, "call_held")
	got, err := Responses{}.RewriteRequest(context.Background(), body, providertest.Link, r)
	if err != nil {
		t.Fatal(err)
	}
	want := "[user message:msg_1 function_call:fc_held function_call:fc_pass function_call_output:call_held function_call_output:call_pass user]"
	if k := fmt.Sprint(inputKinds(got)); k != want {
		t.Errorf("input = %s\nwant    %s", k, want)
	}
	if err := api.Check(got); err != nil {
		t.Errorf("the API would refuse: %v", err)
	}

	// A chat-like app: id-less text, the model's and the gate's.
	body = []byte(`{"input":[{"role":"user","content":"go"},{"role":"assistant","content":"Sure."},{"role":"assistant","content":[{"type":"output_text","text":` +
		string(gjson.AppendJSONString(nil, providertest.WaitText)) + `}]},{"role":"user","content":"and?"}]}`)
	got, err = Responses{}.RewriteRequest(context.Background(), body, providertest.Link, respRestorer(h.Holds()[0].Message, "call_held"))
	if err != nil {
		t.Fatal(err)
	}
	want = "[user message:msg_1 function_call:fc_held function_call:fc_pass function_call_output:call_held user]"
	if k := fmt.Sprint(inputKinds(got)); k != want {
		t.Errorf("input = %s\nwant    %s", k, want)
	}
}

func TestResponsesRequestStoredState(t *testing.T) {
	_, stored, _ := step1Hold(t)
	const callID = "call_AB6AaRZ1FYZB2RwS6A5vbdqn"
	const respID = "resp_01830d662ab3856501693c321345c88190b0de00f3b9975691"
	api := &responsestest.API{}
	api.Learn(respID, string(respFixtureOutput(t, "reasoning-encrypted-step1.sse")))
	res := provider.Restored{Message: stored, Results: []provider.Result{{CallID: callID, Content: respConfirmed}}}

	t.Run("previous_response_id, the gate knows the response", func(t *testing.T) {
		body := []byte(`{"previous_response_id":"` + respID + `","input":"Done?"}`)
		if err := api.Check(body); err == nil {
			t.Error("the API accepts the request before the rewrite")
		}
		r := &stateRestorer{Restorer: &providertest.Restorer{}, byResponse: map[string]provider.Restored{respID: res}}
		out, err := Responses{}.RewriteRequest(context.Background(), body, providertest.Link, r)
		if err != nil {
			t.Fatal(err)
		}
		if k := fmt.Sprint(inputKinds(out)); k != "[function_call_output:"+callID+" user]" {
			t.Errorf("input = %s", k)
		}
		if err := api.Check(out); err != nil {
			t.Errorf("the API would refuse: %v", err)
		}
		if fmt.Sprint(r.asked) != "["+respID+"||true]" {
			t.Errorf("asked %v", r.asked)
		}
		// Answered already: nothing added twice.
		again, err := Responses{}.RewriteRequest(context.Background(), out, providertest.Link, r)
		if err != nil || !bytes.Equal(again, out) {
			t.Errorf("second pass changed it: %v %s", err, again)
		}
	})

	t.Run("previous_response_id with the synthetic reference", func(t *testing.T) {
		body := []byte(`{"previous_response_id":"` + respID + `","input":[{"type":"item_reference","id":"` + SyntheticPrefix + providertest.Step + `"},{"role":"user","content":"Done?"}]}`)
		r := respRestorer(stored, callID)
		out, err := Responses{}.RewriteRequest(context.Background(), body, providertest.Link, r)
		if err != nil {
			t.Fatal(err)
		}
		if k := fmt.Sprint(inputKinds(out)); k != "[function_call_output:"+callID+" user]" {
			t.Errorf("input = %s", k)
		}
		if err := api.Check(out); err != nil {
			t.Errorf("the API would refuse: %v", err)
		}
	})

	t.Run("conversation", func(t *testing.T) {
		body := []byte(`{"conversation":"conv_1","input":[{"role":"user","content":"Done?"}]}`)
		r := &stateRestorer{Restorer: &providertest.Restorer{}, byResponse: map[string]provider.Restored{"conv_1": res}}
		out, err := Responses{}.RewriteRequest(context.Background(), body, providertest.Link, r)
		if err != nil {
			t.Fatal(err)
		}
		if k := fmt.Sprint(inputKinds(out)); k != "[function_call_output:"+callID+" user]" || fmt.Sprint(r.asked) != "[|conv_1|true]" {
			t.Errorf("input = %s, asked %v", k, r.asked)
		}
	})

	t.Run("a plain Restorer cannot know", func(t *testing.T) {
		body := []byte(`{"previous_response_id":"` + respID + `","input":"Done?"}`)
		out, err := Responses{}.RewriteRequest(context.Background(), body, providertest.Link, respRestorer(stored, callID))
		if err != nil || &out[0] != &body[0] {
			t.Errorf("changed: %v", err)
		}
	})
}

func TestResponsesRequestUntouchedAndSanitized(t *testing.T) {
	body := []byte(`{"model":"gpt-5.1","input":[{"role":"user","content":"hi"}],"previous_response_id":"resp_1"}`)
	r := &stateRestorer{Restorer: &providertest.Restorer{}}
	for _, rr := range []provider.Restorer{restorer(), r} {
		out, err := Responses{}.RewriteRequest(context.Background(), body, providertest.Link, rr)
		if err != nil || &out[0] != &body[0] || len(out) != len(body) {
			t.Errorf("%T: a body with nothing to restore changed: %v", rr, err)
		}
	}
	plain := []byte(`{"model":"gpt-5.1","input":"hi"}`)
	r = &stateRestorer{Restorer: &providertest.Restorer{}}
	out, err := Responses{}.RewriteRequest(context.Background(), plain, providertest.Link, r)
	if err != nil || &out[0] != &plain[0] || len(r.asked) != 0 {
		t.Errorf("a body without a link or stored state was read: %v %v", err, r.asked)
	}

	// An unknown step: its synthetic items cannot reach the provider.
	unknown := SyntheticPrefix + "zzzzzzzzzzzzzzzzzzzzzzzzzz"
	body = []byte(`{"input":[{"type":"message","id":"` + unknown + `","role":"assistant","content":[{"type":"output_text","text":"wait"}]},{"type":"item_reference","id":"` + unknown + `"},{"role":"user","content":"hi"}]}`)
	out, err = Responses{}.RewriteRequest(context.Background(), body, providertest.Link, restorer())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(SyntheticPrefix)) || fmt.Sprint(inputKinds(out)) != "[message user]" {
		t.Errorf("out = %s", out)
	}

	// Each step once: a second copy of the message is dropped.
	_, stored, _ := step1Hold(t)
	ref := `{"type":"item_reference","id":"` + SyntheticPrefix + providertest.Step + `"}`
	body = []byte(`{"input":[` + ref + `,` + ref + `,{"role":"user","content":"x"}]}`)
	rr := respRestorer(stored, "call_AB6AaRZ1FYZB2RwS6A5vbdqn")
	out, err = Responses{}.RewriteRequest(context.Background(), body, providertest.Link, rr)
	if err != nil || len(rr.Asked()) != 1 || strings.Count(string(out), `"type":"function_call"`) != 1 {
		t.Errorf("err %v, asked %v, out %s", err, rr.Asked(), out)
	}

	if _, err := (Responses{}).RewriteRequest(context.Background(), []byte(`{"input":[{"id":"`+SyntheticPrefix), providertest.Link, restorer()); err == nil {
		t.Error("no error for invalid JSON carrying a synthetic id")
	}
	bad := &providertest.Restorer{Steps: map[string]provider.Restored{providertest.Step: {Message: []byte(`{"role":"assistant"}`)}}}
	if _, err := (Responses{}).RewriteRequest(context.Background(), []byte(`{"input":[`+ref+`]}`), providertest.Link, bad); err == nil {
		t.Error("no error for a stored message that is no item list")
	}
}

// respAsk rewrites create_post (schema and description) and
// delete_contact (description only); it records what it was asked.
type respAsk struct{ asked []string }

const respAskSuffix = " Call it with what you know."

func (a *respAsk) rewrite(name string, params []byte) ([]byte, string, bool) {
	a.asked = append(a.asked, name)
	switch name {
	case "create_post":
		return []byte(`{"type":"object","required":["title"]}`), respAskSuffix, true
	case "delete_contact":
		return nil, respAskSuffix, true
	}
	return nil, "", false
}

func TestResponsesRewriteTools(t *testing.T) {
	body := []byte(`{"model":"gpt-5.1","tools":[` +
		`{"type":"function","name":"create_post","description":"Make \u00e9.","parameters":{"type":"object","properties":{"title":{"type":"string"}}},"strict":true},` +
		`{"type":"function","name":"get_post","parameters":{"type":"object"}},` +
		`{"type":"custom","name":"create_post"},` +
		`{"type":"web_search"},` +
		`{"type":"namespace","name":"crm","description":"CRM","tools":[{"type":"function","name":"create_post","parameters":{"type":"object"}},{"type":"function","name":"delete_contact","description":null}]}` +
		`],"input":"hi"}`)
	a := &respAsk{}
	out, err := Responses{}.RewriteTools(body, a.rewrite)
	if err != nil {
		t.Fatal(err)
	}
	tools := gjson.GetBytes(out, "tools").Array()
	if tools[0].Get("parameters.required.0").Str != "title" || tools[0].Get("description").Raw != `"Make \u00e9.`+respAskSuffix+`"` || tools[0].Get("strict").Raw != "true" {
		t.Errorf("create_post = %s", tools[0].Raw)
	}
	if tools[1].Raw != `{"type":"function","name":"get_post","parameters":{"type":"object"}}` || tools[2].Raw != `{"type":"custom","name":"create_post"}` || tools[3].Raw != `{"type":"web_search"}` {
		t.Errorf("other tools changed: %s", out)
	}
	ns := tools[4].Get("tools").Array()
	if ns[0].Get("parameters.required.0").Str != "title" || ns[1].Get("description").Str != respAskSuffix {
		t.Errorf("namespace tools = %s", tools[4].Raw)
	}
	if fmt.Sprint(a.asked) != "[create_post get_post crm/create_post create_post crm/delete_contact delete_contact]" {
		t.Errorf("asked %v", a.asked)
	}
	if !gjson.ValidBytes(out) || !bytes.HasSuffix(out, []byte(`],"input":"hi"}`)) {
		t.Errorf("out = %s", out)
	}
	if p := (Responses{}).ToolParameters(body, "crm/create_post"); string(p) != `{"type":"object"}` {
		t.Errorf("ToolParameters = %s", p)
	}
	if p := (Responses{}).ToolParameters(body, "create_post"); string(p) != `{"type":"object","properties":{"title":{"type":"string"}}}` {
		t.Errorf("ToolParameters = %s", p)
	}
	none := []byte(`{"model":"gpt-5.1","input":"hi"}`)
	if out, err := (Responses{}).RewriteTools(none, a.rewrite); err != nil || &out[0] != &none[0] {
		t.Errorf("a body without tools: %v", err)
	}
	if _, err := (Responses{}).RewriteTools([]byte(`{"tools":[`), a.rewrite); err == nil {
		t.Error("no error for invalid JSON")
	}
	if _, err := (Responses{}).RewriteTools(body, func(string, []byte) ([]byte, string, bool) { return []byte("{"), "", true }); err == nil {
		t.Error("no error for an invalid schema")
	}
}

// The fake API in responsestest refuses the items the gate makes up by
// their prefix; it cannot import this package, so the two are held equal
// here.
func TestFakeAPIKnowsTheGatesItems(t *testing.T) {
	if responsestest.GateItemPrefix != SyntheticPrefix {
		t.Errorf("responsestest.GateItemPrefix %q, SyntheticPrefix %q", responsestest.GateItemPrefix, SyntheticPrefix)
	}
}
