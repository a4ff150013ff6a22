package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/wire/shape"
	"github.com/toolgate/toolgate/wire/sse"

	"google.golang.org/genai"
)

// callSpellings are keys some reader takes for functionCall: protojson
// (the API, python google-genai) its JSON name and its proto name
// exactly; go-genai (encoding/json) any ASCII case; the gate's own
// reading (fold: strings.ToLower, '_' dropped, so İ is an i too); and
// every reader a \u escape of any letter. Each is a way past a byte
// filter that looks for the bytes "functionCall".
var callSpellings = []string{
	`"functionCall":`,
	`"function_call":`,
	`"FunctionCall":`,
	`"FUNCTIONCALL":`,
	`"fUnCtIoN_cAlL":`,
	`"_function__Call_":`,
	`"\u0066unctionCall":`,
	`"function\u0043all":`,
	`"functio\u006ECall":`,
	`"function\u005fcall":`,
	`"funct\u0130onCall":`,
	`"functİonCall":`,
	`"functionCall" :`,
	"\"functionCall\"\t\r\n :",
}

// spelledCall is a chunk with one call of delete_post under key (a
// member's key and its colon).
func spelledCall(key string) string {
	return `{"candidates":[{"content":{"parts":[{` + key + `{"name":"delete_post","args":{"post":7}}}],"role":"model"},"finishReason":"STOP","index":0}],"modelVersion":"gemini-2.5-flash","responseId":"r"}`
}

// TestStreamHoldsACallInEverySpelling: a gated call under a key spelt any
// way a reader takes it (callSpellings), after a text chunk, is read and
// held, in SSE and in the JSON array: the app (go-genai, for SSE) reads
// the text and the waiting text, never the call. MayHoldCall, the fast
// path's filter, answers yes to each, and to the unary body.
func TestStreamHoldsACallInEverySpelling(t *testing.T) {
	text := `{"candidates":[{"content":{"parts":[{"text":"Deleting it."}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"r"}`
	for _, key := range callSpellings {
		t.Run(key, func(t *testing.T) {
			call := spelledCall(key)
			if !MayHoldCall([]byte(call)) {
				t.Fatalf("MayHoldCall says no to %s", call)
			}
			calls, err := Calls([]byte(call))
			if err != nil || len(calls) != 1 || calls[0].Name != "delete_post" {
				t.Fatalf("the gate reads %+v, %v", calls, err)
			}
			secrets := []string{"delete_post", `"post"`}
			out, _, h := everySplit(t, streamCase{body: sseOf(text, call), framing: SSE, secrets: secrets})
			if len(h.Holds()) != 1 {
				t.Fatalf("%d holds; the app read\n%s", len(h.Holds()), out)
			}
			parts, _ := genaiParts(t, out, false)
			if len(parts) != 2 || parts[0].Text != "Deleting it." || !strings.Contains(parts[1].Text, wait) {
				t.Fatalf("go-genai read %+v", parts)
			}
			arr := []byte("[" + text + ",\r\n" + call + "]")
			out, _, h = everySplit(t, streamCase{body: arr, framing: JSONArray, secrets: secrets})
			if len(h.Holds()) != 1 || !json.Valid(out) {
				t.Fatalf("%d holds; the app read\n%s", len(h.Holds()), out)
			}
		})
	}
}

// TestMayHoldCallLetsTextThrough: what names a call without being one
// goes the fast path: the word in text, a longer key, an escaped '<' or
// a rune outside ASCII (encoders escape those), an escaped quote inside a
// key.
func TestMayHoldCallLetsTextThrough(t *testing.T) {
	for _, b := range []string{
		`{"candidates":[{"content":{"parts":[{"text":"Send a functionCall: the model asks, the app runs it."}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"\u003cb\u003eBerlin\u003c/b\u003e \u00e9t\u00e9 \"functionCall\""}]}}]}`,
		`{"functionCallCount":1,"myFunctionCall":{},"function\"Call":2,"functionCal":3}`,
		`{"usageMetadata":{"promptTokenCount":9}, "text" : "functioncall"}`,
		`functionCall`,
	} {
		if MayHoldCall([]byte(b)) {
			t.Errorf("MayHoldCall says yes to %s", b)
		}
	}
}

