package responses

import (
	"context"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/providertest"
)

// Two steps in one message (a held call and a refused one, then a held
// call in the model's follow-up): each goes back, in order, with the
// results of its own calls, in a history the provider accepts.

const (
	stepOne  = "firstaaaaaaaaaaaaaaaaaaaaa"
	stepTwo  = "secondaaaaaaaaaaaaaaaaaaaa"
	twoLinks = `Deleting.\n\nWaiting: ` + providertest.Link + stepOne + `\n\nArchiving instead.\n\nWaiting: ` + providertest.Link + stepTwo
)

func TestResponsesRequestRestoresEveryStep(t *testing.T) {
	first := `[{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Deleting."}],"role":"assistant"},` +
		`{"id":"fc_del","type":"function_call","status":"completed","arguments":"{\"post\":7}","call_id":"call_del","name":"delete_post"},` +
		`{"id":"fc_wipe","type":"function_call","status":"completed","arguments":"{}","call_id":"call_wipe","name":"wipe_all"}]`
	second := `[{"id":"msg_2","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Archiving instead."}],"role":"assistant"},` +
		`{"id":"fc_arch","type":"function_call","status":"completed","arguments":"{\"post\":7}","call_id":"call_arch","name":"archive_post"}]`
	r := &providertest.Restorer{Steps: map[string]provider.Restored{
		stepOne: {Message: []byte(first), Results: []provider.Result{{CallID: "call_del", Content: "The person confirmed. Removed."}, {CallID: "call_wipe", Content: "Toolgate refused wipe_all."}}},
		stepTwo: {Message: []byte(second), Results: []provider.Result{{CallID: "call_arch", Content: "The person declined; nothing ran."}}},
	}}
	// The app joined the answer's text into one assistant message.
	body := []byte(`{"model":"gpt-4o","input":[{"role":"user","content":"Clean up post 7."},` +
		`{"role":"assistant","content":"` + twoLinks + `"},{"role":"user","content":"Thanks."}]}`)
	out, err := Responses{}.RewriteRequest(context.Background(), body, providertest.Link, r)
	if err != nil {
		t.Fatal(err)
	}
	want := "user message:msg_1 function_call:fc_del function_call:fc_wipe function_call_output:call_del function_call_output:call_wipe " +
		"message:msg_2 function_call:fc_arch function_call_output:call_arch user"
	if got := strings.Join(inputKinds(out), " "); got != want {
		t.Fatalf("input:\n%s\nwant\n%s", got, want)
	}
}
