package e2e

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/internal/testkit/benchbody"
	"github.com/toolgate/toolgate/internal/testkit/process"
)

// BenchmarkHoldPath measures what holding a call adds to a response, on
// each store in the same run: the provider answers with one gated call
// (send_email: a card with no record to read), the gate takes it out,
// stores the hold (Put and the step index, committed) and writes the
// waiting text. Each request is for another person, so the per-person
// cap counts but never refuses. Requests alternate with the same response
// through a plain reverse_proxy; added-p50/p99 are the gated route's
// percentiles minus the plain route's (the upstream's own time and the
// proxying cancel out).
//
//	go test ./e2e -run '^$' -bench HoldPath -benchtime 2000x
func BenchmarkHoldPath(b *testing.B) {
	body := jsonCompletion("", call{"call_mail", "send_email", `{"to":"ana@example.com","subject":"Minutes"}`, false})
	b.Run("badger", func(b *testing.B) {
		holdPath(b, "store badger "+filepath.Join(b.TempDir(), "store"), body)
	})
	b.Run("postgres", func(b *testing.B) {
		holdPath(b, "store postgres "+pgtest.Database(b, pgtest.DSN(b)), body)
	})
}

func holdPath(b *testing.B, storeLine string, body []byte) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	b.Cleanup(up.Close)
	dir := b.TempDir()
	pf := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pf, []byte(strings.ReplaceAll(policyYAML, "APP", "http://127.0.0.1:1")), 0o600); err != nil {
		b.Fatal(err)
	}
	gp, pp, pages := testkit.FreePort(b), testkit.FreePort(b), testkit.FreePort(b)
	testkit.Run(b, fmt.Sprintf(`{
	admin off
	auto_https off
	default_bind 127.0.0.1
	log {
		level ERROR
	}
	toolgate {
		%s
		secret %s
		pages http://127.0.0.1:%d/toolgate
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
	reverse_proxy %s
}
`, storeLine, secret, pages, gp, pf, up.URL, pp, up.URL))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	req := benchbody.ChatRequest(false)
	do := func(url, owner string, held bool) time.Duration {
		r, err := http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(req))
		if err != nil {
			b.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-User-Id", owner)
		start := time.Now()
		resp, err := client.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != 200 || held != bytes.Contains(got, []byte("/toolgate/h/")) {
			b.Fatalf("%s: status %d, held %v: %s", url, resp.StatusCode, !held, got)
		}
		return d
	}
	gated, plain := fmt.Sprintf("http://127.0.0.1:%d", gp), fmt.Sprintf("http://127.0.0.1:%d", pp)
	run := b.Name() + strconv.FormatInt(time.Now().UnixNano(), 36)
	for i := range 20 { // warm both routes' connections and the store's pool
		do(plain, "", false)
		do(gated, run+"-warm"+strconv.Itoa(i), true)
	}
	var g, p []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		owner := run + "-" + strconv.Itoa(i)
		if i%2 == 0 {
			p = append(p, do(plain, "", false))
			g = append(g, do(gated, owner, true))
		} else {
			g = append(g, do(gated, owner, true))
			p = append(p, do(plain, "", false))
		}
	}
	b.StopTimer()
	gp50, gp99, pp50, pp99 := percentile(g, 50), percentile(g, 99), percentile(p, 50), percentile(p, 99)
	b.ReportMetric(ms(gp50), "held-p50-ms")
	b.ReportMetric(ms(gp99), "held-p99-ms")
	b.ReportMetric(ms(pp50), "plain-p50-ms")
	b.ReportMetric(ms(gp50-pp50), "added-p50-ms")
	b.ReportMetric(ms(gp99-pp99), "added-p99-ms")
}