// genaiFindsCall reports whether go-genai's types, decoded by
// encoding/json as go-genai decodes them, hold a function call in body: a
// GenerateContentResponse or an array of them.
func genaiFindsCall(body []byte) bool {
	var one genai.GenerateContentResponse
	var many []*genai.GenerateContentResponse
	if json.Unmarshal(body, &one) == nil {
		many = append(many, &one)
	} else if json.Unmarshal(body, &many) != nil {
		return false
	}
	for _, r := range many {
		if r == nil {
			continue
		}
		for _, c := range r.Candidates {
			if c == nil || c.Content == nil {
				continue
			}
			for _, p := range c.Content.Parts {
				if p != nil && p.FunctionCall != nil {
					return true
				}
			}
		}
	}
	return false
}

func TestGenaiFindsCall(t *testing.T) {
	for _, key := range callSpellings[:4] {
		if b := spelledCall(key); !genaiFindsCall([]byte(b)) && key != `"function_call":` {
			t.Errorf("go-genai finds no call in %s", b)
		}
	}
	if !genaiFindsCall([]byte("[" + spelledCall(`"FunctionCall":`) + "]")) {
		t.Error("no call in an array")
	}
	if genaiFindsCall(bytes.ReplaceAll([]byte(spelledCall(`"functionCall":`)), []byte("functionCall"), []byte("functionCal"))) {
		t.Error("a call without its key")
	}
}

// TestStreamArrayReadsWhatMayHoldACall: the JSON array's reader leaves
// its elements' JSON unchecked (Unchecked), as the SSE splitter does its
// events': an element that may hold a call is read and, invalid, fails
// closed (nothing of the call reaches the app, the array ends in the
// gate's error); one that cannot passes as it came, as plain Caddy would
// pass it (every reader refuses it).
func TestStreamArrayReadsWhatMayHoldACall(t *testing.T) {
	text := `{"candidates":[{"content":{"parts":[{"text":"Deleting it."}],"role":"model"},"index":0}]}`
	bad := `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"delete_post","args":{"post":7,}}}]}}]}`
	body := []byte("[" + text + ",\r\n" + bad + "]")
	out, _, _ := everySplit(t, streamCase{body: body, framing: JSONArray, err: errAny, secrets: []string{"delete_post"}})
	if !bytes.Contains(out, []byte("Toolgate stopped this response")) {
		t.Fatalf("the app read\n%s", out)
	}
	odd := strings.ReplaceAll(bad, "functionCall", "functionCalls")
	body = []byte("[" + text + ",\r\n" + odd + "]")
	out, _, _ = everySplit(t, streamCase{body: body, framing: JSONArray})
	if !bytes.Equal(out, body) {
		t.Fatalf("the app read\n%s", out)
	}
}

// editedChunks makes a stream of chunks from base by edits, three bytes
// each (what, where, which byte): set, insert or delete one byte.
func editedChunks(base, edits []byte) [][]byte {
	chunks := [][]byte{base}
	c := base
	for i := 0; i+3 <= len(edits); i += 3 {
		next := slices.Clone(c)
		at := int(edits[i+1]) % (len(next) + 1)
		switch edits[i] % 3 {
		case 0:
			if at < len(next) {
				next[at] = edits[i+2]
			}
		case 1:
			next = slices.Insert(next, at, edits[i+2])
		case 2:
			if at < len(next) {
				next = slices.Delete(next, at, at+1)
			}
		}
		chunks = append(chunks, next)
		c = next
	}
	return chunks
}

// checkAfter runs chunks through MayHoldCallAfter as a Stream does (each
// chunk against the last one MayHoldCall said no to) and holds every
// answer to MayHoldCall's.
func checkAfter(t *testing.T, chunks [][]byte) {
	t.Helper()
	var clean []byte
	for i, c := range chunks {
		want := MayHoldCall(c)
		if clean != nil {
			if got := MayHoldCallAfter(clean, c); got != want {
				t.Fatalf("chunk %d %q after %q: MayHoldCallAfter %v, MayHoldCall %v", i, c, clean, got, want)
			}
		}
		if !want {
			clean = c
		}
	}
}

