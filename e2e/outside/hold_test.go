package outside

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testkit/benchbody"
	"github.com/toolgate/toolgate/internal/testkit/process"
)

// answerers is how many people confirm at once, each their own holds.
const answerers = 8

// BenchmarkHoldAndConfirm measures, for the base and the head alternated
// in rounds (TOOLGATE_BENCH_ROUNDS, 3 each), on a fresh store each time:
//
//   - a held call: an app sends TOOLGATE_BENCH_HOLDS (300) sequential Chat
//     requests whose answer holds one delete_post of another post, whose
//     card reads the post from the app. Each is alternated with the same
//     request through plain Caddy's reverse_proxy to the same provider;
//     added-p50/p99 is the gated percentile minus the plain one minus the
//     record GET's time in the app's handler (what is left is the gate's
//     own work, its store, and its connection to the app);
//   - confirmations/s: 8 people (basic_auth, bcrypt cost 4) confirm all of
//     them on the pages, each their own, after reading each card (the
//     reading is not timed); the rate counts from the first answer until
//     the app has received every release, and the benchmark fails unless
//     each action ran exactly once. The gate's CPU per confirmation is
//     the utime+stime of its processes over that time;
//   - disk: the Badger store's files after the gate stopped (SIGINT), per
//     settled hold, by size and by allocated blocks; and the blocks beyond
//     what the same build's store takes empty (started and stopped), per
//     hold.
//
// Badger runs one replica; with TOOLGATE_TEST_POSTGRES set, PostgreSQL
// runs one and three replicas (processes sharing one new database). A
// build that refuses a case's config (669b512 has no PostgreSQL store) is
// left out of that case, and the log says so.
//
//	go test ./e2e/outside -run '^$' -bench HoldAndConfirm -benchtime 1x
func BenchmarkHoldAndConfirm(b *testing.B) {
	b.Run("badger-1", func(b *testing.B) { holdAndConfirm(b, "badger", 1) })
	b.Run("postgres-1", func(b *testing.B) { holdAndConfirm(b, "postgres", 1) })
	b.Run("postgres-3", func(b *testing.B) { holdAndConfirm(b, "postgres", 3) })
}

// holdResult is one round of one build.
type holdResult struct {
	held, plain, get     [2]time.Duration // p50, p99
	added                [2]time.Duration // held − plain − get, p50 and p99
	confirmsPerSec       float64
	cpuPerHold           time.Duration // the gate's, over the held calls
	cpuPerConfirm        time.Duration
	diskSize, diskBlocks int64 // the whole store; Badger only
	diskEmpty            int64 // blocks of the same build's store with nothing in it
}

func holdAndConfirm(b *testing.B, kind string, replicas int) {
	dsn := ""
	if kind == "postgres" {
		dsn = pgtest.DSN(b) // skips without TOOLGATE_TEST_POSTGRES
	}
	holds := envInt(b, "TOOLGATE_BENCH_HOLDS", 300)
	rounds := envInt(b, "TOOLGATE_BENCH_ROUNDS", 3)
	builds := gateBuilds(b)
	up := provider(b)
	persons := make([]string, answerers)
	for i := range persons {
		persons[i] = "person" + strconv.Itoa(i)
	}
	auth := basicAuth(b, persons)
	plain := startPlain(b, caddyBinary(b), up.URL, auth)

	results := map[string][]holdResult{}
	refused := map[string]bool{}
	empty := map[string]int64{} // allocated bytes of an empty Badger store, by build
	for b.Loop() {
		for r := range rounds {
			for _, gb := range inRound(builds, r) {
				if refused[gb.name] {
					continue
				}
				var storeLine, storeDir string
				var env []string
				if dsn != "" {
					storeLine = "store postgres {env.TOOLGATE_DATABASE_URL}"
					env = append(env, "TOOLGATE_DATABASE_URL="+pgtest.Database(b, dsn))
				} else {
					storeDir = filepath.Join(b.TempDir(), "store")
					storeLine = "store badger " + storeDir
				}
				res, err := holdRound(b, gb, replicas, storeLine, storeDir, env, up.URL, plain, persons, auth, holds)
				if err != nil {
					b.Logf("%s refuses the %s config, left out of this case: %v", gb.name, b.Name(), err)
					refused[gb.name] = true
					continue
				}
				if storeDir != "" {
					if _, ok := empty[gb.name]; !ok {
						empty[gb.name] = emptyStore(b, gb, auth, persons[0])
					}
					res.diskEmpty = empty[gb.name]
				}
				results[gb.name] = append(results[gb.name], res)
			}
		}
	}
	reportHolds(b, builds, results, kind == "badger", holds)
}

