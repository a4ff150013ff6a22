package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/pages"
)

// reload restarts the gate on its Caddyfile with each old text replaced
// by its new one (which must be there).
func (e *env) reload(t *testing.T, oldNew ...string) {
	t.Helper()
	cfg := e.caddy
	for i := 0; i+1 < len(oldNew); i += 2 {
		if !strings.Contains(cfg, oldNew[i]) {
			t.Fatalf("Caddyfile has no %q", oldNew[i])
		}
		cfg = strings.Replace(cfg, oldNew[i], oldNew[i+1], 1)
	}
	testkit.Stop(t)
	e.caddy = cfg
	testkit.Run(t, e.caddy)
}

// withTenants makes the model route and the pages read the tenant from the
// X-Tenant header (in a deployment, forward_auth would set it).
func (e *env) withTenants(t *testing.T) {
	t.Helper()
	e.reload(t,
		"owner {http.request.header.X-User-Id}", "owner {http.request.header.X-User-Id}\n\t\ttenant {http.request.header.X-Tenant}",
		"toolgate_pages\n", "toolgate_pages {\n\t\t\ttenant {http.request.header.X-Tenant}\n\t\t}\n")
}

// tenantClient is the app of one tenant, as owner.
func (e *env) tenantClient(owner, tenant string) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(e.apiURL+"/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0),
		option.WithHeader("X-User-Id", owner), option.WithHeader("X-Tenant", tenant))
	return &c
}

// pageAs sends a request to a page as p in tenant and returns the status
// and body.
func (e *env) pageAs(t *testing.T, p person, tenant, method, link string, form url.Values) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, link, body)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(p.name, p.password)
	req.Header.Set("X-Tenant", tenant)
	req.Header.Set("Accept", "application/json")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestTenantsAreSeparate: the same person id in two tenants. Ana of
// globex can neither see nor answer the hold of ana of acme (not even
// with a form token made for her own identity), and her conversation
// carrying acme's link restores nothing; ana of acme then confirms, once.
func TestTenantsAreSeparate(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.withTenants(t)
	setupPost(e)
	e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", del7)})
	got, err := e.tenantClient("ana", "acme").Chat.Completions.New(ctx, userAsks("Delete my old meetup draft."))
	if err != nil {
		t.Fatal(err)
	}
	msg := got.Choices[0].Message
	l := link(t, msg.Content)

	if st, body := e.pageAs(t, ana, "globex", "GET", l, nil); st != http.StatusNotFound {
		t.Errorf("ana of globex viewing acme's card: %d %s", st, body)
	}
	st, body := e.pageAs(t, ana, "acme", "GET", l, nil)
	if st != http.StatusOK {
		t.Fatalf("ana of acme viewing her card: %d %s", st, body)
	}
	var s stepJSON
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	hold := s.Holds[0].ID
	// Past the token check too: a token made for ana of globex.
	own := (&pages.Pages{Secret: []byte(secret)}).Token(hold, gate.Person{Owner: "ana", Tenant: "globex"})
	for _, tok := range []string{s.Tokens[hold], own} {
		if st, body := e.pageAs(t, ana, "globex", "POST", l, url.Values{"hold": {hold}, "token": {tok}, "answer": {"confirm"}}); st != http.StatusConflict {
			t.Errorf("ana of globex confirming: %d %s", st, body)
		}
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatalf("another tenant's answer ran the call %d times", n)
	}

	// Ana of globex sends the conversation on: nothing is restored, and
	// acme's hold is not settled as moved on.
	e.provider.Enqueue(testkit.Reply{Body: textCompletion("ok")})
	params := userAsks("Delete my old meetup draft.")
	params.Messages = append(params.Messages, msg.ToParam(), openai.UserMessage("never mind"))
	if _, err := e.tenantClient("ana", "globex").Chat.Completions.New(ctx, params); err != nil {
		t.Fatal(err)
	}
	reqs := e.provider.Requests()
	if req := reqs[len(reqs)-1]; strings.Contains(string(req), "call_del7") {
		t.Errorf("another tenant's link restored history: %s", req)
	}

	if st, body := e.pageAs(t, ana, "acme", "POST", l, url.Values{"hold": {hold}, "token": {s.Tokens[hold]}, "answer": {"confirm"}}); st != http.StatusOK {
		t.Fatalf("ana of acme confirming: %d %s", st, body)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("ran %d times", n)
	}
	if c := e.app.Calls()[0]; c.Header.Get("X-Toolgate-Tenant") != "acme" || c.Header.Get("X-Toolgate-Person") != "ana" {
		t.Errorf("released as %q of %q", c.Header.Get("X-Toolgate-Person"), c.Header.Get("X-Toolgate-Tenant"))
	}
}

// TestMaxWaitingRefusesAndStoreSizeIsMeasured: with max_waiting 1, a
// person whose one hold waits gets the next gated call refused, the model
// reading why; the refusal is counted and the store's size is a gauge on
// Caddy's metrics.
func TestMaxWaitingRefusesAndStoreSizeIsMeasured(t *testing.T) {
	e := newEnv(t, envOptions{})
	metricsPort := testkit.FreePort(t)
	metricsURL := "http://127.0.0.1:" + strconv.Itoa(metricsPort) + "/metrics"
	e.reload(t, "action_timeout 5s", "action_timeout 5s\n\t\tmax_waiting 1",
		"\nhttp://127.0.0.1:", "\nhttp://127.0.0.1:"+strconv.Itoa(metricsPort)+" {\n\tmetrics /metrics\n}\n\nhttp://127.0.0.1:")
	setupPost(e)
	const refusals = `caddy_toolgate_refusals_total{action="delete_post",reason="too_many_waiting"} `
	before := metricValue(t, metricsURL, refusals)
	if l, _ := e.hold(t, "ana"); l == "" {
		t.Fatal("the first call was not held")
	}
	// Another call: the same one again would attach to the waiting hold.
	e.app.SetRecord("/posts/8", `{"title":"Autumn meetup","status":"draft"}`)
	res, text := e.refusedWith(t, "ana", "call_del8", call{"call_del8", "delete_post", `{"post":8}`, false})
	if !strings.Contains(res, "Toolgate refused delete_post: too many of this person's requests are already waiting for their answer; nothing ran.") || linkRe.MatchString(text) {
		t.Errorf("over the cap: model read %q, app got %q", res, text)
	}
	if l, _ := e.hold(t, "bo"); l == "" {
		t.Error("another person's call was refused by ana's cap")
	}
	// The size is sampled in the background: wait (bounded) for a sample.
	var m string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(metricsURL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m = string(b)
		if s := grepLines(m, "caddy_toolgate_store_bytes "); (s != "" && !strings.HasSuffix(s, " 0")) || time.Now().After(deadline) {
			break
		}
	}
	if after := metricValue(t, metricsURL, refusals); after != before+1 {
		t.Errorf("too_many_waiting refusals went from %v to %v, want one more:\n%s", before, after, grepLines(m, "caddy_toolgate_refusals"))
	}
	size := grepLines(m, "caddy_toolgate_store_bytes ")
	if size == "" || strings.HasSuffix(size, " 0") {
		t.Errorf("store size gauge = %q", size)
	}
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// metricValue reads one sample (the line starting with prefix) from a
// metrics endpoint; 0 when absent.
func metricValue(t *testing.T, url, prefix string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	line := grepLines(string(b), prefix)
	if line == "" {
		return 0
	}
	v, err := strconv.ParseFloat(strings.TrimPrefix(line, prefix), 64)
	if err != nil {
		t.Fatalf("metric %q: %v", line, err)
	}
	return v
}
