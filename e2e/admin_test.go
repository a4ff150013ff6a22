package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/internal/testkit"
)

// adminHold is a hold as the admin API lists it.
type adminHold struct {
	ID         string          `json:"id"`
	StepID     string          `json:"step_id"`
	Tenant     string          `json:"tenant"`
	Owner      string          `json:"owner"`
	Action     string          `json:"action"`
	Kind       string          `json:"kind"`
	State      string          `json:"state"`
	Shown      json.RawMessage `json:"shown"`
	Answer     string          `json:"answer"`
	AnsweredBy string          `json:"answered_by"`
	Outcome    json.RawMessage `json:"outcome"` // structured: kind, status, why; never a sentence
}

type adminPage struct {
	Holds []adminHold `json:"holds"`
	Next  string      `json:"next"`
}

// admin sends a request to Caddy's admin endpoint and returns the status
// and body.
func admin(t *testing.T, base, method, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// list lists holds through the admin API, failing on anything but 200.
func list(t *testing.T, base, query string) adminPage {
	t.Helper()
	status, body := admin(t, base, "GET", "/toolgate/holds?"+query)
	if status != 200 {
		t.Fatalf("list %s: %d %s", query, status, body)
	}
	var p adminPage
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("list %s: %v: %s", query, err, body)
	}
	for _, k := range []string{`"arguments"`, `"values"`, `"call"`, `"message"`, `"text"`, `"fingerprint"`} {
		if strings.Contains(string(body), k) {
			t.Errorf("list %s shows %s: %s", query, k, body)
		}
	}
	return p
}

func ids(p adminPage) []string {
	var out []string
	for _, h := range p.Holds {
		out = append(out, h.Action+"/"+h.Owner+"/"+h.State)
	}
	return out
}

