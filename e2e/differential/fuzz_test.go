package differential

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/provider"
	anthropicadapter "github.com/toolgate/toolgate/provider/anthropic"
	chatadapter "github.com/toolgate/toolgate/provider/chat"
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
)

// In-process differential: the gate's response writer (interceptor.Wrap,
// as the toolgate handler uses it) rewrites a provider response held in
// memory, and openai-go and anthropic-sdk-go parse it through an
// http.RoundTripper that returns it, with their own SSE decoders
// (packages/ssestream) and JSON readers. Fast enough to fuzz and to try
// every split of a stream.

// holdGated is the decision the in-process gate takes: every call to a
// gated tool is held (a Holder that passes nothing it is asked about).
type holdGated struct{}

func (holdGated) Gated(name string) bool { return isGated(name) }

func (holdGated) Hold(context.Context, []provider.Call, []byte, provider.Kept) provider.Verdict {
	return provider.Verdict{Text: "Waiting for your confirmation: http://127.0.0.1:1/toolgate/h/aaaaaaaaaaaaaaaaaaaaaaaaaa"}
}

var adapters = map[string]provider.Adapter{
	chat:      chatadapter.Chat{},
	responses: responsesadapter.Responses{},
	anthropic: anthropicadapter.Anthropic{},
}

// headerWriter notes whether anything reached the client, as a refused
// response after its header has gone is a cut stream, not a 502.
type headerWriter struct {
	*httptest.ResponseRecorder
	wrote bool
}

func (w *headerWriter) WriteHeader(code int) {
	w.wrote = true
	w.ResponseRecorder.WriteHeader(code)
}

func (w *headerWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseRecorder.Write(p)
}

func (w *headerWriter) Flush() {
	w.wrote = true
	w.ResponseRecorder.Flush()
}

// answer is one HTTP response held in memory.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// throughGate runs a provider response through interceptor.Wrap and
// returns what the app receives: the rewritten response, a 502 when the
// gate refused it before anything was written, or the part written before
// it gave up.
func throughGate(provider string, status int, header http.Header, pieces [][]byte) answer {
	w := &headerWriter{ResponseRecorder: httptest.NewRecorder()}
	rw := interceptor.Wrap(w, adapters[provider], context.Background(), holdGated{}, 0)
	for k, v := range header {
		rw.Header()[k] = v
	}
	rw.WriteHeader(status)
	for _, p := range pieces {
		if _, err := rw.Write(p); err != nil {
			break // reverse_proxy stops copying at a write error
		}
		_ = rw.FlushError()
	}
	if err := rw.Close(); err != nil && !w.wrote {
		return answer{status: http.StatusBadGateway, header: http.Header{}}
	}
	return answer{status: w.Code, header: w.Header().Clone(), body: w.Body.Bytes()}
}

// roundTrip answers every request with a.
type roundTrip answer

func (a roundTrip) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: a.status, Status: http.StatusText(a.status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: a.header.Clone(), Body: io.NopCloser(bytes.NewReader(a.body)), ContentLength: -1, Request: r,
	}, nil
}

// parseAnswer is the Go SDK's parse of a response held in memory.
func parseAnswer(provider string, stream bool, a answer) parsed {
	return goParse(context.Background(), goRequest{provider: provider, stream: stream, baseURL: "http://provider.invalid", client: &http.Client{Transport: roundTrip(a)}})
}

// headerOf gives a fuzz input's Content-Type values: "" none, else one per
// line.
func headerOf(contentTypes string) http.Header {
	if contentTypes == "" {
		return http.Header{}
	}
	return http.Header{"Content-Type": strings.Split(contentTypes, "\n")}
}

var providerByte = []string{chat, responses, anthropic}

// fuzzFramings are what the fuzz input's frame byte applies to an
// LF-framed body before it is written (0: nothing).
var fuzzFramings = []func([]byte) []byte{
	func(b []byte) []byte { return b },
	toCRLF, toCR, mixedEnds, withBOM, multiDataLines, withoutSpace, fieldsWithoutColon, bareDataLine, withComments,
}

