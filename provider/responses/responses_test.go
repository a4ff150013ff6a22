package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/provider/responses/responsestest"
	"github.com/toolgate/toolgate/wire/sse"
)

func respFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fixtures", "openai-responses", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var respSSEFixtures = []string{"azure-tool-call.sse", "reasoning-encrypted-step1.sse", "reasoning-encrypted-step2.sse", "reasoning-encrypted-step3.sse", "reasoning-encrypted-step4.sse"}

// respRewrite runs in through a Responses stream, written in pieces of the
// given sizes (cycled; all at once if none), and returns what came out.
func respRewrite(in []byte, h provider.Holder, sizes ...int) (out []byte, err error) {
	out, _, err = providertest.Rewrite(func(dst io.Writer, flush func() error) provider.Stream {
		return Responses{}.NewStream(context.Background(), dst, flush, h)
	}, in, sizes...)
	return out, err
}

// fragments returns the argument deltas of a call item in a stream, but
// those the tools echoed in response.created hold anyway (the tool's
// name, its parameters' names and enums).
func fragments(in []byte, itemID string) []string {
	var f []string
	var created string
	for line := range strings.SplitSeq(string(in), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if created == "" {
			created = data
		}
		if gjson.Get(data, "item_id").Str != itemID {
			continue
		}
		if d := gjson.Get(data, "delta"); d.Type == gjson.String && len(d.Str) > 2 && !strings.Contains(created, d.Str) {
			f = append(f, d.Str)
		}
	}
	return f
}

func TestResponsesStreamPassesStreamsWithoutGatedCalls(t *testing.T) {
	for _, name := range respSSEFixtures {
		in := respFixture(t, name)
		crlf := bytes.ReplaceAll(in, []byte("\n"), []byte("\r\n"))
		done := append(append([]byte(nil), in...), "data: [DONE]\n\n"...)
		for _, tc := range []struct {
			variant string
			in      []byte
		}{{"lf", in}, {"crlf", crlf}, {"done", done}} {
			t.Run(name+"/"+tc.variant, func(t *testing.T) {
				h := providertest.NewHolder("delete_post")
				out, err := respRewrite(tc.in, h, 61)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out, tc.in) {
					t.Errorf("output differs from input:\n%s", out)
				}
				if len(h.Holds()) != 0 {
					t.Errorf("Hold called %d times", len(h.Holds()))
				}
			})
		}
	}
}

// respHeldFixtures are the recorded streams with one call, the call's
// item id, call id and arguments, and the items before it.
var respHeldFixtures = []struct {
	file, name, itemID, callID, args string
	before                           []string
	total                            int64
}{
	{"azure-tool-call.sse", "weather", "fc_04041325ab8ae30400698c51c5468c8197a395f18875a5339f", "call_H5DxLSFnsGhiROnUiDHmgyc8", `{"location":"San Francisco"}`, nil, 69},
	{"reasoning-encrypted-step1.sse", "calculator", "fc_01830d662ab3856501693c32151234819091cfca267e98cc5f", "call_AB6AaRZ1FYZB2RwS6A5vbdqn", `{"a":12,"b":7,"op":"add"}`, []string{"reasoning"}, 162},
	{"reasoning-encrypted-step2.sse", "calculator", "fc_01830d662ab3856501693c32165be4819098c08f205f8932ef", "call_Q6pW65MUgW9vF59BmItYGos3", `{"a":19,"b":3,"op":"multiply"}`, nil, 0},
	{"reasoning-encrypted-step3.sse", "calculator", "fc_01830d662ab3856501693c32173d5081908f2121e1c3ff2901", "call_Zl5vIMnD7dVAjgU6FkhmiCZh", `{"a":57,"b":10,"op":"multiply"}`, nil, 286},
}

