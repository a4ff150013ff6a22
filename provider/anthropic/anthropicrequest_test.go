package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/anthropic/anthropictest"
	"github.com/toolgate/toolgate/provider/providertest"
)

func TestAnthropicHistoryChecker(t *testing.T) {
	ok := anthFixture(t, "request-2.json")
	if err := anthropictest.HistoryError(ok); err != nil {
		t.Errorf("the recorded request is refused: %v", err)
	}
	for name, body := range map[string]string{
		"unanswered":    `{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]},{"role":"user","content":"y"}]}`,
		"last":          `{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]}]}`,
		"text first":    `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]},{"role":"user","content":[{"type":"text","text":"y"},{"type":"tool_result","tool_use_id":"a","content":"r"}]}]}`,
		"orphan result": `{"messages":[{"role":"assistant","content":"hi"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"}]}]}`,
		"empty text":    `{"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`,
	} {
		if anthropictest.HistoryError([]byte(body)) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// anthHeldTurn runs a stream through the adapter with h and returns what
// the app accumulated and what Hold got.
func anthHeldTurn(t *testing.T, in string, h *providertest.Holder) (anthropic.Message, providertest.Hold) {
	t.Helper()
	out, _, err := anthRewrite([]byte(in), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Holds()) != 1 {
		t.Fatalf("%d holds", len(h.Holds()))
	}
	return anthropictest.Accumulate(t, out), h.Holds()[0]
}

func anthRestorer(stored []byte, results ...provider.Result) *providertest.Restorer {
	return &providertest.Restorer{Steps: map[string]provider.Restored{testStep: {Message: stored, Results: results}}}
}

func TestAnthropicRequestRestoresHeldCall(t *testing.T) {
	const id = "toolu_01RaX2WYWRWCbaeFHssmGJXG"
	m, held := anthHeldTurn(t, string(anthFixture(t, "stream-1.sse")), providertest.NewHolder("get_weather"))
	for _, tc := range []struct {
		name        string
		more        []anthropic.MessageParam
		userFollows bool
		want        []string // the content of the message after the assistant's
	}{
		{"person answers", []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Thanks, go on."))}, true,
			[]string{"tool_result:" + id, "text:Thanks, go on."}},
		{"no user message yet", nil, false, []string{"tool_result:" + id}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := anthropictest.AppRequest(t, "Weather in SF in fahrenheit?", m, tc.more...)
			if err := anthropictest.HistoryError(body); err != nil {
				t.Fatalf("the app's own request: %v", err)
			}
			r := anthRestorer(held.Message, provider.Result{CallID: id, Content: "The person confirmed. 68 degrees."})
			out, err := Anthropic{}.RewriteRequest(context.Background(), body, testLink, r)
			if err != nil {
				t.Fatal(err)
			}
			if err := anthropictest.HistoryError(out); err != nil {
				t.Errorf("%v\n%s", err, out)
			}
			if len(r.Asked()) != 1 || r.Asked()[0] != (providertest.RestoreCall{Step: testStep, UserFollows: tc.userFollows}) {
				t.Errorf("asked %+v", r.Asked())
			}
			msgs := gjson.GetBytes(out, "messages").Array()
			if got := msgs[1].Get("content").Raw; got != gjson.GetBytes(held.Message, "content").Raw {
				t.Errorf("assistant content = %s\nwant the original %s", got, gjson.GetBytes(held.Message, "content").Raw)
			}
			var got []string
			msgs[2].Get("content").ForEach(func(_, b gjson.Result) bool {
				got = append(got, b.Get("type").Str+":"+b.Get("tool_use_id").Str+b.Get("text").Str)
				return true
			})
			if strings.Join(got, " ") != strings.Join(tc.want, " ") || msgs[2].Get("content.0.content").Str != "The person confirmed. 68 degrees." {
				t.Errorf("next message = %s", msgs[2].Raw)
			}
			// Nothing else changed.
			if !bytes.HasPrefix(out, body[:gjson.GetBytes(body, "messages.1.content").Index]) ||
				!bytes.HasSuffix(out, body[bytes.Index(body, []byte(`],"model"`)):]) {
				t.Errorf("bytes outside the messages changed:\n%s\n%s", body, out)
			}
			// The result is accepted by the SDK as a request too.
			var p anthropic.MessageNewParams
			if err := json.Unmarshal(out, &p); err != nil || len(p.Messages) != len(msgs) {
				t.Errorf("SDK: %v", err)
			}
		})
	}
}

func TestAnthropicRequestKeepsPassedCallResults(t *testing.T) {
	in := anthropictest.Start("msg_1") + anthropictest.TextBlockEvs(0, "Both.") +
		anthropictest.ToolEvs(1, "toolu_del", "delete_post", `{"post":7}`) +
		anthropictest.ToolEvs(2, "toolu_get", "get_post", `{"post":8}`) + anthropictest.End("tool_use", 20)
	m, held := anthHeldTurn(t, in, providertest.NewHolder("delete_post"))
	// The app ran get_post and answers it; the person wrote nothing yet.
	body := anthropictest.AppRequest(t, "Delete 7, read 8", m, anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_get", "Post 8: hello", false)))
	if err := anthropictest.HistoryError(body); err != nil {
		t.Fatalf("the app's own request: %v", err)
	}
	r := anthRestorer(held.Message, provider.Result{CallID: "toolu_del", Content: "Still waiting for the person's answer; nothing has run yet."})
	out, err := Anthropic{}.RewriteRequest(context.Background(), body, testLink, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := anthropictest.HistoryError(out); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
	if r.Asked()[0].UserFollows {
		t.Error("userFollows for a message of tool results only")
	}
	ids := gjson.GetBytes(out, "messages.2.content.#.tool_use_id").Raw
	if ids != `["toolu_get","toolu_del"]` {
		t.Errorf("tool results = %s", ids)
	}
	if got := gjson.GetBytes(out, "messages.1.content").Raw; got != gjson.GetBytes(held.Message, "content").Raw {
		t.Errorf("assistant content = %s", got)
	}

	// The person writes, after the app's tool result: ours go with the
	// app's, before the text.
	body = anthropictest.AppRequest(t, "Delete 7, read 8", m, anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_get", "Post 8: hello", false), anthropic.NewTextBlock("And?")))
	r = anthRestorer(held.Message, provider.Result{CallID: "toolu_del", Content: "The person moved on without answering; nothing ran."})
	out, err = Anthropic{}.RewriteRequest(context.Background(), body, testLink, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := anthropictest.HistoryError(out); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
	if got := gjson.GetBytes(out, "messages.2.content.#.type").Raw; got != `["tool_result","tool_result","text"]` || !r.Asked()[0].UserFollows {
		t.Errorf("next message = %s, asked %+v", gjson.GetBytes(out, "messages.2").Raw, r.Asked())
	}
}

func TestAnthropicRequestRestoresThinkingVerbatim(t *testing.T) {
	m, held := anthHeldTurn(t, anthThinkingStream(), providertest.NewHolder("delete_post"))
	body := anthropictest.AppRequest(t, "Delete post 7", m, anthropic.NewUserMessage(anthropic.NewTextBlock("Done?")))
	r := anthRestorer(held.Message, provider.Result{CallID: "toolu_del", Content: "The person confirmed. Removed."})
	out, err := Anthropic{}.RewriteRequest(context.Background(), body, testLink, r)
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(out, "messages.1.content").Raw; got != anthThinkingContent {
		t.Errorf("assistant content =\n%s\nwant\n%s", got, anthThinkingContent)
	}
	if err := anthropictest.HistoryError(out); err != nil {
		t.Error(err)
	}
}

func TestAnthropicRequestShapes(t *testing.T) {
	stored := `{"role":"assistant","content":[{"type":"text","text":"I'll delete it."},{"type":"tool_use","id":"toolu_del","name":"delete_post","input":{"post":7}}]}`
	res := provider.Result{CallID: "toolu_del", Content: "The person declined; nothing ran."}
	link := `I'll delete it.\n\n` + waitText
	for _, tc := range []struct{ name, in, want string }{
		{"string contents",
			`{"messages":[{"role":"user","content":"Delete 7"},{"role":"assistant","content":"` + link + `"},{"role":"user","content":"ok?"}]}`,
			`{"messages":[{"role":"user","content":"Delete 7"},{"role":"assistant","content":[{"type":"text","text":"I'll delete it."},{"type":"tool_use","id":"toolu_del","name":"delete_post","input":{"post":7}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_del","content":"The person declined; nothing ran."},{"type":"text","text":"ok?"}]}]}`},
		{"blank user string dropped",
			`{"messages":[{"role":"assistant","content":"` + link + `"},{"role":"user","content":" "}]}`,
			`{"messages":[{"role":"assistant","content":[{"type":"text","text":"I'll delete it."},{"type":"tool_use","id":"toolu_del","name":"delete_post","input":{"post":7}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_del","content":"The person declined; nothing ran."}]}]}`},
		{"assistant follows",
			`{"messages":[{"role":"assistant","content":[{"type":"text","text":"` + link + `"}]},{"role":"assistant","content":"more"}]}`,
			`{"messages":[{"role":"assistant","content":[{"type":"text","text":"I'll delete it."},{"type":"tool_use","id":"toolu_del","name":"delete_post","input":{"post":7}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_del","content":"The person declined; nothing ran."}]},{"role":"assistant","content":"more"}]}`},
		{"app's own tool_use kept",
			`{"messages":[{"role":"assistant","content":[{"type":"text","text":"` + link + `"},{"type":"tool_use","id":"toolu_app","name":"x","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_app","content":"r"}]}]}`,
			`{"messages":[{"role":"assistant","content":[{"type":"text","text":"I'll delete it."},{"type":"tool_use","id":"toolu_del","name":"delete_post","input":{"post":7}},{"type":"tool_use","id":"toolu_app","name":"x","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_app","content":"r"},{"type":"tool_result","tool_use_id":"toolu_del","content":"The person declined; nothing ran."}]}]}`},
		{"already answered",
			`{"messages":[{"role":"assistant","content":"` + link + `"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_del","content":"x"}]}]}`,
			`{"messages":[{"role":"assistant","content":[{"type":"text","text":"I'll delete it."},{"type":"tool_use","id":"toolu_del","name":"delete_post","input":{"post":7}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_del","content":"x"}]}]}`},
		{"escaped slashes",
			`{"messages":[{"role":"assistant","content":"` + strings.ReplaceAll(link, "/", `\/`) + `"}]}`,
			`{"messages":[{"role":"assistant","content":[{"type":"text","text":"I'll delete it."},{"type":"tool_use","id":"toolu_del","name":"delete_post","input":{"post":7}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_del","content":"The person declined; nothing ran."}]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := anthRestorer([]byte(stored), res, provider.Result{CallID: "toolu_unknown", Content: "not in the message"})
			out, err := Anthropic{}.RewriteRequest(context.Background(), []byte(tc.in), testLink, r)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", out, tc.want)
			}
			if err := anthropictest.HistoryError(out); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestAnthropicRequestUntouched(t *testing.T) {
	for name, body := range map[string]string{
		"no link":       string(anthFixture(t, "request-2.json")),
		"unknown step":  `{"messages":[{"role":"assistant","content":"` + strings.Replace(waitText, testStep, "zzzzzzzzzzzzzzzzzzzzzzzzzz", 1) + `"}]}`,
		"link in user":  `{"messages":[{"role":"user","content":"` + waitText + `"}]}`,
		"short step id": `{"messages":[{"role":"assistant","content":"` + testLink + `abc"}]}`,
	} {
		r := anthRestorer([]byte(`{"content":[]}`))
		out, err := Anthropic{}.RewriteRequest(context.Background(), []byte(body), testLink, r)
		if err != nil || string(out) != body || (name == "no link" && len(r.Asked()) != 0) {
			t.Errorf("%s: err %v, asked %v, out %s", name, err, r.Asked(), out)
		}
	}
	body := anthFixture(t, "request-2.json")
	out, _ := Anthropic{}.RewriteRequest(context.Background(), body, testLink, anthRestorer(nil))
	if &out[0] != &body[0] {
		t.Error("not the same slice")
	}
}

func TestAnthropicRequestRestoresEachStepOnce(t *testing.T) {
	stored := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_del","name":"delete_post","input":{}}]}`
	body := `{"messages":[{"role":"assistant","content":"` + waitText + `"},{"role":"user","content":"a"},{"role":"assistant","content":"again: ` + waitText + `"},{"role":"user","content":"b"}]}`
	r := anthRestorer([]byte(stored), provider.Result{CallID: "toolu_del", Content: "x"})
	out, err := Anthropic{}.RewriteRequest(context.Background(), []byte(body), testLink, r)
	if err != nil || len(r.Asked()) != 1 || anthropictest.HistoryError(out) != nil {
		t.Errorf("err %v, asked %v, %s", err, r.Asked(), out)
	}
}

func TestAnthropicRequestErrors(t *testing.T) {
	if _, err := (Anthropic{}).RewriteRequest(context.Background(), []byte(`{"messages":[{"role":"assistant","content":"`+waitText), testLink, anthRestorer(nil)); err == nil {
		t.Error("no error for invalid JSON with a link")
	}
	body := []byte(`{"messages":[{"role":"assistant","content":"` + waitText + `"}]}`)
	for _, stored := range []string{`{"role":"assistant","content":"text"}`, `{"role":`} {
		if _, err := (Anthropic{}).RewriteRequest(context.Background(), body, testLink, anthRestorer([]byte(stored))); err == nil {
			t.Errorf("no error for stored message %s", stored)
		}
	}
}

func FuzzAnthropicRequest(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"Delete 7"},{"role":"assistant","content":"` + waitText + `"},{"role":"user","content":"ok?"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"text","text":"` + waitText + `"},{"type":"tool_use","id":"toolu_get","name":"get_post","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_get","content":"r"},{"type":"text","text":"x"}]}]}`))
	f.Add(anthFixture(f, "request-2.json"))
	// The model's reply after the link (a resumed answer).
	f.Add([]byte(`{"messages":[{"role":"user","content":"Delete 7"},{"role":"assistant","content":[{"type":"text","text":"I'll delete it."},{"type":"text","text":"\n\n` + waitText + `"},{"type":"text","text":"\n\nDone."},{"type":"tool_use","id":"toolu_list","name":"list_posts","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_list","content":"[]"}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":"` + waitText + `\n\nDone."},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_get","content":"r"}]}]}`))
	stored := []byte(`{"role":"assistant","content":[{"type":"text","text":"I'll delete it."},{"type":"tool_use","id":"toolu_del","name":"delete_post","input":{"post":7}},{"type":"tool_use","id":"toolu_get","name":"get_post","input":{}}]}`)
	f.Fuzz(func(t *testing.T, body []byte) {
		r := anthRestorer(stored, provider.Result{CallID: "toolu_del", Content: "The person declined; nothing ran."})
		out, err := Anthropic{}.RewriteRequest(context.Background(), body, testLink, r)
		if err != nil {
			return
		}
		if !bytes.Contains(body, []byte(testLink)) && !bytes.Contains(body, []byte(strings.ReplaceAll(testLink, "/", `\/`))) && !bytes.Equal(out, body) {
			t.Fatal("a body without a link changed")
		}
		if bytes.Equal(out, body) {
			return
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("invalid output %q from %q", out, body)
		}
		// A restored held call is always answered.
		if bytes.Contains(body, []byte("toolu_del")) {
			return
		}
		msgs := gjson.GetBytes(out, "messages").Array()
		for i, m := range msgs {
			if m.Get("role").Str != "assistant" || !anthropictest.UseIDs(m)["toolu_del"] || !bytes.Contains([]byte(m.Raw), []byte("I'll delete it.")) {
				continue
			}
			if i+1 >= len(msgs) || !anthHasResult(msgs[i+1], "toolu_del") {
				t.Fatalf("restored call unanswered:\n%s", out)
			}
		}
	})
}

// anthHasResult reports whether a user message starts with tool results
// that include id.
func anthHasResult(m gjson.Result, id string) bool {
	found := false
	m.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str != "tool_result" {
			return false
		}
		found = found || b.Get("tool_use_id").Str == id
		return true
	})
	return m.Get("role").Str == "user" && found
}

func BenchmarkAnthropicRequestWithoutLink(b *testing.B) {
	body := anthFixture(b, "request-2.json")
	r := anthRestorer(nil)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if out, err := (Anthropic{}).RewriteRequest(context.Background(), body, testLink, r); err != nil || len(out) != len(body) {
			b.Fatal(err)
		}
	}
}
