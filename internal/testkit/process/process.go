// Package process runs a Caddy binary (toolgate, or plain caddy) as a
// process of its own with a Caddyfile, as a deployment runs it, and reads
// what the operating system says of it: its CPU time, its resident set.
// It links nothing of Caddy, so a test package that only starts binaries
// stays quick to build.
package process

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
	"syscall"
	"testing"
	"time"
)

// Proc is one Caddy process running a Caddyfile.
type Proc struct {
	tb        testing.TB
	Name      string
	Bin       string
	Dir       string   // the process's own directory: its Caddyfile, XDG data and config
	Caddyfile string   // its path
	Env       []string // added to the test's environment
	Wait      []string // addresses that accept connections once it is up
	log       lockedBuffer

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// New writes the Caddyfile into a directory of the process's own; the
// process is killed when the test ends (if still running), and its output
// logged if the test failed.
func New(tb testing.TB, name, bin, caddyfile string, env []string, wait ...string) *Proc {
	tb.Helper()
	dir := tb.TempDir()
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(caddyfile), 0o600); err != nil {
		tb.Fatal(err)
	}
	p := &Proc{tb: tb, Name: name, Bin: bin, Dir: dir, Caddyfile: path, Env: env, Wait: wait}
	tb.Cleanup(func() {
		if p.Running() {
			p.Kill()
		}
		if tb.Failed() {
			tb.Logf("%s's log:\n%s", name, p.Log())
		}
	})
	return p
}

// Start starts the process and waits until every address it serves
// accepts connections (a minute at most).
func (p *Proc) Start() error {
	cmd := exec.Command(p.Bin, "run", "--config", p.Caddyfile, "--adapter", "caddyfile")
	cmd.Env = append(append(os.Environ(), "XDG_DATA_HOME="+p.Dir, "XDG_CONFIG_HOME="+p.Dir), p.Env...)
	cmd.Stdout, cmd.Stderr = &p.log, &p.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.Name, err)
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
	for _, addr := range p.Wait {
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				return fmt.Errorf("%s exited at start:\n%s", p.Name, p.Log())
			default:
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s does not listen on %s a minute after its start:\n%s", p.Name, addr, p.Log())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// MustStart starts the process or fails the test.
func (p *Proc) MustStart() {
	p.tb.Helper()
	if err := p.Start(); err != nil {
		p.tb.Fatal(err)
	}
}

// Running says whether the process was started and has not ended.
func (p *Proc) Running() bool {
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

// Stop asks the process to end as an operator's stop does (SIGINT: Caddy
// stops its apps, so a store is closed) and waits for it; after 30 s it
// is killed and the test fails.
func (p *Proc) Stop() {
	p.tb.Helper()
	p.signal(syscall.SIGINT, 30*time.Second)
}

// Kill ends the process at once (SIGKILL: no cleanup, as a crash or an
// OOM kill) and waits for it.
func (p *Proc) Kill() {
	p.tb.Helper()
	p.signal(syscall.SIGKILL, 30*time.Second)
}

func (p *Proc) signal(sig syscall.Signal, within time.Duration) {
	p.tb.Helper()
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(within):
		_ = cmd.Process.Kill()
		<-exited
		p.tb.Fatalf("%s did not end %s after %v", p.Name, within, sig)
	}
}

// Pid is the process's id.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Log is what the process wrote to stdout and stderr so far.
func (p *Proc) Log() string { return p.log.String() }

// CPU is the CPU time (user and system, all threads) the process has used
// so far, from /proc/<pid>/stat, in clock ticks of 10 ms (USER_HZ).
func (p *Proc) CPU() time.Duration {
	p.tb.Helper()
	d, err := CPU(p.Pid())
	if err != nil {
		p.tb.Fatalf("%s: %v", p.Name, err)
	}
	return d
}

// CPU is the CPU time (utime + stime) of process pid so far.
func CPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading CPU time: %w", err)
	}
	// The fields after the command's name, which ends with the last ')':
	// state is the 3rd field of the line, utime the 14th, stime the 15th.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	var total time.Duration
	for _, s := range f[11:13] {
		ticks, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading CPU time %q: %w", s, err)
		}
		total += time.Duration(ticks) * 10 * time.Millisecond
	}
	return total, nil
}

// RSS is the process's resident set size in bytes (VmRSS).
func (p *Proc) RSS() int64 { return p.Status("VmRSS") }

// Status is a size field of the process's /proc status in bytes: VmRSS,
// or its parts RssAnon (the heap, stacks, the runtime's own) and RssFile
// (pages of the binary and of mapped files, which the kernel shares and
// may drop: which of a binary's pages are resident varies from process
// to process of the same binary).
func (p *Proc) Status(field string) int64 {
	p.tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		p.tb.Fatalf("reading %s's status: %v", p.Name, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				p.tb.Fatalf("reading %s %q: %v", field, rest, err)
			}
			return kb << 10
		}
	}
	p.tb.Fatalf("%s's status has no %s", p.Name, field)
	return 0
}

// DiskUsage is what the files under dir take: the sum of their sizes and
// the sum of the blocks allocated to them (st_blocks × 512), which differ
// for sparse or preallocated files.
func DiskUsage(dir string) (size, allocated int64, err error) {
	err = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			size += fi.Size()
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				allocated += st.Blocks * 512
			}
		}
		return nil
	})
	return size, allocated, err
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
