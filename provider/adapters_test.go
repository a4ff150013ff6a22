package provider_test

// Builders and runners of each adapter's answers for the tests that table
// over every adapter alike (keys_test.go, scan_test.go, types_test.go,
// providers_test.go): the few of provider/chat's, provider/anthropic's and
// provider/responses' test helpers these tests use, copied (each adapter's
// own tests are in its package, which this one cannot read).

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	anthropicadapter "github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/chat"
	"github.com/toolgate/toolgate/provider/providertest"
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
)

const waitText = providertest.WaitText

func rewriteStream(in []byte, h provider.Holder, sizes ...int) (out []byte, flushes int, err error) {
	var buf bytes.Buffer
	s := chat.Chat{}.NewStream(context.Background(), &buf, func() error { flushes++; return nil }, h)
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
	return buf.Bytes(), flushes, err
}

// anthRewrite runs in through an Anthropic stream, written in pieces of
// the given sizes (cycled; all at once if none), and returns what came out.
func anthRewrite(in []byte, h provider.Holder, sizes ...int) (out []byte, flushes int, err error) {
	var buf bytes.Buffer
	s := anthropicadapter.Anthropic{}.NewStream(context.Background(), &buf, func() error { flushes++; return nil }, h)
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
	return buf.Bytes(), flushes, err
}

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

// end writes the terminal event of the given type and returns the stream.
func (s *respSyn) end(typ string) string {
	status := strings.TrimPrefix(typ, "response.")
	s.ev(`{"type":%q,"sequence_number":SEQ,"response":{%s,"status":%q,"output":[%s],"usage":%s}}`, typ, s.env, status, strings.Join(s.items, ","), respUsage)
	return s.b.String()
}

func (s *respSyn) completed() string { return s.end("response.completed") }

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
