// Package differential keeps the gate honest against the real client
// parsers: every response of an adversarial corpus (framings, labels,
// encodings, duplicate and disguised keys) is parsed straight from the fake
// provider and through a real Caddy running the module, by openai-go and
// anthropic-sdk-go in Go and by the official openai and @anthropic-ai/sdk
// packages in Node. Through the gate no parser may ever yield a gated call,
// and a response without one must parse exactly as it does straight (or be
// refused, where the case allows it). The same for MCP request bodies, with
// the go-sdk and TypeScript SDK servers behind toolgate_mcp.
package differential

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/toolgate/toolgate/caddymodule"
	"github.com/toolgate/toolgate/internal/testkit"
)

const secret = "differential-secret-0123456789"

// modelPolicy holds every tool the fixtures call (external actions with a
// card and no record to read; see gatedTools), and delete_post for the MCP
// test (with a schema, so the gate need not ask the server for it).
const modelPolicy = `app: Differential
actions:
  GetWeatherArgs:
    effect: external
    card:
      reason: "Look up the weather?"
    run:
      url: http://127.0.0.1:1/weather
  get_weather:
    effect: external
    card:
      reason: "Look up the weather?"
    run:
      url: http://127.0.0.1:1/weather
  weather:
    effect: external
    card:
      reason: "Look up the weather?"
    run:
      url: http://127.0.0.1:1/weather
  calculator:
    effect: external
    card:
      reason: "Run the calculator?"
    run:
      url: http://127.0.0.1:1/calc
  updateIssueList:
    effect: external
    card:
      reason: "Update the issue list?"
    run:
      url: http://127.0.0.1:1/issues
  delete_post:
    effect: destructive
    schema:
      type: object
      properties:
        post: {type: integer}
      required: [post]
    card:
      reason: "Delete this post?"
    run:
      method: DELETE
      url: "http://127.0.0.1:1/posts/{post}"
`

// caddyLog is where a test's Caddy logs; its end is shown when the test
// fails.
func caddyLog(t *testing.T, dir string) string {
	path := filepath.Join(dir, "caddy.log")
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(path); err == nil {
				t.Logf("caddy log (end):\n%s", tail(string(b), 6000))
			}
		}
	})
	return path
}

