package responsestest

// Builders of Responses streams (Syn) and readers of what a client parses
// from them (openai-go), shared by the tests of provider/responses,
// provider and interceptor. They import no adapter.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// Syn writes a synthetic Responses stream, event by event, the way the API
// streams one; B holds what is written so far.
type Syn struct {
	B     strings.Builder
	Env   string // the response's envelope members
	Seq   int
	Items []string
	Lines bool // event: lines
}

// Ev writes one event; its JSON holds SEQ for the sequence number.
func (s *Syn) Ev(format string, args ...any) {
	data := strings.Replace(fmt.Sprintf(format, args...), "SEQ", strconv.Itoa(s.Seq), 1)
	s.Seq++
	if s.Lines {
		s.B.WriteString("event: " + gjson.Get(data, "type").Str + "\n")
	}
	s.B.WriteString("data: " + data + "\n\n")
}

// Text streams an output_text message item.
func (s *Syn) Text(id, text string) *Syn {
	i := len(s.Items)
	q := string(gjson.AppendJSONString(nil, text))
	s.Ev(`{"type":"response.output_item.added","sequence_number":SEQ,"output_index":%d,"item":{"id":%q,"type":"message","status":"in_progress","content":[],"role":"assistant"}}`, i, id)
	s.Ev(`{"type":"response.content_part.added","sequence_number":SEQ,"item_id":%q,"output_index":%d,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}`, id, i)
	for _, w := range strings.SplitAfter(text, " ") {
		s.Ev(`{"type":"response.output_text.delta","sequence_number":SEQ,"item_id":%q,"output_index":%d,"content_index":0,"delta":%s,"logprobs":[],"obfuscation":"x"}`, id, i, string(gjson.AppendJSONString(nil, w)))
	}
	s.Ev(`{"type":"response.output_text.done","sequence_number":SEQ,"item_id":%q,"output_index":%d,"content_index":0,"text":%s,"logprobs":[]}`, id, i, q)
	s.Ev(`{"type":"response.content_part.done","sequence_number":SEQ,"item_id":%q,"output_index":%d,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":%s}}`, id, i, q)
	item := fmt.Sprintf(`{"id":%q,"type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":%s}],"role":"assistant"}`, id, q)
	s.Ev(`{"type":"response.output_item.done","sequence_number":SEQ,"output_index":%d,"item":%s}`, i, item)
	s.Items = append(s.Items, item)
	return s
}

// Reasoning streams an encrypted reasoning item.
func (s *Syn) Reasoning(id string) *Syn {
	i := len(s.Items)
	item := fmt.Sprintf(`{"id":%q,"type":"reasoning","encrypted_content":"gAAAA%s","summary":[]}`, id, id)
	s.Ev(`{"type":"response.output_item.added","sequence_number":SEQ,"output_index":%d,"item":%s}`, i, item)
	s.Ev(`{"type":"response.output_item.done","sequence_number":SEQ,"output_index":%d,"item":%s}`, i, item)
	s.Items = append(s.Items, item)
	return s
}

// Call streams a function call (ns: its namespace, "" none); custom
// streams a custom_tool_call instead.
func (s *Syn) Call(id, callID, name, ns, args string, custom bool) *Syn {
	i := len(s.Items)
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
	s.Ev(`{"type":"response.output_item.added","sequence_number":SEQ,"output_index":%d,"item":{`+fmt.Sprintf(head, "in_progress", `""`)+`}}`, i)
	for k := 0; k < len(args); k += 4 {
		frag := args[k:min(k+4, len(args))]
		s.Ev(`{"type":"response.`+ev+`.delta","sequence_number":SEQ,"item_id":%q,"output_index":%d,"delta":%s,"obfuscation":"abc"}`, id, i, string(gjson.AppendJSONString(nil, frag)))
	}
	s.Ev(`{"type":"response.`+ev+`.done","sequence_number":SEQ,"item_id":%q,"output_index":%d,%q:%s}`, id, i, key, q)
	item := "{" + fmt.Sprintf(head, "completed", q) + "}"
	s.Ev(`{"type":"response.output_item.done","sequence_number":SEQ,"output_index":%d,"item":%s}`, i, item)
	s.Items = append(s.Items, item)
	return s
}

// Fn streams function call fc_id (call_id call_id) without a namespace.
func (s *Syn) Fn(id, name, args string) *Syn {
	return s.Call("fc_"+id, "call_"+id, name, "", args, false)
}

// End writes the terminal event of the given type and returns the stream.
func (s *Syn) End(typ string) string {
	status := strings.TrimPrefix(typ, "response.")
	s.Ev(`{"type":%q,"sequence_number":SEQ,"response":{%s,"status":%q,"output":[%s],"usage":%s}}`, typ, s.Env, status, strings.Join(s.Items, ","), Usage)
	return s.B.String()
}

// Completed ends the stream with response.completed.
func (s *Syn) Completed() string { return s.End("response.completed") }

// JSON is the response as a non-streamed body.
func (s *Syn) JSON() string {
	return `{` + s.Env + `,"status":"completed","output":[` + strings.Join(s.Items, ",") + `],"usage":` + Usage + `}`
}

