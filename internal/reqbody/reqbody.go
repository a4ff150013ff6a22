// Package reqbody decodes a request body the way the servers behind the
// gate decode it, so that the gate decides on the message they will read.
//
// Server frameworks read more than plain UTF-8 JSON. Express's body-parser
// (the MCP TypeScript SDK's createMcpExpressApp) inflates gzip, deflate, br
// and zstd, decodes the charset the Content-Type names (any "utf-*" that
// iconv-lite knows) and drops a byte-order mark; the SDK's web-standard
// transport (Request.json) drops a UTF-8 byte-order mark; raw-body with the
// Content-Type's charset (its legacy SSE transport) decodes any charset
// iconv-lite knows; Python's json.loads on bytes (Starlette, FastAPI)
// detects UTF-16 and UTF-32 from a byte-order mark or the zero bytes of the
// first characters, whatever the charset says. Go's net/http and the MCP Go
// SDK decode none of these.
//
// A gate that passed such a body unread would let the lenient server run a
// call the gate never saw. So a body that is not plain is decoded here and
// the decoded UTF-8 is what goes on (Content-Encoding removed, the charset
// made utf-8): every server then reads exactly the bytes the gate checked.
// What cannot be decoded is refused, never passed.
package reqbody

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// Errors of Decode, each wrapped with the detail (the coding or charset).
var (
	// ErrCoding is a Content-Encoding the gate cannot decode (br, compress,
	// an unknown name) or too many of them.
	ErrCoding = errors.New("content coding not supported")
	// ErrCharset is a charset the gate does not decode, or a Content-Type
	// whose charset cannot be told for sure.
	ErrCharset = errors.New("charset not supported")
	// ErrCorrupt is a body whose bytes do not decode as labelled.
	ErrCorrupt = errors.New("body does not decode")
	// ErrTooLarge is a body larger than the limit once decoded.
	ErrTooLarge = errors.New("decoded body over the size limit")
)

// maxCodings caps the codings stacked in one Content-Encoding.
const maxCodings = 4

// Decoded is a body as the server would read it.
type Decoded struct {
	// Body is UTF-8 without a byte-order mark, decompressed.
	Body []byte
	// ContentType is the Content-Type to send on with Body: as it came but
	// with charset=utf-8 when it named another; "" when it came without one.
	ContentType string
}

// Plain reports whether a body can go on as it is: no Content-Encoding, at
// most one Content-Type naming no charset but UTF-8, and no byte-order mark
// or UTF-16/UTF-32 start. It reads two headers and the body's first bytes;
// a body that is not plain must go through Decode.
func Plain(h http.Header, body []byte) bool {
	if len(h["Content-Encoding"]) > 0 {
		return false
	}
	if ct := h["Content-Type"]; len(ct) > 1 || (len(ct) == 1 && !utf8Charset(ct[0])) {
		return false
	}
	return !oddStart(body)
}

// utf8Charset reports whether a Content-Type names no charset or UTF-8,
// without parsing it unless it mentions a charset at all.
func utf8Charset(ct string) bool {
	if !containsFold(ct, "charset") {
		return true
	}
	cs, err := charset([]string{ct})
	return err == nil && (cs == "" || cs == "utf-8")
}

// oddStart reports a start that some receiver decodes as other than UTF-8:
// a byte-order mark, or a zero byte in the first two (UTF-16 or UTF-32 of
// ASCII text, as Python's json.detect_encoding reads it).
func oddStart(b []byte) bool {
	if len(b) < 2 {
		return false
	}
	return b[0] == 0 || b[1] == 0 || bytes.HasPrefix(b, bomUTF8) ||
		(b[0] == 0xFE && b[1] == 0xFF) || (b[0] == 0xFF && b[1] == 0xFE)
}

var bomUTF8 = []byte{0xEF, 0xBB, 0xBF}

