package caddymodule

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// readBody hands on a plain body untouched and a decoded one with headers
// that describe it; what it cannot decode it refuses with the status the
// reason calls for.
func TestReadBody(t *testing.T) {
	msg := `{"a":"é"}`
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(msg))
	zw.Close()
	for _, tc := range []struct {
		name, coding, ct, body string
		status                 int
		wantCT                 string
	}{
		{"plain", "", "application/json", msg, 0, "application/json"},
		{"gzip", "gzip", "application/json", gz.String(), 0, "application/json"},
		{"utf-16le", "", "application/json; charset=utf-16le", "{\x00\"\x00a\x00\"\x00:\x00\"\x00\xe9\x00\"\x00}\x00", 0, "application/json; charset=utf-8"},
		{"br", "br", "application/json", msg, http.StatusUnsupportedMediaType, ""},
		{"iso-2022-jp", "", "application/json; charset=iso-2022-jp", msg, http.StatusUnsupportedMediaType, ""},
		{"broken gzip", "gzip", "application/json", msg, http.StatusBadRequest, ""},
		{"too large", "", "application/json", msg + strings.Repeat(" ", 100), http.StatusRequestEntityTooLarge, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/mcp", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", tc.ct)
			if tc.coding != "" {
				r.Header.Set("Content-Encoding", tc.coding)
			}
			body, ref := readBody(r, new(bytes.Buffer), 64)
			if tc.status != 0 {
				if ref == nil || ref.status != tc.status || !strings.Contains(ref.msg, "cannot be checked") {
					t.Fatalf("got %q %+v, want a %d refusal", body, ref, tc.status)
				}
				return
			}
			if ref != nil || string(body) != msg {
				t.Fatalf("got %q %+v, want %q", body, ref, msg)
			}
			if r.Header.Get("Content-Encoding") != "" || r.Header.Get("Content-Type") != tc.wantCT {
				t.Errorf("headers %v", r.Header)
			}
		})
	}
}

// The tools/list answer the gate asks for itself is read from an event
// stream as its clients read it: lines ended by CR, LF or CRLF, data split
// over several lines, other events before it.
func TestRPCAnswerReadsEventStreams(t *testing.T) {
	for _, body := range []string{
		"data: {\"jsonrpc\":\"2.0\",\"id\":\"toolgate-tools-list\",\"result\":{\"tools\":[]}}\n\n",
		"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":\"toolgate-tools-list\",\"result\":{\"tools\":[]}}\r\n\r\n",
		"data:{\"jsonrpc\":\"2.0\",\"id\":\"toolgate-tools-list\",\"result\":{\"tools\":[]}}\r\r",
		"event: message\rdata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\r\rdata: {\"jsonrpc\":\"2.0\",\"id\":\"toolgate-tools-list\",\"result\":{\"tools\":[]}}\r\r",
	} {
		res, rpcErr := rpcAnswer([]byte(body), "toolgate-tools-list", "text/event-stream")
		if string(res) != `{"tools":[]}` || rpcErr.Exists() {
			t.Errorf("%q: result %s, error %s", body, res, rpcErr.Raw)
		}
	}
	if res, rpcErr := rpcAnswer([]byte("data: {\"id\":\"other\",\"result\":{}}\n\n"), "toolgate-tools-list", "text/event-stream"); res != nil || rpcErr.Exists() {
		t.Errorf("another id's answer read: %s %s", res, rpcErr.Raw)
	}
}
