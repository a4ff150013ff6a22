package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests and benchmarks that need whole processes (several replicas, a
// kill -9, a resident set size) build the binaries once per test run
// into a directory of their own and start them with a Caddyfile each.

var builds struct {
	sync.Mutex
	dir  string
	bins map[string]string // package → binary
}

// binary builds a main package of this module or of its dependencies
// ("./cmd/toolgate", "github.com/caddyserver/caddy/v2/cmd/caddy") once
// per test run and returns the binary's path.
func binary(tb testing.TB, pkg string) string {
	tb.Helper()
	builds.Lock()
	defer builds.Unlock()
	if bin, ok := builds.bins[pkg]; ok {
		return bin
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "toolgate-e2e-bin-")
		if err != nil {
			tb.Fatalf("making the binaries' directory: %v", err)
		}
		builds.dir, builds.bins = dir, map[string]string{}
	}
	bin := filepath.Join(builds.dir, strconv.Itoa(len(builds.bins))+"-"+filepath.Base(pkg))
	target := pkg
	if strings.HasPrefix(pkg, "./") {
		target = "." + pkg // e2e runs in its own directory; the module root is its parent
	}
	out, err := exec.Command("go", "build", "-o", bin, target).CombinedOutput()
	if err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	builds.bins[pkg] = bin
	return bin
}

// TestMain removes the built binaries after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	os.Exit(code)
}

// proc is one Caddy process (toolgate or plain caddy) running a Caddyfile.
type proc struct {
	tb        testing.TB
	name      string
	bin       string
	caddyfile string   // its path
	env       []string // added to the test's environment
	wait      []string // addresses that accept connections once it is up
	log       *lockedBuffer

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// newProc writes the Caddyfile into a directory of the process's own.
func newProc(tb testing.TB, name, bin, caddyfile string, env []string, wait ...string) *proc {
	tb.Helper()
	dir := tb.TempDir()
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(caddyfile), 0o600); err != nil {
		tb.Fatal(err)
	}
	p := &proc{tb: tb, name: name, bin: bin, caddyfile: path, env: env, wait: wait, log: &lockedBuffer{}}
	tb.Cleanup(func() {
		if p.running() {
			p.kill()
		}
		if tb.Failed() {
			tb.Logf("%s's log:\n%s", name, p.log.String())
		}
	})
	return p
}

// start starts the process and waits until every address it serves
// accepts connections (a minute at most). It may run on any goroutine.
func (p *proc) start() error {
	cmd := exec.Command(p.bin, "run", "--config", p.caddyfile, "--adapter", "caddyfile")
	cmd.Env = append(append(os.Environ(), "XDG_DATA_HOME="+filepath.Dir(p.caddyfile), "XDG_CONFIG_HOME="+filepath.Dir(p.caddyfile)), p.env...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	deadline := time.Now().Add(time.Minute)
	for _, addr := range p.wait {
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				return fmt.Errorf("%s exited at start:\n%s", p.name, p.log.String())
			default:
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s does not listen on %s a minute after its start:\n%s", p.name, addr, p.log.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// mustStart starts the process or fails the test.
func (p *proc) mustStart() {
	p.tb.Helper()
	if err := p.start(); err != nil {
		p.tb.Fatal(err)
	}
}

func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill ends the process at once (SIGKILL: no cleanup, as a crash or an
// OOM kill) and waits for it.
func (p *proc) kill() {
	p.tb.Helper()
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	_ = cmd.Process.Kill()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		p.tb.Fatalf("%s did not end 30s after SIGKILL", p.name)
	}
}

// rss is the process's resident set size in bytes (VmRSS).
func (p *proc) rss() int64 {
	p.tb.Helper()
	p.mu.Lock()
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		p.tb.Fatalf("reading %s's status: %v", p.name, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				p.tb.Fatalf("reading VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	p.tb.Fatalf("%s's status has no VmRSS", p.name)
	return 0
}

// lockedBuffer collects a process's output, written from two streams.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
