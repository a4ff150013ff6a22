package actions

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRelease sends releases to an app on loopback, eight at a
// time as eight answerers would, on a fresh connection each (as releases
// went before they reused connections) and on kept-alive ones, in the
// same run. cpu-µs/op is this process's CPU (the gate's client and the
// app together) per release; conns/op the connections the app accepted
// per release.
//
//	go test ./actions -run '^$' -bench Release -benchtime 5000x -count 5
func BenchmarkRelease(b *testing.B) {
	for _, mode := range []string{"fresh", "reused"} {
		b.Run(mode, func(b *testing.B) {
			var mu sync.Mutex
			conns := 0
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"ok":true}`)
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					mu.Lock()
					conns++
					mu.Unlock()
				}
			}
			srv.Start()
			defer srv.Close()
			c := &Client{Secret: []byte("k")}
			_, rel := c.clients()
			if mode == "fresh" {
				rel.Transport.(*http.Transport).DisableKeepAlives = true
			}
			defer rel.CloseIdleConnections()
			args := []byte(`{"post":7,"reason":"spam"}`)
			work := make(chan int)
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for i := range work {
						resp, err := c.Run(context.Background(), "DELETE", srv.URL+"/posts/7", nil, args, Caller{Person: "ana", Tenant: "acme"}, "h"+strconv.Itoa(i))
						if err != nil || resp.Status != 200 {
							b.Error(resp.Status, err)
						}
					}
				})
			}
			cpu := processCPU()
			start := time.Now()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				work <- i
			}
			close(work)
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "releases/s")
			b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
			mu.Lock()
			b.ReportMetric(float64(conns)/float64(b.N), "conns/op")
			mu.Unlock()
		})
	}
}

// processCPU is the user and system CPU this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