func TestResponsesStreamHoldsCall(t *testing.T) {
	for _, tc := range respHeldFixtures {
		t.Run(tc.file, func(t *testing.T) {
			in := respFixture(t, tc.file)
			h := providertest.NewHolder(tc.name)
			out, err := respRewrite(in, h)
			if err != nil {
				t.Fatal(err)
			}
			escaped := string(gjson.AppendJSONString(nil, tc.args))
			responsestest.CheckAbsent(t, out, append(fragments(in, tc.itemID), tc.itemID, tc.callID, tc.args, escaped[1:len(escaped)-1], "function_call")...)
			d := responsestest.Decode(t, out)
			if d.Final == nil {
				t.Fatal("no terminal event")
			}
			want := append(append([]string(nil), tc.before...), "message")
			if got := responsestest.OutputSummary(d.Final.Output); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("output = %v, want %v", got, want)
			}
			msg := d.Final.Output[len(tc.before)]
			if responsestest.MessageText(msg) != providertest.WaitText || msg.ID != SyntheticPrefix+providertest.Step || msg.Role != "assistant" {
				t.Errorf("message = %s", msg.RawJSON())
			}
			if it, ok := d.Done[int64(len(tc.before))]; !ok || responsestest.MessageText(it) != providertest.WaitText {
				t.Errorf("no output_item.done with the text: %+v", d.Done)
			}
			if tc.total > 0 && d.Final.Usage.TotalTokens != tc.total {
				t.Errorf("usage total = %d, want %d", d.Final.Usage.TotalTokens, tc.total)
			}
			if d.Final.OutputText() != providertest.WaitText {
				t.Errorf("OutputText = %q", d.Final.OutputText())
			}

			if len(h.Holds()) != 1 || len(h.Holds()[0].Calls) != 1 {
				t.Fatalf("holds = %+v", h.Holds())
			}
			c := h.Holds()[0].Calls[0]
			if c.ID != tc.callID || c.Name != tc.name || c.Type != "function" || string(c.Arguments) != tc.args || c.Position != len(tc.before) {
				t.Errorf("call = %+v", c)
			}
			if gjson.GetBytes(c.Raw, "id").Str != tc.itemID || gjson.GetBytes(c.Raw, "arguments").Str != tc.args {
				t.Errorf("call raw = %s", c.Raw)
			}
			// The message to restore: the output items verbatim up to the call.
			var items []responses.ResponseOutputItemUnion
			if err := json.Unmarshal(h.Holds()[0].Message, &items); err != nil {
				t.Fatalf("message: %v", err)
			}
			want = append(append([]string(nil), tc.before...), "function_call:"+tc.name)
			if got := responsestest.OutputSummary(items); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("message items = %v, want %v", got, want)
			}
			if items[len(items)-1].CallID != tc.callID {
				t.Errorf("message call = %s", items[len(items)-1].RawJSON())
			}
			if len(tc.before) > 0 && (items[0].EncryptedContent == "" || !bytes.Contains(in, []byte(items[0].EncryptedContent))) {
				t.Errorf("the reasoning item is not kept verbatim: %s", items[0].RawJSON())
			}
		})
	}
}

func TestResponsesStreamIgnoresSplits(t *testing.T) {
	for _, name := range []string{"azure-tool-call.sse", "reasoning-encrypted-step1.sse"} {
		in := respFixture(t, name)
		h := providertest.NewHolder("weather", "calculator")
		whole, err := respRewrite(in, h)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(in); i++ {
			out, err := respRewrite(in, providertest.NewHolder("weather", "calculator"), i, len(in))
			if err != nil {
				t.Fatalf("%s split at %d: %v", name, i, err)
			}
			if !bytes.Equal(out, whole) {
				t.Fatalf("%s split at %d: output differs", name, i)
			}
		}
		for _, size := range []int{1, 2, 3, 7, 100} {
			out, err := respRewrite(in, providertest.NewHolder("weather", "calculator"), size)
			if err != nil || !bytes.Equal(out, whole) {
				t.Fatalf("%s in pieces of %d: err %v, output differs", name, size, err)
			}
		}
	}
}

// Synthetic streams, in the shape of the recorded ones.

// refusal is the tool result the model reads for a refused send_email.
const refusal = "Toolgate refused send_email: the field to (required, an email address) is missing. Nothing ran."

