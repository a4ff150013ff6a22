package gate

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

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
