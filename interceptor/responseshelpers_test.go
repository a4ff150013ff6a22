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

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/providertest"
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
	"github.com/toolgate/toolgate/provider/responses/responsestest"
	"github.com/toolgate/toolgate/wire/sse"
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

// respLeaks reports whether a rewritten stream (or body) shows the app a
// call h blocks: as an item of an event or of a response's output, or as
// an event of a blocked item (by an item id no other item of in uses).
func respLeaks(h *providertest.Holder, in, out []byte) bool {
	blocked, other := make(map[string]bool), make(map[string]bool)
	visit := func(b []byte, fn func(item gjson.Result)) {
		for _, ev := range providertest.Events(b) {
			data, _, ok := sse.Data(ev, nil)
			if !ok {
				data = ev // a JSON body
			}
			if !gjson.ValidBytes(data) {
				continue
			}
			root := gjson.ParseBytes(data)
			for _, p := range [...]string{"item", "response.output", "output"} {
				v := root.Get(p)
				if v.IsArray() {
					v.ForEach(func(_, it gjson.Result) bool { fn(it); return true })
				} else if v.IsObject() {
					fn(v)
				}
			}
		}
	}
	visit(in, func(it gjson.Result) {
		if id := it.Get("id").Str; id != "" {
			if respBlocks(h, it) {
				blocked[id] = true
			} else {
				other[id] = true
			}
		}
	})
	leak := false
	visit(out, func(it gjson.Result) { leak = leak || respBlocks(h, it) })
	for _, ev := range providertest.Events(out) {
		if data, _, ok := sse.Data(ev, nil); ok && gjson.ValidBytes(data) {
			if id := gjson.GetBytes(data, "item_id").Str; blocked[id] && !other[id] {
				leak = true
			}
		}
	}
	return leak
}

// respBlocks reports whether h keeps a call item from the app.
func respBlocks(h *providertest.Holder, item gjson.Result) bool {
	if !respIsCallType(item.Get("type").Str) {
		return false
	}
	key, ok := respGatedKey(h, item.Get("namespace").Str, item.Get("name").Str)
	return ok && h.Blocks(key)
}

// respIsCallType and respGatedKey are provider/responses' isCallType and
// gatedKey: the item types it inspects, and the policy key a call matches.
func respIsCallType(typ string) bool { return typ == "function_call" || typ == "custom_tool_call" }

func respGatedKey(h provider.Holder, namespace, name string) (string, bool) {
	if namespace != "" {
		if q := namespace + "/" + name; h.Gated(q) {
			return q, true
		}
	}
	if h.Gated(name) {
		return name, true
	}
	return "", false
}
