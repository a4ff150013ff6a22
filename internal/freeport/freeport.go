// Package freeport hands tests loopback ports that nothing listens on.
package freeport

import (
	"net"
	"sync"
	"testing"
)

var (
	mu     sync.Mutex
	handed = map[int]bool{}
)

// Get returns a loopback TCP port that is free now and that this process
// has not handed out before. The kernel may give a port that was just
// closed to the next listener, so two calls in a row can return the same
// number (CI once built a Caddyfile with two sites on one port); the
// port is only reserved against this process's own callers, not against
// other processes.
func Get(tb testing.TB) int {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("finding a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handed[port] {
			handed[port] = true
			return port
		}
	}
	tb.Fatal("finding a free port: the kernel kept giving ports already handed out")
	return 0
}
