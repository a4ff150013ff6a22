package interceptor

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/provider/providertest"
	responsesadapter "github.com/toolgate/toolgate/provider/responses"
	"github.com/toolgate/toolgate/provider/responses/responsestest"
	"github.com/toolgate/toolgate/wire/sse"
)

// respRunTurn drives a ResponseWriter with the Responses adapter as the
// Caddy handler does, and returns the follow-up requests it was given.
func respRunTurn(t *testing.T, h provider.Holder, request string, responses ...upstream) (rec *recorder, requests []string, closeErr error) {
	t.Helper()
	rec = newRecorder()
	rw := Wrap(rec, responsesadapter.Responses{}, context.Background(), h, 0)
	rw.SetRequest([]byte(request))
	for i, r := range responses {
		if i > 0 {
			next, ok := rw.Continuation()
			if !ok {
				t.Fatalf("no continuation before response %d", i)
			}
			requests = append(requests, string(next))
			rw.Continue()
		}
		if r.status == 0 {
			continue
		}
		rw.Header().Set("Content-Type", r.contentType)
		rw.WriteHeader(r.status)
		for p := []byte(r.body); len(p) > 0; p = p[min(89, len(p)):] {
			if _, err := rw.Write(p[:min(89, len(p))]); err != nil {
				t.Fatalf("response %d: Write: %v", i, err)
			}
		}
	}
	if _, ok := rw.Continuation(); ok && len(responses) > 0 {
		requests = append(requests, "(a further follow-up was offered)")
	}
	return rec, requests, rw.Close()
}

const (
	respRequest     = `{"model":"gpt-5.1","stream":true,"input":"Send the Q3 report","tools":[{"type":"function","name":"send_email","parameters":{"type":"object"}}]}`
	respRefusedArgs = `{"subject":"Q3 report"}`
)

// refusingResp is a first response: text, then a refused send_email call.
func refusingResp() *responsestest.Syn {
	return responsestest.NewSyn().Text("msg_1", "Sure.").Fn("ref", "send_email", respRefusedArgs)
}

func refusingHolder() *providertest.Holder {
	return providertest.NewHolder().Refusing("send_email", refusal)
}

func checkNoRefused(t *testing.T, out []byte) {
	t.Helper()
	responsestest.CheckAbsent(t, out, "fc_ref", "call_ref", "send_email", "Q3 report", refusal)
}

func TestResponsesTurnStreamContinues(t *testing.T) {
	first := refusingResp()
	follow := responsestest.NewSynID("resp_U").Text("msg_2", "Who should receive it?")
	rec, reqs, err := respRunTurn(t, refusingHolder(), respRequest, sseUp(first.Completed()+"data: [DONE]\n\n"), sseUp(follow.Completed()))
	if err != nil {
		t.Fatal(err)
	}
	out := rec.Body.Bytes()
	checkNoRefused(t, out)
	d := responsestest.Decode(t, out)
	if d.Final == nil {
		t.Fatal("no terminal event")
	}
	if got := fmt.Sprint(responsestest.OutputSummary(d.Final.Output)); got != "[message message]" {
		t.Errorf("output = %s", got)
	}
	if d.Final.OutputText() != "Sure.Who should receive it?" {
		t.Errorf("text = %q", d.Final.OutputText())
	}
	if d.Final.ID != "resp_syn" || d.Final.Usage.TotalTokens != 138 || d.Final.Usage.InputTokens != 90 {
		t.Errorf("id %s, usage %+v", d.Final.ID, d.Final.Usage)
	}
	if n := strings.Count(string(out), "event: response.created"); n != 1 {
		t.Errorf("%d response.created events", n)
	}
	if n := strings.Count(string(out), "data: [DONE]"); n != 1 || !strings.HasSuffix(string(out), "data: [DONE]\n\n") {
		t.Errorf("%d [DONE], or not last", n)
	}
	if len(reqs) != 1 {
		t.Fatalf("requests = %q", reqs)
	}
	// The follow-up: the string input as a user message, the response's
	// items up to the refused call, and its result; every other byte kept.
	req := []byte(reqs[0])
	var kinds []string
	gjson.GetBytes(req, "input").ForEach(func(_, it gjson.Result) bool {
		k := it.Get("type").Str
		if k == "" {
			k = it.Get("role").Str
		}
		kinds = append(kinds, k)
		return true
	})
	if fmt.Sprint(kinds) != "[user message function_call function_call_output]" {
		t.Errorf("input = %v", kinds)
	}
	if o := gjson.GetBytes(req, "input.3"); o.Get("call_id").Str != "call_ref" || o.Get("output").Str != refusal {
		t.Errorf("result = %s", o.Raw)
	}
	if gjson.GetBytes(req, "input.2.arguments").Str != respRefusedArgs || !strings.HasSuffix(reqs[0], `,"tools":[{"type":"function","name":"send_email","parameters":{"type":"object"}}]}`) {
		t.Errorf("follow-up = %s", req)
	}
	api := &responsestest.API{}
	if err := api.Check(req); err != nil {
		t.Errorf("the API would refuse the follow-up: %v", err)
	}
}