func TestResponsesStreamSynthetic(t *testing.T) {
	const del, get = "delete_post", "get_post"
	for _, tc := range []struct {
		name   string
		stream string
		h      *providertest.Holder
		want   []string // the final output
		text   int      // index of the waiting message (-1 none)
		absent []string
	}{
		{"text, held, passed, text",
			responsestest.NewSyn().Text("msg_1", "Sure, deleting it.").Fn("held1", del, `{"post":7}`).Fn("pass1", get, `{"post":8}`).Text("msg_2", "Done soon.").Completed(),
			providertest.NewHolder(del).Passing(get), []string{"message", "message", "function_call:get_post", "message"}, 1,
			[]string{"fc_held1", "call_held1", `"post\":7`, "delete_post"}},
		{"passed first, then held",
			responsestest.NewSyn().Fn("pass1", get, `{"post":8}`).Fn("held1", del, `{"post":7}`).Completed(),
			providertest.NewHolder(del).Passing(get), []string{"function_call:get_post", "message"}, 1,
			[]string{"fc_held1", "call_held1", "delete_post"}},
		{"unread call, then two held, then text",
			responsestest.NewSyn().Fn("free", "lookup", `{}`).Fn("held1", del, `{"post":7}`).Fn("held2", del, `{"post":9}`).Text("msg_2", "Anything else?").Completed(),
			providertest.NewHolder(del), []string{"function_call:lookup", "message", "message"}, 1,
			[]string{"fc_held1", "fc_held2", "call_held2", "delete_post"}},
		{"reasoning before the held call",
			responsestest.NewSyn().Reasoning("rs_1").Fn("held1", del, `{"post":7}`).Completed(),
			providertest.NewHolder(del), []string{"reasoning", "message"}, 1, []string{"fc_held1", "delete_post"}},
		{"custom tool call",
			responsestest.NewSyn().Call("ctc_1", "call_c1", del, "", "post 7 please", true).Completed(),
			providertest.NewHolder(del), []string{"message"}, 0, []string{"ctc_1", "call_c1", "post 7", "delete_post", "custom_tool_call"}},
		{"namespaced call, qualified key",
			responsestest.NewSyn().Call("fc_ns", "call_ns", "delete_contact", "crm", `{"id":3}`, false).Completed(),
			providertest.NewHolder("crm/delete_contact"), []string{"message"}, 0, []string{"fc_ns", "call_ns"}},
		{"namespaced call, bare key",
			responsestest.NewSyn().Call("fc_ns", "call_ns", "delete_contact", "crm", `{"id":3}`, false).Completed(),
			providertest.NewHolder("delete_contact"), []string{"message"}, 0, []string{"fc_ns", "call_ns"}},
		{"incomplete response",
			responsestest.NewSyn().Fn("held1", del, `{"post":7}`).End("response.incomplete"),
			providertest.NewHolder(del), []string{"message"}, 0, []string{"fc_held1", "delete_post"}},
		{"refused in place, held",
			responsestest.NewSyn().Fn("ref1", "send_email", `{"subject":"x"}`).Fn("held1", del, `{"post":7}`).Completed(),
			providertest.NewHolder(del).Refusing("send_email", refusal), []string{"message"}, 0, []string{"fc_ref1", "fc_held1", "delete_post", "function_call"}},
		{"every call passed after inspection",
			responsestest.NewSyn().Fn("pass1", get, `{"post":8}`).Fn("pass2", get, `{"post":9}`).Completed(),
			providertest.NewHolder().Passing(get), []string{"function_call:get_post", "function_call:get_post"}, -1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.stream)
			out, err := respRewrite(in, tc.h, 53)
			if err != nil {
				t.Fatal(err)
			}
			responsestest.CheckAbsent(t, out, tc.absent...)
			d := responsestest.Decode(t, out)
			if d.Final == nil {
				t.Fatal("no terminal event")
			}
			if got := responsestest.OutputSummary(d.Final.Output); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("output = %v, want %v", got, tc.want)
			}
			if tc.text >= 0 {
				txt := responsestest.MessageText(d.Final.Output[tc.text])
				if !strings.HasPrefix(txt, providertest.WaitText) || !strings.HasPrefix(d.Final.Output[tc.text].ID, SyntheticPrefix) {
					t.Errorf("output[%d] = %s", tc.text, d.Final.Output[tc.text].RawJSON())
				}
				if tc.name == "refused in place, held" && txt != providertest.WaitText+"\n\n"+refusal {
					t.Errorf("text = %q", txt)
				}
			} else if !bytes.Equal(out, in) {
				t.Errorf("calls all passed, but the stream changed:\n%s", out)
			}
			// Passed calls reach the app whole, in events and output alike.
			for i, it := range d.Final.Output {
				if it.Type == "function_call" {
					ev := d.Done[int64(i)]
					if ev.Arguments.OfString == "" || ev.Arguments.OfString != it.Arguments.OfString || ev.CallID != it.CallID {
						t.Errorf("passed call %d: events %s, output %s", i, ev.RawJSON(), it.RawJSON())
					}
				}
			}
		})
	}
}

