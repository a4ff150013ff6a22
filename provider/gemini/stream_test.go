package gemini

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/wire/sse"
)

func TestAppendEvent(t *testing.T) {
	if got := string(AppendEvent(nil, []byte(`{"a":`+"\n"+`1}`), "\r\n")); got != "data: {\"a\": 1}\r\n\r\n" {
		t.Fatalf("%q", got)
	}
	evs := sse.Parse(AppendEvent(nil, []byte(`{"t":"x\ny"}`), "\n"))
	if len(evs) != 1 || evs[0].Data != `{"t":"x\ny"}` {
		t.Fatalf("%+v", evs)
	}
	if EOL([]byte("data: {}\r\n\r\n")) != "\r\n" || EOL([]byte("data: {}\n\n")) != "\n" {
		t.Fatal("EOL")
	}
	if string(KeepAlive(SSE, "\r\n")) != "\r\n\r\n" || string(KeepAlive(JSONArray, "")) != "\n" {
		t.Fatal("KeepAlive")
	}
}

func TestWithholdFinish(t *testing.T) {
	g3 := chunks(t, "stream-function-call-gemini3.sse")
	if _, had, empty, err := WithholdFinish(g3[1]); err != nil || !had || !empty {
		t.Fatalf("gemini 3 finish chunk: %v %v %v", had, empty, err)
	}
	one := chunks(t, "stream-function-call.sse")[0]
	out, had, empty, err := WithholdFinish(one)
	if err != nil || !had || empty {
		t.Fatalf("%v %v %v", had, empty, err)
	}
	if gjson.GetBytes(out, "candidates.0.finishReason").Exists() || gjson.GetBytes(out, "candidates.0.finishMessage").Exists() || !gjson.GetBytes(out, "candidates.0.content.parts.0.functionCall").Exists() {
		t.Fatalf("%s", out)
	}
	if out, had, _, _ := WithholdFinish(g3[0]); had || &out[0] != &g3[0][0] {
		t.Fatal("a chunk without a finish changed")
	}
	signed := []byte(`{"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"c2ln"}]},"finishReason":"STOP"}]}`)
	if _, _, empty, _ := WithholdFinish(signed); empty {
		t.Fatal("a signed empty text is not empty: the signature must reach the app")
	}
}

func TestContinueChunk(t *testing.T) {
	first := []byte(`{"candidates":[],"modelVersion":"m1","responseId":"r1"}`)
	c := []byte(`{"candidates":[{"content":{"parts":[{"text":"hi"}]}}],"usageMetadata":{"totalTokenCount":5},"modelVersion":"m2","responseId":"r2"}`)
	out, done, err := ContinueChunk(c, first, `{"totalTokenCount":10,"promptTokenCount":1}`, true)
	if err != nil || !done {
		t.Fatal(err)
	}
	if got := string(out); got != `{"candidates":[{"content":{"parts":[{"text":"\n\nhi"}]}}],"usageMetadata":{"totalTokenCount":15,"promptTokenCount":1},"modelVersion":"m1","responseId":"r1"}` {
		t.Fatal(got)
	}
}
