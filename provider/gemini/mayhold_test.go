package gemini

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

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
