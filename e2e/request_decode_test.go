package e2e

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/klauspost/compress/zstd"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"

	"github.com/toolgate/toolgate/internal/testkit"
)

// lenientMCP is the MCP Go SDK's server (stateless, JSON answers) behind a
// body reader as lenient as the frameworks MCP servers run on: it inflates
// gzip, deflate and zstd (Express's body-parser), decodes the charset the
// Content-Type names and drops a byte-order mark (body-parser with
// iconv-lite), and reads UTF-16 from its byte-order mark without a charset
// (Python's json.loads). It records every body that reached it, as it
// arrived, and every tool its handlers ran.
type lenientMCP struct {
	mu      sync.Mutex
	arrived []arrival
	ran     []string
}

// arrival is one request as it reached the server, before its decoding.
type arrival struct {
	body                   []byte
	contentEncoding        string
	contentType            string
	contentLength          int64
	contentLengthHeaderSet bool
}

func newLenientMCP() (*lenientMCP, http.Handler) {
	s := &lenientMCP{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "lenient", Version: "1"}, nil)
	run := func(name string, args any) {
		b, _ := json.Marshal(args)
		s.mu.Lock()
		s.ran = append(s.ran, name+" "+string(b))
		s.mu.Unlock()
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "wipe_all", Description: "Wipe."}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		run("wipe_all", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo."}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		run("echo", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "schedule_post", Description: "Schedule a post."}, func(ctx context.Context, req *mcp.CallToolRequest, in scheduleIn) (*mcp.CallToolResult, any, error) {
		run("schedule_post", in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "scheduled"}}}, nil, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.arrived = append(s.arrived, arrival{raw, r.Header.Get("Content-Encoding"), r.Header.Get("Content-Type"), r.ContentLength, r.Header.Get("Content-Length") != ""})
		s.mu.Unlock()
		body, err := lenientRead(r.Header, raw)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnsupportedMediaType)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Del("Content-Encoding")
		r.Header.Set("Content-Type", "application/json")
		sdk.ServeHTTP(w, r)
	})
}

// Arrived returns the requests that reached the server, but for the
// tools/list the gate sends itself to learn a tool's schema.
func (s *lenientMCP) Arrived() []arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []arrival
	for _, a := range s.arrived {
		if gjson.GetBytes(a.body, "id").String() != "toolgate-tools-list" {
			out = append(out, a)
		}
	}
	return out
}

func (s *lenientMCP) Ran() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ran...)
}

// lenientRead decodes a body as body-parser does (one coding, then the
// charset with iconv-lite, which drops a byte-order mark), reading UTF-16
// from a byte-order mark when no charset says otherwise, as json.loads
// does. It is written apart from the gate's decoder on purpose.
func lenientRead(h http.Header, raw []byte) ([]byte, error) {
	var r io.Reader = bytes.NewReader(raw)
	switch strings.ToLower(h.Get("Content-Encoding")) {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		r = zr
	case "deflate":
		zr, err := zlib.NewReader(bytes.NewReader(raw))
		if err != nil {
			r = flate.NewReader(bytes.NewReader(raw))
		} else {
			r = zr
		}
	case "zstd":
		zr, err := zstd.NewReader(r)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	default:
		return nil, errors.New("unsupported content encoding")
	}
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	_, params, _ := mime.ParseMediaType(h.Get("Content-Type"))
	var dec *encoding.Decoder
	switch strings.ToLower(params["charset"]) {
	case "utf-16le":
		dec = unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewDecoder()
	case "utf-16be":
		dec = unicode.UTF16(unicode.BigEndian, unicode.UseBOM).NewDecoder()
	case "utf-16":
		dec = unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewDecoder()
	default:
		out, err := io.ReadAll(transform.NewReader(bytes.NewReader(body), unicode.BOMOverride(encoding.Nop.NewDecoder())))
		return out, err
	}
	return dec.Bytes(body)
}