// percentile is the q-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, q int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*q + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkConfirmations measures the answer path across processes: 8
// answerers confirm b.N holds (each once, each another person's, signed
// in by a header as forward_auth would), spread over the replicas in
// turn; every confirmation claims the hold, runs the action at the app
// and settles it. confirms/s is b.N over the time the answers took; the
// benchmark fails unless every action ran exactly once. One replica on
// Badger is the baseline; one and three replicas on one PostgreSQL are
// the shared store. gate-cpu-µs/op is the CPU the replicas spent per
// confirmation, bench-cpu-µs/op this process's (the answerers, the app
// and the provider); the rest of the machine's time goes to PostgreSQL
// and to whatever else runs.
//
//	go test ./e2e -run '^$' -bench Confirmations -benchtime 2000x
//
// With TOOLGATE_BENCH_PPROF set to a directory, each replica serves
// Caddy's admin endpoint and the benchmark saves a CPU profile of each
// over the answers (TOOLGATE_BENCH_PPROF_SECONDS, 5 by default: take
// enough confirmations to last that long) as <case>-replica<i>.profile;
// with TOOLGATE_BENCH_PPROF_KIND=trace, an execution trace instead (for
// where the answers wait: go tool trace -pprof=net|sync|syscall).
func BenchmarkConfirmations(b *testing.B) {
	b.Run("badger-1", func(b *testing.B) { confirmations(b, 1, "") })
	b.Run("postgres-1", func(b *testing.B) { confirmations(b, 1, pgtest.Database(b, pgtest.DSN(b))) })
	b.Run("postgres-3", func(b *testing.B) { confirmations(b, 3, pgtest.Database(b, pgtest.DSN(b))) })
}

// benchReplica is the Caddyfile of a replica for the answer path's
// benchmark: a model route and pages whose answerer is a header.
const benchReplica = `{
	%[8]s
	auto_https off
	default_bind 127.0.0.1
	persist_config off
	log {
		level ERROR
	}
	toolgate {
		%[1]s
		secret %[2]s
		pages %[3]s
	}
}
http://127.0.0.1:%[4]d {
	toolgate {
		policy %[5]s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %[6]s
}
http://127.0.0.1:%[7]d {
	route /toolgate/* {
		toolgate_pages {
			answerer {http.request.header.X-Person}
		}
	}
}
`

