package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/internal/testkit/process"
)

// Several replicas, end to end: three toolgate processes built from
// cmd/toolgate, each with its own Caddyfile and ports, sharing one
// PostgreSQL (a cluster of the test's own, which it stops and starts).
// Every replica has the same store, secret, pages URL and policies, as
// behind a load balancer; the pages URL in every link is replica 0's, and
// the tests send each request to the replica they choose by rewriting
// the link's host.

// replicaSet is the three replicas and what they share.
type replicaSet struct {
	t        *testing.T
	db       *pgtest.Cluster
	provider *testkit.Provider
	app      *testkit.App
	mcp      *mcpServer
	gates    []*replica
	pages    string // the pages URL every replica puts in its links
}

// replica is one toolgate process and the base URLs of its routes.
type replica struct {
	*process.Proc
	api, pagesHost, mcp string
}

// replicaCaddyfile is one replica's config; the DSN comes from the
// environment, as an operator would pass it.
const replicaCaddyfile = `{
	admin off
	auto_https off
	default_bind 127.0.0.1
	persist_config off
	grace_period 1ns
	log {
		level WARN
	}
	toolgate {
		store postgres {env.TOOLGATE_DATABASE_URL}
		secret %[1]s
		pages %[2]s
		action_timeout 2s
		sweep_interval 1s
		max_waiting 3
	}
}

http://127.0.0.1:%[3]d {
	toolgate {
		policy %[4]s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %[5]s
}

http://127.0.0.1:%[6]d {
	toolgate_mcp {
		policy %[7]s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %[8]s
}

http://127.0.0.1:%[9]d {
	route /toolgate/* {
		basic_auth {
			ana %[10]s
			bo %[11]s
		}
		toolgate_pages
	}
}
`

