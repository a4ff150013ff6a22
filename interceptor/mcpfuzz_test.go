package interceptor

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider/providertest"
)

// FuzzParseMCPRequest: any body is read or refused, never a panic; what is
// read is well-formed, and rewriting it keeps one valid JSON object.
func FuzzParseMCPRequest(f *testing.F) {
	f.Add([]byte(modernCall))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a","arguments":null}}`))
	f.Add([]byte(`{"id":1,"params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}}}`))
	f.Add([]byte(`[{"method":"tools/call"}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseMCPRequest(body)
		if err != nil {
			return
		}
		if !gjson.ValidBytes(r.Arguments) || !gjson.ParseBytes(r.Arguments).IsObject() {
			t.Fatalf("arguments %q are not an object", r.Arguments)
		}
		for k, v := range r.Responses {
			if !json.Valid(v) {
				t.Fatalf("response %q is not JSON: %q", k, v)
			}
		}
		out, err := RewriteMCPCall(body, []byte(`{"k":1}`), "s", map[string][]byte{"a": []byte(`{"action":"cancel"}`)})
		if err != nil {
			return
		}
		r2, err := ParseMCPRequest(out)
		if err != nil {
			t.Fatalf("rewritten body unreadable: %v\n%s", err, out)
		}
		if string(r2.Arguments) != `{"k":1}` || r2.State != "s" || len(r2.Responses) != 1 || r2.Name != r.Name || r2.Version != r.Version || r2.Elicit != r.Elicit {
			t.Fatalf("rewrite lost or changed fields: %+v from %+v", r2, r)
		}
	})
}

// FuzzMCPResultWriterSSE: a stream in any split comes out byte for byte
// when no event is the response to our id, and the writer never panics.
func FuzzMCPResultWriterSSE(f *testing.F) {
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"), uint8(5))
	f.Add([]byte("id: 1\nevent: message\ndata: {\"method\":\"x\",\"params\":{\"result\":1}}\n\ndata: a\ndata: b\n\n"), uint8(1))
	f.Add([]byte("data: {\"id\":9,\n\r\n"), uint8(3))
	f.Fuzz(func(t *testing.T, stream []byte, split uint8) {
		step := int(split%32) + 1
		run := func(id string, rewrite func([]byte) []byte) (string, error) {
			rec := httptest.NewRecorder()
			w := NewMCPResultWriter(rec, []byte(id), rewrite, 1<<20)
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			for i := 0; i < len(stream); i += step {
				if _, err := w.Write(stream[i:min(i+step, len(stream))]); err != nil {
					return rec.Body.String(), err
				}
			}
			err := w.Close()
			return rec.Body.String(), err
		}
		// Never matching: everything passes as it came (as every reader
		// reads it: an event with a bare CR or a BOM in canonical form).
		out, err := run(`"never-an-id-\u0000"`, func([]byte) []byte { return []byte(`{"x":1}`) })
		if err == nil && !providertest.PassedAsRead(stream, []byte(out)) {
			t.Fatalf("stream changed:\n%q\n%q", stream, out)
		}
		// Rewriting id 1 to an identical result also changes nothing but
		// the data lines' layout.
		out, err = run("1", func(r []byte) []byte { return r })
		if err == nil && !providertest.PassedAsRead(stream, []byte(out)) && !bytes.Contains(stream, []byte(`"result"`)) {
			t.Fatalf("an event without a result changed:\n%q\n%q", stream, out)
		}
	})
}
