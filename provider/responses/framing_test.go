package responses

import (
	"testing"

	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/provider/responses/responsestest"
)

func TestResponsesStreamReadsEveryLineEnd(t *testing.T) {
	syn := responsestest.NewSyn().Text("msg_1", "Deleting.")
	head := syn.B.String()
	syn.B.Reset()
	rest := syn.Fn("1", "delete_post", `{"post":7}`).Completed()
	for name, hidden := range providertest.HideVariants(rest) {
		t.Run(name, func(t *testing.T) {
			in := head + hidden
			for _, size := range []int{len(in), 1, 7} {
				h := providertest.NewHolder("delete_post")
				out, err := respRewrite([]byte(in), h, size)
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