// startPlain starts plain Caddy: the same sites as a gate's, a
// reverse_proxy to the provider and a static page behind the same
// basic_auth.
func startPlain(b *testing.B, bin, upstream, auth string) string {
	api, page := freePort(b), freePort(b)
	cf := fmt.Sprintf(`{
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
`, api, upstream, page, auth)
	p := process.New(b, "caddy", bin, cf, nil, fmt.Sprintf("127.0.0.1:%d", api), fmt.Sprintf("127.0.0.1:%d", page))
	p.MustStart()
	return fmt.Sprintf("http://127.0.0.1:%d", api)
}

// gateCaddyfile is a replica's config, in the syntax both builds accept
// (669b512 has none of the later options): the store, the secret and the
// pages in the global toolgate option, a model route gated by the policy
// with the owner from a header (as the app's backend would set it), and
// the pages behind basic_auth, the answerer being the signed-in user.
func gateCaddyfile(storeLine, pagesURL string, api, page int, policy, upstream, auth string) string {
	return gateCaddyfileAdmin("off", storeLine, pagesURL, api, page, policy, upstream, auth)
}

// gateCaddyfileAdmin is gateCaddyfile with Caddy's admin endpoint at
// admin ("off" for none): the benchmark takes CPU profiles through its
// /debug/pprof/.
func gateCaddyfileAdmin(admin, storeLine, pagesURL string, api, page int, policy, upstream, auth string) string {
	return fmt.Sprintf(`{
	admin %s
	auto_https off
	persist_config off
	default_bind 127.0.0.1
	log {
		level ERROR
	}
	toolgate {
		%s
		secret %s
		pages %s
	}
}
http://127.0.0.1:%d {
	toolgate {
		policy %s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %s
}
http://127.0.0.1:%d {
	route /toolgate/* {
		basic_auth {
%s		}
		toolgate_pages
	}
}
`, admin, storeLine, secret, pagesURL, api, policy, upstream, page, auth)
}

