package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/internal/testkit/process"
)

// rssIdle is how long a process idles after its start before its resident
// set is read: start-up garbage is collected by then.
const rssIdle = 10 * time.Second

// BenchmarkIdleRSS compares the resident memory of idle processes, as an
// operator's `ps` sees it: plain Caddy (the caddy command, a reverse proxy
// and a static route), the toolgate command running the same plain config,
// and the toolgate command gating it with an empty Badger store. Each is
// started rssRuns times; the medians are reported, in MiB, with the gate's
// ratio to plain Caddy (issue 9's target: at most 1.2).
//
//	go test ./e2e -run '^$' -bench IdleRSS -benchtime 1x
func BenchmarkIdleRSS(b *testing.B) {
	const rssRuns = 3
	caddyBin := binary(b, "github.com/caddyserver/caddy/v2/cmd/caddy")
	gateBin := binary(b, "./cmd/toolgate")
	dir := b.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(strings.ReplaceAll(policyYAML, "APP", "http://127.0.0.1:9")), 0o600); err != nil {
		b.Fatal(err)
	}
	median := func(name, bin string, gated bool) float64 {
		var mib []float64
		for range rssRuns {
			api, pages := testkit.FreePort(b), testkit.FreePort(b)
			p := process.New(b, name, bin, idleCaddyfile(api, pages, gated, filepath.Join(b.TempDir(), "store"), policy), nil,
				fmt.Sprintf("127.0.0.1:%d", api), fmt.Sprintf("127.0.0.1:%d", pages))
			p.MustStart()
			time.Sleep(rssIdle)
			mib = append(mib, float64(p.RSS())/(1<<20))
			p.Kill()
		}
		sort.Float64s(mib)
		return mib[len(mib)/2]
	}
	for b.Loop() {
		plain := median("caddy", caddyBin, false)
		same := median("toolgate-plain", gateBin, false)
		gated := median("toolgate-gated", gateBin, true)
		b.ReportMetric(plain, "caddy-MiB")
		b.ReportMetric(same, "toolgate-ungated-MiB")
		b.ReportMetric(gated, "toolgate-gated-MiB")
		b.ReportMetric(gated/plain, "ratio")
	}
}

// idleCaddyfile is a model route and a pages route; gated puts the
// toolgate app (an empty Badger store in storeDir) and its handlers on
// them, else they are a plain reverse proxy and a static response.
func idleCaddyfile(api, pages int, gated bool, storeDir, policy string) string {
	global, model, page := "", "", "respond \"pages\""
	if gated {
		global = fmt.Sprintf(`
	toolgate {
		store badger %s
		secret %s
		pages http://127.0.0.1:%d/toolgate
	}`, storeDir, secret, pages)
		model = fmt.Sprintf(`
	toolgate {
		policy %s
		owner {http.request.header.X-User-Id}
	}`, policy)
		page = "toolgate_pages"
	}
	return fmt.Sprintf(`{
	admin off
	auto_https off
	persist_config off
	default_bind 127.0.0.1
	log {
		level ERROR
	}%s
}

http://127.0.0.1:%d {%s
	reverse_proxy 127.0.0.1:9
}

http://127.0.0.1:%d {
	route /toolgate/* {
		%s
	}
}
`, global, api, model, pages, page)
}
