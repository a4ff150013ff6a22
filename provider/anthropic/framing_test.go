package anthropic

import (
	"testing"

	"github.com/toolgate/toolgate/provider/anthropic/anthropictest"
	"github.com/toolgate/toolgate/provider/providertest"
)

func TestAnthropicStreamReadsEveryLineEnd(t *testing.T) {
	for name, hidden := range providertest.HideVariants(anthropictest.ToolEvs(1, "toolu_1", "delete_post", `{"post":`, `7}`)) {
		t.Run(name, func(t *testing.T) {
			in := anthropictest.Start("msg_1") + anthropictest.TextBlockEvs(0, "Deleting.") + hidden + anthropictest.End("tool_use", 9)
			for _, size := range []int{len(in), 1, 7} {
				h := providertest.NewHolder("delete_post")
				out, _, err := anthRewrite([]byte(in), h, size)
				if err != nil {
					t.Fatalf("pieces of %d: %v", size, err)
				}
				if providertest.NodeSees(out, "delete_post") || len(h.Holds()) != 1 {
					t.Fatalf("pieces of %d: the call reached the app (held %d times):\n%s", size, len(h.Holds()), out)
				}
			}
		})
	}
}
