package interceptor

// The few test helpers of provider/chat's tests the interceptor's tests
// copy, for driving the Chat adapter through the ResponseWriter: the runner
// (rewriteStream calls the adapter, which chattest may not import), the
// fixture reader (its path is relative to this folder) and the fuzz
// targets' policy. The stream builders and readers are
// provider/chat/chattest's; the fakes are provider/providertest's.

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/chat"
	"github.com/toolgate/toolgate/provider/providertest"
)

const (
	testLink = providertest.Link
	testStep = providertest.Step
	waitText = providertest.WaitText
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", "openai-chat", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rewriteStream(in []byte, h provider.Holder, sizes ...int) (out []byte, flushes int, err error) {
	return providertest.Rewrite(func(dst io.Writer, flush func() error) provider.Stream {
		return chat.Chat{}.NewStream(context.Background(), dst, flush, h)
	}, in, sizes...)
}

func fuzzHolder() *providertest.Holder {
	return providertest.NewHolder("GetWeatherArgs", "delete_post").Passing("get_weather").Refusing("get_stock_price", "refused: ticker (a string)")
}