// holdRound runs one build once: start, hold, confirm, stop, measure.
// An error is the build refusing the config.
func holdRound(b *testing.B, gb gateBuild, replicas int, storeLine, storeDir string, env []string, upstream, plainURL string, persons []string, auth string, holds int) (holdResult, error) {
	var res holdResult
	profDir := os.Getenv("TOOLGATE_BENCH_PPROF")
	round := len(profiled[b.Name()+" "+gb.name])
	a := newApp(b)
	a.expect(holds)
	policy := writePolicy(b, b.TempDir(), a.URL)
	var apis, pages, admins []string
	var procs []*process.Proc
	for i := range replicas {
		api, page := freePort(b), freePort(b)
		apis, pages = append(apis, fmt.Sprintf("http://127.0.0.1:%d", api)), append(pages, fmt.Sprintf("127.0.0.1:%d", page))
		admin := "off"
		if profDir != "" {
			admin = fmt.Sprintf("127.0.0.1:%d", freePort(b))
			admins = append(admins, admin)
		}
		cf := gateCaddyfileAdmin(admin, storeLine, "http://"+pages[0]+"/toolgate", api, page, policy, upstream, auth)
		p := process.New(b, fmt.Sprintf("%s replica %d", gb.name, i), gb.bin, cf, env, strings.TrimPrefix(apis[i], "http://"), pages[i])
		if err := p.Start(); err != nil {
			for _, q := range procs {
				q.Kill()
			}
			return res, err
		}
		procs = append(procs, p)
		if err := storeReady(pages[i], persons[0]); err != nil {
			b.Fatalf("%s: %v\n%s", p.Name, err, p.Log())
		}
	}
	// The app's client to the model route, and the plain one: kept-alive
	// connections, as an SDK's.
	gatedClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	plainClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	defer gatedClient.CloseIdleConnections()
	defer plainClient.CloseIdleConnections()
	chat := func(c *http.Client, url, owner, post string) (time.Duration, []byte) {
		req, _ := http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(benchbody.ChatRequest(false)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-benchmark")
		req.Header.Set("X-User-Id", owner)
		req.Header.Set(headerPost, post)
		start := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			b.Fatalf("%s: %v", url, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("%s: %d %v %s", url, resp.StatusCode, err, body)
		}
		return d, body
	}
	// Warm both: connections, and each side's first request.
	for i := range 10 {
		chat(plainClient, plainURL, persons[0], strconv.Itoa(-1-i))
	}

	// The held calls, each alternated with the plain one.
	type held struct{ owner, link, id, token string }
	hs := make([]held, holds)
	var g, p []time.Duration
	holdCPU0 := cpuOf(procs)
	saveHoldProfile := profile(b, profDir, admins, fmt.Sprintf("%s-round%d-hold", gb.name, round))
	for i := range holds {
		h := &hs[i]
		h.owner = persons[i%len(persons)]
		post := strconv.Itoa(i + 1)
		api := apis[i%replicas]
		var dg time.Duration
		var body []byte
		if i%2 == 0 {
			dp, _ := chat(plainClient, plainURL, h.owner, post)
			p = append(p, dp)
			dg, body = chat(gatedClient, api, h.owner, post)
		} else {
			dg, body = chat(gatedClient, api, h.owner, post)
			dp, _ := chat(plainClient, plainURL, h.owner, post)
			p = append(p, dp)
		}
		g = append(g, dg)
		if h.link = linkRe.FindString(string(body)); h.link == "" {
			b.Fatalf("%s: hold %d: no link in %s", gb.name, i, body)
		}
	}
	res.cpuPerHold = (cpuOf(procs) - holdCPU0) / time.Duration(holds)
	saveHoldProfile()
	gets := a.getTimes()
	for i, q := range []int{50, 99} {
		res.held[i], res.plain[i], res.get[i] = percentile(g, q), percentile(p, q), percentile(gets, q)
		res.added[i] = res.held[i] - res.plain[i] - res.get[i]
	}

	// Each person reads their cards (not timed): the hold's id and the
	// token its answer carries.
	pageClient := &http.Client{
		Transport:     &http.Transport{MaxIdleConnsPerHost: answerers},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	defer pageClient.CloseIdleConnections()
	eachPerson(b, persons, holds, func(i int) error {
		h := &hs[i]
		req, _ := http.NewRequest("GET", h.link, nil)
		req.Header.Set("Accept", "application/json")
		req.SetBasicAuth(h.owner, password)
		page, err := send(pageClient, req, 200)
		if err != nil {
			return err
		}
		var s struct {
			Holds []struct {
				ID string `json:"id"`
			} `json:"holds"`
			Tokens map[string]string `json:"tokens"`
		}
		if err := json.Unmarshal(page, &s); err != nil || len(s.Holds) != 1 {
			return fmt.Errorf("page %s: %v", page, err)
		}
		h.id, h.token = s.Holds[0].ID, s.Tokens[s.Holds[0].ID]
		return nil
	})

	// The answers, timed until the app has every release.
	saveAnswerProfile := profile(b, profDir, admins, fmt.Sprintf("%s-round%d-answer", gb.name, round))
	cpu0 := cpuOf(procs)
	start := time.Now()
	eachPerson(b, persons, holds, func(i int) error {
		h := hs[i]
		host := pages[i%replicas]
		form := url.Values{"hold": {h.id}, "token": {h.token}, "answer": {"confirm"}}.Encode()
		req, _ := http.NewRequest("POST", strings.Replace(h.link, pages[0], host, 1), strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://"+host)
		req.SetBasicAuth(h.owner, password)
		_, err := send(pageClient, req, http.StatusSeeOther)
		return err
	})
	select {
	case <-a.all:
	case <-time.After(2 * time.Minute):
		_, total := a.runsOf("")
		b.Fatalf("%s: the app got %d of %d releases two minutes after the answers", gb.name, total, holds)
	}
	cpu := cpuOf(procs) - cpu0
	a.mu.Lock()
	last := a.last
	a.mu.Unlock()
	res.confirmsPerSec = float64(holds) / last.Sub(start).Seconds()
	res.cpuPerConfirm = cpu / time.Duration(holds)
	saveAnswerProfile()
	profiled[b.Name()+" "+gb.name] = append(profiled[b.Name()+" "+gb.name], true)

	// Stopped, the store is what a settled hold leaves on disk; and no
	// release came twice.
	time.Sleep(200 * time.Millisecond)
	for _, q := range procs {
		q.Stop()
	}
	for _, h := range hs {
		if n, _ := a.runsOf(h.id); n != 1 {
			b.Fatalf("%s: hold %s ran %d times, want once", gb.name, h.id, n)
		}
	}
	if _, total := a.runsOf(""); total != holds {
		b.Fatalf("%s: the app got %d actions for %d confirmations", gb.name, total, holds)
	}
	if storeDir != "" {
		size, blocks, err := process.DiskUsage(storeDir)
		if err != nil {
			b.Fatal(err)
		}
		res.diskSize, res.diskBlocks = size, blocks
	}
	return res, nil
}

// storeReady waits until the gate whose pages listen on host has its
// store open: Caddy's servers listen before the toolgate app has started
// (669b512 then answers a held call with "could not store"), and the
// pages answer 503 for as long as the store is not there.
func storeReady(host, person string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequest("GET", "http://"+host+"/toolgate/h/"+strings.Repeat("a", 26), nil)
		req.Header.Set("Accept", "application/json")
		req.SetBasicAuth(person, password)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the store is not open a minute after the start (%v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// emptyStore is the blocks a build's Badger store takes with nothing in
// it: the gate started on a new directory, its store opened, and stopped.
func emptyStore(b *testing.B, gb gateBuild, auth, person string) int64 {
	dir := filepath.Join(b.TempDir(), "store")
	api, page := freePort(b), freePort(b)
	cf := gateCaddyfile("store badger "+dir, fmt.Sprintf("http://127.0.0.1:%d/toolgate", page), api, page,
		writePolicy(b, b.TempDir(), "http://127.0.0.1:9"), "http://127.0.0.1:9", auth)
	p := process.New(b, gb.name+" empty", gb.bin, cf, nil, fmt.Sprintf("127.0.0.1:%d", api), fmt.Sprintf("127.0.0.1:%d", page))
	p.MustStart()
	if err := storeReady(fmt.Sprintf("127.0.0.1:%d", page), person); err != nil {
		b.Fatalf("%s: %v", p.Name, err)
	}
	p.Stop()
	_, blocks, err := process.DiskUsage(dir)
	if err != nil {
		b.Fatal(err)
	}
	return blocks
}

// cpuOf is the CPU time the processes have used so far.
func cpuOf(procs []*process.Proc) time.Duration {
	var total time.Duration
	for _, p := range procs {
		total += p.CPU()
	}
	return total
}

// eachPerson runs f(i) for i < n, one goroutine per person doing that
// person's holds (i % len(persons)) in order, and fails the benchmark
// on the first error once all have returned.
func eachPerson(b *testing.B, persons []string, n int, f func(i int) error) {
	var wg sync.WaitGroup
	errs := make([]error, len(persons))
	for k := range persons {
		wg.Go(func() {
			for i := k; i < n; i += len(persons) {
				if err := f(i); err != nil {
					errs[k] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// send sends req and returns the body, or an error unless the status is
// want.
func send(c *http.Client, req *http.Request, want int) ([]byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d %s", req.Method, req.URL, resp.StatusCode, body)
	}
	return body, nil
}

// reportHolds reports the medians over the rounds of each build as
// metrics (<build>-<what>), and prints every round in a table.
func reportHolds(b *testing.B, builds []gateBuild, results map[string][]holdResult, disk bool, holds int) {
	var t strings.Builder
	fmt.Fprintf(&t, "%s, %d holds, rounds in order:\n", b.Name(), holds)
	type row struct {
		name, unit string
		get        func(holdResult) float64
	}
	rows := []row{
		{"held call, added p50", "ms", func(r holdResult) float64 { return ms(r.added[0]) }},
		{"held call, added p99", "ms", func(r holdResult) float64 { return ms(r.added[1]) }},
		{"held call p50 (through the gate)", "ms", func(r holdResult) float64 { return ms(r.held[0]) }},
		{"plain reverse_proxy p50", "ms", func(r holdResult) float64 { return ms(r.plain[0]) }},
		{"record GET in the app p50", "ms", func(r holdResult) float64 { return ms(r.get[0]) }},
		{"gate CPU per held call", "ms", func(r holdResult) float64 { return ms(r.cpuPerHold) }},
		{"confirmations/s", "/s", func(r holdResult) float64 { return r.confirmsPerSec }},
		{"gate CPU per confirmation", "ms", func(r holdResult) float64 { return ms(r.cpuPerConfirm) }},
	}
	if disk {
		rows = append(rows,
			row{"store, all files (size)", "MB", func(r holdResult) float64 { return float64(r.diskSize) / 1e6 }},
			row{"store, all files (blocks)", "MB", func(r holdResult) float64 { return float64(r.diskBlocks) / 1e6 }},
			row{"store per settled hold (size)", "KB", func(r holdResult) float64 { return float64(r.diskSize) / float64(holds) / 1000 }},
			row{"store per settled hold (blocks)", "KB", func(r holdResult) float64 { return float64(r.diskBlocks) / float64(holds) / 1000 }},
			row{"empty store (blocks)", "MB", func(r holdResult) float64 { return float64(r.diskEmpty) / 1e6 }},
			row{"per settled hold beyond empty (blocks)", "KB", func(r holdResult) float64 {
				return float64(r.diskBlocks-r.diskEmpty) / float64(holds) / 1000
			}})
	}
	metric := map[string]string{
		"held call, added p50": "added-p50-ms", "held call, added p99": "added-p99-ms",
		"confirmations/s": "confirms/s", "gate CPU per confirmation": "gate-cpu-ms/confirm",
		"gate CPU per held call":        "gate-cpu-ms/hold",
		"store per settled hold (size)": "disk-KB/hold", "store per settled hold (blocks)": "disk-blocks-KB/hold",
		"per settled hold beyond empty (blocks)": "disk-added-KB/hold",
	}
	fmt.Fprintf(&t, "| %-44s |", "")
	for _, gb := range builds {
		fmt.Fprintf(&t, " %-24s |", gb.name)
	}
	t.WriteString("\n|---|" + strings.Repeat("---|", len(builds)) + "\n")
	for _, rw := range rows {
		fmt.Fprintf(&t, "| %-44s |", rw.name+" ("+rw.unit+")")
		for _, gb := range builds {
			var vals []string
			var xs []float64
			for _, r := range results[gb.name] {
				xs = append(xs, rw.get(r))
				vals = append(vals, strconv.FormatFloat(rw.get(r), 'f', 2, 64))
			}
			if len(vals) == 0 {
				vals = []string{"–"}
			}
			fmt.Fprintf(&t, " %-24s |", strings.Join(vals, ", "))
			if m, ok := metric[rw.name]; ok && len(xs) > 0 {
				b.ReportMetric(median(xs), gb.name+"-"+m)
			}
		}
		t.WriteString("\n")
	}
	fmt.Fprintln(os.Stdout, t.String())
}

// profiled counts the rounds each case and build has run, for the
// profiles' names.
var profiled = map[string][]bool{}

// profile starts a CPU profile of each replica through its admin
// endpoint when dir (TOOLGATE_BENCH_PPROF) is set, and returns the
// function that waits for the profiles and saves them into dir as
// <case>-<name>-replica<i>.profile. The profile lasts
// TOOLGATE_BENCH_PPROF_SECONDS (3 by default); the benchmark waits for it
// before going on, so a profile longer than the phase holds all of the
// phase and nothing of the next.
func profile(b *testing.B, dir string, admins []string, name string) func() {
	if dir == "" {
		return func() {}
	}
	seconds := cmp.Or(os.Getenv("TOOLGATE_BENCH_PPROF_SECONDS"), "3")
	prefix := strings.NewReplacer("/", "-").Replace(b.Name()) + "-" + name
	errs := make(chan error, len(admins))
	for i, admin := range admins {
		go func() {
			resp, err := http.Get("http://" + admin + "/debug/pprof/profile?seconds=" + seconds)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("profile of replica %d: %d %s", i, resp.StatusCode, got)
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-replica%d.profile", prefix, i)), got, 0o644)
			}
			errs <- err
		}()
	}
	// The profile starts once the request has arrived.
	time.Sleep(50 * time.Millisecond)
	return func() {
		for range admins {
			if err := <-errs; err != nil {
				b.Error(err)
			}
		}
	}
}