// TestMayHoldCallAfter: searched where a chunk differs from the last clean
// one, a call key is found where an edit completes one near the shared
// bytes (its letters, its quote, the colon after whitespace, past the
// changed bytes), and an escape where an edit changes which backslash
// begins one far from the edit or spells a letter five bytes on.
func TestMayHoldCallAfter(t *testing.T) {
	for _, c := range []struct {
		name   string
		chunks []string
		holds  bool // what MayHoldCall says of the last chunk
	}{
		{"text", []string{`{"candidates":[{"content":{"parts":[{"text":"word1 "}]}}]}`, `{"candidates":[{"content":{"parts":[{"text":"word2 "}]}}]}`, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"a"}}]}}]}`}, true},
		{"a key's last letter", []string{`{"functionCal":{"name":"a"}}`, `{"functionCall":{"name":"a"}}`}, true},
		{"a key's first letter", []string{`{"unctionCall":{"name":"a"}}`, `{"functionCall":{"name":"a"}}`}, true},
		{"a key's closing quote", []string{`{"functionCall" x:{}}`, `{"functionCall"  :{}}`}, true},
		{"the colon after whitespace", []string{`{"functionCall"   x {}}`, `{"functionCall"  x  :{}}`, `{"functionCall"    :{}}`}, true},
		{"a colon far after the change", []string{`{"function_Cal_x   ;{}}`, `{"function_Call"   :{}}`}, true},
		{"an underscore", []string{`{"function-call":{}}`, `{"function_call":{}}`}, true},
		{"a key with a rune outside ASCII", []string{`{"xll":{}}`, `{"éll":{}}`}, true},
		{"the pairs of a backslash run", []string{`{"text":"\\\\u0066"}`, `{"text":"\\\\\u0066"}`, `{"text":"\\\u0066"}`}, true},
		{"a backslash run the change ends in", []string{`{"t":"x\\u0066"}`, `{"t":"\\\u0066"}`}, true},
		{"a backslash run before the change", []string{`{"t":"\\\\\\\\u0066"}`, `{"t":"\\\\\\\\u0067"}`}, false},
		{"a letter five bytes on", []string{`{"text":"\u00e9"}`, `{"text":"\u0065"}`, `{"text":"\u006"}`}, true},
		{"an escape's last digit", []string{`{"text":"\u0131"}`, `{"text":"\u0130"}`}, true},
		{"an escape with a capital U", []string{`{"text":"\u00e9"}`, `{"text":"\U00e9"}`}, true},
		{"grown", []string{`{"a":1}`, `{"a":1}{"functionCall":{}}`}, true},
		{"shrunk", []string{`{"a":1,"b":{"functionCal":{}}}`, `{"a":1,"b":{"functionCall":{}}}`, `{"a":1}`, `{"FUNCTIONCALL":1}`}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var chunks [][]byte
			for _, s := range c.chunks {
				chunks = append(chunks, []byte(s))
			}
			checkAfter(t, chunks)
			if last := chunks[len(chunks)-1]; MayHoldCall(last) != c.holds {
				t.Fatalf("MayHoldCall(%q) = %v: the case tests something else", last, !c.holds)
			}
		})
	}
}

