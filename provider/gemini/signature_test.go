package gemini

import (
	"context"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/gemini/geminitest"
)

// TestHoldingTheSignedCallKeepsEveryHistoryValid follows the decision on
// the thoughtSignature of a parallel set (see Rewrite) through every
// history that can reach Gemini 3, with the fake's strict checker: the
// first (signed) call held, the second passed.
//
//   - The app's own history (the rewritten content and its answer to the
//     passed call, as sent if nothing restored it): the call it kept
//     carries the set's signature, so Gemini 3 accepts it.
//   - The restored history: the stored content verbatim, the signature on
//     the held call where the model put it, a response per call in order.
//   - The continuation of a refused first call: the call sent back is the
//     other one, carrying the signature.
func TestHoldingTheSignedCallKeepsEveryHistoryValid(t *testing.T) {
	const gemini3 = "/v1beta/models/gemini-3-flash-preview:"
	resp := read(t, "parallel-function-calls.json")
	// The recording is Gemini 2.5's; Gemini 3 signs the same way.
	resp, err := sjson.SetBytes(resp, "modelVersion", "gemini-3-flash-preview")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := Content(resp, 0)
	if err != nil {
		t.Fatal(err)
	}
	question := `{"role":"user","parts":[{"text":"What's the weather in Berlin and the best language to learn?"}]}`
	answer := `{"role":"user","parts":[{"functionResponse":{"name":"best_language_to_learn","response":{"output":"Ruby"}}}]}`

	app := appContent(t, resp, []Fate{Held, Passed})
	asSent := request(question, app, answer)
	if err := geminitest.Check(gemini3, asSent); err != nil {
		// The waiting text is no call: one call, one response.
		t.Fatalf("the app's own history: %v", err)
	}
	// Without the move, Gemini 3 would refuse it.
	unsigned, err := sjson.DeleteBytes(asSent, "contents.1.parts.1.thoughtSignature")
	if err != nil {
		t.Fatal(err)
	}
	if err := geminitest.Check(gemini3, unsigned); err == nil {
		t.Fatal("the checker took a Gemini 3 turn without a signature")
	}

	r := &restorer{step: step, r: provider.Restored{Message: stored, Results: []provider.Result{{CallID: "gemini-position-0", Content: "The person confirmed. 15°C."}}}}
	restored, err := RewriteRequest(context.Background(), asSent, testLinks{prefix}, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := geminitest.Check(gemini3, restored); err != nil {
		t.Fatalf("the restored history: %v", err)
	}
	m := gjson.GetBytes(restored, "contents.1.parts")
	if m.Get("0.thoughtSignature").Str != gjson.GetBytes(resp, "candidates.0.content.parts.0.thoughtSignature").Str || m.Get("1.thoughtSignature").Exists() {
		t.Fatalf("the signature is not where the model put it: %s", m.Raw)
	}

	calls, _ := Calls(resp)
	cont, err := Continuation(request(question), stored, calls, []Fate{Refused, Held}, []string{"Refused: no.", ""})
	if err != nil {
		t.Fatal(err)
	}
	// The follow-up holds only the refused call: the held one is not sent.
	if n := gjson.GetBytes(cont, "contents.1.parts.#").Int(); n != 1 {
		t.Fatalf("%d parts", n)
	}
	if err := geminitest.Check(gemini3, cont); err != nil {
		t.Fatalf("the continuation: %v", err)
	}
	cont, err = Continuation(request(question), stored, calls, []Fate{Held, Refused}, []string{"", "Refused: no."})
	if err != nil {
		t.Fatal(err)
	}
	if err := geminitest.Check(gemini3, cont); err != nil {
		t.Fatalf("the continuation of the unsigned call: %v", err)
	}
}