// Decode decodes a request body as its headers and bytes say: the
// Content-Encoding codings undone in reverse order (identity, gzip and
// x-gzip, deflate as zlib or raw, zstd), then the charset (UTF-8, UTF-16LE,
// UTF-16BE, UTF-16 by its byte-order mark or its zero bytes; an ASCII
// charset for ASCII bytes only) and a byte-order mark taken away. Neither
// a step nor the result may exceed max bytes: a decompression bomb stops at
// the limit. A plain body (see Plain) comes back as the same slice.
func Decode(h http.Header, body []byte, max int64) (Decoded, error) {
	d := Decoded{Body: body}
	var err error
	if codings := h["Content-Encoding"]; len(codings) > 0 {
		if d.Body, err = decompress(codings, body, max); err != nil {
			return Decoded{}, err
		}
	}
	cts := h["Content-Type"]
	cs, err := charset(cts)
	if err != nil {
		return Decoded{}, err
	}
	if d.Body, err = transcode(cs, d.Body); err != nil {
		return Decoded{}, err
	}
	if int64(len(d.Body)) > max {
		return Decoded{}, fmt.Errorf("%w (%d bytes)", ErrTooLarge, max)
	}
	if oddStart(d.Body) {
		// A second byte-order mark, or bytes that still read as UTF-16:
		// some receiver would decode them once more.
		return Decoded{}, fmt.Errorf("%w: it is still encoded once decoded", ErrCorrupt)
	}
	if len(cts) == 1 {
		d.ContentType = cts[0]
		if cs != "" && cs != "utf-8" {
			d.ContentType = withUTF8(cts[0])
		}
	}
	return d, nil
}

// SetHeaders makes h describe d.Body: no Content-Encoding, d's
// Content-Type, no Content-Length (the request's ContentLength says it).
func (d Decoded) SetHeaders(h http.Header) {
	h.Del("Content-Encoding")
	h.Del("Content-Length")
	if d.ContentType == "" {
		h.Del("Content-Type")
	} else {
		h.Set("Content-Type", d.ContentType)
	}
}

// decompress undoes the codings of the Content-Encoding header lines, the
// last applied first.
func decompress(lines []string, body []byte, max int64) ([]byte, error) {
	var codings []string
	for _, line := range lines {
		for _, c := range strings.Split(line, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	if len(codings) > maxCodings {
		return nil, fmt.Errorf("%w: %d codings stacked", ErrCoding, len(codings))
	}
	for i := len(codings) - 1; i >= 0; i-- {
		var err error
		if body, err = undo(codings[i], body, max); err != nil {
			return nil, err
		}
	}
	return body, nil
}

// undo decodes one coding, reading at most max+1 bytes of its output.
func undo(coding string, body []byte, max int64) ([]byte, error) {
	var r io.Reader
	switch coding {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("%w as %s: %v", ErrCorrupt, coding, err)
		}
		r = zr
	case "deflate":
		// RFC 9110 says zlib; some clients send raw deflate, which some
		// servers accept. Either way the decoded bytes are what goes on.
		if zlibHeader(body) {
			zr, err := zlib.NewReader(bytes.NewReader(body))
			if err != nil {
				return nil, fmt.Errorf("%w as deflate: %v", ErrCorrupt, err)
			}
			r = zr
		} else {
			r = flate.NewReader(bytes.NewReader(body))
		}
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(body),
			zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(max)+1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			return nil, fmt.Errorf("%w as zstd: %v", ErrCorrupt, err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("%w: %q", ErrCoding, coding)
	}
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(r, max+1))
	switch {
	case n > max:
		return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, max)
	case err != nil:
		return nil, fmt.Errorf("%w as %s: %v", ErrCorrupt, coding, err)
	}
	return out.Bytes(), nil
}

// zstdMaxWindow is the largest zstd window accepted: RFC 8878 asks
// decoders to support 8 MiB.
const zstdMaxWindow = 8 << 20

// zlibHeader reports whether b starts with a zlib header (RFC 1950): method
// deflate, a window of at most 32 KiB, the check bits right, no dictionary.
func zlibHeader(b []byte) bool {
	if len(b) < 2 {
		return false
	}
	cmf, flg := b[0], b[1]
	return cmf&0x0F == 8 && cmf>>4 <= 7 && (uint16(cmf)<<8|uint16(flg))%31 == 0 && flg&0x20 == 0
}

// charset returns the charset the Content-Type names, lower case ("" when
// none). Two Content-Type headers, or one that names a charset but does not
// parse, cannot be told for sure: receivers differ on which they read.
func charset(cts []string) (string, error) {
	switch len(cts) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", fmt.Errorf("%w: %d Content-Type headers", ErrCharset, len(cts))
	}
	_, params, err := mime.ParseMediaType(cts[0])
	if err != nil {
		if containsFold(cts[0], "charset") {
			return "", fmt.Errorf("%w: Content-Type %q does not parse", ErrCharset, cts[0])
		}
		return "", nil
	}
	cs := strings.ToLower(strings.TrimSpace(params["charset"]))
	if cs == "utf8" {
		cs = "utf-8"
	}
	return cs, nil
}

// asciiCharsets decode ASCII bytes as ASCII; other bytes differ between
// decoders (iconv-lite's latin1 is not WHATWG's), so only ASCII passes.
var asciiCharsets = map[string]bool{
	"us-ascii": true, "ascii": true, "iso-8859-1": true, "latin1": true, "iso-latin-1": true, "windows-1252": true,
}