func TestResponsesTurnStreamFollowUpShapes(t *testing.T) {
	del := "delete_post"
	for _, tc := range []struct {
		name    string
		request string
		first   *responsestest.Syn
		h       *providertest.Holder
		cont    bool
		input   string // the follow-up's input items, by type (or role)
		prev    string // the follow-up's previous_response_id
		output  string // what the app reads in the end
	}{
		{"reasoning before the refused call", `{"input":[{"role":"user","content":"go"}]}`,
			responsestest.NewSyn().Reasoning("rs_1").Fn("ref", "send_email", respRefusedArgs), refusingHolder(), true,
			"[user reasoning function_call function_call_output]", "", "[reasoning message]"},
		{"held beside refused: the held call waits", `{"input":[{"role":"user","content":"go"}]}`,
			responsestest.NewSyn().Reasoning("rs_1").Fn("held", del, `{"post":7}`).Fn("ref", "send_email", respRefusedArgs), providertest.NewHolder(del).Refusing("send_email", refusal), true,
			"[user reasoning function_call function_call function_call_output function_call_output]", "", "[reasoning message message]"},
		{"passed call before the refused one is left out", `{"input":[{"role":"user","content":"go"}]}`,
			responsestest.NewSyn().Text("msg_1", "Sure.").Fn("pass", "get_post", `{}`).Fn("ref", "send_email", respRefusedArgs), providertest.NewHolder().Passing("get_post").Refusing("send_email", refusal), true,
			"[user message function_call function_call_output]", "", "[message function_call:get_post message]"},
		{"passed call right after reasoning: shown in place", `{"input":[{"role":"user","content":"go"}]}`,
			responsestest.NewSyn().Reasoning("rs_1").Fn("pass", "get_post", `{}`).Fn("ref", "send_email", respRefusedArgs), providertest.NewHolder().Passing("get_post").Refusing("send_email", refusal), false,
			"", "", "[reasoning function_call:get_post message]"},
		{"previous_response_id", `{"previous_response_id":"resp_0","input":[{"role":"user","content":"go"}],"store":true}`,
			refusingResp(), refusingHolder(), true,
			"[function_call_output]", "resp_syn", "[message message]"},
		{"previous_response_id with a held call: shown in place", `{"previous_response_id":"resp_0","input":"go"}`,
			responsestest.NewSyn().Fn("held", del, `{}`).Fn("ref", "send_email", respRefusedArgs), providertest.NewHolder(del).Refusing("send_email", refusal), false,
			"", "", "[message]"},
		{"conversation", `{"conversation":{"id":"conv_1"},"input":"go"}`,
			refusingResp(), refusingHolder(), true,
			"[function_call_output]", "", "[message message]"},
		{"background", `{"background":true,"input":"go"}`,
			refusingResp(), refusingHolder(), false, "", "", "[message message]"},
		{"custom tool", `{"input":"go"}`,
			responsestest.NewSyn().Call("ctc_ref", "call_cref", "send_email", "", "to nobody", true), refusingHolder(), true,
			"[user custom_tool_call custom_tool_call_output]", "", "[message]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &responsestest.API{}
			api.Learn("resp_0", `[]`)
			api.Learn("resp_syn", "["+strings.Join(tc.first.Items, ",")+"]")
			api.Learn("conv_1", "["+strings.Join(tc.first.Items, ",")+"]")
			responses := []upstream{sseUp(tc.first.Completed())}
			if tc.cont {
				responses = append(responses, sseUp(responsestest.NewSynID("resp_U").Text("msg_2", "Who should receive it?").Completed()))
			}
			rec, reqs, err := respRunTurn(t, tc.h, tc.request, responses...)
			if err != nil {
				t.Fatal(err)
			}
			out := rec.Body.Bytes()
			responsestest.CheckAbsent(t, out, "fc_ref", "call_ref", "fc_held", "ctc_ref")
			d := responsestest.Decode(t, out)
			if got := fmt.Sprint(responsestest.OutputSummary(d.Final.Output)); got != tc.output {
				t.Errorf("output = %s, want %s", got, tc.output)
			}
			if !tc.cont {
				if len(reqs) != 0 {
					t.Fatalf("follow-up made: %s", reqs)
				}
				if !strings.Contains(d.Final.OutputText(), refusal) {
					t.Errorf("the refusal is not shown in place: %q", d.Final.OutputText())
				}
				return
			}
			if len(reqs) != 1 {
				t.Fatalf("requests = %q", reqs)
			}
			req := []byte(reqs[0])
			var kinds []string
			gjson.GetBytes(req, "input").ForEach(func(_, it gjson.Result) bool {
				k := it.Get("type").Str
				if k == "" {
					k = it.Get("role").Str
				}
				kinds = append(kinds, k)
				return true
			})
			if fmt.Sprint(kinds) != tc.input {
				t.Errorf("input = %v, want %s", kinds, tc.input)
			}
			if p := gjson.GetBytes(req, "previous_response_id").Str; p != tc.prev {
				t.Errorf("previous_response_id = %q", p)
			}
			if err := api.Check(req); err != nil {
				t.Errorf("the API would refuse the follow-up: %v\n%s", err, req)
			}
			wantID := "resp_syn"
			if tc.prev != "" {
				wantID = "resp_U" // the response whose history answers the refused call
			}
			if d.Final.ID != wantID {
				t.Errorf("final id = %s, want %s", d.Final.ID, wantID)
			}
		})
	}
}

