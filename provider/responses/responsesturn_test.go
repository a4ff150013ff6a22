package responses

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/providertest"
)

// The Holder learns where the provider keeps the response its calls came
// in from Hold's Kept: the response id, the request's conversation (as a
// string or an object), and nothing when the request said store:false.
func TestResponsesHoldIsToldWhereTheResponseIsKept(t *testing.T) {
	const answer = `{"id":"resp_k1","object":"response","status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"delete_post","arguments":"{\"id\":7}","status":"completed"}]}`
	for _, tc := range []struct {
		name, request string
		want          provider.Kept
	}{
		{"stored", `{"input":"x"}`, provider.Kept{ResponseID: "resp_k1"}},
		{"conversation string", `{"input":"x","conversation":"conv_a"}`, provider.Kept{ResponseID: "resp_k1", ConversationID: "conv_a"}},
		{"conversation object", `{"input":"x","conversation":{"id":"conv_b"}}`, provider.Kept{ResponseID: "resp_k1", ConversationID: "conv_b"}},
		{"store false", `{"input":"x","store":false,"conversation":"conv_c"}`, provider.Kept{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := providertest.NewHolder("delete_post")
			turn := Responses{}.NewTurn(context.Background(), h, []byte(tc.request), 0)
			if err := turn.JSON([]byte(answer)); err != nil {
				t.Fatal(err)
			}
			if len(h.Holds()) != 1 || h.Holds()[0].Kept != tc.want {
				t.Fatalf("holds = %+v, want kept %+v", h.Holds(), tc.want)
			}
		})
	}
}
