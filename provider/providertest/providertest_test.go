package providertest

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/toolgate/toolgate/provider"
)

var ctx = context.Background()

// TestHolderJudgesByName: a passed call passes, a refused one is refused
// by its id with its content, another inspected one is held with the
// text and the step parsed from it; the Hold is recorded as asked.
func TestHolderJudgesByName(t *testing.T) {
	h := NewHolder("delete_post").Passing("get_weather").Refusing("send_email", "no")
	for name, want := range map[string]bool{"delete_post": true, "get_weather": true, "send_email": true, "other": false} {
		if h.Gated(name) != want {
			t.Errorf("Gated(%q) = %v", name, !want)
		}
	}
	if h.Blocks("get_weather") || !h.Blocks("send_email") || !h.Blocks("delete_post") || h.Blocks("other") {
		t.Error("Blocks is not inspected and not passed")
	}
	calls := []provider.Call{{ID: "a", Name: "get_weather"}, {ID: "b", Name: "send_email"}, {ID: "c", Name: "delete_post"}}
	kept := provider.Kept{ResponseID: "resp_1"}
	v := h.Hold(ctx, calls, []byte(`{"role":"assistant"}`), kept)
	want := provider.Verdict{Text: WaitText, Step: Step, Pass: []bool{true, false, false}, Refusals: []provider.Refusal{{CallID: "b", Content: "no"}}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("verdict = %+v, want %+v", v, want)
	}
	fates, _, refused, _ := v.Fates(calls)
	if !refused || !reflect.DeepEqual(fates, []provider.Fate{provider.Passed, provider.Refused, provider.Held}) {
		t.Errorf("fates = %v", fates)
	}
	holds := h.Holds()
	if len(holds) != 1 || !reflect.DeepEqual(holds[0].Calls, calls) || string(holds[0].Message) != `{"role":"assistant"}` || holds[0].Kept != kept {
		t.Errorf("holds = %+v", holds)
	}
}

// TestHolderWithoutHeldCallHasNoText: passed and refused calls alone
// get neither text nor step.
func TestHolderWithoutHeldCallHasNoText(t *testing.T) {
	v := NewHolder().Passing("a").Refusing("b", "no").Hold(ctx, []provider.Call{{ID: "1", Name: "a"}, {ID: "2", Name: "b"}}, nil, provider.Kept{})
	if v.Text != "" || v.Step != "" {
		t.Errorf("verdict = %+v", v)
	}
}

// TestHolderSayingSetsStep: the step is what follows the text's last /h/.
func TestHolderSayingSetsStep(t *testing.T) {
	v := NewHolder("x").Saying("see https://a/h/one and https://b/h/two").Hold(ctx, []provider.Call{{Name: "x"}}, nil, provider.Kept{})
	if v.Step != "two" {
		t.Errorf("step = %q", v.Step)
	}
	if v = NewHolder("x").Saying("").Hold(ctx, []provider.Call{{Name: "x"}}, nil, provider.Kept{}); v.Text != "" || v.Step != "" {
		t.Errorf("silent verdict = %+v", v)
	}
}

// TestHolderByPosition: every tool is inspected and each call judged by
// its place; a call past the fates is held; what the watched buffer held
// is recorded.
func TestHolderByPosition(t *testing.T) {
	var dst bytes.Buffer
	dst.WriteString("before")
	h := NewHolder().GatingAll().ByPosition(provider.Refused, provider.Passed).Watching(&dst)
	if !h.Gated("anything") {
		t.Error("GatingAll does not gate every tool")
	}
	v := h.Hold(ctx, []provider.Call{{ID: "1", Name: "r"}, {ID: "2", Name: "p"}, {ID: "3", Name: "h"}}, nil, provider.Kept{})
	want := provider.Verdict{Text: WaitText, Step: Step, Pass: []bool{false, true, false}, Refusals: []provider.Refusal{{CallID: "1", Content: "Refused: r needs a reason."}}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("verdict = %+v, want %+v", v, want)
	}
	if b := h.Holds()[0].Before; b != "before" {
		t.Errorf("before = %q", b)
	}
}

// TestRestorerAnswersKnownSteps: a known step gives its history, an
// unknown one nothing; both questions are recorded.
func TestRestorerAnswersKnownSteps(t *testing.T) {
	r := &Restorer{Steps: map[string]provider.Restored{Step: {Message: []byte("m")}}}
	if res, ok := r.Restore(ctx, Step, true); !ok || string(res.Message) != "m" {
		t.Errorf("known step: %+v %v", res, ok)
	}
	if _, ok := r.Restore(ctx, "unknown", false); ok {
		t.Error("unknown step restored")
	}
	if got := r.Asked(); !reflect.DeepEqual(got, []RestoreCall{{Step, true}, {"unknown", false}}) {
		t.Errorf("asked = %+v", got)
	}
}

// TestEventsCutsAtBlankLines: each event keeps its blank line, a last
// event without one is kept whole.
func TestEventsCutsAtBlankLines(t *testing.T) {
	got := Events([]byte("data: a\n\nevent: x\r\ndata: b\r\n\r\ndata: c"))
	var s []string
	for _, e := range got {
		s = append(s, string(e))
	}
	if want := []string{"data: a\n\n", "event: x\r\ndata: b\r\n\r\n", "data: c"}; !reflect.DeepEqual(s, want) {
		t.Errorf("events = %q, want %q", s, want)
	}
}

// TestPassedAsRead: equal bytes pass; other bytes pass only when the input
// holds a CR or a BOM and every reader reads the same events.
func TestPassedAsRead(t *testing.T) {
	in := []byte("data: a\n\n")
	if !PassedAsRead(in, in) || PassedAsRead(in, []byte("data: b\n\n")) || PassedAsRead(in, []byte("data:a\n\n")) {
		t.Error("without a CR only equal bytes pass")
	}
	for _, v := range CRVariants(in) {
		if !PassedAsRead(v, in) {
			t.Errorf("%q read as %q: not passed", v, in)
		}
		if PassedAsRead(v, []byte("data: b\n\n")) {
			t.Errorf("%q read as other events: passed", v)
		}
	}
}
