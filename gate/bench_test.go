package gate

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// BenchmarkGateHold is the hold path inside the gate, for a CPU profile:
// a delete_post call (its card built from the record the fake app serves
// over loopback) held for another person each time, on Badger on disk
// (synced writes), so the per-person cap counts but never refuses.
//
//	go test ./gate -run '^$' -bench GateHold -benchtime 2000x -cpuprofile hold.prof
func BenchmarkGateHold(b *testing.B) {
	r := newRig(b, rigOptions{disk: true})
	r.app.SetRecord("/posts/7", `{"title":"Spring meetup"}`)
	cpu := processCPU()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if step, v := r.hold(Person{Owner: "p" + strconv.Itoa(i)}, call(1, 7)); step == "" {
			b.Fatalf("not held: %+v", v)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the user and system CPU this process has used (the gate,
// its store and the fake app together).
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGateAnswer is the answer path inside the gate: the person
// confirms a held delete_post (the claim, the record's re-read, Begin,
// the release to the fake app over loopback, the settle), each hold
// another person's, on Badger on disk. The holds are made before the
// timer starts.
//
//	go test ./gate -run '^$' -bench GateAnswer -benchtime 2000x -cpuprofile answer.prof
func BenchmarkGateAnswer(b *testing.B) {
	r := newRig(b, rigOptions{disk: true})
	r.app.SetRecord("/posts/7", `{"title":"Spring meetup"}`)
	type held struct {
		who        Person
		step, hold string
	}
	holds := make([]held, b.N)
	for i := range holds {
		who := Person{Owner: "p" + strconv.Itoa(i)}
		step, v := r.hold(who, call(1, 7))
		if step == "" {
			b.Fatalf("not held: %+v", v)
		}
		holds[i] = held{who, step, r.step(step)[0].ID}
	}
	ctx := context.Background()
	cpu := processCPU()
	b.ResetTimer()
	for i := range b.N {
		h := holds[i]
		if err := r.gate.AnswerOnly(ctx, h.step, h.hold, h.who, store.AnswerConfirm); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
	if n := len(r.app.Calls()); n != b.N {
		b.Fatalf("the app got %d releases for %d confirmations", n, b.N)
	}
}

// BenchmarkRulesOnTheDecision is what an action's rules add to the
// gate's hold decision on one call (Front.Hold on a complete call of a
// write action, which passes to the app): the same call without rules
// and with three rules on its arguments (the third allows it: every rule
// evaluated), alternated in blocks within one run so that a change in
// the machine's load falls on both. It reports the process's CPU per
// call of each and their difference.
//
//	go test ./gate -run '^$' -bench RulesOnTheDecision -benchtime 200000x -count 6
func BenchmarkRulesOnTheDecision(b *testing.B) {
	const action = `app: Shop
actions:
  refund:
    effect: write
    schema:
      type: object
      properties:
        order: {type: integer}
        amount: {type: number}
        note: {type: string}
      required: [order, amount]
    run:
      url: http://shop.internal/orders/{order}/refund
`
	const rules = `    rules:
      - when: args.amount > 10000
        then: deny
        because: Too much.
      - when: args.note.startsWith("urgent") && args.amount > 500
        then: deny
        because: No urgent refunds.
      - when: args.amount <= 50
        then: allow
`
	r := newRig(b, rigOptions{})
	plain, err := policies.Parse("plain.yaml", []byte(action))
	if err != nil {
		b.Fatal(err)
	}
	ruled, err := policies.Parse("rules.yaml", []byte(action+rules))
	if err != nil {
		b.Fatal(err)
	}
	args := `{"order":123456,"amount":20,"note":"late delivery"}`
	calls := []provider.Call{{ID: "call_r", Type: "function", Name: "refund", Arguments: []byte(args),
		Raw: []byte(`{"id":"call_r","type":"function","function":{"name":"refund","arguments":` + jsonString(args) + `}}`)}}
	message := []byte(`{"role":"assistant","content":null,"tool_calls":[]}`)
	ctx := context.Background()
	who := func() Person { return ana }
	hold := func(p *policies.Policy, n int) time.Duration {
		cpu := processCPU()
		for range n {
			if v := r.gate.Front(p, "policy.yaml", who, "openai-chat").Hold(ctx, calls, message, provider.Kept{}); !v.Pass[0] {
				b.Fatalf("not passed: %+v", v)
			}
		}
		return processCPU() - cpu
	}
	const block = 500
	var without, with time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += block {
		n := min(block, b.N-done)
		without += hold(plain, n)
		with += hold(ruled, n)
	}
	b.StopTimer()
	us := func(d time.Duration) float64 { return float64(d) / 1e3 / float64(b.N) }
	b.ReportMetric(us(without), "plain-cpu-µs/op")
	b.ReportMetric(us(with), "rules-cpu-µs/op")
	b.ReportMetric(us(with-without), "diff-cpu-µs/op")
}
