package reqbody

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/klauspost/compress/zstd"
)

const msg = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wipe_all","arguments":{"note":"naïve 🙂"}}}`

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func zl(b []byte) []byte {
	var out bytes.Buffer
	w := zlib.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func rawDeflate(b []byte) []byte {
	var out bytes.Buffer
	w, _ := flate.NewWriter(&out, flate.DefaultCompression)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func zst(b []byte) []byte {
	w, _ := zstd.NewWriter(nil)
	defer w.Close()
	return w.EncodeAll(b, nil)
}

func utf16Bytes(s string, bigEndian, bom bool) []byte {
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

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// Every encoding a receiver decodes comes back as the message's UTF-8, with
// the charset made utf-8 when one was named.
func TestDecodeReadsWhatReceiversRead(t *testing.T) {
	m := []byte(msg)
	for _, tc := range []struct {
		name   string
		h      http.Header
		body   []byte
		wantCT string
	}{
		{"plain", header("Content-Type", "application/json"), m, "application/json"},
		{"no content type", header(), m, ""},
		{"identity", header("Content-Encoding", "identity"), m, ""},
		{"gzip", header("Content-Encoding", "gzip"), gz(m), ""},
		{"x-gzip upper case", header("Content-Encoding", "X-GZIP"), gz(m), ""},
		{"gzip members concatenated", header("Content-Encoding", "gzip"), append(gz(m[:10]), gz(m[10:])...), ""},
		{"deflate as zlib", header("Content-Encoding", "deflate"), zl(m), ""},
		{"deflate raw", header("Content-Encoding", "deflate"), rawDeflate(m), ""},
		{"zstd", header("Content-Encoding", "zstd"), zst(m), ""},
		{"stacked in one line", header("Content-Encoding", "gzip, deflate"), zl(gz(m)), ""},
		{"stacked over two lines", header("Content-Encoding", "deflate", "Content-Encoding", "identity, gzip"), gz(zl(m)), ""},
		{"utf-8 bom", header("Content-Type", "application/json"), append([]byte{0xEF, 0xBB, 0xBF}, m...), "application/json"},
		{"utf-8 bom inside gzip", header("Content-Encoding", "gzip"), gz(append([]byte{0xEF, 0xBB, 0xBF}, m...)), ""},
		{"charset utf-16le", header("Content-Type", "application/json; charset=utf-16le"), utf16Bytes(msg, false, false), "application/json; charset=utf-8"},
		{"charset UTF-16BE with bom", header("Content-Type", "application/json;charset=UTF-16BE"), utf16Bytes(msg, true, true), "application/json; charset=utf-8"},
		{"charset utf-16, little-endian bom", header("Content-Type", `application/json; charset="utf-16"`), utf16Bytes(msg, false, true), "application/json; charset=utf-8"},
		{"charset utf-16, big-endian by its zero bytes", header("Content-Type", "application/json; charset=utf-16"), utf16Bytes(msg, true, false), "application/json; charset=utf-8"},
		{"no charset, utf-16le bom", header("Content-Type", "application/json"), utf16Bytes(msg, false, true), "application/json"},
		{"no charset, utf-16be by its zero bytes", header(), utf16Bytes(msg, true, false), ""},
		{"charset utf-8 but utf-16le bytes", header("Content-Type", "application/json; charset=utf-8"), utf16Bytes(msg, false, false), "application/json; charset=utf-8"},
		{"utf-16 inside gzip", header("Content-Type", "application/json; charset=utf-16le", "Content-Encoding", "gzip"), gz(utf16Bytes(msg, false, false)), "application/json; charset=utf-8"},
		{"us-ascii of ascii bytes", header("Content-Type", "application/json; charset=us-ascii"), []byte(`{"a":1}`), "application/json; charset=utf-8"},
		{"other parameters kept", header("Content-Type", "application/json; charset=utf-16le; profile=x"), utf16Bytes(msg, false, false), "application/json; charset=utf-8; profile=x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := m
			if strings.HasPrefix(tc.name, "us-ascii") {
				want = tc.body
			}
			d, err := Decode(tc.h, tc.body, 1<<20)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !bytes.Equal(d.Body, want) {
				t.Errorf("body %q, want %q", d.Body, want)
			}
			if d.ContentType != tc.wantCT {
				t.Errorf("content type %q, want %q", d.ContentType, tc.wantCT)
			}
			h := tc.h.Clone()
			d.SetHeaders(h)
			if h.Get("Content-Encoding") != "" || !Plain(h, d.Body) {
				t.Errorf("headers %v after decoding do not describe a plain body", h)
			}
		})
	}
}

// What cannot be decoded for sure is refused, with the reason.
func TestDecodeRefuses(t *testing.T) {
	m := []byte(msg)
	bomb := gz(bytes.Repeat([]byte{' '}, 8<<20))
	for _, tc := range []struct {
		name string
		h    http.Header
		body []byte
		want error
		says string
	}{
		{"br", header("Content-Encoding", "br"), m, ErrCoding, `"br"`},
		{"compress", header("Content-Encoding", "compress"), m, ErrCoding, `"compress"`},
		{"unknown coding", header("Content-Encoding", "gzip, rot13"), m, ErrCoding, `"rot13"`},
		{"too many codings", header("Content-Encoding", "gzip,gzip,gzip,gzip,gzip"), m, ErrCoding, "5 codings"},
		{"gzip that is not", header("Content-Encoding", "gzip"), m, ErrCorrupt, "gzip"},
		{"truncated gzip", header("Content-Encoding", "gzip"), gz(m)[:20], ErrCorrupt, "gzip"},
		{"deflate that is not", header("Content-Encoding", "deflate"), []byte{0xFF, 0xFF, 0xFF}, ErrCorrupt, "deflate"},
		{"zstd that is not", header("Content-Encoding", "zstd"), m, ErrCorrupt, "zstd"},
		{"decompression bomb", header("Content-Encoding", "gzip"), bomb, ErrTooLarge, "limit"},
		{"utf-16 grows past the limit", header("Content-Type", "application/json; charset=utf-16le"), utf16Bytes(strings.Repeat("€", 400<<10), false, false), ErrTooLarge, "limit"},
		{"utf-7", header("Content-Type", "application/json; charset=utf-7"), []byte(`+AHs-"a":1}`), ErrCharset, `"utf-7"`},
		{"utf-32le charset", header("Content-Type", "application/json; charset=utf-32le"), m, ErrCharset, "utf-32le"},
		{"utf-32 by its zero bytes", header(), []byte("{\x00\x00\x00}\x00\x00\x00"), ErrCharset, "utf-32"},
		{"latin1 beyond ascii", header("Content-Type", "application/json; charset=iso-8859-1"), []byte("{\"a\":\"\xe9\"}"), ErrCharset, "beyond ASCII"},
		{"two content types", header("Content-Type", "application/json", "Content-Type", "application/json; charset=utf-16le"), m, ErrCharset, "2 Content-Type"},
		{"charset that does not parse", header("Content-Type", "application/json; charset=utf-16le; charset=utf-8"), m, ErrCharset, "does not parse"},
		{"odd utf-16", header("Content-Type", "application/json; charset=utf-16le"), []byte("{\x00}"), ErrCorrupt, "odd length"},
		{"unpaired surrogate", header("Content-Type", "application/json; charset=utf-16le"), []byte{'{', 0, 0x00, 0xD8, '}', 0}, ErrCorrupt, "surrogate"},
		{"two byte-order marks", header(), append([]byte{0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF}, m...), ErrCorrupt, "still encoded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decode(tc.h, tc.body, 1<<20)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %q, %v; want %v", d.Body, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
		})
	}
}

// Plain lets through only what every receiver reads as it is.
func TestPlain(t *testing.T) {
	m := []byte(msg)
	for _, tc := range []struct {
		name string
		h    http.Header
		body []byte
		want bool
	}{
		{"json", header("Content-Type", "application/json"), m, true},
		{"charset utf-8", header("Content-Type", "application/json; Charset=UTF-8"), m, true},
		{"no header", header(), m, true},
		{"empty", header(), nil, true},
		{"one byte", header(), []byte{0}, true},
		{"content-encoding", header("Content-Encoding", "gzip"), m, false},
		{"identity still decoded", header("Content-Encoding", "identity"), m, false},
		{"utf-16 charset", header("Content-Type", "application/json; charset=utf-16"), m, false},
		{"unparsable charset", header("Content-Type", "application/json; charset="), m, false},
		{"two content types", header("Content-Type", "application/json", "Content-Type", "text/plain"), m, false},
		{"bom", header(), append([]byte{0xEF, 0xBB, 0xBF}, m...), false},
		{"utf-16 bom", header(), []byte{0xFF, 0xFE, '{', 0}, false},
		{"zero second byte", header(), []byte{'{', 0, '}', 0}, false},
	} {
		if got := Plain(tc.h, tc.body); got != tc.want {
			t.Errorf("%s: Plain = %v", tc.name, got)
		}
	}
}

// A plain body comes back as the very same slice: nothing is copied.
func TestDecodePlainIsNoCopy(t *testing.T) {
	m := []byte(msg)
	d, err := Decode(header("Content-Type", "application/json"), m, 1<<20)
	if err != nil || &d.Body[0] != &m[0] || len(d.Body) != len(m) {
		t.Errorf("plain body copied or changed: %v", err)
	}
}

// FuzzDecode: whatever the headers and bytes, Decode never panics, never
// returns more than the limit, and what it returns is plain: forwarded with
// the headers it sets, no receiver decodes it any further, and decoding it
// again changes nothing.
func FuzzDecode(f *testing.F) {
	m := []byte(msg)
	f.Add(m, "", "application/json")
	f.Add(gz(m), "gzip", "")
	f.Add(zl(gz(m)), "gzip, deflate", "application/json")
	f.Add(rawDeflate(m), "deflate", "")
	f.Add(zst(m), "zstd", "")
	f.Add(append([]byte{0xEF, 0xBB, 0xBF}, m...), "", "application/json; charset=utf-8")
	f.Add(utf16Bytes(msg, false, true), "", "application/json; charset=utf-16")
	f.Add(utf16Bytes(msg, true, false), "identity", "application/json; charset=UTF-16BE")
	f.Add([]byte("{\x00\x00\x00"), "", "")
	f.Add(gz(bytes.Repeat([]byte("a"), 5000)), "x-gzip", "text/plain; charset=latin1")
	const max = 4096
	f.Fuzz(func(t *testing.T, body []byte, coding, ct string) {
		h := http.Header{}
		if coding != "" {
			h.Set("Content-Encoding", coding)
		}
		if ct != "" {
			h.Set("Content-Type", ct)
		}
		d, err := Decode(h, body, max)
		if err != nil {
			if d.Body != nil {
				t.Fatalf("an error with a body: %v", err)
			}
			return
		}
		if len(d.Body) > max {
			t.Fatalf("%d bytes over the limit", len(d.Body))
		}
		d.SetHeaders(h)
		if !Plain(h, d.Body) {
			t.Fatalf("decoded %q with %v is not plain", d.Body, h)
		}
		again, err := Decode(h, d.Body, max)
		if err != nil || !bytes.Equal(again.Body, d.Body) || again.ContentType != d.ContentType {
			t.Fatalf("decoding again: %q %q %v, was %q %q", again.Body, again.ContentType, err, d.Body, d.ContentType)
		}
		if Plain(http.Header{"Content-Type": {ct}}, body) && coding == "" && !bytes.Equal(d.Body, body) {
			t.Fatalf("a plain body changed: %q → %q", body, d.Body)
		}
	})
}
