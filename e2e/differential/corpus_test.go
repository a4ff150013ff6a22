package differential

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/internal/testkit"
)

// The corpus: recorded provider responses (testdata/fixtures at the
// module's root, see its README) and adversarial variants built from them,
// each one provider response given byte for byte to the parsers, straight
// and through the gate.

// Providers, as the parsers and the Node script name them.
const (
	chat      = "chat"      // OpenAI Chat Completions (openai-go, openai)
	responses = "responses" // OpenAI Responses (openai-go, openai)
	anthropic = "anthropic" // Anthropic Messages (anthropic-sdk-go, @anthropic-ai/sdk)
)

// modelCase is one provider response of the corpus.
type modelCase struct {
	Name     string // provider/kind/base/variant, unique
	Provider string
	Stream   bool // the SDK asks for a stream (and so reads the body as SSE)
	Status   int
	Header   http.Header
	Pieces   [][]byte // the body, in the writes the provider makes
	// Gated: the bytes carry a call to a tool the policy holds, so no
	// parser may yield a call of that name through the gate.
	Gated bool
	// MayRefuse: an ungated case the gate may refuse (a non-2xx status)
	// instead of passing it as it is, because it is ambiguous or mislabelled.
	MayRefuse bool
	// Canonical, for a stream whose bytes receivers read differently (a
	// bare CR, a BOM: see canonicalSSE), is the events the spec's reader
	// reads, written as every receiver reads them; nil for bytes every
	// receiver reads alike.
	Canonical []byte
}

// reply is the fake provider's answer for the case.
func (c modelCase) reply() testkit.Reply {
	return testkit.Reply{Raw: true, Status: c.Status, Header: c.Header, Pieces: c.Pieces}
}

// body is the whole response body.
func (c modelCase) body() []byte { return bytes.Join(c.Pieces, nil) }

// base is a response the variants start from.
type base struct {
	name     string // e.g. "one-tool-2"; "-ungated" for a renamed twin
	provider string
	stream   bool
	body     []byte // JSON compacted; SSE as recorded (LF, one data line per event)
	tool     string // the tool its call names ("" for a text answer)
	gated    bool   // tool is one the policy holds
}

// gatedTools are the tools the test policy holds (external actions with a
// card): every call the fixtures make, and delete_post.
var gatedTools = []string{"GetWeatherArgs", "get_weather", "weather", "calculator", "updateIssueList", "delete_post"}

func isGated(name string) bool {
	for _, g := range gatedTools {
		if name == g {
			return true
		}
	}
	return false
}

// ungatedPrefix renames a fixture's tool to one the policy does not declare.
const ungatedPrefix = "lookup_"

// twin is b with its tool renamed to an undeclared one: the same bytes but
// for the name, so a gate that passes it must pass it unchanged.
func twin(b base) base {
	if b.tool == "" {
		return b
	}
	t := b
	t.name += "-ungated"
	t.tool = ungatedPrefix + b.tool
	t.gated = false
	t.body = bytes.ReplaceAll(b.body, []byte(`"`+b.tool+`"`), []byte(`"`+t.tool+`"`))
	return t
}

func compact(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("compacting a fixture: %v", err)
	}
	return out.Bytes()
}

func set(t testing.TB, body []byte, path, raw string) []byte {
	t.Helper()
	out, err := sjson.SetRawBytes(body, path, []byte(raw))
	if err != nil {
		t.Fatalf("building a base: set %s: %v", path, err)
	}
	return out
}

func del(t testing.TB, body []byte, path string) []byte {
	t.Helper()
	out, err := sjson.DeleteBytes(body, path)
	if err != nil {
		t.Fatalf("building a base: delete %s: %v", path, err)
	}
	return out
}