// newReplicaSet starts three replicas at once (they create the schema
// together, on an empty database) and waits until each serves.
func newReplicaSet(t *testing.T) *replicaSet {
	t.Helper()
	db := pgtest.StartCluster(t)
	rs := &replicaSet{t: t, db: db, provider: testkit.NewProvider(t), app: testkit.NewApp(t, []byte(secret))}
	rs.mcp = newMCPServer(t, modern)
	dir := t.TempDir()
	policy, mcpPol := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "mcp.yaml")
	for file, text := range map[string]string{policy: policyYAML, mcpPol: mcpPolicy} {
		if err := os.WriteFile(file, []byte(strings.ReplaceAll(text, "APP", rs.app.URL)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bin := binary(t, "./cmd/toolgate")
	type ports struct{ api, mcp, pages int }
	var ps []ports
	for range 3 {
		ps = append(ps, ports{testkit.FreePort(t), testkit.FreePort(t), testkit.FreePort(t)})
	}
	rs.pages = fmt.Sprintf("http://127.0.0.1:%d/toolgate", ps[0].pages)
	for i, p := range ps {
		cf := fmt.Sprintf(replicaCaddyfile, secret, rs.pages, p.api, policy, rs.provider.URL,
			p.mcp, mcpPol, strings.TrimPrefix(rs.mcp.URL, "http://"), p.pages, hash(t, "ana-pw"), hash(t, "bo-pw"))
		api, mcpAddr, pages := fmt.Sprintf("127.0.0.1:%d", p.api), fmt.Sprintf("127.0.0.1:%d", p.mcp), fmt.Sprintf("127.0.0.1:%d", p.pages)
		rs.gates = append(rs.gates, &replica{
			Proc: process.New(t, fmt.Sprintf("replica %d", i), bin, cf, []string{"TOOLGATE_DATABASE_URL=" + db.DSN}, api, mcpAddr, pages),
			api:  "http://" + api, pagesHost: pages, mcp: "http://" + mcpAddr + "/mcp",
		})
	}
	errs := make([]error, len(rs.gates))
	var wg sync.WaitGroup
	for i, g := range rs.gates {
		wg.Go(func() { errs[i] = g.Start() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return rs
}

// env is the e2e env helpers (hold, next, view, answer) pointed at replica
// i's routes.
func (rs *replicaSet) env(i int) *env {
	return &env{t: rs.t, provider: rs.provider, app: rs.app, apiURL: rs.gates[i].api, pagesURL: rs.pages}
}

// mcpEnv is the MCP helpers (manual, askDraft, retry) pointed at replica
// i's MCP route.
func (rs *replicaSet) mcpEnv(i int) *mcpEnv {
	return &mcpEnv{server: rs.mcp, app: rs.app, gateURL: rs.gates[i].mcp, pagesURL: rs.pages}
}

// on is link as replica i serves it (the same path on its pages port).
func (rs *replicaSet) on(link string, i int) string {
	return strings.Replace(link, strings.TrimSuffix(strings.TrimPrefix(rs.pages, "http://"), "/toolgate"), rs.gates[i].pagesHost, 1)
}

// viewUntil reads link on replica i until ok accepts the page (a minute
// at most): a replica that just started, or a database that just came
// back, may answer 503 for a moment.
func (rs *replicaSet) viewUntil(link string, i int, what string, ok func(status int, s stepJSON) bool) stepJSON {
	rs.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		status, body, s := rs.env(i).view(ana, rs.on(link, i))
		if ok(status, s) {
			return s
		}
		if time.Now().After(deadline) {
			rs.t.Fatalf("a minute on, replica %d still shows %d %s; want %s", i, status, body, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A held call made through A is shown on B, confirmed on C (run once, as
// the person, with the gate's signature) and its history restored on B.
func TestReplicasShareHolds(t *testing.T) {
	rs := newReplicaSet(t)
	setupPost(rs.env(0))
	l, msg := rs.env(0).hold(t, "ana")
	if !strings.HasPrefix(l, rs.pages+"/h/") {
		t.Fatalf("link %q is not under the shared pages URL %s", l, rs.pages)
	}

	status, body, s := rs.env(1).view(ana, rs.on(l, 1))
	if status != http.StatusOK || len(s.Holds) != 1 {
		t.Fatalf("the card on B: %d %s", status, body)
	}
	card := s.Holds[0].Card
	if card.Sentence != "Delete this post? This cannot be undone." || len(card.Rows) != 2 || card.Rows[0].Value != "Spring meetup" {
		t.Errorf("the card on B reads %+v", card)
	}
	if status, _, _ := rs.env(1).view(bo, rs.on(l, 1)); status != http.StatusNotFound {
		t.Errorf("bo viewing ana's card on B: %d, want 404", status)
	}

	id := s.Holds[0].ID
	if st, body := rs.env(2).answer(ana, rs.on(l, 2), id, s.Tokens[id], "confirm", nil); st != http.StatusSeeOther {
		t.Fatalf("confirming on C: %d %s", st, body)
	}
	calls := rs.app.Calls()
	if len(calls) != 1 || rs.app.RunCount(id) != 1 {
		t.Fatalf("the action ran %d times", len(calls))
	}
	if c := calls[0]; c.Method != "DELETE" || c.URI != "/posts/7" || c.SignatureErr != nil {
		t.Errorf("the action got %s %s (signature: %v)", c.Method, c.URI, c.SignatureErr)
	}

	req := rs.env(1).next(t, "ana", msg, "Thanks!")
	if got := toolResult(req, "call_del7"); got != "The person confirmed. Removed." {
		t.Errorf("the history restored on B reads %q", got)
	}
	// The cap on holds waiting for one person counts them on every
	// replica: three held on A, B and C, the fourth refused on any. Each is
	// another post: the same call again would attach to its waiting hold.
	for post := 8; post <= 10; post++ {
		rs.app.SetRecord(fmt.Sprintf("/posts/%d", post), `{"title":"Old meetup","status":"draft"}`)
	}
	for i := range rs.gates {
		if l, _ := rs.env(i).hold(t, "carl", call{fmt.Sprintf("call_cap%d", i), "delete_post", fmt.Sprintf(`{"post":%d}`, 7+i), false}); l == "" {
			t.Fatalf("carl's hold %d on replica %d was not held", i, i)
		}
	}
	res, _ := rs.env(1).refusedWith(t, "carl", "call_cap3", call{"call_cap3", "delete_post", `{"post":10}`, false})
	if !strings.Contains(res, "too many of this person's requests are already waiting") {
		t.Errorf("carl's fourth waiting hold: the model read %q", res)
	}

	// A's page shows the outcome too.
	s = rs.viewUntil(l, 0, "settled", func(status int, s stepJSON) bool { return status == 200 && s.Holds[0].State == "settled" })
	if s.Holds[0].Outcome != "The person confirmed. Removed." {
		t.Errorf("A shows the outcome %q", s.Holds[0].Outcome)
	}
}

// 200 confirmations of one hold, at once, spread over the three: exactly
// one is taken (303) and the action runs once; the rest are told 409.
// Sweeps on every replica afterwards run nothing again.
func TestReplicasConfirmOnce(t *testing.T) {
	rs := newReplicaSet(t)
	setupPost(rs.env(0))
	l, _ := rs.env(0).hold(t, "ana")
	_, _, s := rs.env(1).view(ana, rs.on(l, 1))
	id, tok := s.Holds[0].ID, s.Tokens[s.Holds[0].ID]

	const n = 200
	statuses := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			statuses[i], _ = rs.env(i%3).answer(ana, rs.on(l, i%3), id, tok, "confirm", nil)
		})
	}
	close(start)
	if !waitGroup(&wg, 2*time.Minute) {
		t.Fatal("200 confirmations did not all return within 2 minutes")
	}
	count := map[int]int{}
	for _, st := range statuses {
		count[st]++
	}
	if count[http.StatusSeeOther] != 1 || count[http.StatusConflict] != n-1 {
		t.Errorf("statuses %v, want one 303 and %d × 409", count, n-1)
	}
	time.Sleep(3 * time.Second) // three sweeps on every replica
	if got := rs.app.RunCount(id); got != 1 || len(rs.app.Calls()) != 1 {
		t.Errorf("the action ran %d times (%d calls), want once", got, len(rs.app.Calls()))
	}
}

// An MCP requestState redeemed by 99 retries at once, spread over the
// three replicas: one reaches the server, the others are told it was used.
func TestReplicasMCPStateOnce(t *testing.T) {
	rs := newReplicaSet(t)
	key, state := askDraft(t, rs.mcpEnv(0).manual(t, "ana"))
	var sessions []*mcp.ClientSession
	for i := range rs.gates {
		sessions = append(sessions, rs.mcpEnv(i).manual(t, "ana"))
	}

	const n = 99
	results := make([]*mcp.CallToolResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			c, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			results[i], errs[i] = sessions[i%3].CallTool(c, &mcp.CallToolParams{
				Name: "draft_post", Arguments: springArgs, RequestState: state,
				InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"body": "Spring is here."}}},
			})
		})
	}
	close(start)
	if !waitGroup(&wg, 2*time.Minute) {
		t.Fatal("99 retries did not all return within 2 minutes")
	}
	ran, used := 0, 0
	for i, r := range results {
		if errs[i] != nil {
			t.Errorf("retry %d on replica %d: %v", i, i%3, errs[i])
			continue
		}
		switch txt := resultText(r); {
		case !r.IsError && txt == "drafted Spring":
			ran++
		case r.IsError && strings.Contains(txt, "already used"):
			used++
		default:
			t.Errorf("retry %d on replica %d: isError=%v %q", i, i%3, r.IsError, txt)
		}
	}
	if ran != 1 || used != n-1 {
		t.Errorf("%d retries ran and %d were told the state was used, want 1 and %d", ran, used, n-1)
	}
	if got := len(rs.mcp.ToolRequests("draft_post")); got != 1 {
		t.Errorf("%d draft_post requests reached the server, want 1", got)
	}
}

// waitGroup waits for wg up to d; false when it did not end in time.
func waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// A replica killed with SIGKILL loses nothing: a hold it made is answered
// on another; a release it had begun (the app got the request, no answer
// yet) is never sent again, and another replica's sweeper settles it as
// unknown; restarted, it serves the same holds and runs nothing twice.
func TestReplicasKilled(t *testing.T) {
	rs := newReplicaSet(t)
	setupPost(rs.env(0))

	// A hold made on A, which dies before anyone answers.
	l, msg := rs.env(0).hold(t, "ana")
	rs.gates[0].Kill()
	_, _, s := rs.env(1).view(ana, rs.on(l, 1))
	id := s.Holds[0].ID
	if st, body := rs.env(1).answer(ana, rs.on(l, 1), id, s.Tokens[id], "confirm", nil); st != http.StatusSeeOther {
		t.Fatalf("confirming on B after A died: %d %s", st, body)
	}
	if got := toolResult(rs.env(2).next(t, "ana", msg, "ok"), "call_del7"); got != "The person confirmed. Removed." {
		t.Errorf("restored on C: %q", got)
	}

	// A release C began when it died: the app holds the request.
	l2, msg2 := rs.env(1).hold(t, "ana", call{"call_del8", "delete_post", `{"post":7}`, false})
	_, _, s = rs.env(2).view(ana, rs.on(l2, 2))
	id2 := s.Holds[0].ID
	rs.app.Script(func(key string) (testkit.Behaviour, int) {
		if key == id2 {
			return testkit.Hang, 0
		}
		return testkit.Respond, 200
	})
	go func() {
		// C dies under this request: its error is the point.
		req, err := http.NewRequest("POST", rs.on(l2, 2), strings.NewReader(answerForm(id2, s.Tokens[id2], "confirm").Encode()))
		if err != nil {
			return
		}
		req.SetBasicAuth(ana.name, ana.password)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://"+rs.gates[2].pagesHost)
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if resp, err := http.DefaultClient.Do(req.WithContext(c)); err == nil {
			resp.Body.Close()
		}
	}()
	for deadline := time.Now().Add(20 * time.Second); rs.app.RunCount(id2) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the release did not reach the app within 20s")
		}
	}
	rs.gates[2].Kill()
	rs.app.Script(nil)

	// The others settle it as unknown once a release cannot be running
	// any more (the action timeout plus the sweeper's 30s grace), and
	// never send it again.
	const lost = "The person confirmed, but the gate stopped before the app answered; it may or may not have run; nothing was retried."
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, _, s = rs.env(1).view(ana, rs.on(l2, 1))
		if len(s.Holds) == 1 && s.Holds[0].State == "settled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("90s after C died the hold reads %+v", s.Holds)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if got := s.Holds[0].Outcome; got != lost {
		t.Errorf("outcome %q, want %q", got, lost)
	}
	if got := toolResult(rs.env(1).next(t, "ana", msg2, "ok"), "call_del8"); got != lost {
		t.Errorf("the model read %q", got)
	}

	// Both come back: they serve the same holds and run nothing again.
	for _, g := range []*replica{rs.gates[0], rs.gates[2]} {
		g.MustStart()
	}
	for _, i := range []int{0, 2} {
		rs.viewUntil(l, i, "the first hold, settled", func(status int, s stepJSON) bool {
			return status == 200 && s.Holds[0].State == "settled" && s.Holds[0].Outcome == "The person confirmed. Removed."
		})
	}
	time.Sleep(3 * time.Second) // sweeps on every replica, the restarted ones included
	if a, b := rs.app.RunCount(id), rs.app.RunCount(id2); a != 1 || b != 1 {
		t.Errorf("the actions ran %d and %d times, want once each", a, b)
	}
}