func confirmations(b *testing.B, replicas int, dsn string) {
	const answerers = 8
	body := jsonCompletion("", call{"call_mail", "send_email", `{"to":"ana@example.com","subject":"Minutes"}`, false})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	b.Cleanup(up.Close)
	app := testkit.NewApp(b, []byte(secret))
	dir := b.TempDir()
	pf := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pf, []byte(strings.ReplaceAll(policyYAML, "APP", app.URL)), 0o600); err != nil {
		b.Fatal(err)
	}
	storeLine := "store postgres {env.TOOLGATE_DATABASE_URL}"
	if dsn == "" {
		storeLine = "store badger " + filepath.Join(dir, "store")
	}
	bin := binary(b, "./cmd/toolgate")
	profDir := os.Getenv("TOOLGATE_BENCH_PPROF")
	var apis, pages, admins []string
	var procs []*process.Proc
	for i := range replicas {
		api, page := testkit.FreePort(b), testkit.FreePort(b)
		apis, pages = append(apis, fmt.Sprintf("http://127.0.0.1:%d", api)), append(pages, fmt.Sprintf("127.0.0.1:%d", page))
		admin := "admin off"
		if profDir != "" {
			admins = append(admins, fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(b)))
			admin = "admin " + admins[i]
		}
		cf := fmt.Sprintf(benchReplica, storeLine, secret, "http://"+pages[0]+"/toolgate", api, pf, up.URL, page, admin)
		p := process.New(b, fmt.Sprintf("replica %d", i), bin, cf, []string{"TOOLGATE_DATABASE_URL=" + dsn},
			strings.TrimPrefix(apis[i], "http://"), pages[i])
		p.MustStart()
		procs = append(procs, p)
	}
	client := &http.Client{
		Transport:     &http.Transport{MaxIdleConnsPerHost: answerers},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}

	// The holds, each another person's, and each answer's token.
	type held struct{ owner, link, id, token string }
	holds := make([]held, b.N)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	parallel(b, answerers, b.N, func(i int) error {
		h := &holds[i]
		h.owner = "p" + run + "-" + strconv.Itoa(i)
		req, _ := http.NewRequest("POST", apis[0]+"/v1/chat/completions", bytes.NewReader(benchbody.ChatRequest(false)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-User-Id", h.owner)
		got, err := send(client, req, 200)
		if err != nil {
			return err
		}
		if h.link = linkRe.FindString(string(got)); h.link == "" {
			return fmt.Errorf("no link in %s", got)
		}
		req, _ = http.NewRequest("GET", h.link, nil)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("X-Person", h.owner)
		page, err := send(client, req, 200)
		if err != nil {
			return err
		}
		var s stepJSON
		if err := json.Unmarshal(page, &s); err != nil || len(s.Holds) != 1 {
			return fmt.Errorf("page %s: %v", page, err)
		}
		h.id, h.token = s.Holds[0].ID, s.Tokens[s.Holds[0].ID]
		return nil
	})

	gateCPU, benchCPU := replicasCPU(procs), selfCPU(b)
	profiled := profile(b, profDir, admins)
	b.ResetTimer()
	start := time.Now()
	parallel(b, answerers, b.N, func(i int) error {
		h := holds[i]
		host := pages[i%replicas]
		form := answerForm(h.id, h.token, "confirm").Encode()
		req, _ := http.NewRequest("POST", strings.Replace(h.link, pages[0], host, 1), strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://"+host)
		req.Header.Set("X-Person", h.owner)
		_, err := send(client, req, http.StatusSeeOther)
		return err
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "confirms/s")
	b.ReportMetric(float64((replicasCPU(procs)-gateCPU).Microseconds())/float64(b.N), "gate-cpu-µs/op")
	b.ReportMetric(float64((selfCPU(b)-benchCPU).Microseconds())/float64(b.N), "bench-cpu-µs/op")
	profiled()
	runs := app.Runs()
	for _, h := range holds {
		if runs[h.id] != 1 {
			b.Fatalf("hold %s ran %d times, want once", h.id, runs[h.id])
		}
	}
	if n := len(app.Calls()); n != b.N {
		b.Fatalf("the app got %d actions for %d confirmations", n, b.N)
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

// parallel runs f(0) … f(n-1) on workers goroutines and fails the
// benchmark on the first error (after all have returned, 10 minutes at
// most).
func parallel(b *testing.B, workers, n int, f func(i int) error) {
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	errs := make(chan error, workers)
	for range workers {
		go func() {
			var first error
			for i := range next {
				if err := f(i); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	for range workers {
		select {
		case err := <-errs:
			if err != nil {
				b.Fatal(err)
			}
		case <-time.After(10 * time.Minute):
			b.Fatal("workers did not finish within 10 minutes")
		}
	}
}

// replicasCPU is the CPU time (user and system) the processes have used
// so far.
func replicasCPU(procs []*process.Proc) time.Duration {
	var total time.Duration
	for _, p := range procs {
		total += p.CPU()
	}
	return total
}

// selfCPU is the CPU time (user and system) this process has used so far.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("reading this process's CPU time: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// profile starts a CPU profile of each replica through its admin
// endpoint when dir is set, and returns the function that waits for the
// profiles and saves them into dir.
func profile(b *testing.B, dir string, admins []string) func() {
	if dir == "" {
		return func() {}
	}
	seconds := cmp.Or(os.Getenv("TOOLGATE_BENCH_PPROF_SECONDS"), "5")
	kind := cmp.Or(os.Getenv("TOOLGATE_BENCH_PPROF_KIND"), "profile")
	name := strings.NewReplacer("/", "-").Replace(b.Name())
	errs := make(chan error, len(admins))
	for i, admin := range admins {
		go func() {
			resp, err := http.Get("http://" + admin + "/debug/pprof/" + kind + "?seconds=" + seconds)
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
				err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-replica%d.%s", name, i, kind)), got, 0o644)
			}
			errs <- err
		}()
	}
	return func() {
		for range admins {
			select {
			case err := <-errs:
				if err != nil {
					b.Error(err)
				}
			case <-time.After(10 * time.Minute):
				b.Fatal("no profile within 10 minutes")
			}
		}
	}
}
