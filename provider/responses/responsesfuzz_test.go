package responses

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/provider/responses/responsestest"
	"github.com/toolgate/toolgate/wire/links"
)

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

func respFuzzSeeds() []string {
	return []string{
		responsestest.NewSyn().Text("msg_1", "Sure, deleting it.").Fn("held1", "delete_post", `{"post":7}`).Fn("pass1", "get_post", `{"post":8}`).Text("msg_2", "Done soon.").Completed(),
		responsestest.NewSyn().Reasoning("rs_1").Fn("held1", "delete_post", `{"post":7}`).Fn("ref1", "send_email", `{}`).Completed() + "data: [DONE]\n\n",
		responsestest.NewSyn().Call("ctc_1", "call_c1", "delete_post", "crm", "post 7", true).Fn("free", "lookup", `{}`).End("response.incomplete"),
	}
}

func FuzzResponsesStream(f *testing.F) {
	for _, name := range respSSEFixtures {
		f.Add(respFixture(f, name), []byte{0})
		f.Add(respFixture(f, name), []byte{3, 200, 17})
	}
	for _, s := range respFuzzSeeds() {
		f.Add([]byte(s), []byte{40, 1})
		for _, v := range providertest.CRVariants([]byte(s)) {
			f.Add(v, []byte{7})
		}
	}
	f.Fuzz(func(t *testing.T, in []byte, splits []byte) {
		h := respFuzzHolder()
		whole, werr := respRewrite(in, h)
		split, serr := respRewrite(in, respFuzzHolder(), respSplits(splits)...)
		if !bytes.Equal(whole, split) || (werr == nil) != (serr == nil) {
			t.Fatalf("splits changed the output:\n%q (%v)\n%q (%v)", whole, werr, split, serr)
		}
		if !hasCallBytes(in) && !providertest.PassedAsRead(in, whole) {
			t.Fatalf("a stream without calls changed:\n%q\n%q", in, whole)
		}
		if responsestest.Leaks(h, in, whole) {
			t.Fatalf("a held or refused call got through:\n%q", whole)
		}
	})
}

func FuzzResponsesJSON(f *testing.F) {
	f.Add(respFixture(f, "azure-tool-call.json"))
	for _, s := range respFuzzSeeds() {
		f.Add([]byte(gjson.Get(string(lastData([]byte(s))), "response").Raw))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h := respFuzzHolder()
		out, err := Responses{}.RewriteJSON(context.Background(), body, h)
		if err != nil {
			return
		}
		if !hasCallBytes(body) && !bytes.Equal(out, body) {
			t.Fatal("a body without calls changed")
		}
		if bytes.Equal(out, body) {
			if responsestest.Leaks(h, body, out) && len(h.Holds()) > 0 {
				t.Fatalf("a held or refused call stayed: %s", out)
			}
			return
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("invalid output %q", out)
		}
		gjson.GetBytes(out, "output").ForEach(func(_, it gjson.Result) bool {
			if responsestest.Blocks(h, it) {
				t.Fatalf("a held or refused call got through: %s", out)
			}
			return true
		})
	})
}

