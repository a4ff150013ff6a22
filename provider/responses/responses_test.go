package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/providertest"
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
	var buf bytes.Buffer
	s := Responses{}.NewStream(context.Background(), &buf, func() error { return nil }, h)
	for i := 0; len(in) > 0; i++ {
		n := len(in)
		if len(sizes) > 0 {
			n = min(sizes[i%len(sizes)], len(in))
		}
		if _, err = s.Write(in[:n]); err != nil {
			break
		}
		in = in[n:]
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return buf.Bytes(), err
}

// respDecoded is a rewritten stream as openai-go reads it.
type respDecoded struct {
	events []responses.ResponseStreamEventUnion
	final  *responses.Response // the terminal event's response
	added  []string            // item ids in output_item.added order
	done   map[int64]responses.ResponseOutputItemUnion
}

// respDecode decodes a stream with openai-go's SSE decoder and
// ResponseStreamEventUnion, checking what a Responses client relies on:
// every event type known, sequence_number strictly increasing,
// output_item.added at index == the items so far (openai-node's
// validateArrayAppend), every event of an item at an index already added,
// output_item.done matching its added item, and the terminal output agreeing
// with the items the events built.
func respDecode(t *testing.T, stream []byte) respDecoded {
	t.Helper()
	res := &http.Response{
		Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body:   io.NopCloser(bytes.NewReader(stream)),
	}
	s := ssestream.NewStream[responses.ResponseStreamEventUnion](ssestream.NewDecoder(res), nil)
	d := respDecoded{done: make(map[int64]responses.ResponseOutputItemUnion)}
	last := int64(-1)
	for s.Next() {
		ev := s.Current()
		d.events = append(d.events, ev)
		if ev.AsAny() == nil {
			t.Errorf("unknown event type %q: %s", ev.Type, ev.RawJSON())
		}
		if ev.SequenceNumber <= last {
			t.Errorf("sequence_number %d after %d (%s)", ev.SequenceNumber, last, ev.Type)
		}
		last = ev.SequenceNumber
		if d.final != nil {
			t.Errorf("event %s after the terminal event", ev.Type)
		}
		switch ev.Type {
		case "response.output_item.added":
			if ev.OutputIndex != int64(len(d.added)) {
				t.Errorf("output_item.added at %d, want %d", ev.OutputIndex, len(d.added))
			}
			d.added = append(d.added, ev.Item.ID)
		case "response.output_item.done":
			if ev.OutputIndex >= int64(len(d.added)) || d.added[ev.OutputIndex] != ev.Item.ID {
				t.Errorf("output_item.done at %d for %s, added %v", ev.OutputIndex, ev.Item.ID, d.added)
			}
			d.done[ev.OutputIndex] = ev.Item
		case "response.completed", "response.incomplete", "response.failed":
			r := ev.Response
			d.final = &r
		default:
			if ev.JSON.OutputIndex.Valid() && ev.OutputIndex >= int64(len(d.added)) {
				t.Errorf("%s at output_index %d before its item", ev.Type, ev.OutputIndex)
			}
			if ev.JSON.ItemID.Valid() && ev.OutputIndex < int64(len(d.added)) && d.added[ev.OutputIndex] != ev.ItemID {
				t.Errorf("%s for %s at output_index %d, which is %s", ev.Type, ev.ItemID, ev.OutputIndex, d.added[ev.OutputIndex])
			}
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("openai-go stream: %v", err)
	}
	if d.final != nil && d.final.JSON.Output.Valid() {
		if len(d.final.Output) != len(d.added) {
			t.Errorf("terminal output has %d items, the events %d", len(d.final.Output), len(d.added))
		}
		for i, it := range d.final.Output {
			if i < len(d.added) && it.ID != d.added[i] {
				t.Errorf("terminal output[%d] = %s, events %s", i, it.ID, d.added[i])
			}
		}
	}
	return d
}

// outputSummary lists a response's output as type[:name]:id.
func outputSummary(out []responses.ResponseOutputItemUnion) []string {
	var s []string
	for _, it := range out {
		e := it.Type
		if it.Name != "" {
			e += ":" + it.Name
		}
		s = append(s, e)
	}
	return s
}

// messageText is the text of a message output item.
func messageText(it responses.ResponseOutputItemUnion) string {
	var b strings.Builder
	for _, c := range it.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// checkAbsent fails when any of the held call's fragments is in out.
func checkAbsent(t *testing.T, out []byte, leaks ...string) {
	t.Helper()
	for _, l := range leaks {
		if l != "" && bytes.Contains(out, []byte(l)) {
			t.Errorf("output holds %q", l)
		}
	}
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
			checkAbsent(t, out, append(fragments(in, tc.itemID), tc.itemID, tc.callID, tc.args, escaped[1:len(escaped)-1], "function_call")...)
			d := respDecode(t, out)
			if d.final == nil {
				t.Fatal("no terminal event")
			}
			want := append(append([]string(nil), tc.before...), "message")
			if got := outputSummary(d.final.Output); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("output = %v, want %v", got, want)
			}
			msg := d.final.Output[len(tc.before)]
			if messageText(msg) != providertest.WaitText || msg.ID != SyntheticPrefix+providertest.Step || msg.Role != "assistant" {
				t.Errorf("message = %s", msg.RawJSON())
			}
			if it, ok := d.done[int64(len(tc.before))]; !ok || messageText(it) != providertest.WaitText {
				t.Errorf("no output_item.done with the text: %+v", d.done)
			}
			if tc.total > 0 && d.final.Usage.TotalTokens != tc.total {
				t.Errorf("usage total = %d, want %d", d.final.Usage.TotalTokens, tc.total)
			}
			if d.final.OutputText() != providertest.WaitText {
				t.Errorf("OutputText = %q", d.final.OutputText())
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
			if got := outputSummary(items); fmt.Sprint(got) != fmt.Sprint(want) {
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

const respEnvelope = `"id":"resp_syn","object":"response","created_at":1770803615,"model":"gpt-5.1","parallel_tool_calls":true,"store":true,"tools":[]`

type respSyn struct {
	b     strings.Builder
	env   string // the response's envelope members
	seq   int
	items []string
	lines bool // event: lines
}

func newSyn() *respSyn { return newSynID("resp_syn") }

// newSynID starts a synthetic stream of the response with this id.
func newSynID(id string) *respSyn {
	s := &respSyn{lines: true, env: strings.Replace(respEnvelope, "resp_syn", id, 1)}
	s.ev(`{"type":"response.created","sequence_number":SEQ,"response":{%s,"status":"in_progress","output":[],"usage":null}}`, s.env)
	s.ev(`{"type":"response.in_progress","sequence_number":SEQ,"response":{%s,"status":"in_progress","output":[],"usage":null}}`, s.env)
	return s
}

// ev writes one event; its JSON holds SEQ for the sequence number.
func (s *respSyn) ev(format string, args ...any) {
	data := strings.Replace(fmt.Sprintf(format, args...), "SEQ", strconv.Itoa(s.seq), 1)
	s.seq++
	if s.lines {
		s.b.WriteString("event: " + gjson.Get(data, "type").Str + "\n")
	}
	s.b.WriteString("data: " + data + "\n\n")
}

func (s *respSyn) text(id, text string) *respSyn {
	i := len(s.items)
	q := string(gjson.AppendJSONString(nil, text))
	s.ev(`{"type":"response.output_item.added","sequence_number":SEQ,"output_index":%d,"item":{"id":%q,"type":"message","status":"in_progress","content":[],"role":"assistant"}}`, i, id)
	s.ev(`{"type":"response.content_part.added","sequence_number":SEQ,"item_id":%q,"output_index":%d,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}`, id, i)
	for _, w := range strings.SplitAfter(text, " ") {
		s.ev(`{"type":"response.output_text.delta","sequence_number":SEQ,"item_id":%q,"output_index":%d,"content_index":0,"delta":%s,"logprobs":[],"obfuscation":"x"}`, id, i, string(gjson.AppendJSONString(nil, w)))
	}
	s.ev(`{"type":"response.output_text.done","sequence_number":SEQ,"item_id":%q,"output_index":%d,"content_index":0,"text":%s,"logprobs":[]}`, id, i, q)
	s.ev(`{"type":"response.content_part.done","sequence_number":SEQ,"item_id":%q,"output_index":%d,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":%s}}`, id, i, q)
	item := fmt.Sprintf(`{"id":%q,"type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":%s}],"role":"assistant"}`, id, q)
	s.ev(`{"type":"response.output_item.done","sequence_number":SEQ,"output_index":%d,"item":%s}`, i, item)
	s.items = append(s.items, item)
	return s
}

func (s *respSyn) reasoning(id string) *respSyn {
	i := len(s.items)
	item := fmt.Sprintf(`{"id":%q,"type":"reasoning","encrypted_content":"gAAAA%s","summary":[]}`, id, id)
	s.ev(`{"type":"response.output_item.added","sequence_number":SEQ,"output_index":%d,"item":%s}`, i, item)
	s.ev(`{"type":"response.output_item.done","sequence_number":SEQ,"output_index":%d,"item":%s}`, i, item)
	s.items = append(s.items, item)
	return s
}

// call streams a function call (ns: its namespace, "" none); custom
// streams a custom_tool_call instead.
func (s *respSyn) call(id, callID, name, ns, args string, custom bool) *respSyn {
	i := len(s.items)
	typ, key, ev := "function_call", "arguments", "function_call_arguments"
	if custom {
		typ, key, ev = "custom_tool_call", "input", "custom_tool_call_input"
	}
	nsField := ""
	if ns != "" {
		nsField = fmt.Sprintf(`,"namespace":%q`, ns)
	}
	head := fmt.Sprintf(`"id":%q,"type":%q,"status":"%%s",%q:%%s,"call_id":%q,"name":%q%s`, id, typ, key, callID, name, nsField)
	q := string(gjson.AppendJSONString(nil, args))
	s.ev(`{"type":"response.output_item.added","sequence_number":SEQ,"output_index":%d,"item":{`+fmt.Sprintf(head, "in_progress", `""`)+`}}`, i)
	for k := 0; k < len(args); k += 4 {
		frag := args[k:min(k+4, len(args))]
		s.ev(`{"type":"response.`+ev+`.delta","sequence_number":SEQ,"item_id":%q,"output_index":%d,"delta":%s,"obfuscation":"abc"}`, id, i, string(gjson.AppendJSONString(nil, frag)))
	}
	s.ev(`{"type":"response.`+ev+`.done","sequence_number":SEQ,"item_id":%q,"output_index":%d,%q:%s}`, id, i, key, q)
	item := "{" + fmt.Sprintf(head, "completed", q) + "}"
	s.ev(`{"type":"response.output_item.done","sequence_number":SEQ,"output_index":%d,"item":%s}`, i, item)
	s.items = append(s.items, item)
	return s
}

func (s *respSyn) fn(id, name, args string) *respSyn {
	return s.call("fc_"+id, "call_"+id, name, "", args, false)
}

const respUsage = `{"input_tokens":45,"input_tokens_details":{"cached_tokens":0},"output_tokens":24,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":69}`

// end writes the terminal event of the given type and returns the stream.
func (s *respSyn) end(typ string) string {
	status := strings.TrimPrefix(typ, "response.")
	s.ev(`{"type":%q,"sequence_number":SEQ,"response":{%s,"status":%q,"output":[%s],"usage":%s}}`, typ, s.env, status, strings.Join(s.items, ","), respUsage)
	return s.b.String()
}

func (s *respSyn) completed() string { return s.end("response.completed") }

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
			newSyn().text("msg_1", "Sure, deleting it.").fn("held1", del, `{"post":7}`).fn("pass1", get, `{"post":8}`).text("msg_2", "Done soon.").completed(),
			providertest.NewHolder(del).Passing(get), []string{"message", "message", "function_call:get_post", "message"}, 1,
			[]string{"fc_held1", "call_held1", `"post\":7`, "delete_post"}},
		{"passed first, then held",
			newSyn().fn("pass1", get, `{"post":8}`).fn("held1", del, `{"post":7}`).completed(),
			providertest.NewHolder(del).Passing(get), []string{"function_call:get_post", "message"}, 1,
			[]string{"fc_held1", "call_held1", "delete_post"}},
		{"unread call, then two held, then text",
			newSyn().fn("free", "lookup", `{}`).fn("held1", del, `{"post":7}`).fn("held2", del, `{"post":9}`).text("msg_2", "Anything else?").completed(),
			providertest.NewHolder(del), []string{"function_call:lookup", "message", "message"}, 1,
			[]string{"fc_held1", "fc_held2", "call_held2", "delete_post"}},
		{"reasoning before the held call",
			newSyn().reasoning("rs_1").fn("held1", del, `{"post":7}`).completed(),
			providertest.NewHolder(del), []string{"reasoning", "message"}, 1, []string{"fc_held1", "delete_post"}},
		{"custom tool call",
			newSyn().call("ctc_1", "call_c1", del, "", "post 7 please", true).completed(),
			providertest.NewHolder(del), []string{"message"}, 0, []string{"ctc_1", "call_c1", "post 7", "delete_post", "custom_tool_call"}},
		{"namespaced call, qualified key",
			newSyn().call("fc_ns", "call_ns", "delete_contact", "crm", `{"id":3}`, false).completed(),
			providertest.NewHolder("crm/delete_contact"), []string{"message"}, 0, []string{"fc_ns", "call_ns"}},
		{"namespaced call, bare key",
			newSyn().call("fc_ns", "call_ns", "delete_contact", "crm", `{"id":3}`, false).completed(),
			providertest.NewHolder("delete_contact"), []string{"message"}, 0, []string{"fc_ns", "call_ns"}},
		{"incomplete response",
			newSyn().fn("held1", del, `{"post":7}`).end("response.incomplete"),
			providertest.NewHolder(del), []string{"message"}, 0, []string{"fc_held1", "delete_post"}},
		{"refused in place, held",
			newSyn().fn("ref1", "send_email", `{"subject":"x"}`).fn("held1", del, `{"post":7}`).completed(),
			providertest.NewHolder(del).Refusing("send_email", refusal), []string{"message"}, 0, []string{"fc_ref1", "fc_held1", "delete_post", "function_call"}},
		{"every call passed after inspection",
			newSyn().fn("pass1", get, `{"post":8}`).fn("pass2", get, `{"post":9}`).completed(),
			providertest.NewHolder().Passing(get), []string{"function_call:get_post", "function_call:get_post"}, -1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.stream)
			out, err := respRewrite(in, tc.h, 53)
			if err != nil {
				t.Fatal(err)
			}
			checkAbsent(t, out, tc.absent...)
			d := respDecode(t, out)
			if d.final == nil {
				t.Fatal("no terminal event")
			}
			if got := outputSummary(d.final.Output); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("output = %v, want %v", got, tc.want)
			}
			if tc.text >= 0 {
				txt := messageText(d.final.Output[tc.text])
				if !strings.HasPrefix(txt, providertest.WaitText) || !strings.HasPrefix(d.final.Output[tc.text].ID, SyntheticPrefix) {
					t.Errorf("output[%d] = %s", tc.text, d.final.Output[tc.text].RawJSON())
				}
				if tc.name == "refused in place, held" && txt != providertest.WaitText+"\n\n"+refusal {
					t.Errorf("text = %q", txt)
				}
			} else if !bytes.Equal(out, in) {
				t.Errorf("calls all passed, but the stream changed:\n%s", out)
			}
			// Passed calls reach the app whole, in events and output alike.
			for i, it := range d.final.Output {
				if it.Type == "function_call" {
					ev := d.done[int64(i)]
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
	in := newSyn().text("msg_1", "Sure.").reasoning("rs_1").call("fc_1", "call_1", "delete_contact", "crm", `{"id":3}`, false).
		fn("pass", "get_post", `{}`).call("ctc_2", "call_2", "delete_post", "", "post 7", true).text("msg_2", "After.").completed()
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
	s := newSyn()
	s.lines = false
	s.b.Reset()
	s.seq = 0
	in := s.fn("held1", "delete_post", `{}`).completed() + "data: [DONE]\n\n"
	out, err := respRewrite([]byte(in), providertest.NewHolder("delete_post"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("event:")) {
		t.Errorf("event lines added to a data-only stream:\n%s", out)
	}
	d := respDecode(t, out)
	if d.final == nil || len(d.final.Output) != 1 || messageText(d.final.Output[0]) != providertest.WaitText {
		t.Errorf("final = %+v", d.final)
	}
	if !bytes.HasSuffix(out, []byte("data: [DONE]\n\n")) {
		t.Error("[DONE] lost")
	}
}

func TestResponsesStreamEndsEarly(t *testing.T) {
	full := newSyn().text("msg_1", "Sure.").fn("held1", "delete_post", `{"post":7}`).text("msg_2", "Later text.").completed()
	// Cut before the terminal event: the call is never judged, never
	// written; what came after it still reaches the app.
	cut := full[:strings.Index(full, "event: response.completed")]
	h := providertest.NewHolder("delete_post")
	out, err := respRewrite([]byte(cut), h)
	if err != nil {
		t.Fatal(err)
	}
	checkAbsent(t, out, "fc_held1", "call_held1")
	if len(h.Holds()) != 0 {
		t.Errorf("Hold called on an unfinished response")
	}
	d := respDecode(t, out)
	if fmt.Sprint(d.added) != "[msg_1 msg_2]" {
		t.Errorf("items = %v", d.added)
	}

	// An error event ends it the same way.
	errEv := "event: error\ndata: {\"type\":\"error\",\"sequence_number\":99,\"code\":\"server_error\",\"message\":\"boom\",\"param\":null}\n\n"
	cut = full[:strings.Index(full, "event: response.output_item.done")] + errEv
	out, err = respRewrite([]byte(cut), providertest.NewHolder("delete_post"))
	if err != nil {
		t.Fatal(err)
	}
	checkAbsent(t, out, "fc_held1")
	if !bytes.HasSuffix(out, []byte(errEv)) {
		t.Errorf("error event lost:\n%s", out)
	}
}

func TestResponsesStreamTerminalOnlyCall(t *testing.T) {
	// A gateway that sends a call only in the terminal output: it is judged
	// all the same, since clients take calls from there.
	s := newSyn().text("msg_1", "Sure.")
	s.items = append(s.items, `{"id":"fc_x","type":"function_call","status":"completed","arguments":"{\"post\":7}","call_id":"call_x","name":"delete_post"}`)
	out, err := respRewrite([]byte(s.completed()), providertest.NewHolder("delete_post"))
	if err != nil {
		t.Fatal(err)
	}
	checkAbsent(t, out, "fc_x", "call_x")
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
	renamed := newSyn().fn("p", "get_post", `{"post":8}`).completed()
	renamed = strings.Replace(renamed, `"name":"get_post"}}`, `"name":"delete_post"}}`, 1) // its output_item.added only
	unread := strings.ReplaceAll(newSyn().fn("p", "lookup", `{}`).completed(), `"name":"lookup"}]`, `"name":"delete_post"}]`)
	args := newSyn().fn("p", "get_post", `{"post":8}`).completed()
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
	checkAbsent(t, out, "fc_0a2fa1b539ba14ba00698c519ebab0819494302fc0b5c31440", "call_YunNGbIwdVJ2i0y0Mybva4Pw", "San Francisco")
	var r responses.Response
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("openai-go: %v", err)
	}
	if fmt.Sprint(outputSummary(r.Output)) != "[message]" || r.OutputText() != providertest.WaitText || r.Usage.TotalTokens != 69 {
		t.Errorf("response = %v %q", outputSummary(r.Output), r.OutputText())
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
			body := []byte(`{"id":"resp_j","object":"response","status":"completed","output":[` + tc.output + `],"usage":` + respUsage + `}`)
			out, err := Responses{}.RewriteJSON(context.Background(), body, tc.h)
			if err != nil {
				t.Fatal(err)
			}
			var r responses.Response
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("openai-go: %v\n%s", err, out)
			}
			if got := fmt.Sprint(outputSummary(r.Output)); got != tc.want {
				t.Errorf("output = %s, want %s", got, tc.want)
			}
			if !bytes.Contains(out, []byte(`"Sure \u00e9."`)) && strings.Contains(tc.output, "msg_1") {
				t.Error("the model's own text was re-encoded")
			}
			checkAbsent(t, out, "fc_a", "call_a")
			if len(tc.h.Holds()) != 1 || len(gjson.ParseBytes(tc.h.Holds()[0].Message).Array()) != tc.holdItems {
				t.Errorf("holds = %+v", tc.h.Holds())
			}
		})
	}
	if _, err := (Responses{}).RewriteJSON(context.Background(), []byte(`{"output":[{"type":"function_call","name":"delete_post"`), providertest.NewHolder("delete_post")); err == nil {
		t.Error("no error for invalid JSON naming a call")
	}
}