func TestResponsesStreamHoldMessage(t *testing.T) {
	// Hold gets the items up to the last inspected call, and each call with
	// its output_index, namespace key and arguments.
	in := responsestest.NewSyn().Text("msg_1", "Sure.").Reasoning("rs_1").Call("fc_1", "call_1", "delete_contact", "crm", `{"id":3}`, false).
		Fn("pass", "get_post", `{}`).Call("ctc_2", "call_2", "delete_post", "", "post 7", true).Text("msg_2", "After.").Completed()
	h := providertest.NewHolder("crm/delete_contact", "delete_post").Passing("get_post")
	if _, err := respRewrite([]byte(in), h); err != nil {
		t.Fatal(err)
	}
	if len(h.Holds()) != 1 {
		t.Fatalf("holds = %d", len(h.Holds()))
	}
	var got []string
	for _, c := range h.Holds()[0].Calls {
		got = append(got, fmt.Sprintf("%d %s %s %s %s", c.Position, c.Type, c.Name, c.ID, c.Arguments))
	}
	want := []string{`2 function crm/delete_contact call_1 {"id":3}`, `3 function get_post call_pass {}`, `4 custom delete_post call_2 post 7`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calls = %q\nwant %q", got, want)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(h.Holds()[0].Message, &items); err != nil || len(items) != 5 {
		t.Fatalf("message = %s (%v)", h.Holds()[0].Message, err)
	}
	if gjson.GetBytes(items[4], "id").Str != "ctc_2" || gjson.GetBytes(items[1], "type").Str != "reasoning" {
		t.Errorf("message = %s", h.Holds()[0].Message)
	}
	if k := h.Holds()[0].Kept; k.ResponseID != "resp_syn" {
		t.Errorf("kept = %+v", k)
	}
}

func TestResponsesStreamDataOnly(t *testing.T) {
	s := responsestest.NewSyn()
	s.Lines = false
	s.B.Reset()
	s.Seq = 0
	in := s.Fn("held1", "delete_post", `{}`).Completed() + "data: [DONE]\n\n"
	out, err := respRewrite([]byte(in), providertest.NewHolder("delete_post"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("event:")) {
		t.Errorf("event lines added to a data-only stream:\n%s", out)
	}
	d := responsestest.Decode(t, out)
	if d.Final == nil || len(d.Final.Output) != 1 || responsestest.MessageText(d.Final.Output[0]) != providertest.WaitText {
		t.Errorf("final = %+v", d.Final)
	}
	if !bytes.HasSuffix(out, []byte("data: [DONE]\n\n")) {
		t.Error("[DONE] lost")
	}
}

func TestResponsesStreamEndsEarly(t *testing.T) {
	full := responsestest.NewSyn().Text("msg_1", "Sure.").Fn("held1", "delete_post", `{"post":7}`).Text("msg_2", "Later text.").Completed()
	// Cut before the terminal event: the call is never judged, never
	// written; what came after it still reaches the app.
	cut := full[:strings.Index(full, "event: response.completed")]
	h := providertest.NewHolder("delete_post")
	out, err := respRewrite([]byte(cut), h)
	if err != nil {
		t.Fatal(err)
	}
	responsestest.CheckAbsent(t, out, "fc_held1", "call_held1")
	if len(h.Holds()) != 0 {
		t.Errorf("Hold called on an unfinished response")
	}
	d := responsestest.Decode(t, out)
	if fmt.Sprint(d.Added) != "[msg_1 msg_2]" {
		t.Errorf("items = %v", d.Added)
	}

	// An error event ends it the same way.
	errEv := "event: error\ndata: {\"type\":\"error\",\"sequence_number\":99,\"code\":\"server_error\",\"message\":\"boom\",\"param\":null}\n\n"
	cut = full[:strings.Index(full, "event: response.output_item.done")] + errEv
	out, err = respRewrite([]byte(cut), providertest.NewHolder("delete_post"))
	if err != nil {
		t.Fatal(err)
	}
	responsestest.CheckAbsent(t, out, "fc_held1")
	if !bytes.HasSuffix(out, []byte(errEv)) {
		t.Errorf("error event lost:\n%s", out)
	}
}

func TestResponsesStreamTerminalOnlyCall(t *testing.T) {
	// A gateway that sends a call only in the terminal output: it is judged
	// all the same, since clients take calls from there.
	s := responsestest.NewSyn().Text("msg_1", "Sure.")
	s.Items = append(s.Items, `{"id":"fc_x","type":"function_call","status":"completed","arguments":"{\"post\":7}","call_id":"call_x","name":"delete_post"}`)
	out, err := respRewrite([]byte(s.Completed()), providertest.NewHolder("delete_post"))
	if err != nil {
		t.Fatal(err)
	}
	responsestest.CheckAbsent(t, out, "fc_x", "call_x")
	final := gjson.GetBytes(lastData(out), "response.output")
	if n := len(final.Array()); n != 2 || final.Get("1.text").Exists() || final.Get("1.content.0.text").Str != providertest.WaitText {
		t.Errorf("output = %s", final.Raw)
	}
}

// lastData is the data of a stream's last event.
func lastData(stream []byte) []byte {
	var last []byte
	for line := range bytes.SplitSeq(stream, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			last = d
		}
	}
	return last
}

