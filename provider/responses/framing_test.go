package responses

import (
	"testing"

	"github.com/toolgate/toolgate/provider/providertest"
)

func TestResponsesStreamReadsEveryLineEnd(t *testing.T) {
	syn := newSyn().text("msg_1", "Deleting.")
	head := syn.b.String()
	syn.b.Reset()
	rest := syn.fn("1", "delete_post", `{"post":7}`).completed()
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
