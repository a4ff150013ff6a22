package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/freeport"
)

// TestOneCommand runs the demo's one command as a newcomer would — the
// demo binary with the gate in its own process, on the repository's
// Caddyfile.example and policy (only their ports moved to free ones) —
// answers the card as ana with an HTTP client holding the demo's sign-in,
// presses Enter, and reads what the model was told.
func TestOneCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the demo")
	}
	bin := filepath.Join(t.TempDir(), "demo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	for _, tt := range []struct {
		name   string
		mcp    bool
		answer string
		want   []string // lines the demo prints after Enter
	}{
		{"chat, confirmed", false, "confirm", []string{"[blog app] post 7 deleted by ana", "The tool said: The person confirmed. The post was removed."}},
		{"chat, declined", false, "decline", []string{"The tool said: The person declined; nothing ran."}},
		{"mcp, confirmed", true, "confirm", []string{"[MCP server] post 7 deleted", "The tool answered (error: false):", "Post 7 deleted."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := startDemo(t, bin, tt.mcp)
			link := d.readUntil(t, regexp.MustCompile(`http://localhost:\d+/toolgate/h/[a-z2-7]{26}`))
			d.answer(t, link, tt.answer)
			if _, err := io.WriteString(d.stdin, "\n"); err != nil {
				t.Fatal(err)
			}
			rest := d.wait(t)
			for _, want := range tt.want {
				if !strings.Contains(rest, want) {
					t.Errorf("after Enter the demo printed\n%s\nwithout %q", rest, want)
				}
			}
			if tt.answer == "decline" && strings.Contains(rest, "deleted") {
				t.Errorf("a declined card ran:\n%s", rest)
			}
		})
	}
}

// demo is one run of the demo binary.
type demo struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	out    strings.Builder // everything printed so far
	done   chan error
	pages  string // the pages' origin, http://localhost:<port>
	cancel context.CancelFunc
}

// startDemo copies Caddyfile.example and the demo's policy with free
// ports, and starts the demo on them with its store in a temp dir.
func startDemo(t *testing.T, bin string, overMCP bool) *demo {
	t.Helper()
	dir := t.TempDir()
	api, pages, mcpRoute, model, blogPort, mcpServer := freePort(t), freePort(t), freePort(t), freePort(t), freePort(t), freePort(t)
	caddyfile, err := os.ReadFile(filepath.Join("..", "..", "Caddyfile.example"))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := os.ReadFile("blog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cf := strings.NewReplacer("8080", fmt.Sprint(api), "8081", fmt.Sprint(pages), "8082", fmt.Sprint(mcpRoute)).Replace(string(caddyfile))
	if cf == string(caddyfile) {
		t.Fatal("test broken: Caddyfile.example's ports moved")
	}
	if err := os.MkdirAll(filepath.Join(dir, "examples", "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Caddyfile.example"), []byte(cf), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "examples", "demo", "blog.yaml"), []byte(strings.ReplaceAll(string(policy), "9102", fmt.Sprint(blogPort))), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute) // a hang guard
	args := []string{
		"-api", fmt.Sprintf("http://localhost:%d/v1", api),
		"-mcp-url", fmt.Sprintf("http://localhost:%d/mcp", mcpRoute),
		"-model", fmt.Sprintf("localhost:%d", model),
		"-blog", fmt.Sprintf("localhost:%d", blogPort),
		"-mcp-server", fmt.Sprintf("localhost:%d", mcpServer),
	}
	if overMCP {
		args = append(args, "-mcp")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"TOOLGATE_SECRET=", // the demo's own, as for a newcomer
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
		"TMPDIR="+dir,
		fmt.Sprintf("TOOLGATE_UPSTREAM=http://localhost:%d", model),
		fmt.Sprintf("TOOLGATE_MCP_UPSTREAM=http://localhost:%d", mcpServer),
	)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &demo{cmd: cmd, stdin: stdin, lines: make(chan string, 100), done: make(chan error, 1), pages: fmt.Sprintf("http://localhost:%d", pages), cancel: cancel}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		close(d.lines)
		d.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cancel()
		if t.Failed() {
			t.Logf("the demo printed:\n%s\nstderr:\n%s", d.out.String(), stderr.String())
		}
	})

	// The first thing it says, before anything can take a while.
	first := d.next(t)
	if !strings.HasPrefix(first, "Toolgate demo: starting") {
		t.Errorf("the demo starts with %q", first)
	}
	// Its store and log in a new folder of its own (TMPDIR here), never in
	// Caddy's data directory, where `toolgate run` keeps a gate's holds.
	folder := d.readUntil(t, regexp.MustCompile(`keeps its store and log in (\S+) `))
	folder = strings.TrimSuffix(strings.TrimPrefix(folder, "keeps its store and log in "), " ")
	if filepath.Dir(folder) != dir || !strings.HasPrefix(filepath.Base(folder), "toolgate-demo-") {
		t.Errorf("the demo's folder is %q, want a new one in %s", folder, dir)
	}
	store := d.readUntil(t, regexp.MustCompile(`its store: (.+)`))
	if store != "its store: "+filepath.Join(folder, "store") {
		t.Errorf("the demo says %q", store)
	}
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(dir, "data", "caddy", "toolgate")); !os.IsNotExist(err) {
			t.Errorf("the demo wrote to Caddy's data directory (%v)", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "toolgate-demo.log")); !os.IsNotExist(err) {
			t.Errorf("the demo wrote a log to the fixed toolgate-demo.log (%v)", err)
		}
	})
	return d
}

