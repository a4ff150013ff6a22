package chat

import (
	"testing"

	"github.com/toolgate/toolgate/provider/chat/chattest"
	"github.com/toolgate/toolgate/provider/providertest"
)

func TestChatStreamReadsEveryLineEnd(t *testing.T) {
	call := `{"index":0,"id":"call_1","type":"function","function":{"name":"delete_post","arguments":"{\"post\":7}"}}`
	for name, hidden := range providertest.HideVariants(chattest.Chunk(chattest.DeltaChoice(0, chattest.ToolDelta(call))) + chattest.Chunk(chattest.FinishChoice(0, "tool_calls"))) {
		t.Run(name, func(t *testing.T) {
			in := chattest.Chunk(chattest.DeltaChoice(0, `{"role":"assistant","content":""}`)) + hidden + "data: [DONE]\n\n"
			for _, size := range []int{len(in), 1, 7} {
				h := providertest.NewHolder("delete_post")
				out, _, err := rewriteStream([]byte(in), h, size)
				if err != nil {
					t.Fatalf("pieces of %d: %v", size, err)
				}
				if providertest.NodeSees(out, "delete_post") || len(h.Holds()) != 1 || !providertest.NodeSees(out, "Waiting for your confirmation") {
					t.Fatalf("pieces of %d: the call reached the app (held %d times):\n%s", size, len(h.Holds()), out)
				}
			}
		})
	}
}