// answerForm is the form a card page posts.
func answerForm(hold, token, choice string) url.Values {
	return url.Values{"hold": {hold}, "token": {token}, "answer": {choice}}
}

// PostgreSQL restarted under running replicas: while it is down, gated
// calls are refused (the model reads why; nothing reaches the app), the
// pages answer 503 with a plain sentence and take no answer, an MCP call
// gets a tool error; once it is back, every replica serves again with no
// restart, and the hold made before is there, waiting, and runs once.
func TestReplicasDatabaseRestart(t *testing.T) {
	rs := newReplicaSet(t)
	setupPost(rs.env(0))
	l, msg := rs.env(0).hold(t, "ana")
	_, _, s := rs.env(1).view(ana, rs.on(l, 1))
	id, tok := s.Holds[0].ID, s.Tokens[s.Holds[0].ID]

	rs.db.Stop()

	res, _ := rs.env(2).refusedWith(t, "bo", "call_del9", call{"call_del9", "delete_post", `{"post":7}`, false})
	if !strings.Contains(res, "could not store") || !strings.Contains(res, "nothing ran") {
		t.Errorf("a call held on C with the database down: the model read %q", res)
	}
	status, body, _ := rs.env(1).view(ana, rs.on(l, 1))
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), "cannot read this confirmation right now") {
		t.Errorf("the card on B with the database down: %d %s", status, body)
	}
	st, page := rs.env(0).answer(ana, rs.on(l, 0), id, tok, "confirm", nil)
	if st != http.StatusServiceUnavailable || !strings.Contains(page, "cannot take answers right now. Nothing ran.") {
		t.Errorf("confirming on A with the database down: %d %s", st, page)
	}
	res2 := callTool(t, rs.mcpEnv(1).manual(t, "ana"), &mcp.CallToolParams{Name: "draft_post", Arguments: springArgs})
	wantToolError(t, res2, "could not keep", "nothing ran")
	if n := len(rs.app.Calls()); n != 0 || len(rs.mcp.ToolRequests("draft_post")) != 0 {
		t.Fatalf("with the database down %d actions ran", n)
	}

	rs.db.Start()
	for i := range rs.gates {
		rs.viewUntil(l, i, "the hold, waiting", func(status int, s stepJSON) bool {
			return status == 200 && len(s.Holds) == 1 && s.Holds[0].State == "waiting"
		})
	}
	if st, body := rs.env(2).answer(ana, rs.on(l, 2), id, tok, "confirm", nil); st != http.StatusSeeOther {
		t.Fatalf("confirming on C once the database is back: %d %s", st, body)
	}
	if got := toolResult(rs.env(1).next(t, "ana", msg, "ok"), "call_del7"); got != "The person confirmed. Removed." {
		t.Errorf("restored on B: %q", got)
	}
	// New holds work again on every replica.
	for i := range rs.gates {
		l, _ := rs.env(i).hold(t, "ana", call{fmt.Sprintf("call_new%d", i), "delete_post", `{"post":7}`, false})
		if l == "" {
			t.Errorf("replica %d holds no call once the database is back", i)
		}
	}
	time.Sleep(3 * time.Second)
	if got := rs.app.RunCount(id); got != 1 || len(rs.app.Calls()) != 1 {
		t.Errorf("the action ran %d times (%d calls), want once", got, len(rs.app.Calls()))
	}
}