// next is the next line the demo prints (60s at most: a loaded machine
// starts Caddy slowly).
func (d *demo) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-d.lines:
		if !ok {
			t.Fatalf("the demo ended early:\n%s", d.out.String())
		}
		d.out.WriteString(l + "\n")
		return l
	case <-time.After(60 * time.Second):
		t.Fatalf("the demo said nothing for 60s:\n%s", d.out.String())
	}
	return ""
}

// readUntil reads lines until one matches re and returns the match.
func (d *demo) readUntil(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	for {
		if m := re.FindString(d.next(t)); m != "" {
			return m
		}
	}
}

// wait reads the rest of what the demo prints until it exits, which it
// must do on its own with status 0.
func (d *demo) wait(t *testing.T) string {
	t.Helper()
	var rest strings.Builder
	for {
		select {
		case l, ok := <-d.lines:
			if !ok {
				select {
				case err := <-d.done:
					if err != nil {
						t.Errorf("the demo exited with %v", err)
					}
				case <-time.After(20 * time.Second):
					t.Fatal("the demo did not exit")
				}
				return rest.String()
			}
			d.out.WriteString(l + "\n")
			rest.WriteString(l + "\n")
		case <-time.After(60 * time.Second):
			t.Fatalf("the demo did not finish:\n%s", d.out.String())
		}
	}
}

// answer answers the link's only card as ana (the demo's sign-in), as
// the page's form does.
func (d *demo) answer(t *testing.T, link, choice string) {
	t.Helper()
	req, err := http.NewRequest("GET", link, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("ana", "demo")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var step struct {
		Holds []struct {
			ID   string `json:"id"`
			Card struct {
				Sentence string `json:"sentence"`
			} `json:"card"`
		} `json:"holds"`
		Tokens map[string]string `json:"tokens"`
	}
	err = json.NewDecoder(resp.Body).Decode(&step)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || len(step.Holds) != 1 {
		t.Fatalf("the card: %d %v %+v", resp.StatusCode, err, step)
	}
	if got := step.Holds[0].Card.Sentence; got != "Delete this post? This cannot be undone." {
		t.Errorf("the card's sentence = %q", got)
	}
	form := url.Values{"hold": {step.Holds[0].ID}, "token": {step.Tokens[step.Holds[0].ID]}, "answer": {choice}}
	req, err = http.NewRequest("POST", link, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("ana", "demo")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", d.pages)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("%s: %d", choice, resp.StatusCode)
	}
}

// freePort is a loopback port nobody listens on right now.
func freePort(t *testing.T) int { return freeport.Get(t) }
