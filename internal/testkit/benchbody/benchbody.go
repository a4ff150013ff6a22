// Package benchbody is the bodies the pass-through benchmarks send and
// answer with, in process (e2e) and from outside (e2e/outside), so that
// both measure the same bytes: 2 KB requests with a short history, and
// Gemini's text answer and stream.
package benchbody

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ChatRequest is a 2 KB Chat request with a short history.
func ChatRequest(stream bool) []byte {
	var msgs []string
	for i := 0; len(strings.Join(msgs, ",")) < 1900; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"Message %d: tell me about the spring meetup and what we planned."}`, i))
	}
	return []byte(fmt.Sprintf(`{"model":"gpt-4o","stream":%t,"messages":[%s]}`, stream, strings.Join(msgs, ",")))
}

// GeminiRequest is a 2 KB generateContent request with a short history.
func GeminiRequest() []byte {
	var contents []string
	for i := 0; len(strings.Join(contents, ",")) < 1900; i++ {
		role := "user"
		if i%2 == 1 {
			role = "model"
		}
		contents = append(contents, fmt.Sprintf(`{"role":%q,"parts":[{"text":"Message %d: tell me about the spring meetup and what we planned."}]}`, role, i))
	}
	return []byte(`{"contents":[` + strings.Join(contents, ",") + `],"generationConfig":{"temperature":0.2}}`)
}

// GeminiText is a GenerateContentResponse of one text part; finish adds
// the finishReason and usageMetadata.
func GeminiText(text string, finish bool) []byte {
	quoted, _ := json.Marshal(text)
	b := `{"candidates":[{"content":{"parts":[{"text":` + string(quoted) + `}],"role":"model"}`
	if finish {
		b += `,"finishReason":"STOP"`
	}
	b += `,"index":0}]`
	if finish {
		b += `,"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":300,"totalTokenCount":310}`
	}
	return []byte(b + `,"modelVersion":"gemini-2.5-flash","responseId":"bench"}`)
}

// GeminiAnswer is a 2 KB generateContent text answer.
func GeminiAnswer() []byte {
	return GeminiText(strings.Repeat("The meetup moved to Friday. ", 60), true)
}

// GeminiStream is a 200-event alt=sse text stream in Gemini's CRLF
// framing, the last chunk with the finish and usage.
func GeminiStream() [][]byte {
	var ev [][]byte
	for i := range 200 {
		ev = append(ev, []byte("data: "+string(GeminiText(fmt.Sprintf("word%d ", i), i == 199))+"\r\n\r\n"))
	}
	return ev
}
