package interceptor

// Test helpers copied from provider/responses' tests (responses_test.go,
// responsesrequest_test.go) for the interceptor's tests that drive the
// Responses adapter through the ResponseWriter: its turn
// (responsesturn_test.go), the resumed answers, the guard.

import (
	"bytes"
	"context"
	"errors"
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
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
	"github.com/toolgate/toolgate/wire/sse"
)

type respSyn struct {
	b     strings.Builder
	env   string // the response's envelope members
	seq   int
	items []string
	lines bool // event: lines
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

// end writes the terminal event of the given type and returns the stream.
func (s *respSyn) end(typ string) string {
	status := strings.TrimPrefix(typ, "response.")
	s.ev(`{"type":%q,"sequence_number":SEQ,"response":{%s,"status":%q,"output":[%s],"usage":%s}}`, typ, s.env, status, strings.Join(s.items, ","), respUsage)
	return s.b.String()
}

func (s *respSyn) completed() string { return s.end("response.completed") }

// json is the response as a non-streamed body.
func (s *respSyn) json() string {
	return `{` + s.env + `,"status":"completed","output":[` + strings.Join(s.items, ",") + `],"usage":` + respUsage + `}`
}

func newSyn() *respSyn { return newSynID("resp_syn") }

// newSynID starts a synthetic stream of the response with this id.
func newSynID(id string) *respSyn {
	s := &respSyn{lines: true, env: strings.Replace(respEnvelope, "resp_syn", id, 1)}
	s.ev(`{"type":"response.created","sequence_number":SEQ,"response":{%s,"status":"in_progress","output":[],"usage":null}}`, s.env)
	s.ev(`{"type":"response.in_progress","sequence_number":SEQ,"response":{%s,"status":"in_progress","output":[],"usage":null}}`, s.env)
	return s
}

const respEnvelope = `"id":"resp_syn","object":"response","created_at":1770803615,"model":"gpt-5.1","parallel_tool_calls":true,"store":true,"tools":[]`

const respUsage = `{"input_tokens":45,"input_tokens_details":{"cached_tokens":0},"output_tokens":24,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":69}`

// respRewrite runs in through a Responses stream, written in pieces of the
// given sizes (cycled; all at once if none), and returns what came out.
func respRewrite(in []byte, h provider.Holder, sizes ...int) (out []byte, err error) {
	var buf bytes.Buffer
	s := responsesadapter.Responses{}.NewStream(context.Background(), &buf, func() error { return nil }, h)
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

func respFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", "openai-responses", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// respAPI is a fake Responses API that checks a request's input the way the
// real one does, as far as its documented errors go (wire-formats.md §2.4).
type respAPI struct {
	stored map[string]string // response id → its output (a JSON array)
	next   map[string]string // reasoning item id → the id of the item that followed it
}

// learn records a response's output (a JSON array) under its id, and which
// item followed each reasoning item.
func (a *respAPI) learn(id, output string) {
	if a.stored == nil {
		a.stored, a.next = make(map[string]string), make(map[string]string)
	}
	a.stored[id] = output
	items := gjson.Parse(output).Array()
	for i, it := range items {
		if it.Get("type").Str == "reasoning" && i+1 < len(items) {
			a.next[it.Get("id").Str] = items[i+1].Get("id").Str
		}
	}
}

// check returns the error the API would answer with, or nil.
func (a *respAPI) check(body []byte) error {
	if !gjson.ValidBytes(body) {
		return errors.New("invalid JSON")
	}
	root := gjson.ParseBytes(body)
	calls := make(map[string]bool) // call ids made, answered or not
	open := make(map[string]bool)  // calls without a result yet
	known := make(map[string]bool) // item ids the API can resolve
	for id, out := range a.stored {
		gjson.Parse(out).ForEach(func(_, it gjson.Result) bool {
			known[it.Get("id").Str] = true
			return true
		})
		_ = id
	}
	prev := root.Get("previous_response_id").Str
	if prev == "" {
		prev = root.Get("conversation.id").Str // a conversation holds the items of its responses
		if c := root.Get("conversation"); c.Type == gjson.String {
			prev = c.Str
		}
	}
	if prev != "" {
		out, ok := a.stored[prev]
		if !ok {
			return fmt.Errorf("Previous response with id '%s' not found.", prev)
		}
		gjson.Parse(out).ForEach(func(_, it gjson.Result) bool {
			if respIsClientCall(it.Get("type").Str) {
				calls[it.Get("call_id").Str] = true
				open[it.Get("call_id").Str] = true
			}
			return true
		})
	}
	items := root.Get("input").Array()
	seen := make(map[string]bool)
	for i, it := range items {
		id := it.Get("id").Str
		typ := it.Get("type").Str
		if id != "" {
			if seen[id] {
				return fmt.Errorf("Duplicate item found with id %s.", id)
			}
			seen[id] = true
		}
		if strings.HasPrefix(id, responsesadapter.SyntheticPrefix) {
			return fmt.Errorf("Item with id '%s' not found.", id)
		}
		switch {
		case typ == "item_reference":
			if !known[id] || root.Get("store").Type == gjson.False {
				return fmt.Errorf("Item with id '%s' not found.", id)
			}
			if n, ok := a.next[id]; ok && (i+1 >= len(items) || items[i+1].Get("id").Str != n) {
				return fmt.Errorf("Item '%s' of type 'reasoning' was provided without its required following item.", id)
			}
		case typ == "reasoning":
			if n, ok := a.next[id]; ok && (i+1 >= len(items) || items[i+1].Get("id").Str != n) {
				return fmt.Errorf("Item '%s' of type 'reasoning' was provided without its required following item.", id)
			}
		case respIsClientCall(typ):
			calls[it.Get("call_id").Str] = true
			open[it.Get("call_id").Str] = true
		case strings.HasSuffix(typ, "_call_output"):
			cid := it.Get("call_id").Str
			if !calls[cid] {
				return fmt.Errorf("No tool call found for function call output with call_id %s.", cid)
			}
			delete(open, cid)
		}
	}
	for cid := range open {
		return fmt.Errorf("No tool output found for function call %s.", cid)
	}
	return nil
}

// respIsClientCall is provider/responses' isClientCall: the item types of
// the calls the app runs.
func respIsClientCall(typ string) bool {
	switch typ {
	case "function_call", "custom_tool_call", "computer_call", "local_shell_call", "shell_call", "apply_patch_call":
		return true
	}
	return false
}

func respFuzzSeeds() []string {
	return []string{
		newSyn().text("msg_1", "Sure, deleting it.").fn("held1", "delete_post", `{"post":7}`).fn("pass1", "get_post", `{"post":8}`).text("msg_2", "Done soon.").completed(),
		newSyn().reasoning("rs_1").fn("held1", "delete_post", `{"post":7}`).fn("ref1", "send_email", `{}`).completed() + "data: [DONE]\n\n",
		newSyn().call("ctc_1", "call_c1", "delete_post", "crm", "post 7", true).fn("free", "lookup", `{}`).end("response.incomplete"),
	}
}

// respFuzzHolder holds delete_post, weather and calculator, passes get_post
// after inspection and refuses send_email.
func respFuzzHolder() *providertest.Holder {
	return providertest.NewHolder("delete_post", "weather", "calculator").Passing("get_post").Refusing("send_email", refusal)
}

func respSplits(splits []byte) []int {
	sizes := make([]int, len(splits))
	for i, b := range splits {
		sizes[i] = int(b) + 1
	}
	return sizes
}

// respLeaks reports whether a rewritten stream (or body) shows the app a
// call h blocks: as an item of an event or of a response's output, or as
// an event of a blocked item (by an item id no other item of in uses).
func respLeaks(h *providertest.Holder, in, out []byte) bool {
	blocked, other := make(map[string]bool), make(map[string]bool)
	visit := func(b []byte, fn func(item gjson.Result)) {
		for _, ev := range providertest.Events(b) {
			data, _, ok := sse.Data(ev, nil)
			if !ok {
				data = ev // a JSON body
			}
			if !gjson.ValidBytes(data) {
				continue
			}
			root := gjson.ParseBytes(data)
			for _, p := range [...]string{"item", "response.output", "output"} {
				v := root.Get(p)
				if v.IsArray() {
					v.ForEach(func(_, it gjson.Result) bool { fn(it); return true })
				} else if v.IsObject() {
					fn(v)
				}
			}
		}
	}
	visit(in, func(it gjson.Result) {
		if id := it.Get("id").Str; id != "" {
			if respBlocks(h, it) {
				blocked[id] = true
			} else {
				other[id] = true
			}
		}
	})
	leak := false
	visit(out, func(it gjson.Result) { leak = leak || respBlocks(h, it) })
	for _, ev := range providertest.Events(out) {
		if data, _, ok := sse.Data(ev, nil); ok && gjson.ValidBytes(data) {
			if id := gjson.GetBytes(data, "item_id").Str; blocked[id] && !other[id] {
				leak = true
			}
		}
	}
	return leak
}

// respBlocks reports whether h keeps a call item from the app.
func respBlocks(h *providertest.Holder, item gjson.Result) bool {
	if !respIsCallType(item.Get("type").Str) {
		return false
	}
	key, ok := respGatedKey(h, item.Get("namespace").Str, item.Get("name").Str)
	return ok && h.Blocks(key)
}

// respIsCallType and respGatedKey are provider/responses' isCallType and
// gatedKey: the item types it inspects, and the policy key a call matches.
func respIsCallType(typ string) bool { return typ == "function_call" || typ == "custom_tool_call" }

func respGatedKey(h provider.Holder, namespace, name string) (string, bool) {
	if namespace != "" {
		if q := namespace + "/" + name; h.Gated(q) {
			return q, true
		}
	}
	if h.Gated(name) {
		return name, true
	}
	return "", false
}
