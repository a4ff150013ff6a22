package anthropic

import (
	"testing"

	"github.com/toolgate/toolgate/provider/providertest"
)

func TestAnthropicStreamReadsEveryLineEnd(t *testing.T) {
	for name, hidden := range providertest.HideVariants(anthToolEvs(1, "toolu_1", "delete_post", `{"post":`, `7}`)) {
		t.Run(name, func(t *testing.T) {
			in := anthStart("msg_1") + anthTextBlockEvs(0, "Deleting.") + hidden + anthEnd("tool_use", 9)
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