// NewSyn starts a synthetic stream of response resp_syn.
func NewSyn() *Syn { return NewSynID("resp_syn") }

// NewSynID starts a synthetic stream of the response with this id.
func NewSynID(id string) *Syn {
	s := &Syn{Lines: true, Env: strings.Replace(Envelope, "resp_syn", id, 1)}
	s.Ev(`{"type":"response.created","sequence_number":SEQ,"response":{%s,"status":"in_progress","output":[],"usage":null}}`, s.Env)
	s.Ev(`{"type":"response.in_progress","sequence_number":SEQ,"response":{%s,"status":"in_progress","output":[],"usage":null}}`, s.Env)
	return s
}

// Envelope is the members of the response Syn streams.
const Envelope = `"id":"resp_syn","object":"response","created_at":1770803615,"model":"gpt-5.1","parallel_tool_calls":true,"store":true,"tools":[]`

// Usage is the usage of the response Syn streams.
const Usage = `{"input_tokens":45,"input_tokens_details":{"cached_tokens":0},"output_tokens":24,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":69}`

// Decoded is a rewritten stream as openai-go reads it.
type Decoded struct {
	Events []responses.ResponseStreamEventUnion
	Final  *responses.Response // the terminal event's response
	Added  []string            // item ids in output_item.added order
	Done   map[int64]responses.ResponseOutputItemUnion
}

// Decode decodes a stream with openai-go's SSE decoder and
// ResponseStreamEventUnion, checking what a Responses client relies on:
// every event type known, sequence_number strictly increasing,
// output_item.added at index == the items so far (openai-node's
// validateArrayAppend), every event of an item at an index already added,
// output_item.done matching its added item, and the terminal output agreeing
// with the items the events built.
func Decode(t testing.TB, stream []byte) Decoded {
	t.Helper()
	res := &http.Response{
		Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body:   io.NopCloser(bytes.NewReader(stream)),
	}
	s := ssestream.NewStream[responses.ResponseStreamEventUnion](ssestream.NewDecoder(res), nil)
	d := Decoded{Done: make(map[int64]responses.ResponseOutputItemUnion)}
	last := int64(-1)
	for s.Next() {
		ev := s.Current()
		d.Events = append(d.Events, ev)
		if ev.AsAny() == nil {
			t.Errorf("unknown event type %q: %s", ev.Type, ev.RawJSON())
		}
		if ev.SequenceNumber <= last {
			t.Errorf("sequence_number %d after %d (%s)", ev.SequenceNumber, last, ev.Type)
		}
		last = ev.SequenceNumber
		if d.Final != nil {
			t.Errorf("event %s after the terminal event", ev.Type)
		}
		switch ev.Type {
		case "response.output_item.added":
			if ev.OutputIndex != int64(len(d.Added)) {
				t.Errorf("output_item.added at %d, want %d", ev.OutputIndex, len(d.Added))
			}
			d.Added = append(d.Added, ev.Item.ID)
		case "response.output_item.done":
			if ev.OutputIndex >= int64(len(d.Added)) || d.Added[ev.OutputIndex] != ev.Item.ID {
				t.Errorf("output_item.done at %d for %s, added %v", ev.OutputIndex, ev.Item.ID, d.Added)
			}
			d.Done[ev.OutputIndex] = ev.Item
		case "response.completed", "response.incomplete", "response.failed":
			r := ev.Response
			d.Final = &r
		default:
			if ev.JSON.OutputIndex.Valid() && ev.OutputIndex >= int64(len(d.Added)) {
				t.Errorf("%s at output_index %d before its item", ev.Type, ev.OutputIndex)
			}
			if ev.JSON.ItemID.Valid() && ev.OutputIndex < int64(len(d.Added)) && d.Added[ev.OutputIndex] != ev.ItemID {
				t.Errorf("%s for %s at output_index %d, which is %s", ev.Type, ev.ItemID, ev.OutputIndex, d.Added[ev.OutputIndex])
			}
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("openai-go stream: %v", err)
	}
	if d.Final != nil && d.Final.JSON.Output.Valid() {
		if len(d.Final.Output) != len(d.Added) {
			t.Errorf("terminal output has %d items, the events %d", len(d.Final.Output), len(d.Added))
		}
		for i, it := range d.Final.Output {
			if i < len(d.Added) && it.ID != d.Added[i] {
				t.Errorf("terminal output[%d] = %s, events %s", i, it.ID, d.Added[i])
			}
		}
	}
	return d
}

// OutputSummary lists a response's output as type[:name]:id.
func OutputSummary(out []responses.ResponseOutputItemUnion) []string {
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

// MessageText is the text of a message output item.
func MessageText(it responses.ResponseOutputItemUnion) string {
	var b strings.Builder
	for _, c := range it.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// CheckAbsent fails when any of the held call's fragments is in out.
func CheckAbsent(t testing.TB, out []byte, leaks ...string) {
	t.Helper()
	for _, l := range leaks {
		if l != "" && bytes.Contains(out, []byte(l)) {
			t.Errorf("output holds %q", l)
		}
	}
}
