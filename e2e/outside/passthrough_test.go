package outside

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit/benchbody"
	"github.com/toolgate/toolgate/internal/testkit/process"
)

// BenchmarkPassThroughAndRSS measures what the gate costs on traffic it
// lets through, and what it keeps in memory, against plain Caddy: plain
// Caddy (reverse_proxy, and a static page behind basic_auth), the base
// and the head (the same sites, gated, with an empty Badger store) run
// side by side. In each round (TOOLGATE_BENCH_ROUNDS, 3) each process gets
// TOOLGATE_BENCH_JSON (3000) requests answered with a 2 KB non-gated Chat
// JSON, then TOOLGATE_BENCH_STREAMS (500) answered with a 200-chunk
// stream, then the same two in Gemini's shape on Gemini's paths (a build
// that refuses those, from before the Gemini adapter, has no Gemini
// rows), from one kept-alive client, in slices of a tenth, the processes
// taking turns in an order that turns each slice; the CPU the proxy process spent (utime+stime from
// /proc/<pid>/stat, 10 ms ticks) over the requests is its CPU per request,
// reported with its ratio to plain Caddy's in the same round (the median
// over the rounds).
//
// Then, warmed up by that traffic and by 20 held calls each (for plain
// Caddy, the same requests pass through), the processes idle for
// TOOLGATE_BENCH_IDLE (10s) with no connection open, and their resident
// sets (VmRSS) are read: the gate's ratio to plain Caddy, and the same for
// its anonymous part (RssAnon), beside the file-backed part (RssFile).
//
//	go test ./e2e/outside -run '^$' -bench PassThroughAndRSS -benchtime 1x
func BenchmarkPassThroughAndRSS(b *testing.B) {
	rounds := envInt(b, "TOOLGATE_BENCH_ROUNDS", 3)
	nJSON := envInt(b, "TOOLGATE_BENCH_JSON", 3000)
	nStream := envInt(b, "TOOLGATE_BENCH_STREAMS", 500)
	idle := envDuration(b, "TOOLGATE_BENCH_IDLE", 10*time.Second)
	builds := gateBuilds(b)
	up := provider(b)
	a := newApp(b)
	policy := writePolicy(b, b.TempDir(), a.URL)
	auth := basicAuth(b, []string{"person0"})

	type target struct {
		name   string
		url    string
		proc   *process.Proc
		client *http.Client
	}
	var targets []*target
	start := func(name, bin string, gated bool) {
		api, page := freePort(b), freePort(b)
		var cf string
		if gated {
			cf = gateCaddyfile("store badger "+filepath.Join(b.TempDir(), "store"), fmt.Sprintf("http://127.0.0.1:%d/toolgate", page), api, page, policy, up.URL, auth)
		} else {
			cf = fmt.Sprintf(`{
	admin off
	auto_https off
	persist_config off
	default_bind 127.0.0.1
	log {
		level ERROR
	}
}
http://127.0.0.1:%d {
	reverse_proxy %s
}
http://127.0.0.1:%d {
	route /toolgate/* {
		basic_auth {
%s		}
		respond "pages"
	}
}
`, api, up.URL, page, auth)
		}
		p := process.New(b, name, bin, cf, nil,
			fmt.Sprintf("127.0.0.1:%d", api), fmt.Sprintf("127.0.0.1:%d", page))
		p.MustStart()
		if gated {
			if err := storeReady(fmt.Sprintf("127.0.0.1:%d", page), "person0"); err != nil {
				b.Fatalf("%s: %v\n%s", name, err, p.Log())
			}
		}
		targets = append(targets, &target{name, fmt.Sprintf("http://127.0.0.1:%d", api), p,
			&http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}})
	}
	start("caddy", caddyBinary(b), false)
	for _, gb := range builds {
		start(gb.name, gb.bin, true)
	}

	// The kinds of request, each a row: Chat's and Gemini's 2 KB JSON
	// answer and 200-chunk stream.
	kinds := []string{"json", "stream", "gemini-json", "gemini-stream"}
	streams := func(kind string) bool { return strings.HasSuffix(kind, "stream") }
	bodies := map[string][]byte{
		"json": benchbody.ChatRequest(false), "stream": benchbody.ChatRequest(true),
		"gemini-json": benchbody.GeminiRequest(), "gemini-stream": benchbody.GeminiRequest(),
	}
	send := func(t *target, kind, post string) error {
		path := "/v1/chat/completions"
		if strings.HasPrefix(kind, "gemini") {
			path = geminiPath(streams(kind))
		}
		req, _ := http.NewRequest("POST", t.url+path, bytes.NewReader(bodies[kind]))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-benchmark")
		req.Header.Set("X-User-Id", "person0")
		if streams(kind) {
			req.Header.Set(headerStream, "1")
		}
		if post != "" {
			req.Header.Set(headerPost, post)
		}
		resp, err := t.client.Do(req)
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || n < 1800 && post == "" {
			return fmt.Errorf("%s: status %d, %d bytes, %v", t.name, resp.StatusCode, n, err)
		}
		return nil
	}
	do := func(t *target, kind, post string) {
		if err := send(t, kind, post); err != nil {
			b.Fatalf("%s %s: %v", t.name, kind, err)
		}
	}
	// A build that does not pass Gemini's paths (one from before the
	// Gemini adapter may refuse them as unknown) has no Gemini rows;
	// plain Caddy and the head must pass them.
	serves := map[string]map[string]bool{}
	for _, t := range targets {
		serves[t.name] = map[string]bool{}
		for _, kind := range kinds {
			err := send(t, kind, "")
			if err != nil && (t.name == "caddy" || t.name == "head" || !strings.HasPrefix(kind, "gemini")) {
				b.Fatalf("%s %s: %v\n%s", t.name, kind, err, t.proc.Log())
			}
			serves[t.name][kind] = err == nil
		}
	}

	// cpu[kind][target] is each round's CPU per request.
	cpu := map[string]map[string][]time.Duration{}
	for _, kind := range kinds {
		cpu[kind] = map[string][]time.Duration{}
	}
	for b.Loop() {
		for _, t := range targets { // warm up
			for i := range 200 {
				for _, kind := range kinds {
					if serves[t.name][kind] && (!streams(kind) || i%10 == 0) {
						do(t, kind, "")
					}
				}
			}
		}
		// A round's requests go in slices of a tenth, the processes taking
		// turns, so a change in the machine's load falls on all of them.
		const slices = 10
		for r := range rounds {
			for _, kind := range kinds {
				n := nJSON
				if streams(kind) {
					n = nStream
				}
				spent := map[string]time.Duration{}
				for s := range slices {
					for _, t := range inRound(targets, r+s) {
						if !serves[t.name][kind] {
							continue
						}
						c0 := t.proc.CPU()
						for range n / slices {
							do(t, kind, "")
						}
						spent[t.name] += t.proc.CPU() - c0
					}
				}
				for _, t := range targets {
					if serves[t.name][kind] {
						cpu[kind][t.name] = append(cpu[kind][t.name], spent[t.name]/time.Duration(n/slices*slices))
					}
				}
			}
		}
	}

	// Warm-up's held calls, then idle with no connection open.
	for _, t := range targets {
		for i := range 20 {
			do(t, "json", strconv.Itoa(1000+i))
		}
		t.client.CloseIdleConnections()
	}
	time.Sleep(idle)
	// VmRSS, and its anonymous and file-backed parts: which of a binary's
	// pages are resident (its function tables most) moves by a few MiB
	// from one process to the next, the anonymous part by little.
	rss, anon, file := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, t := range targets {
		rss[t.name] = float64(t.proc.RSS()) / (1 << 20)
		anon[t.name] = float64(t.proc.Status("RssAnon")) / (1 << 20)
		file[t.name] = float64(t.proc.Status("RssFile")) / (1 << 20)
	}

	var tb strings.Builder
	fmt.Fprintf(&tb, "%s: CPU per request (µs) in each round, ratio to plain Caddy in the same round; idle RSS after %s\n", b.Name(), idle)
	head := []string{"process"}
	for _, kind := range kinds {
		head = append(head, kind+" µs/req", "ratio")
	}
	head = append(head, "idle MiB", "ratio", "anon MiB", "ratio", "file MiB")
	tb.WriteString("| " + strings.Join(head, " | ") + " |\n|" + strings.Repeat("---|", len(head)) + "\n")
	for _, t := range targets {
		row := []string{t.name}
		for _, kind := range kinds {
			if !serves[t.name][kind] {
				row = append(row, "–", "–")
				continue
			}
			var vals, ratios []string
			var rs, xs []float64
			for i, d := range cpu[kind][t.name] {
				vals = append(vals, strconv.FormatFloat(us(d), 'f', 1, 64))
				xs = append(xs, us(d))
				base := cpu[kind]["caddy"][i]
				if base > 0 {
					ratio := float64(d) / float64(base)
					rs = append(rs, ratio)
					ratios = append(ratios, strconv.FormatFloat(ratio, 'f', 2, 64))
				}
			}
			row = append(row, strings.Join(vals, ", "), strings.Join(ratios, ", "))
			b.ReportMetric(median(xs), t.name+"-"+kind+"-cpu-µs/req")
			if t.name != "caddy" {
				b.ReportMetric(median(rs), t.name+"-"+kind+"-cpu/caddy")
			}
		}
		ratio, anonRatio := rss[t.name]/rss["caddy"], anon[t.name]/anon["caddy"]
		row = append(row, strconv.FormatFloat(rss[t.name], 'f', 1, 64), strconv.FormatFloat(ratio, 'f', 2, 64),
			strconv.FormatFloat(anon[t.name], 'f', 1, 64), strconv.FormatFloat(anonRatio, 'f', 2, 64),
			strconv.FormatFloat(file[t.name], 'f', 1, 64))
		b.ReportMetric(rss[t.name], t.name+"-idle-MiB")
		b.ReportMetric(anon[t.name], t.name+"-idle-anon-MiB")
		if t.name != "caddy" {
			b.ReportMetric(ratio, t.name+"-idle-rss/caddy")
			b.ReportMetric(anonRatio, t.name+"-idle-anon/caddy")
		}
		tb.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	fmt.Fprintln(os.Stdout, tb.String())
}