func TestResponsesStreamFailsClosed(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"invalid JSON naming a call", "data: {\"type\":\"response.output_item.added\",\"item\":{\"type\":\"function_call\"\n\n"},
		{"call without a name", `data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"fc_1","type":"function_call","arguments":"","call_id":"c"}}` + "\n\n"},
		{"fragments of a call never begun", `data: {"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_9","output_index":0,"delta":"{\"post\":7}"}` + "\n\n"},
		{"call without output_index", `data: {"type":"response.output_item.added","sequence_number":2,"item":{"id":"fc_1","type":"function_call","arguments":"","call_id":"c","name":"delete_post"}}` + "\n\n"},
		{"output_index not a number", `data: {"type":"response.output_item.added","sequence_number":2,"output_index":"0","item":{"id":"fc_1","type":"function_call","arguments":"","call_id":"c","name":"delete_post"}}` + "\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := Responses{}.NewStream(context.Background(), &buf, nil, providertest.NewHolder("delete_post"))
			if _, err := s.Write([]byte(tc.in)); err == nil {
				t.Fatal("no error")
			}
			// Nothing but the error event that ends a stopped stream.
			if _, err := s.Write([]byte("data: {}\n\n")); err == nil || len(sse.Parse(buf.Bytes())) != 1 || sse.Parse(buf.Bytes())[0].Type != "error" {
				t.Errorf("after the failure: err %v, output %q", err, buf.Bytes())
			}
			if s.Close() == nil {
				t.Error("Close forgot the failure")
			}
		})
	}

	// A call that changes between its events: judged as one thing, read by
	// some client as another.
	renamed := responsestest.NewSyn().Fn("p", "get_post", `{"post":8}`).Completed()
	renamed = strings.Replace(renamed, `"name":"get_post"}}`, `"name":"delete_post"}}`, 1) // its output_item.added only
	unread := strings.ReplaceAll(responsestest.NewSyn().Fn("p", "lookup", `{}`).Completed(), `"name":"lookup"}]`, `"name":"delete_post"}]`)
	args := responsestest.NewSyn().Fn("p", "get_post", `{"post":8}`).Completed()
	args = strings.Replace(args, `"arguments":"{\"post\":8}","call_id"`, `"arguments":"{\"post\":9}","call_id"`, 1)
	for name, in := range map[string]string{"renamed": renamed, "unread, renamed in the output": unread, "arguments differ": args} {
		t.Run(name, func(t *testing.T) {
			h := providertest.NewHolder("delete_post").Passing("get_post")
			out, err := respRewrite([]byte(in), h)
			if err == nil || bytes.Contains(out, []byte("delete_post")) {
				t.Errorf("err %v, output:\n%s", err, out)
			}
		})
	}

	t.Run("mid-line end", func(t *testing.T) {
		tail := "data: {\"type\":\"response.output_text.delta\",\"delta\":\"x"
		out, err := respRewrite([]byte(tail), providertest.NewHolder())
		if err != errRespMidLine || string(out) != tail {
			t.Errorf("err %v, output %q", err, out)
		}
	})
}

func TestResponsesJSONPassesBodiesWithoutGatedCalls(t *testing.T) {
	body := respFixture(t, "azure-tool-call.json")
	for _, h := range []*providertest.Holder{providertest.NewHolder("delete_post"), providertest.NewHolder().Passing("weather")} {
		out, err := Responses{}.RewriteJSON(context.Background(), body, h)
		if err != nil {
			t.Fatal(err)
		}
		if &out[0] != &body[0] || len(out) != len(body) {
			t.Error("a body whose calls all pass was copied or changed")
		}
	}
	text := []byte(`{"id":"resp_1","object":"response","output":[{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"hi"}]}]}`)
	if out, err := (Responses{}).RewriteJSON(context.Background(), text, nil); err != nil || &out[0] != &text[0] {
		t.Errorf("a body without calls was read: %v", err)
	}
}

