package interceptor

// Test helpers copied from provider/responses' tests (responses_test.go,
// responsesrequest_test.go) for the interceptor's tests that drive the
// Responses adapter through the ResponseWriter: its turn
// (responsesturn_test.go), the resumed answers, the guard. The synthetic
// streams (Syn) and readers are provider/responses/responsestest's.

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/providertest"
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
	"github.com/toolgate/toolgate/provider/responses/responsestest"
)

// respRewrite runs in through a Responses stream, written in pieces of the
// given sizes (cycled; all at once if none), and returns what came out.
func respRewrite(in []byte, h provider.Holder, sizes ...int) (out []byte, err error) {
	out, _, err = providertest.Rewrite(func(dst io.Writer, flush func() error) provider.Stream {
		return responsesadapter.Responses{}.NewStream(context.Background(), dst, flush, h)
	}, in, sizes...)
	return out, err
}

func respFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", "openai-responses", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func respFuzzSeeds() []string {
	return []string{
		responsestest.NewSyn().Text("msg_1", "Sure, deleting it.").Fn("held1", "delete_post", `{"post":7}`).Fn("pass1", "get_post", `{"post":8}`).Text("msg_2", "Done soon.").Completed(),
		responsestest.NewSyn().Reasoning("rs_1").Fn("held1", "delete_post", `{"post":7}`).Fn("ref1", "send_email", `{}`).Completed() + "data: [DONE]\n\n",
		responsestest.NewSyn().Call("ctc_1", "call_c1", "delete_post", "crm", "post 7", true).Fn("free", "lookup", `{}`).End("response.incomplete"),
	}
}

// respFuzzHolder holds delete_post, weather and calculator, passes get_post
// after inspection and refuses send_email.
func respFuzzHolder() *providertest.Holder {
	return providertest.NewHolder("delete_post", "weather", "calculator").Passing("get_post").Refusing("send_email", refusal)
}

func respSplits(splits []byte) []int {
	sizes := make([]int, len(splits))
	for i, b := range splits {
		sizes[i] = int(b) + 1
	}
	return sizes
}