// bases returns the recorded responses and their renamed twins.
func bases(t testing.TB) []base {
	fx := func(parts ...string) []byte { return testkit.Fixture(t, parts...) }
	chatJSON := compact(t, fx("openai-chat", "json-one-tool.json"))
	respJSON := compact(t, fx("openai-responses", "azure-tool-call.json"))
	anthJSON := compact(t, fx("anthropic", "tool-no-args.json"))

	// Text answers in the recorded JSON envelopes.
	chatText := set(t, del(t, chatJSON, "choices.0.message.tool_calls"), "choices.0.message.content", `"It is sunny in Edinburgh."`)
	chatText = set(t, chatText, "choices.0.finish_reason", `"stop"`)
	respText := set(t, respJSON, "output", `[{"id":"msg_0a2fa1b5","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"It is sunny in San Francisco.","annotations":[]}]}]`)
	anthText := set(t, del(t, anthJSON, "content.1"), "stop_reason", `"end_turn"`)

	gated := []base{
		{"one-tool", chat, false, chatJSON, "GetWeatherArgs", true},
		{"parallel-tools", chat, false, compact(t, fx("openai-chat", "json-parallel-tools.json")), "GetWeatherArgs", true},
		{"one-tool-1", chat, true, fx("openai-chat", "stream-one-tool-1.sse"), "GetWeatherArgs", true},
		{"one-tool-2", chat, true, fx("openai-chat", "stream-one-tool-2.sse"), "get_weather", true},
		{"parallel-tools", chat, true, fx("openai-chat", "stream-parallel-tools.sse"), "GetWeatherArgs", true},
		{"azure-tool-call", responses, false, respJSON, "weather", true},
		{"azure-tool-call", responses, true, fx("openai-responses", "azure-tool-call.sse"), "weather", true},
		{"reasoning-step2", responses, true, fx("openai-responses", "reasoning-encrypted-step2.sse"), "calculator", true},
		{"tool-no-args", anthropic, false, anthJSON, "updateIssueList", true},
		{"stream-1", anthropic, true, fx("anthropic", "stream-1.sse"), "get_weather", true},
		{"tool-no-args", anthropic, true, fx("anthropic", "stream-tool-no-args.sse"), "updateIssueList", true},
	}
	out := append([]base(nil), gated...)
	for _, b := range gated {
		out = append(out, twin(b))
	}
	return append(out,
		base{"text", chat, false, chatText, "", false},
		base{"text", chat, true, fx("openai-chat", "stream-text.sse"), "", false},
		base{"text", responses, false, respText, "", false},
		base{"reasoning-step4-text", responses, true, fx("openai-responses", "reasoning-encrypted-step4.sse"), "", false},
		base{"text", anthropic, false, anthText, "", false},
		base{"stream-2-text", anthropic, true, fx("anthropic", "stream-2.sse"), "", false},
	)
}

func kind(stream bool) string {
	if stream {
		return "sse"
	}
	return "json"
}

// newCase makes the case of a base's variant: body written as the
// provider would (one write per SSE event, the JSON at once), under the
// base's usual Content-Type.
func newCase(b base, variant string, body []byte) modelCase {
	ct := "application/json"
	pieces := [][]byte{body}
	if b.stream {
		ct = "text/event-stream"
		pieces = splitEvents(body)
	}
	return modelCase{
		Name:     fmt.Sprintf("%s/%s/%s/%s", b.provider, kind(b.stream), b.name, variant),
		Provider: b.provider,
		Stream:   b.stream,
		Status:   http.StatusOK,
		Header:   http.Header{"Content-Type": {ct}},
		Pieces:   pieces,
		Gated:    b.gated,
	}
}

// splitEvents cuts an SSE body after each blank line (LF, CRLF or CR
// framed), as a provider flushes event by event.
func splitEvents(body []byte) [][]byte {
	var out [][]byte
	start := 0
	for i := 0; i < len(body); i++ {
		for _, end := range []string{"\r\n\r\n", "\n\n", "\r\r"} {
			if bytes.HasPrefix(body[i:], []byte(end)) {
				out = append(out, body[start:i+len(end)])
				start = i + len(end)
				i = start - 1
				break
			}
		}
	}
	if start < len(body) {
		out = append(out, body[start:])
	}
	return out
}