func TestResponsesJSONHoldsCall(t *testing.T) {
	body := respFixture(t, "azure-tool-call.json")
	h := providertest.NewHolder("weather")
	out, err := Responses{}.RewriteJSON(context.Background(), body, h)
	if err != nil {
		t.Fatal(err)
	}
	responsestest.CheckAbsent(t, out, "fc_0a2fa1b539ba14ba00698c519ebab0819494302fc0b5c31440", "call_YunNGbIwdVJ2i0y0Mybva4Pw", "San Francisco")
	var r responses.Response
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("openai-go: %v", err)
	}
	if fmt.Sprint(responsestest.OutputSummary(r.Output)) != "[message]" || r.OutputText() != providertest.WaitText || r.Usage.TotalTokens != 69 {
		t.Errorf("response = %v %q", responsestest.OutputSummary(r.Output), r.OutputText())
	}
	// Every byte outside "output" stays.
	o := gjson.GetBytes(body, "output")
	no := gjson.GetBytes(out, "output")
	if !bytes.Equal(body[:o.Index], out[:no.Index]) || !bytes.Equal(body[o.Index+len(o.Raw):], out[no.Index+len(no.Raw):]) {
		t.Error("bytes outside output changed")
	}
	if len(h.Holds()) != 1 || h.Holds()[0].Calls[0].ID != "call_YunNGbIwdVJ2i0y0Mybva4Pw" || string(h.Holds()[0].Calls[0].Arguments) != `{"location":"San Francisco"}` {
		t.Errorf("holds = %+v", h.Holds())
	}
	if k := h.Holds()[0].Kept; k.ResponseID != "resp_0a2fa1b539ba14ba00698c519df7a88194874af28c8bfccb12" {
		t.Errorf("kept = %+v", k)
	}
}

func TestResponsesJSONSynthetic(t *testing.T) {
	item := func(id, name string) string {
		return fmt.Sprintf(`{"id":"fc_%s","type":"function_call","status":"completed","arguments":"{\"post\":7}","call_id":"call_%s","name":%q}`, id, id, name)
	}
	rs := `{"id":"rs_1","type":"reasoning","encrypted_content":"gAAA","summary":[]}`
	msg := `{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Sure \u00e9."}],"role":"assistant"}`
	for _, tc := range []struct {
		name, output string
		h            *providertest.Holder
		want         string
		holdItems    int
	}{
		{"reasoning then held", rs + "," + item("a", "delete_post"), providertest.NewHolder("delete_post"), "[reasoning message]", 2},
		{"text, held, passed", msg + "," + item("a", "delete_post") + "," + item("b", "get_post"), providertest.NewHolder("delete_post").Passing("get_post"), "[message message function_call:get_post]", 3},
		{"two held, text after", item("a", "delete_post") + "," + item("b", "delete_post") + "," + msg, providertest.NewHolder("delete_post"), "[message message]", 2},
		{"refused in place", item("a", "send_email"), providertest.NewHolder().Refusing("send_email", refusal), "[message]", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(`{"id":"resp_j","object":"response","status":"completed","output":[` + tc.output + `],"usage":` + responsestest.Usage + `}`)
			out, err := Responses{}.RewriteJSON(context.Background(), body, tc.h)
			if err != nil {
				t.Fatal(err)
			}
			var r responses.Response
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("openai-go: %v\n%s", err, out)
			}
			if got := fmt.Sprint(responsestest.OutputSummary(r.Output)); got != tc.want {
				t.Errorf("output = %s, want %s", got, tc.want)
			}
			if !bytes.Contains(out, []byte(`"Sure \u00e9."`)) && strings.Contains(tc.output, "msg_1") {
				t.Error("the model's own text was re-encoded")
			}
			responsestest.CheckAbsent(t, out, "fc_a", "call_a")
			if len(tc.h.Holds()) != 1 || len(gjson.ParseBytes(tc.h.Holds()[0].Message).Array()) != tc.holdItems {
				t.Errorf("holds = %+v", tc.h.Holds())
			}
		})
	}
	if _, err := (Responses{}).RewriteJSON(context.Background(), []byte(`{"output":[{"type":"function_call","name":"delete_post"`), providertest.NewHolder("delete_post")); err == nil {
		t.Error("no error for invalid JSON naming a call")
	}
}