// transcode returns body as UTF-8 without a byte-order mark.
func transcode(cs string, body []byte) ([]byte, error) {
	switch {
	case cs == "" || cs == "utf-8":
		switch enc := detect(body); enc {
		case "utf-8":
			return bytes.TrimPrefix(body, bomUTF8), nil
		case "utf-16le", "utf-16be":
			return fromUTF16(body, enc == "utf-16be")
		default:
			return nil, fmt.Errorf("%w: %s", ErrCharset, enc)
		}
	case cs == "utf-16le" || cs == "utf-16be":
		return fromUTF16(body, cs == "utf-16be")
	case cs == "utf-16":
		return fromUTF16(body, utf16BigEndian(body))
	case asciiCharsets[cs]:
		for _, c := range body {
			if c >= utf8.RuneSelf {
				return nil, fmt.Errorf("%w: %q with bytes beyond ASCII", ErrCharset, cs)
			}
		}
		return body, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrCharset, cs)
}

// detect reads a body's encoding from its first bytes as Python's
// json.detect_encoding does (the most lenient reader of unlabelled JSON):
// a byte-order mark, else the zero bytes of ASCII text in UTF-16 or UTF-32.
func detect(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte{0x00, 0x00, 0xFE, 0xFF}), bytes.HasPrefix(b, []byte{0xFF, 0xFE, 0x00, 0x00}):
		return "utf-32"
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		return "utf-16be"
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		return "utf-16le"
	case bytes.HasPrefix(b, bomUTF8):
		return "utf-8"
	}
	switch {
	case len(b) >= 4 && b[0] == 0:
		if b[1] == 0 {
			return "utf-32be"
		}
		return "utf-16be"
	case len(b) >= 4 && b[1] == 0:
		if b[2] == 0 && b[3] == 0 {
			return "utf-32le"
		}
		return "utf-16le"
	case len(b) == 2 && b[0] == 0:
		return "utf-16be"
	case len(b) == 2 && b[1] == 0:
		return "utf-16le"
	}
	return "utf-8"
}

// utf16BigEndian picks the byte order of a body labelled "utf-16" as
// iconv-lite does: the byte-order mark, else the order in which more of
// the first 100 code units are ASCII, little-endian on a tie.
func utf16BigEndian(b []byte) bool {
	switch {
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		return true
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		return false
	}
	le, be := 0, 0
	for i := 0; i+1 < len(b) && i < 200; i += 2 {
		switch {
		case b[i] == 0 && b[i+1] != 0:
			be++
		case b[i] != 0 && b[i+1] == 0:
			le++
		}
	}
	return be > le
}

// fromUTF16 transcodes UTF-16 to UTF-8, dropping a leading byte-order mark
// (U+FEFF in this byte order). An odd length or an unpaired surrogate does
// not decode: receivers would read U+FFFD there, so the gate refuses.
func fromUTF16(b []byte, bigEndian bool) ([]byte, error) {
	if len(b)%2 != 0 {
		return nil, fmt.Errorf("%w as UTF-16: odd length", ErrCorrupt)
	}
	out := make([]byte, 0, len(b)/2+len(b)/4)
	for i := 0; i < len(b); i += 2 {
		u := unit(b[i:], bigEndian)
		var r rune
		switch {
		case utf16.IsSurrogate(rune(u)):
			if u >= 0xDC00 || i+3 >= len(b) {
				return nil, fmt.Errorf("%w as UTF-16: unpaired surrogate at byte %d", ErrCorrupt, i)
			}
			lo := unit(b[i+2:], bigEndian)
			if r = utf16.DecodeRune(rune(u), rune(lo)); r == utf8.RuneError {
				return nil, fmt.Errorf("%w as UTF-16: unpaired surrogate at byte %d", ErrCorrupt, i)
			}
			i += 2
		case u == 0xFEFF && i == 0:
			continue
		default:
			r = rune(u)
		}
		out = utf8.AppendRune(out, r)
	}
	return out, nil
}

func unit(b []byte, bigEndian bool) uint16 {
	if bigEndian {
		return uint16(b[0])<<8 | uint16(b[1])
	}
	return uint16(b[1])<<8 | uint16(b[0])
}

// withUTF8 is a Content-Type with its charset made utf-8, other parameters
// kept.
func withUTF8(ct string) string {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "application/json; charset=utf-8"
	}
	params["charset"] = "utf-8"
	return mime.FormatMediaType(mt, params)
}

// containsFold reports whether s contains the lower-case ASCII word sub in
// any case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