// FuzzMayHoldCallAfter holds MayHoldCallAfter to MayHoldCall over a stream
// of chunks made by edits of one.
func FuzzMayHoldCallAfter(f *testing.F) {
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"text":"functionCal"}]}}]}`), []byte{1, 48, 'l', 0, 49, '"', 1, 50, ':'})
	f.Add([]byte(`{"text":"\\\\u0066", "function_cal" x:1}`), []byte{2, 10, 0, 1, 33, 'l', 0, 35, ' '})
	f.Add([]byte(`{"text":"\u00e9"}`), []byte{0, 14, '6', 0, 13, '0', 0, 12, 'U'})
	f.Fuzz(func(t *testing.T, base, edits []byte) {
		checkAfter(t, editedChunks(base, edits))
	})
}

// BenchmarkMayHoldCallAfter is the search a stream's text chunk pays after
// the first: each chunk against the one before it (BenchmarkMayHoldCallText
// is the whole search).
func BenchmarkMayHoldCallAfter(b *testing.B) {
	var chunks [][]byte
	for i := range 200 {
		chunks = append(chunks, []byte(strings.Replace(textChunk, "Berlin", fmt.Sprintf("Berlin%d", i), 1)))
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(chunks[0])))
	for i := 0; b.Loop(); i++ {
		if MayHoldCallAfter(chunks[i%len(chunks)], chunks[(i+1)%len(chunks)]) {
			b.Fatal("a call in a text chunk")
		}
	}
}

// checkLook runs events through a Stream's look and mayHoldCall, as its
// fast path does (each event against the one its Seq keeps), and holds
// every answer to the whole searches: Named over the event, MayHoldCall
// over its data. array: each event is an array element, its own data.
func checkLook(t *testing.T, names []string, events [][]byte, array bool) {
	t.Helper()
	s := NewStream(context.Background(), SSE, io.Discard, nil, holder(nil))
	n := shape.NewNames(names)
	s.GuardWith(n, func([]byte) bool { return true })
	for i, ev := range events {
		data, ok := ev, true
		if !array {
			data, _, ok = sse.Data(ev, nil)
		}
		if !ok {
			continue
		}
		sn, _ := s.look(ev, data, ok)
		if want := n.Named(ev); sn.name != want {
			t.Fatalf("event %d %q: look named %q, Named %q", i, ev, sn.name, want)
		}
		if got, want := s.mayHoldCall(data, sn), MayHoldCall(data); got != want {
			t.Fatalf("event %d %q (data %q) after %q: mayHoldCall %v, MayHoldCall %v", i, ev, data, events[max(i-1, 0)], got, want)
		}
	}
}

// TestStreamLooksAsWhole: a chunk searched where its event differs from
// the one kept finds what the whole searches find, where the events'
// framing differs (another line end, no space after "data:", a second
// data line) and where one data is all of the other's first bytes.
func TestStreamLooksAsWhole(t *testing.T) {
	names := []string{"delete_post"}
	for _, c := range []struct {
		name   string
		events []string
	}{
		{"text then a call", []string{"data: {\"text\":\"word1\"}\r\n\r\n", "data: {\"text\":\"word2\"}\r\n\r\n", "data: {\"functionCall\":{\"name\":\"delete_post\"}}\r\n\r\n"}},
		{"a key's end in the line end", []string{"data: {\"functionCal\":1}\r\n\r\n", "data: {\"functionCall\":1}\n\n"}},
		{"no space after data:", []string{"data: {\"functionCal\":1}\n\n", "data:{\"functionCall\":1}\n\n"}},
		{"one data all the other's first bytes", []string{"data: {\"functionCall\"\n\n", "data: {\"functionCall\"\n:\n\n", "data: {\"functionCall\":\n\n"}},
		{"two data lines", []string{"data: {\"functionCal\"\n\n", "data: {\"functionCal\"\ndata: l\":1}\n\n", "data: {\"functionCal\"\n\n", "data: {\"functionCall\":1}\n\n"}},
		{"a name across the data's end", []string{"data: delete_pos\n\n", "data: delete_post\n\n"}},
		{"a call key in the bytes two events share", []string{"data: {\"text\":\"a\"}\n\n", "data: {\"functionCall\":1}\n\n", "data: {\"functionCall\":2}\n\n"}},
		{"a name in the bytes two events share", []string{"data: {\"text\":\"a\"}\n\n", "data: {\"text\":\"delete_post, then many other words: 1\"}\n\n", "data: {\"text\":\"delete_post, then many other words: 2\"}\n\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var events [][]byte
			for _, e := range c.events {
				events = append(events, []byte(e))
			}
			checkLook(t, names, events, false)
			checkLook(t, names, events, true)
		})
	}
}

// FuzzStreamLooksAsWhole holds a Stream's search of each chunk where its
// event differs from the one kept to the whole searches, over streams of
// SSE events (framing included) and array elements made by edits of one.
func FuzzStreamLooksAsWhole(f *testing.F) {
	f.Add("delete_post", []byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"functionCal\"}]}}]}\r\n\r\n"), []byte{1, 70, 'l', 0, 71, '"', 1, 72, ':'}, false)
	f.Add("delete_post,a", []byte("data: {\"functionCal\":1}\n\n"), []byte{2, 5, 0, 1, 18, 'l', 0, 25, '\r'}, false)
	f.Add("delete_post", []byte(`{"text":"\\\\u0066", "function_cal" x:1}`), []byte{2, 10, 0, 1, 33, 'l', 0, 35, ' '}, true)
	f.Fuzz(func(t *testing.T, list string, base, edits []byte, array bool) {
		checkLook(t, strings.Split(list, ","), editedChunks(base, edits), array)
	})
}
