package e2e

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit"
)

// gateProcess is the toolgate command running the env's Caddyfile in a
// process of its own.
type gateProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// buildToolgate compiles cmd/toolgate once per test.
func buildToolgate(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the toolgate command")
	}
	bin := filepath.Join(t.TempDir(), "toolgate")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/toolgate/toolgate/cmd/toolgate").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startGate runs bin on e's Caddyfile and waits (bounded) until the pages
// answer.
func (e *env) startGate(t *testing.T, bin string) *gateProcess {
	t.Helper()
	dir := t.TempDir()
	cf := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cf, []byte(e.caddy), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", cf, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &gateProcess{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill(t) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(e.pagesURL + "/h/aaaaaaaaaaaaaaaaaaaaaaaaaa")
		if err == nil {
			resp.Body.Close()
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("toolgate exited: %s", logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolgate not ready after 30s: %s", logs.String())
		}
	}
}

// kill ends the process with SIGKILL: nothing of it runs after this.
func (p *gateProcess) kill(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("toolgate did not die within 10s of SIGKILL")
	}
}

// TestKilledMidReleaseIsSettledUnknown: the gate process is killed with
// SIGKILL while the app holds the release's request (it arrived, no answer
// yet). At the next start the sweeper settles the hold as unknown: the
// person and the model read that it may or may not have run, and it is
// never sent again.
func TestKilledMidReleaseIsSettledUnknown(t *testing.T) {
	bin := buildToolgate(t)
	e := newEnv(t, envOptions{})
	testkit.Stop(t) // the gate runs in its own process from here on
	setupPost(e)
	gate := e.startGate(t, bin)
	l, msg := e.hold(t, "ana")
	_, _, s := e.view(ana, l)
	hold := s.Holds[0].ID
	e.app.Behave(testkit.Hang)

	u, _ := url.Parse(l)
	form := url.Values{"hold": {hold}, "token": {s.Tokens[hold]}, "answer": {"confirm"}}
	req, err := http.NewRequest("POST", l, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(ana.name, ana.password)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		if resp, err := http.DefaultClient.Do(req.WithContext(ctx)); err == nil {
			resp.Body.Close()
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); len(e.app.Calls()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the release did not reach the app within 10s")
		}
	}
	gate.kill(t)
	e.app.Behave(testkit.Respond)

	e.startGate(t, bin)
	const want = "The person confirmed, but the gate stopped before the app answered; it may or may not have run; nothing was retried."
	// Until the toolgate app has started, the pages may answer 503.
	// A Badger store is this process's alone, so its sweeper settles the
	// cut release at start; a shared PostgreSQL may have the release in
	// flight on another replica, so the sweeper first waits the action
	// timeout (5s) plus its grace (30s).
	settle := 10 * time.Second
	if os.Getenv("TOOLGATE_E2E_STORE") == "postgres" {
		settle = time.Minute
	}
	for deadline := time.Now().Add(settle); ; time.Sleep(20 * time.Millisecond) {
		var status int
		var body []byte
		status, body, s = e.view(ana, l)
		if status == http.StatusOK && s.Holds[0].State == "settled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v after the restart the page says %d %s", settle, status, body)
		}
	}
	if got := s.Holds[0].Outcome; got != want {
		t.Errorf("outcome = %q, want %q", got, want)
	}
	if got := toolResult(e.next(t, "ana", msg, "ok"), "call_del7"); got != want {
		t.Errorf("model read %q", got)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the app got the release %d times, want 1", n)
	}
}