func toUTF16(s string, bigEndian, bom bool) []byte {
	units := utf16.Encode([]rune(s))
	if bom {
		units = append([]uint16{0xFEFF}, units...)
	}
	out := make([]byte, 0, 2*len(units))
	for _, u := range units {
		if bigEndian {
			out = append(out, byte(u>>8), byte(u))
		} else {
			out = append(out, byte(u), byte(u>>8))
		}
	}
	return out
}

func gzipped(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func zlibbed(b []byte) []byte {
	var out bytes.Buffer
	w := zlib.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func deflated(b []byte) []byte {
	var out bytes.Buffer
	w, _ := flate.NewWriter(&out, flate.BestSpeed)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func zstded(b []byte) []byte {
	w, _ := zstd.NewWriter(nil)
	defer w.Close()
	return w.EncodeAll(b, nil)
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// modernCall is a 2026-07-28 tools/call message.
func modernCall(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}}},"name":%q,"arguments":%s}}`, id, tool, args)
}

// encoding is one way of putting a message on the wire.
type wireEncoding struct {
	name            string
	contentEncoding string
	contentType     string // "" application/json
	encode          func([]byte) []byte
}

var wireEncodings = []wireEncoding{
	{"gzip", "gzip", "", gzipped},
	{"x-gzip", "x-gzip", "", gzipped},
	{"deflate as zlib", "deflate", "", zlibbed},
	{"deflate raw", "deflate", "", deflated},
	{"zstd", "zstd", "", zstded},
	{"gzip then deflate", "gzip, deflate", "", func(b []byte) []byte { return zlibbed(gzipped(b)) }},
	{"utf-8 bom", "", "", func(b []byte) []byte { return append(append([]byte(nil), bom...), b...) }},
	{"bom inside gzip", "gzip", "", func(b []byte) []byte { return gzipped(append(append([]byte(nil), bom...), b...)) }},
	{"charset utf-16le", "", "application/json; charset=utf-16le", func(b []byte) []byte { return toUTF16(string(b), false, false) }},
	{"charset utf-16 without bom", "", "application/json; charset=utf-16", func(b []byte) []byte { return toUTF16(string(b), false, false) }},
	{"utf-16be bom, no charset", "", "", func(b []byte) []byte { return toUTF16(string(b), true, true) }},
}

// postMCP sends a raw 2026-07-28 message as ana and returns the status and
// body of the answer.
func postMCP(t *testing.T, url string, body []byte, contentEncoding, contentType, tool string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType == "" {
		contentType = "application/json"
	}
	req.Header.Set("Content-Type", contentType)
	if contentEncoding != "" {
		req.Header.Set("Content-Encoding", contentEncoding)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	req.Header.Set("X-User-Id", "ana")
	req.Close = true // an answer before the whole body was read must not meet the next request
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// A gated tools/call sent compressed, with a byte-order mark or in UTF-16
// is decided on as the server would read it: the destructive call is
// refused by the gate and never reaches the server, however it was
// encoded.
func TestMCPEncodedGatedCallIsDecided(t *testing.T) {
	srv, h := newLenientMCP()
	url := rawGate(t, h)
	msg := []byte(modernCall(7, "wipe_all", `{}`))
	for _, enc := range wireEncodings {
		t.Run(enc.name, func(t *testing.T) {
			status, body := postMCP(t, url, enc.encode(msg), enc.contentEncoding, enc.contentType, "wipe_all")
			res := gjson.GetBytes(body, "result")
			if status != 200 || !res.Get("isError").Bool() || !strings.Contains(res.Get("content.0.text").String(), "Toolgate refused wipe_all") {
				t.Errorf("got %d %s, want the gate's tool error", status, body)
			}
			if gjson.GetBytes(body, "id").Raw != "7" {
				t.Errorf("answer %s is not to id 7", body)
			}
		})
	}
	if got := srv.Ran(); len(got) != 0 {
		t.Errorf("the server ran %q", got)
	}
	if got := srv.Arrived(); len(got) != 0 {
		t.Errorf("%d messages reached the server, first %q", len(got), got[0].body)
	}
}

// What the gate lets through reaches the server exactly as the gate read
// it: the decoded UTF-8 message, no Content-Encoding, the charset utf-8,
// the length right. A tool the policy does not declare and a complete
// gated call both run once, with their arguments intact.
func TestMCPEncodedCallsArriveDecoded(t *testing.T) {
	srv, h := newLenientMCP()
	url := rawGate(t, h)
	text := "naïve 🙂 café"
	for i, enc := range wireEncodings {
		for _, tc := range []struct{ tool, args, ran string }{
			{"echo", fmt.Sprintf(`{"text":%q}`, text), fmt.Sprintf(`echo {"text":%q}`, text)},
			{"schedule_post", `{"post":3,"publish_on":"2026-10-01"}`, `schedule_post {"post":3,"publish_on":"2026-10-01"}`},
		} {
			t.Run(enc.name+"/"+tc.tool, func(t *testing.T) {
				before := len(srv.Arrived())
				msg := []byte(modernCall(i, tc.tool, tc.args))
				status, body := postMCP(t, url, enc.encode(msg), enc.contentEncoding, enc.contentType, tc.tool)
				if status != 200 || gjson.GetBytes(body, "result.isError").Bool() {
					t.Fatalf("got %d %s", status, body)
				}
				arrived := srv.Arrived()[before:]
				if len(arrived) != 1 {
					t.Fatalf("%d requests reached the server, want 1", len(arrived))
				}
				a := arrived[0]
				if !bytes.Equal(a.body, msg) {
					t.Errorf("the server got %q, want the decoded message %q", a.body, msg)
				}
				if a.contentEncoding != "" || a.contentLength != int64(len(msg)) {
					t.Errorf("the server got Content-Encoding %q, length %d; want none, %d", a.contentEncoding, a.contentLength, len(msg))
				}
				if _, params, err := mime.ParseMediaType(a.contentType); err != nil || (params["charset"] != "" && params["charset"] != "utf-8") {
					t.Errorf("the server got Content-Type %q", a.contentType)
				}
				if got := srv.Ran(); len(got) == 0 || got[len(got)-1] != tc.ran {
					t.Errorf("the server ran %q, want last %q", got, tc.ran)
				}
			})
		}
	}
}

// A body the gate cannot decode is refused with a JSON-RPC error saying
// why, and nothing reaches the server: a coding it does not know (br), a
// charset it does not decode (utf-7, which iconv-lite would), bytes that
// do not decode as labelled, a decompression bomb (the limit holds for the
// decoded size), a message that is still encoded once decoded, and a body
// that is no JSON at all.
func TestMCPUndecodableBodyRefused(t *testing.T) {
	srv, h := newLenientMCP()
	url := rawGate(t, h)
	msg := []byte(modernCall(9, "wipe_all", `{}`))
	bomb := gzipped(bytes.Repeat([]byte(" "), 17<<20))
	for _, tc := range []struct {
		name, coding, ct string
		body             []byte
		status           int
		says             string
	}{
		{"br", "br", "", msg, 415, `"br"`},
		{"unknown coding", "gzip, snappy", "", gzipped(msg), 415, `"snappy"`},
		{"utf-7", "", "application/json; charset=utf-7", []byte(`+AHsAIg-jsonrpc":"2.0"}`), 415, `"utf-7"`},
		{"utf-32 by its zero bytes", "", "", []byte("{\x00\x00\x00}\x00\x00\x00"), 415, "utf-32"},
		{"two content types", "", "application/json, application/json; charset=utf-16le", msg, 415, "Content-Type"},
		{"not gzip", "gzip", "", msg, 400, "gzip"},
		{"odd utf-16", "", "application/json; charset=utf-16le", []byte("{\x00}"), 400, "UTF-16"},
		{"bomb", "gzip", "", bomb, 413, "limit"},
		{"two byte-order marks", "", "", append(append(append([]byte(nil), bom...), bom...), msg...), 400, "still encoded"},
		{"not json", "", "", []byte("tools/call wipe_all"), 400, "not a JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var status int
			var body []byte
			if tc.name == "two content types" {
				status, body = postTwoContentTypes(t, url, msg)
			} else {
				status, body = postMCP(t, url, tc.body, tc.coding, tc.ct, "wipe_all")
			}
			e := gjson.GetBytes(body, "error")
			if status != tc.status || !e.Get("code").Exists() || !strings.Contains(e.Get("message").String(), tc.says) {
				t.Errorf("got %d %s, want %d and a JSON-RPC error saying %s", status, body, tc.status, tc.says)
			}
		})
	}
	if got := srv.Arrived(); len(got) != 0 {
		t.Errorf("%d messages reached the server, first %q", len(got), got[0].body)
	}
	if got := srv.Ran(); len(got) != 0 {
		t.Errorf("the server ran %q", got)
	}
}