func TestResponsesTurnStreamFollowUpHolds(t *testing.T) {
	// The follow-up holds a call of its own: the message comes after what
	// the app already read, at the next index.
	h := providertest.NewHolder("delete_post").Refusing("send_email", refusal)
	follow := responsestest.NewSynID("resp_U").Text("msg_2", "Then I delete it.").Fn("held", "delete_post", `{"post":7}`)
	rec, reqs, err := respRunTurn(t, h, respRequest, sseUp(refusingResp().Completed()), sseUp(follow.Completed()))
	if err != nil || len(reqs) != 1 {
		t.Fatalf("err %v, requests %q", err, reqs)
	}
	out := rec.Body.Bytes()
	responsestest.CheckAbsent(t, out, "fc_held", "fc_ref")
	d := responsestest.Decode(t, out)
	if got := fmt.Sprint(responsestest.OutputSummary(d.Final.Output)); got != "[message message message]" || responsestest.MessageText(d.Final.Output[2]) != waitText {
		t.Errorf("output = %s %q", got, d.Final.OutputText())
	}
	// The follow-up's Hold gets the follow-up's items up to its call.
	if len(h.Holds()) != 2 || len(gjson.ParseBytes(h.Holds()[1].Message).Array()) != 2 {
		t.Errorf("holds = %d", len(h.Holds()))
	}
}

func TestResponsesTurnRefusedUpToTheLimit(t *testing.T) {
	h := refusingHolder()
	responses := []upstream{sseUp(refusingResp().Completed())}
	for i := range provider.MaxContinuations {
		responses = append(responses, sseUp(responsestest.NewSynID(fmt.Sprint("resp_", i)).Fn(fmt.Sprint("ref", i), "send_email", respRefusedArgs).Completed()))
	}
	rec, reqs, err := respRunTurn(t, h, respRequest, responses...)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != provider.MaxContinuations {
		t.Errorf("%d follow-ups: %q", len(reqs), reqs)
	}
	d := responsestest.Decode(t, rec.Body.Bytes())
	if got := fmt.Sprint(responsestest.OutputSummary(d.Final.Output)); got != "[message message]" || !strings.HasSuffix(d.Final.OutputText(), refusal) {
		t.Errorf("output = %s %q", got, d.Final.OutputText())
	}
	// Each follow-up carries everything before it.
	last := []byte(reqs[len(reqs)-1])
	if n := len(gjson.GetBytes(last, "input").Array()); n != 1+2+2*(provider.MaxContinuations-1)+1 {
		t.Errorf("last follow-up has %d input items: %s", n, last)
	}
	if err := (&responsestest.API{}).Check(last); err != nil {
		t.Errorf("the API would refuse: %v", err)
	}
}

func TestResponsesTurnStreamFollowUpFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		up   upstream
		text string
	}{
		{"http 500", upstream{500, "application/json", `{"error":{"message":"boom"}}`}, "Toolgate could not continue: the provider answered HTTP 500."},
		{"no answer", upstream{}, "Toolgate could not continue: the provider did not answer."},
		{"ends early", sseUp(responsestest.NewSynID("resp_U").Text("msg_2", "Who").B.String()), "Toolgate could not continue: the provider's answer ended early."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, _, err := respRunTurn(t, refusingHolder(), respRequest, sseUp(refusingResp().Completed()+"data: [DONE]\n\n"), tc.up)
			if err != nil {
				t.Fatal(err)
			}
			out := rec.Body.Bytes()
			checkNoRefused(t, out)
			d := responsestest.Decode(t, out)
			if d.Final == nil {
				t.Fatal("no terminal event")
			}
			if !strings.HasSuffix(d.Final.OutputText(), tc.text) {
				t.Errorf("text = %q", d.Final.OutputText())
			}
			if !strings.HasSuffix(string(out), "data: [DONE]\n\n") {
				t.Error("no [DONE] at the end")
			}
		})
	}
}