// TestAdminAPI: through a real Caddy's admin endpoint, an operator lists
// the holds (by state, action, owner, tenant, age; a page at a time),
// reads one without its values, and withdraws a waiting one: it is
// settled, the person can no longer confirm it, the model reads that an
// operator withdrew it, nothing runs, and the audit names the
// withdrawal. Neither public listener serves these routes.
func TestAdminAPI(t *testing.T) {
	port := testkit.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	e := newEnv(t, envOptions{admin: fmt.Sprintf("admin 127.0.0.1:%d", port)})
	e.app.SetRecord("/posts/7", `{"title":"Spring meetup","status":"draft"}`)
	e.app.SetRecord("/posts/8", `{"title":"Summer picnic","status":"draft"}`)
	e.app.SetRecord("/posts/9", `{"title":"Autumn fair","status":"draft"}`)

	l7, msg7 := e.hold(t, "ana", call{"call_7", "delete_post", `{"post":7}`, false})
	e.hold(t, "bo", call{"call_8", "delete_post", `{"post":8}`, false})
	e.hold(t, "ana", call{"call_mail", "send_email", `{"to":"carol@example.com","subject":"Quarterly numbers"}`, false})
	l9, _ := e.hold(t, "ana", call{"call_9", "delete_post", `{"post":9}`, false})
	if st := e.answerOnly(ana, l9, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}

	all := list(t, base, "")
	if got := strings.Join(ids(all), " "); got != "delete_post/ana/settled send_email/ana/waiting delete_post/bo/waiting delete_post/ana/waiting" {
		t.Fatalf("all holds, newest first: %s", got)
	}
	if strings.Contains(fmt.Sprint(all), "carol@example.com") || strings.Contains(fmt.Sprint(all), "Quarterly") {
		t.Errorf("the list shows the call's arguments: %+v", all)
	}
	if h := all.Holds[0]; h.Answer != "confirm" || h.AnsweredBy != "ana" || string(h.Outcome) != `{"kind":"done","person":"confirmed","reply":"policy"}` ||
		!strings.Contains(string(h.Shown), `"Autumn fair"`) || h.Kind != "card" || len(h.StepID) != 26 || !strings.Contains(l9, h.StepID) {
		t.Errorf("the settled hold: %+v", h)
	}
	for _, tt := range []struct{ query, want string }{
		{"state=waiting", "send_email/ana/waiting delete_post/bo/waiting delete_post/ana/waiting"},
		{"state=settled", "delete_post/ana/settled"},
		{"state=expired", ""},
		{"action=send_email", "send_email/ana/waiting"},
		{"owner=ana&state=waiting", "send_email/ana/waiting delete_post/ana/waiting"},
		{"owner=bo", "delete_post/bo/waiting"},
		{"owner=bo&tenant=acme", ""},
		{"tenant=", "delete_post/ana/settled send_email/ana/waiting delete_post/bo/waiting delete_post/ana/waiting"},
		{"tenant=acme", ""},
		{"kind=form", ""},
		{"newer_than=1h&action=delete_post&state=waiting", "delete_post/bo/waiting delete_post/ana/waiting"},
		{"older_than=1h", ""},
	} {
		if got := strings.Join(ids(list(t, base, tt.query)), " "); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.query, got, tt.want)
		}
	}

	// A page at a time.
	p1 := list(t, base, "state=waiting&limit=2")
	if len(p1.Holds) != 2 || p1.Next == "" {
		t.Fatalf("first page: %+v", p1)
	}
	p2 := list(t, base, "state=waiting&limit=2&cursor="+url.QueryEscape(p1.Next))
	if got := strings.Join(ids(p2), " "); got != "delete_post/ana/waiting" || p2.Next != "" {
		t.Errorf("second page: %s, next %q", got, p2.Next)
	}

	for _, tt := range []struct {
		method, path string
		status       int
		says         string
	}{
		{"GET", "/toolgate/holds?state=lost", 400, "state"},
		{"GET", "/toolgate/holds?colour=red", 400, "unknown parameter"},
		{"GET", "/toolgate/holds?limit=0", 400, "limit"},
		{"GET", "/toolgate/holds?limit=501", 400, "limit"},
		{"GET", "/toolgate/holds?older_than=soon", 400, "older_than"},
		{"GET", "/toolgate/holds?cursor=bm9wZQ", 400, "cursor"},
		{"POST", "/toolgate/holds", 405, "GET lists"},
		{"GET", "/toolgate/holds/aaaaaaaaaaaaaaaaaaaaaaaaaa", 404, "not found"},
		{"POST", "/toolgate/holds/aaaaaaaaaaaaaaaaaaaaaaaaaa/expire", 404, "not found"},
		{"GET", "/toolgate/holds/" + all.Holds[1].ID + "/expire", 405, "POST expires"},
		{"DELETE", "/toolgate/holds/" + all.Holds[1].ID, 405, "GET shows"},
		{"POST", "/toolgate/holds/" + all.Holds[1].ID + "/run", 404, "no such route"},
		{"POST", "/toolgate/holds/" + all.Holds[0].ID + "/expire", 409, "answered"},
	} {
		status, body := admin(t, base, tt.method, tt.path)
		if status != tt.status || !strings.Contains(string(body), tt.says) {
			t.Errorf("%s %s: %d %s, want %d saying %q", tt.method, tt.path, status, body, tt.status, tt.says)
		}
	}

	// One hold, without its values.
	mail := all.Holds[1]
	status, body := admin(t, base, "GET", "/toolgate/holds/"+mail.ID)
	var one adminHold
	if status != 200 || json.Unmarshal(body, &one) != nil || one.ID != mail.ID || one.State != "waiting" ||
		!strings.Contains(string(one.Shown), "Send this email now?") || strings.Contains(string(body), "carol@example.com") {
		t.Errorf("one hold: %d %s", status, body)
	}

	// Withdraw ana's delete of post 7.
	target := all.Holds[3]
	status, body = admin(t, base, "POST", "/toolgate/holds/"+target.ID+"/expire")
	var withdrawn adminHold
	if status != 200 || json.Unmarshal(body, &withdrawn) != nil || withdrawn.State != "settled" || withdrawn.Answer != "withdrawn" ||
		withdrawn.AnsweredBy != "admin" || string(withdrawn.Outcome) != `{"kind":"withdrawn"}` {
		t.Fatalf("expire: %d %s", status, body)
	}
	if status, body := admin(t, base, "POST", "/toolgate/holds/"+target.ID+"/expire"); status != 409 || !strings.Contains(string(body), "no longer waiting") {
		t.Errorf("expire again: %d %s", status, body)
	}
	_, _, s := e.view(ana, l7)
	if len(s.Holds) != 1 || s.Holds[0].State != "settled" {
		t.Errorf("the person's page after the withdrawal: %+v", s)
	}
	if st, _ := e.answer(ana, l7, target.ID, s.Tokens[target.ID], "confirm", nil); st != http.StatusConflict {
		t.Errorf("confirming a withdrawn hold: %d, want 409", st)
	}
	if got := toolResult(e.next(t, "ana", msg7, "and?"), "call_7"); got != gate.OutcomeWithdrawn {
		t.Errorf("the model read %q", got)
	}
	for _, c := range e.app.Calls() {
		if c.URI == "/posts/7" {
			t.Errorf("the withdrawn call ran: %s %s", c.Method, c.URI)
		}
	}

	// Not on the public listeners.
	for _, u := range []string{e.apiURL + "/toolgate/holds", strings.TrimSuffix(e.pagesURL, "/toolgate") + "/toolgate/holds"} {
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		req.SetBasicAuth(ana.name, ana.password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && strings.Contains(string(b), `"holds"`) {
			t.Errorf("%s lists holds: %s", u, b)
		}
	}

	testkit.Stop(t)
	out, errOut, err := auditCommand(t, append([]string{"export"}, e.storeFlags(t)...)...)
	if err != nil {
		t.Fatalf("audit export: %v\n%s", err, errOut)
	}
	var answered, settled bool
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, `"hold_id":"`+target.ID+`"`) {
			continue
		}
		answered = answered || strings.Contains(line, `"kind":"answered"`) && strings.Contains(line, `"by":"admin","answer":"withdrawn"`)
		settled = settled || strings.Contains(line, `"kind":"settled"`) && strings.Contains(line, `"outcome":"{\"kind\":\"withdrawn\"}"`)
	}
	if !answered || !settled {
		t.Errorf("the audit lacks the withdrawal (answered %v, settled %v):\n%s", answered, settled, out)
	}
}