// postTwoContentTypes sends a message with two Content-Type header lines:
// Go's server reads the first, a web-standard Request joins them.
func postTwoContentTypes(t *testing.T, url string, msg []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	req.Header["Content-Type"] = []string{"application/json", "application/json; charset=utf-16le"}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("X-User-Id", "ana")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// A model route decodes a request body as the provider would before it
// restores history and offers tools: a gzip (or UTF-16) follow-up of a
// confirmed call reaches the provider decoded, with the original call and
// its outcome back in the history.
func TestModelRequestDecodedBeforeRestore(t *testing.T) {
	for _, enc := range []wireEncoding{wireEncodings[0], wireEncodings[5], wireEncodings[6], wireEncodings[8]} {
		t.Run(enc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			setupPost(e)
			l, msg := e.hold(t, "ana")
			if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
				t.Fatalf("confirm: %d", st)
			}
			params := userAsks("Delete my old meetup draft.")
			params.Messages = append(params.Messages, msg.ToParam(), openai.UserMessage("Thanks!"))
			plain, err := json.Marshal(params)
			if err != nil {
				t.Fatal(err)
			}
			e.provider.Enqueue(testkit.Reply{Body: textCompletion("ok")})
			req, err := http.NewRequest("POST", e.apiURL+"/v1/chat/completions", bytes.NewReader(enc.encode(plain)))
			if err != nil {
				t.Fatal(err)
			}
			ct := enc.contentType
			if ct == "" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
			if enc.contentEncoding != "" {
				req.Header.Set("Content-Encoding", enc.contentEncoding)
			}
			req.Header.Set("X-User-Id", "ana")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("follow-up: %d %s", resp.StatusCode, b)
			}
			reqs, hdrs := e.provider.Requests(), e.provider.Headers()
			got, h := reqs[len(reqs)-1], hdrs[len(hdrs)-1]
			if !gjson.ValidBytes(got) || h.Get("Content-Encoding") != "" {
				t.Fatalf("the provider got Content-Encoding %q and %q", h.Get("Content-Encoding"), got)
			}
			if res := toolResult(got, "call_del7"); res != "The person confirmed. Removed." {
				t.Errorf("tool result = %q in %s", res, got)
			}
		})
	}
}

