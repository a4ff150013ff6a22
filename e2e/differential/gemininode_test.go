package differential

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The Node side of the Gemini clients: @google/genai and @ai-sdk/google
// with the `ai` package, pinned in .ci/differential/package-lock.json,
// run by .ci/differential/parse-gemini.mjs.

// geminiNodePackages are the packages parse-gemini.mjs imports.
var geminiNodePackages = []string{"@google/genai", "@ai-sdk/google", "ai"}

// findGeminiNode returns the Node side with the Gemini clients installed,
// or false when it is not: then a test fails in CI (env CI set) and says
// loudly elsewhere how to install it, as findNode does.
func findGeminiNode(tb testing.TB) (nodeSide, bool) {
	tb.Helper()
	missing := func(why string) (nodeSide, bool) {
		if os.Getenv("CI") != "" {
			tb.Fatalf("the Gemini clients' Node side cannot run in CI: %s; %s", why, installHint)
		}
		tb.Logf("!!!!!! SKIPPING the Node Gemini clients (@google/genai, @ai-sdk/google): %s; %s !!!!!!", why, installHint)
		return nodeSide{}, false
	}
	ns := nodeSide{dir: scriptsDir()}
	for _, cand := range nodeCandidates() {
		out, err := exec.Command(cand, "--version").Output()
		if err != nil {
			continue
		}
		v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
		if major, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0]); major >= nodeMajor {
			ns.node = cand
			break
		}
	}
	if ns.node == "" {
		return missing(fmt.Sprintf("no Node %d or later (tried %s)", nodeMajor, strings.Join(nodeCandidates(), ", ")))
	}
	for _, pkg := range geminiNodePackages {
		if _, err := os.Stat(filepath.Join(ns.dir, "node_modules", pkg, "package.json")); err != nil {
			return missing(fmt.Sprintf("%s is not in %s/node_modules", pkg, ns.dir))
		}
	}
	return ns, true
}

// geminiNodeRequest is one request for parse-gemini.mjs.
type geminiNodeRequest struct {
	ID          string            `json:"id"`
	Client      string            `json:"client"` // jsGenai or aiSDK
	Stream      bool              `json:"stream"`
	BaseURL     string            `json:"baseURL"`
	Headers     map[string]string `json:"headers"`
	Tools       []string          `json:"tools"`
	ProgressURL string            `json:"progressURL,omitempty"`
}

// parseGemini runs parse-gemini.mjs once on a batch of requests and returns
// what each app saw, by request id. A request the script did not answer
// fails the test.
func (ns nodeSide) parseGemini(t testing.TB, reqs []geminiNodeRequest, timeout time.Duration) map[string]geminiSeen {
	t.Helper()
	in, err := json.Marshal(map[string]any{"requests": reqs})
	if err != nil {
		t.Fatal(err)
	}
	batch := filepath.Join(t.TempDir(), "batch.json")
	if err := os.WriteFile(batch, in, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, ns.node, "parse-gemini.mjs", batch)
	cmd.Dir = ns.dir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("node parse-gemini.mjs: %v (ctx: %v)\nstderr: %s", err, ctx.Err(), tail(stderr.String(), 4000))
		return nil
	}
	out := make(map[string]geminiSeen, len(reqs))
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			ID   string     `json:"id"`
			Seen geminiSeen `json:"seen"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("node parse-gemini.mjs printed %q: %v", tail(sc.Text(), 300), err)
		}
		out[line.ID] = line.Seen
	}
	for _, r := range reqs {
		if _, ok := out[r.ID]; !ok {
			t.Fatalf("node parse-gemini.mjs gave no reading for %s\nstderr: %s", r.ID, tail(stderr.String(), 4000))
		}
	}
	return out
}

// geminiNodeServer is parse-gemini.mjs kept running (argv "-"): it reads
// one request a line on stdin and answers one line each, so that a fuzz
// worker pays for Node's start once.
type geminiNodeServer struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *bytes.Buffer
}

func (ns nodeSide) startGemini() (*geminiNodeServer, error) {
	cmd := exec.Command(ns.node, "parse-gemini.mjs", "-")
	cmd.Dir = ns.dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	return &geminiNodeServer{cmd: cmd, in: in, out: sc, stderr: &stderr}, nil
}

// read sends the requests and returns their readings in order.
func (g *geminiNodeServer) read(reqs ...geminiNodeRequest) ([]geminiSeen, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range reqs {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		if _, err := g.in.Write(append(b, '\n')); err != nil {
			return nil, fmt.Errorf("node parse-gemini.mjs: %v; stderr: %s", err, tail(g.stderr.String(), 2000))
		}
	}
	byID := map[string]geminiSeen{}
	for range reqs {
		if !g.out.Scan() {
			return nil, fmt.Errorf("node parse-gemini.mjs ended: %v; stderr: %s", g.out.Err(), tail(g.stderr.String(), 2000))
		}
		var line struct {
			ID   string     `json:"id"`
			Seen geminiSeen `json:"seen"`
		}
		if err := json.Unmarshal(g.out.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("node parse-gemini.mjs printed %q: %v", tail(g.out.Text(), 300), err)
		}
		byID[line.ID] = line.Seen
	}
	out := make([]geminiSeen, len(reqs))
	for i, r := range reqs {
		out[i] = byID[r.ID]
	}
	return out, nil
}
