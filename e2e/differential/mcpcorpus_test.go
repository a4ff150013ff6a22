package differential

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"net/http"
	"strings"
	"testing"
	"unicode/utf16"
)

// mcpCase is one tools/call request body, sent as given.
type mcpCase struct {
	Name      string
	Tool      string // delete_post (gated) or echo (not gated)
	Header    http.Header
	Body      []byte
	MayRefuse bool // echo only: the gate may refuse it (ambiguous, or an encoding it does not take)
}

// mcpParams are each tool's call params.
var mcpParams = map[string]string{
	"delete_post": `{"name":"delete_post","arguments":{"post":7}}`,
	"echo":        `{"name":"echo","arguments":{"text":"hi"}}`,
}

const echoParams = `{"name":"echo","arguments":{"text":"hi"}}`

func rpc(fields string) string { return `{"jsonrpc":"2.0","id":1,` + fields + `}` }

// mcpCorpus returns every case for both tools.
func mcpCorpus(t testing.TB) []mcpCase {
	var out []mcpCase
	for _, tool := range []string{"delete_post", "echo"} {
		params := mcpParams[tool]
		plain := rpc(`"method":"tools/call","params":` + params)
		jsonCT := http.Header{"Content-Type": {"application/json"}}
		add := func(name string, h http.Header, body []byte, mayRefuse bool) {
			out = append(out, mcpCase{Name: name, Tool: tool, Header: h, Body: body, MayRefuse: tool == "echo" && mayRefuse})
		}
		encoded := func(enc string) http.Header {
			return http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {enc}}
		}
		charset := func(cs string) http.Header {
			return http.Header{"Content-Type": {"application/json; charset=" + cs}}
		}

		add("plain", jsonCT, []byte(plain), false)
		add("gzip", encoded("gzip"), gzipped(t, []byte(plain)), true)
		add("x-gzip", encoded("x-gzip"), gzipped(t, []byte(plain)), true)
		add("gzip-uppercase", encoded("GZIP"), gzipped(t, []byte(plain)), true)
		add("deflate", encoded("deflate"), zlibbed(t, []byte(plain)), true)
		add("deflate-raw", encoded("deflate"), deflated(t, []byte(plain)), true)
		add("gzip-of-utf16le", http.Header{"Content-Type": {"application/json; charset=utf-16le"}, "Content-Encoding": {"gzip"}},
			gzipped(t, utf16Bytes(plain, binary.LittleEndian, false)), true)
		add("bom-utf8", jsonCT, append([]byte("\uFEFF"), plain...), true)
		add("utf16le-charset", charset("utf-16le"), utf16Bytes(plain, binary.LittleEndian, false), true)
		add("utf16be-charset", charset("utf-16be"), utf16Bytes(plain, binary.BigEndian, false), true)
		add("utf16-bom-charset", charset("utf-16"), utf16Bytes(plain, binary.LittleEndian, true), true)
		add("utf16le-bom-no-charset", jsonCT, utf16Bytes(plain, binary.LittleEndian, true), true)
		add("utf8-charset-uppercase", charset("UTF-8"), []byte(plain), false)
		add("text-plain", http.Header{"Content-Type": {"text/plain"}}, []byte(plain), true)
		add("no-content-type", http.Header{}, []byte(plain), true)

		add("dup-method-call-last", jsonCT, []byte(rpc(`"method":"ping","method":"tools/call","params":`+params)), true)
		add("dup-method-call-first", jsonCT, []byte(rpc(`"method":"tools/call","method":"ping","params":`+params)), true)
		add("dup-params-benign-first", jsonCT, []byte(rpc(`"method":"tools/call","params":`+echoParams+`,"params":`+params)), true)
		add("dup-params-benign-last", jsonCT, []byte(rpc(`"method":"tools/call","params":`+params+`,"params":`+echoParams)), true)
		name := `"name":"` + tool + `"`
		add("dup-name-benign-first", jsonCT, []byte(strings.Replace(plain, name, `"name":"echo",`+name, 1)), true)
		add("dup-name-benign-last", jsonCT, []byte(strings.Replace(plain, name, name+`,"name":"echo"`, 1)), true)
		add("case-Method", jsonCT, []byte(rpc(`"method":"ping","Method":"tools/call","params":`+params)), true)
		add("case-Params", jsonCT, []byte(rpc(`"method":"tools/call","params":`+echoParams+`,"Params":`+params)), true)
		add("case-Name", jsonCT, []byte(strings.Replace(plain, name, `"name":"echo","Name":"`+tool+`"`, 1)), true)
		add("escaped-key-method", jsonCT, []byte(strings.Replace(plain, `"method"`, `"\u006dethod"`, 1)), false)
		add("escaped-key-name", jsonCT, []byte(strings.Replace(plain, name, `"n\u0061me":"`+tool+`"`, 1)), false)
		add("escaped-name-value", jsonCT, []byte(strings.Replace(plain, name, `"name":"`+escapeLast(tool)+`"`, 1)), false)
		add("batch-of-one", jsonCT, []byte("["+plain+"]"), true)
		add("batch-after-ping", jsonCT, []byte(`[{"jsonrpc":"2.0","id":0,"method":"ping"},`+plain+`]`), true)
	}
	return out
}

func gzipped(t testing.TB, b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// zlibbed is HTTP's "deflate": the zlib format (RFC 9110 §8.4.1.2).
func zlibbed(t testing.TB, b []byte) []byte {
	var out bytes.Buffer
	w := zlib.NewWriter(&out)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// deflated is raw DEFLATE, which some servers also take for "deflate".
func deflated(t testing.TB, b []byte) []byte {
	var out bytes.Buffer
	w, err := flate.NewWriter(&out, flate.DefaultCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// utf16Bytes encodes s in UTF-16 with the given byte order, after a BOM
// if asked.
func utf16Bytes(s string, order binary.AppendByteOrder, bom bool) []byte {
	units := utf16.Encode([]rune(s))
	if bom {
		units = append([]uint16{0xFEFF}, units...)
	}
	out := make([]byte, 0, 2*len(units))
	for _, u := range units {
		out = order.AppendUint16(out, u)
	}
	return out
}