func FuzzResponsesRequest(f *testing.F) {
	ref := `{"type":"item_reference","id":"` + SyntheticPrefix + providertest.Step + `"}`
	f.Add([]byte(`{"input":[{"role":"user","content":"go"},` + ref + `,{"role":"user","content":"ok"}]}`))
	f.Add([]byte(`{"input":[{"role":"user","content":"go"},{"role":"assistant","content":"Sure.\n\n` + providertest.WaitText + `"},{"type":"function_call_output","call_id":"call_held","output":"x"}]}`))
	f.Add([]byte(`{"input":[{"role":"user","content":"go"},{"role":"assistant","content":"Sure.\n\n` + providertest.WaitText + `\n\nDone: post 7 is deleted."},{"role":"user","content":"ok"}]}`))
	f.Add([]byte(`{"previous_response_id":"resp_1","input":"Done?"}`))
	f.Add([]byte(`{"conversation":{"id":"conv_1"},"input":[` + ref + `]}`))
	f.Add([]byte(`{"store":false,"input":[{"type":"message","id":"` + SyntheticPrefix + `zzzzzzzzzzzzzzzzzzzzzzzzzz","role":"assistant","content":[]}]}`))
	f.Add([]byte(`{"tools":[{"type":"function","name":"create_post","parameters":{}},{"type":"namespace","name":"crm","tools":[{"type":"function","name":"delete_contact"}]}]}`))
	stored := `[{"id":"rs_1","type":"reasoning","summary":[]},{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Sure."}]},{"id":"fc_held","type":"function_call","call_id":"call_held","name":"delete_post","arguments":"{}"}]`
	res := provider.Restored{Message: []byte(stored), Results: []provider.Result{{CallID: "call_held", Content: respConfirmed}}}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := &stateRestorer{
			Restorer:   &providertest.Restorer{Steps: map[string]provider.Restored{providertest.Step: res}},
			byResponse: map[string]provider.Restored{"resp_1": res, "conv_1": res},
		}
		out, err := Responses{}.RewriteRequest(context.Background(), body, providertest.Link, r)
		if err == nil {
			quiet := !links.Has(body, providertest.Link) && !bytes.Contains(body, synthPrefix) && !bytes.Contains(body, prevKey) && !bytes.Contains(body, convKey)
			if quiet && !bytes.Equal(out, body) {
				t.Fatal("a body without anything to restore changed")
			}
			if !bytes.Equal(out, body) {
				if !gjson.ValidBytes(out) {
					t.Fatalf("invalid output %q", out)
				}
				gjson.GetBytes(out, "input").ForEach(func(_, it gjson.Result) bool {
					if strings.HasPrefix(it.Get("id").Str, SyntheticPrefix) {
						t.Fatalf("a synthetic item is left: %s", out)
					}
					return true
				})
			}
		}
		a := &respAsk{}
		out, err = Responses{}.RewriteTools(body, a.rewrite)
		if err != nil {
			return
		}
		if !bytes.Contains(body, toolsKey) && !bytes.Equal(out, body) {
			t.Fatal("a body without tools changed")
		}
		if !bytes.Equal(out, body) && !gjson.ValidBytes(out) {
			t.Fatalf("invalid tools output %q", out)
		}
	})
}

// respTextStream is a text answer of n deltas, shaped as the recorded ones.
func respTextStream(n int) []byte {
	s := responsestest.NewSyn()
	var words []string
	for i := range n {
		words = append(words, fmt.Sprintf("word%d", i))
	}
	return []byte(s.Text("msg_01830d662ab3856501693c32183a488190a612c410a0a39823", strings.Join(words, " ")).Completed())
}

func benchRespStream(b *testing.B, in []byte, h provider.Holder) {
	evs := providertest.Events(in)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		s := Responses{}.NewStream(context.Background(), io.Discard, func() error { return nil }, h)
		for _, ev := range evs {
			if _, err := s.Write(ev); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResponsesStreamText200 is the pass-through path: a text answer,
// one event per Write, as a proxy copies it.
func BenchmarkResponsesStreamText200(b *testing.B) {
	benchRespStream(b, respTextStream(200), providertest.NewHolder("delete_post"))
}

// BenchmarkResponsesStreamReasoningPassed is the recorded reasoning and
// call stream, its call not gated.
func BenchmarkResponsesStreamReasoningPassed(b *testing.B) {
	benchRespStream(b, respFixture(b, "reasoning-encrypted-step1.sse"), providertest.NewHolder("delete_post"))
}

// BenchmarkResponsesStreamReasoningHeld is the same stream with the call
// held.
func BenchmarkResponsesStreamReasoningHeld(b *testing.B) {
	benchRespStream(b, respFixture(b, "reasoning-encrypted-step1.sse"), providertest.NewHolder("calculator"))
}

func BenchmarkResponsesJSON(b *testing.B) {
	text := gjson.Get(string(lastData(respTextStream(300))), "response").Raw
	for _, tc := range []struct{ name, body string }{
		{"text", text},
		{"non-gated-call", string(respFixture(b, "azure-tool-call.json"))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := []byte(tc.body)
			h := providertest.NewHolder("delete_post")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				out, err := Responses{}.RewriteJSON(context.Background(), body, h)
				if err != nil || len(out) != len(body) {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkResponsesRequestWithoutLink(b *testing.B) {
	body := []byte(`{"model":"gpt-5.1","instructions":"` + strings.Repeat("Be brief. ", 200) + `","input":[{"role":"user","content":"hi"}],"previous_response_id":"resp_1"}`)
	plain := restorer()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Responses{}).RewriteRequest(context.Background(), body, providertest.Link, plain); err != nil {
			b.Fatal(err)
		}
	}
}