// A model request the gate cannot decode is refused with an error the
// SDKs read, and nothing reaches the provider.
func TestModelUndecodableBodyRefused(t *testing.T) {
	url, prov := modelGate(t, "owner {http.request.header.X-User-Id}")
	plain := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`)
	for _, tc := range []struct {
		name, coding, ct string
		body             []byte
		status           int
		says             string
	}{
		{"br", "br", "", plain, 415, `"br"`},
		{"utf-7", "", "application/json; charset=utf-7", plain, 415, `"utf-7"`},
		{"not gzip", "gzip", "", plain, 400, "gzip"},
		{"bomb", "gzip", "", gzipped(bytes.Repeat([]byte(" "), 33<<20)), 413, "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			ct := tc.ct
			if ct == "" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
			if tc.coding != "" {
				req.Header.Set("Content-Encoding", tc.coding)
			}
			req.Header.Set("X-User-Id", "ana")
			req.Close = true
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if msg := gjson.GetBytes(b, "error.message").String(); resp.StatusCode != tc.status || !strings.Contains(msg, tc.says) || !strings.Contains(msg, "cannot be checked") {
				t.Errorf("got %d %s, want %d saying %s", resp.StatusCode, b, tc.status, tc.says)
			}
		})
	}
	if n := len(prov.Requests()); n != 0 {
		t.Errorf("%d refused requests reached the provider", n)
	}
}
