package interceptor

// Test helpers copied from provider/chat's tests (chat_test.go,
// chatrequest_test.go) for the interceptor's tests that drive the Chat
// adapter through the ResponseWriter; the fakes are
// provider/providertest's.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/chat"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/wire/sse"
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

func callNames(tc gjson.Result) []string {
	var names []string
	tc.ForEach(func(_, b gjson.Result) bool {
		if n := b.Get("name"); b.IsObject() && n.Type == gjson.String {
			names = append(names, n.Str)
		}
		return true
	})
	return names
}

func fuzzHolder() *providertest.Holder {
	return providertest.NewHolder("GetWeatherArgs", "delete_post").Passing("get_weather").Refusing("get_stock_price", "refused: ticker (a string)")
}

func blockedInStream(h *providertest.Holder, out []byte) bool {
	found := false
	for _, ev := range sse.Parse(out) {
		if !gjson.Valid(ev.Data) {
			continue
		}
		gjson.Get(ev.Data, "choices").ForEach(func(_, ch gjson.Result) bool {
			ch.Get("delta.tool_calls").ForEach(func(_, tc gjson.Result) bool {
				found = found || slices.ContainsFunc(callNames(tc), h.Blocks)
				return true
			})
			found = found || h.Blocks(ch.Get("delta.function_call.name").Str)
			return true
		})
	}
	return found
}

func roles(t *testing.T, body []byte) []string {
	t.Helper()
	if !gjson.ValidBytes(body) {
		t.Fatalf("invalid JSON: %s", body)
	}
	var out []string
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		r := m.Get("role").Str
		if id := m.Get("tool_call_id"); id.Exists() {
			r += ":" + id.Str
		}
		out = append(out, r)
		return true
	})
	return out
}