func TestResponsesTurnNoFollowUpSent(t *testing.T) {
	rec := newRecorder()
	rw := Wrap(rec, responsesadapter.Responses{}, context.Background(), refusingHolder(), 0)
	rw.SetRequest([]byte(respRequest))
	rw.Header().Set("Content-Type", "text/event-stream")
	rw.WriteHeader(200)
	if _, err := rw.Write([]byte(refusingResp().Completed())); err != nil {
		t.Fatal(err)
	}
	if _, ok := rw.Continuation(); !ok {
		t.Fatal("no continuation offered")
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	d := responsestest.Decode(t, rec.Body.Bytes())
	if got := fmt.Sprint(responsestest.OutputSummary(d.Final.Output)); got != "[message message]" || d.Final.OutputText() != "Sure."+refusal {
		t.Errorf("output = %s %q", got, d.Final.OutputText())
	}
}

func TestResponsesTurnJSONContinues(t *testing.T) {
	first := refusingResp()
	follow := responsestest.NewSynID("resp_U").Text("msg_2", "Who should receive it?")
	for _, tc := range []struct {
		name, request, id string
	}{
		{"input list", `{"input":"Send the Q3 report"}`, "resp_syn"},
		{"previous_response_id", `{"input":"Send it","previous_response_id":"resp_0"}`, "resp_U"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, reqs, err := respRunTurn(t, refusingHolder(), tc.request, jsonUp(first.JSON()), jsonUp(follow.JSON()))
			if err != nil {
				t.Fatal(err)
			}
			body := rec.Body.Bytes()
			checkNoRefused(t, body)
			if len(reqs) != 1 {
				t.Fatalf("requests %q", reqs)
			}
			r := gjson.ParseBytes(body)
			var ids []string
			r.Get("output").ForEach(func(_, it gjson.Result) bool { ids = append(ids, it.Get("id").Str); return true })
			if fmt.Sprint(ids) != "[msg_1 msg_2]" || r.Get("usage.total_tokens").Int() != 138 || r.Get("id").Str != tc.id {
				t.Errorf("answer = %s", body)
			}
			if rec.Header().Get("Content-Length") != fmt.Sprint(len(body)) {
				t.Errorf("Content-Length %s for %d bytes", rec.Header().Get("Content-Length"), len(body))
			}
		})
	}

	// No follow-up sent: the refusal is shown in place.
	out, err := responsesadapter.Responses{}.NewTurn(context.Background(), refusingHolder(), []byte(`{"input":"x"}`), 0), error(nil)
	if err = out.JSON([]byte(first.JSON())); err != nil {
		t.Fatal(err)
	}
	body, err := out.Finish()
	if err != nil || !strings.Contains(string(body), refusal) || strings.Contains(string(body), "call_ref") {
		t.Errorf("in place: %v %s", err, body)
	}
}

// FuzzResponsesContinuation fuzzes the follow-up stream of a turn whose
// first response refused a call: no held or refused call reaches the app,
// the answer has at most one terminal event, and splits change nothing.
func FuzzResponsesContinuation(f *testing.F) {
	f.Add([]byte(responsestest.NewSynID("resp_U").Text("msg_2", "Who should receive it?").Completed()), []byte{0})
	for _, s := range respFuzzSeeds() {
		f.Add([]byte(strings.ReplaceAll(s, "resp_syn", "resp_U")), []byte{5, 1})
	}
	f.Add(respFixture(f, "reasoning-encrypted-step1.sse"), []byte{40})
	first := []byte(refusingResp().Completed())
	run := func(t *testing.T, follow []byte, sizes []int) ([]byte, *providertest.Holder, error) {
		h := respFuzzHolder()
		out, err := followUpRun(t, responsesadapter.Responses{}, h, []byte(respRequest), first, follow, sizes)
		return out, h, err
	}
	f.Fuzz(func(t *testing.T, follow []byte, splits []byte) {
		whole, h, werr := run(t, follow, nil)
		split, _, serr := run(t, follow, respSplits(splits))
		if !bytes.Equal(whole, split) || (werr == nil) != (serr == nil) {
			t.Fatalf("splits changed the output:\n%q (%v)\n%q (%v)", whole, werr, split, serr)
		}
		if responsestest.Leaks(h, append(append([]byte(nil), first...), follow...), whole) || bytes.Contains(whole, []byte("call_ref")) {
			t.Fatalf("a held or refused call got through:\n%q", whole)
		}
		terminals := 0
		for _, ev := range providertest.Events(whole) {
			if data, _, ok := sse.Data(ev, nil); ok {
				switch gjson.GetBytes(data, "type").Str {
				case "response.completed", "response.incomplete", "response.failed":
					terminals++
				}
			}
		}
		if terminals > 1 {
			t.Fatalf("%d terminal events:\n%q", terminals, whole)
		}
	})
}