// corpus builds every case: each base as recorded, its SSE framings, and
// for the labelled bases the labels and key attacks.
func corpus(t testing.TB) []modelCase {
	t.Helper()
	var out []modelCase
	seen := map[string]bool{}
	add := func(c modelCase) {
		if seen[c.Name] {
			t.Fatalf("corpus: case %s twice", c.Name)
		}
		// Bytes every receiver reads alike keep the strict invariant (the
		// same parse as straight); only bytes they read differently are
		// held to the spec's reading instead.
		if c.Stream && c.Header.Get("Content-Encoding") == "" && readersDisagree(c.body()) != (c.Canonical != nil) {
			t.Fatalf("corpus: case %s: receivers read its bytes differently: %t; held to the spec's reading: %t", c.Name, readersDisagree(c.body()), c.Canonical != nil)
		}
		seen[c.Name] = true
		out = append(out, c)
	}
	for _, b := range bases(t) {
		add(newCase(b, "as-recorded", b.body))
		if b.stream {
			for _, f := range framings {
				if c, ok := f.apply(t, b); ok {
					add(c)
				}
			}
		}
		if labelled(b) {
			for _, l := range labels {
				if l.stream == b.stream {
					add(l.apply(b))
				}
			}
		}
		if b.tool != "" && labelled(b) {
			for _, a := range attacks {
				if a.provider != b.provider || a.stream != b.stream {
					continue
				}
				body, err := a.apply(b)
				if err != nil {
					t.Fatalf("corpus: %s on %s/%s: %v", a.name, b.provider, b.name, err)
				}
				c := newCase(b, a.name, body)
				c.MayRefuse = !b.gated && a.mayRefuse
				add(c)
			}
		}
	}
	return out
}

// labelledBases are the bases the Content-Type variants run on: per
// provider and kind, a gated one, its twin and the text answer.
var labelledBases = map[string]bool{
	"chat/json/one-tool": true, "chat/json/one-tool-ungated": true, "chat/json/text": true,
	"chat/sse/one-tool-2": true, "chat/sse/one-tool-2-ungated": true, "chat/sse/text": true,
	"responses/json/azure-tool-call": true, "responses/json/azure-tool-call-ungated": true, "responses/json/text": true,
	"responses/sse/azure-tool-call": true, "responses/sse/azure-tool-call-ungated": true, "responses/sse/reasoning-step4-text": true,
	"anthropic/json/tool-no-args": true, "anthropic/json/tool-no-args-ungated": true, "anthropic/json/text": true,
	"anthropic/sse/stream-1": true, "anthropic/sse/stream-1-ungated": true, "anthropic/sse/stream-2-text": true,
}

func labelled(b base) bool { return labelledBases[b.provider+"/"+kind(b.stream)+"/"+b.name] }

// replaceIn replaces every old with new in body, and fails when there is
// none: a variant that silently changed nothing would test nothing.
func replaceIn(body []byte, old, new string) ([]byte, error) {
	if !bytes.Contains(body, []byte(old)) {
		return nil, fmt.Errorf("no %q in the body", old)
	}
	return bytes.ReplaceAll(body, []byte(old), []byte(new)), nil
}

// replaceSeq applies replacements in order.
func replaceSeq(body []byte, pairs ...string) ([]byte, error) {
	var err error
	for i := 0; i+1 < len(pairs); i += 2 {
		if body, err = replaceIn(body, pairs[i], pairs[i+1]); err != nil {
			return nil, err
		}
	}
	return body, nil
}

// escapeLast writes s's last character as a \u escape, as JSON allows.
func escapeLast(s string) string {
	return s[:len(s)-1] + fmt.Sprintf(`\u%04x`, s[len(s)-1])
}