// startModelGate runs Caddy with the toolgate handler (modelPolicy, owner
// from X-User-Id, provider by path) in front of the fake provider, and
// returns the gate's URL.
func startModelGate(t *testing.T, provider *testkit.Provider) string {
	t.Helper()
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(modelPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	port := testkit.FreePort(t)
	testkit.Run(t, fmt.Sprintf(`{
	admin off
	auto_https off
	default_bind 127.0.0.1
	persist_config off
	grace_period 1ns
	log {
		output file %s
		level ERROR
	}
	toolgate {
		store badger %s
		secret %s
		pages http://127.0.0.1:1/toolgate
	}
}

http://127.0.0.1:%d {
	toolgate {
		policy %s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %s
}
`, caddyLog(t, dir), filepath.Join(dir, "store"), secret, port, pol, provider.URL))
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// parserNames name each provider's parsers in failure messages.
var parserNames = map[string][2]string{
	chat:      {"openai-go", "openai (Node)"},
	responses: {"openai-go", "openai (Node)"},
	anthropic: {"anthropic-sdk-go", "@anthropic-ai/sdk (Node)"},
}

// outcome is what the parsers made of one case, straight and through the
// gate, and for a framing receivers read differently of its canonical form
// straight.
type outcome struct {
	goDirect, goGated, goCanonical       parsed
	nodeDirect, nodeGated, nodeCanonical parsed
}

// canonicalKey is the fake provider's key for a case's canonical form.
func canonicalKey(c modelCase) string { return c.Name + "#canonical" }

// TestModelResponses runs the corpus through both Go SDKs and both Node
// SDKs, straight and through the gate. Each case is a subtest named
// provider/kind/base/variant.
func TestModelResponses(t *testing.T) {
	cases := corpus(t)
	provider := testkit.NewProvider(t)
	for _, c := range cases {
		provider.Serve(c.Name, c.reply())
		if c.Canonical != nil {
			r := c.reply()
			r.Pieces = splitEvents(c.Canonical)
			provider.Serve(canonicalKey(c), r)
		}
	}
	gateURL := startModelGate(t, provider)
	header := func(i int, c modelCase) map[string]string {
		// One person per case: no hold of one case meets another's.
		return map[string]string{testkit.ReplyKeyHeader: c.Name, "X-User-Id": fmt.Sprintf("person-%d", i)}
	}

	out := make([]outcome, len(cases))
	forEach(len(cases), 4, func(i int) {
		c := cases[i]
		out[i].goDirect = goParse(context.Background(), goRequest{c.Provider, c.Stream, provider.URL, header(i, c), nil})
		out[i].goGated = goParse(context.Background(), goRequest{c.Provider, c.Stream, gateURL, header(i, c), nil})
		if c.Canonical != nil {
			h := header(i, c)
			h[testkit.ReplyKeyHeader] = canonicalKey(c)
			out[i].goCanonical = goParse(context.Background(), goRequest{c.Provider, c.Stream, provider.URL, h, nil})
		}
	})

	ns, withNode := findNode(t)
	if withNode {
		var reqs []nodeRequest
		for i, c := range cases {
			base := map[string]string{chat: "/v1", responses: "/v1", anthropic: ""}[c.Provider]
			reqs = append(reqs,
				nodeRequest{"direct " + c.Name, c.Provider, c.Stream, provider.URL + base, header(i, c)},
				nodeRequest{"gated " + c.Name, c.Provider, c.Stream, gateURL + base, header(i, c)})
			if c.Canonical != nil {
				h := header(i, c)
				h[testkit.ReplyKeyHeader] = canonicalKey(c)
				reqs = append(reqs, nodeRequest{"canonical " + c.Name, c.Provider, c.Stream, provider.URL + base, h})
			}
		}
		parses := ns.parseModel(t, reqs, 150*time.Second)
		for i, c := range cases {
			out[i].nodeDirect, out[i].nodeGated = parses["direct "+c.Name], parses["gated "+c.Name]
			out[i].nodeCanonical = parses["canonical "+c.Name]
		}
	}

	var reach [2]int // gated cases whose straight parse yields the call, per parser
	for i, c := range cases {
		o := out[i]
		names := parserNames[c.Provider]
		t.Run(c.Name, func(t *testing.T) {
			if c.Canonical == nil {
				checkCase(t, c, names[0], o.goDirect, o.goGated)
				if withNode {
					checkCase(t, c, names[1], o.nodeDirect, o.nodeGated)
				}
				return
			}
			// Receivers read this framing differently, and the gate makes
			// every one read the spec's reading: each parser must read
			// through the gate what it reads straight from the canonical
			// form. That is stricter than comparing a Go SDK's parse with
			// the Node SDK's, which would have to overlook what the SDKs
			// themselves do differently (names seen on the way, errors
			// one of them raises); the Node SDK, which follows the spec,
			// pins the canonical form instead: it must read it as it reads
			// the raw bytes.
			checkCase(t, c, names[0], o.goCanonical, o.goGated)
			if withNode {
				checkCase(t, c, names[1], o.nodeCanonical, o.nodeGated)
				if !o.nodeCanonical.same(o.nodeDirect) {
					t.Errorf("%s reads the canonical form otherwise than the raw bytes: the harness's spec reading (canonicalSSE) is wrong\n canonical: %s\n direct:    %s", names[1], o.nodeCanonical, o.nodeDirect)
				}
			}
		})
		if c.Gated && len(o.goDirect.gatedNames()) > 0 {
			reach[0]++
		}
		if c.Gated && len(o.nodeDirect.gatedNames()) > 0 {
			reach[1]++
		}
	}
	t.Logf("corpus: %d cases; of the gated ones, the Go SDKs read the gated call straight from the provider in %d, the Node SDKs in %d", len(cases), reach[0], reach[1])
}

// checkCase asserts the invariant on one parser's parse of a case through
// the gate against its parse straight from the provider (want): of the
// case's bytes, or of their canonical form when receivers read them
// differently.
func checkCase(t *testing.T, c modelCase, parser string, want, gated parsed) {
	t.Helper()
	straight := "direct"
	if c.Canonical != nil {
		straight = "direct, canonical form"
	}
	if names := gated.gatedNames(); len(names) > 0 {
		t.Errorf("%s read the gated call %s through the gate\n gated:  %s\n %s: %s", parser, strings.Join(names, ", "), gated, straight, want)
		return
	}
	if c.Gated || gated.same(want) {
		return
	}
	if c.MayRefuse && gated.refused(c.Stream) {
		return
	}
	t.Errorf("%s parsed an ungated response differently through the gate\n gated:  %s\n %s: %s", parser, gated, straight, want)
}

// forEach runs f(0..n-1) on at most workers goroutines.
func forEach(n, workers int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
