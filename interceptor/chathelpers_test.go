package interceptor

// The few test helpers of provider/chat's tests the interceptor's tests
// copy, for driving the Chat adapter through the ResponseWriter: the runner
// (rewriteStream calls the adapter, which chattest may not import), the
// fixture reader (its path is relative to this folder) and the fuzz
// targets' policy. The stream builders and readers are
// provider/chat/chattest's; the fakes are provider/providertest's.

import (
	"bytes"
	"context"
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
	var buf bytes.Buffer
	s := chat.Chat{}.NewStream(context.Background(), &buf, func() error { flushes++; return nil }, h)
	for i := 0; len(in) > 0; i++ {
		n := len(in)
		if len(sizes) > 0 {
			n = min(sizes[i%len(sizes)], len(in))
		}
		if _, err = s.Write(in[:n]); err != nil {
			break
		}
		in = in[n:]
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return buf.Bytes(), flushes, err
}

func fuzzHolder() *providertest.Holder {
	return providertest.NewHolder("GetWeatherArgs", "delete_post").Passing("get_weather").Refusing("get_stock_price", "refused: ticker (a string)")
}