// FuzzModelResponse mutates the framing, labels and keys of the corpus (its
// bytes, its Content-Type values, where its one cut between two writes
// falls, and one of the SSE framings applied on top) and asserts that
// through the gate neither Go SDK ever reads a gated call.
func FuzzModelResponse(f *testing.F) {
	for _, c := range corpus(f) {
		if c.Header.Get("Content-Encoding") != "" {
			continue // an in-memory response is not decoded as a transport would
		}
		p := byte(0)
		for i, name := range providerByte {
			if name == c.Provider {
				p = byte(i)
			}
		}
		f.Add(p, c.Stream, strings.Join(c.Header.Values("Content-Type"), "\n"), c.body(), uint16(len(c.Pieces[0])), byte(0))
	}
	f.Fuzz(func(t *testing.T, p byte, stream bool, contentTypes string, body []byte, cut uint16, frame byte) {
		if len(body) > 64<<10 {
			t.Skip("over 64 KiB")
		}
		provider := providerByte[int(p)%len(providerByte)]
		body = fuzzFramings[int(frame)%len(fuzzFramings)](body)
		pieces := [][]byte{body}
		if k := int(cut); k > 0 && k < len(body) {
			pieces = [][]byte{body[:k], body[k:]}
		}
		gated := parseAnswer(provider, stream, throughGate(provider, http.StatusOK, headerOf(contentTypes), pieces))
		if names := gated.gatedNames(); len(names) > 0 {
			direct := parseAnswer(provider, stream, answer{http.StatusOK, headerOf(contentTypes), body})
			t.Errorf("%s read the gated call %s through the gate (Content-Type %q, written as %d pieces, body %.300q)\n gated:  %s\n direct: %s",
				parserNames[provider][0], strings.Join(names, ", "), contentTypes, len(pieces), body, gated, direct)
		}
	})
}

// splitBases are the streams TestSSESplitsEveryByte cuts: each provider's
// smallest recorded stream with a gated call, and its twin.
var splitBases = map[string]bool{
	"chat/one-tool-2": true, "chat/one-tool-2-ungated": true,
	"responses/azure-tool-call": true, "responses/azure-tool-call-ungated": true,
	"anthropic/tool-no-args": true, "anthropic/tool-no-args-ungated": true,
}

// TestSSESplitsEveryByte writes a recorded stream of each provider, framed
// with LF, CRLF and bare CR, to the gate in two writes, cut at every byte:
// through the gate no split may yield a gated call, and a stream without
// one must parse as it does straight (framed with LF or CRLF) or as its
// canonical form does straight (with bare CRs, which the Go SDKs read
// otherwise than the spec: see canonicalSSE). Only distinct gate outputs
// are parsed.
func TestSSESplitsEveryByte(t *testing.T) {
	for _, b := range bases(t) {
		if !b.stream || !splitBases[b.provider+"/"+b.name] {
			continue
		}
		for _, fr := range []struct{ name, end string }{{"lf", "\n"}, {"crlf", "\r\n"}, {"cr", "\r"}} {
			body := bytes.ReplaceAll(b.body, []byte("\n"), []byte(fr.end))
			name := b.provider + "/" + b.name + "/" + fr.name
			header := http.Header{"Content-Type": {"text/event-stream"}}
			want := body
			if readersDisagree(body) {
				want = canonicalSSE(body)
			}
			direct := parseAnswer(b.provider, true, answer{http.StatusOK, header, want})
			seen := map[[32]byte]bool{}
			failures := 0
			for k := 1; k < len(body) && failures < 3; k++ {
				out := throughGate(b.provider, http.StatusOK, header, [][]byte{body[:k], body[k:]})
				sum := sha256.Sum256(append(append([]byte(nil), out.body...), byte(out.status%256)))
				if seen[sum] {
					continue
				}
				seen[sum] = true
				gated := parseAnswer(b.provider, true, out)
				if names := gated.gatedNames(); len(names) > 0 {
					failures++
					t.Errorf("%s cut at byte %d: %s read the gated call %s through the gate\n gated:  %s", name, k, parserNames[b.provider][0], strings.Join(names, ", "), gated)
					continue
				}
				if !b.gated && !gated.same(direct) {
					failures++
					t.Errorf("%s cut at byte %d: %s parsed an ungated stream differently through the gate\n gated:  %s\n direct: %s", name, k, parserNames[b.provider][0], gated, direct)
				}
			}
		}
	}
}
