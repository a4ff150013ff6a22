package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Approvers other than the caller, end to end: the platform's sign-in is
// forward_auth to a sign-in service (a fake: it lies outside the product)
// that answers with the person's id and roles in headers; toolgate_pages
// reads them through its answerer and roles placeholders. The person is
// Chromium; the app is openai-go.

// signedIn is someone the sign-in service knows.
type signedIn struct {
	password string
	roles    string
}

// signIn is the platform's sign-in service: it checks the basic-auth
// credentials forward_auth hands it and answers 200 with X-Auth-User and
// X-Auth-Roles, or 401.
func signIn(t *testing.T, people map[string]signedIn) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, pw, ok := r.BasicAuth()
		p, known := people[name]
		if !ok || !known || pw != p.password {
			w.Header().Set("WWW-Authenticate", `Basic realm="platform"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Auth-User", name)
		if p.roles != "" {
			w.Header().Set("X-Auth-Roles", p.roles)
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

var (
	cy    = person{"cy-editor", "cy-pw"}
	dee   = person{"dee", "dee-pw"}
	staff = map[string]signedIn{
		"ana":       {password: "ana-pw"},
		"bo":        {password: "bo-pw", roles: "viewer"},
		"cy-editor": {password: "cy-pw", roles: "viewer, editor"},
		"dee":       {password: "dee-pw"},
	}
)

// approverPolicy is the test policy with approvers: editors, and dee by
// id, may answer delete_post for its owner; send_email needs an editor
// (four_eyes).
var approverPolicy = strings.NewReplacer(
	"    reply: Removed.\n", "    reply: Removed.\n    approvers: {roles: [editor], ids: [dee]}\n",
	"    reply: Sent.\n", "    reply: Sent.\n    approvers: {roles: [editor]}\n    four_eyes: true\n",
).Replace(policyYAML)

func newApproverEnv(t *testing.T) *env {
	t.Helper()
	if !strings.Contains(approverPolicy, "four_eyes") || !strings.Contains(approverPolicy, "ids: [dee]") {
		t.Fatal("the approvers were not written into the policy")
	}
	return newEnv(t, envOptions{policy: approverPolicy, pagesRoute: staffPages(t)})
}

// staffPages is a pages route behind the platform's sign-in service for
// staff (forward_auth): the answerer and their roles come from it.
func staffPages(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf(`forward_auth %s {
			uri /check
			copy_headers X-Auth-User X-Auth-Roles
		}
		toolgate_pages {
			answerer {http.request.header.X-Auth-User}
			roles {http.request.header.X-Auth-Roles}
		}`, signIn(t, staff))
}

// getAs reads a page as p with extra request headers (as JSON when
// asked), returning the status and body.
func (e *env) getAs(p person, link string, header map[string]string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest("GET", link, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.SetBasicAuth(p.name, p.password)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// An editor finds ana's held call on their list (no link needed), reads
// whose conversation it came from, confirms it in Chromium; the action
// runs once, as the editor; ana's model reads only the outcome.
func TestBrowserApproverConfirms(t *testing.T) {
	e := newApproverEnv(t)
	setupPost(e)
	l, msg := e.hold(t, "ana")
	if l == "" {
		t.Fatal("the call was not held")
	}
	b := browser(t, cy)
	if err := chromedp.Do(b, chromedp.Navigate(e.pagesURL+"/"), chromedp.WaitVisible(chromedp.CSS(`ul.waiting a`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, b, `ul.waiting .asker`); got != "ana's assistant wants to:" {
		t.Errorf("list entry asker = %q", got)
	}
	if got := text(t, b, `ul.waiting .sentence`); got != "Delete this post? This cannot be undone." {
		t.Errorf("list entry sentence = %q", got)
	}
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`ul.waiting a`)), chromedp.WaitVisible(chromedp.CSS(`button.confirm`))); err != nil {
		t.Fatal(err)
	}
	where, err := chromedp.Run(b, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if where != l {
		t.Errorf("the list led to %s, want %s", where, l)
	}
	if got := text(t, b, `.asker`); got != "ana's assistant wants to:" {
		t.Errorf("card asker = %q", got)
	}
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`button.confirm`)), chromedp.WaitVisible(chromedp.CSS(`.status`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, b, `.status`); got != "Done. Removed." {
		t.Errorf("status after confirm = %q", got)
	}
	calls := e.app.Calls()
	if len(calls) != 1 {
		t.Fatalf("the action ran %d times", len(calls))
	}
	if c := calls[0]; c.Method != "DELETE" || c.URI != "/posts/7" || c.SignatureErr != nil || c.Header.Get("X-Toolgate-Person") != "cy-editor" {
		t.Errorf("action got %s %s person=%q signature=%v", c.Method, c.URI, c.Header.Get("X-Toolgate-Person"), c.SignatureErr)
	}
	next := e.next(t, "ana", msg, "Thanks")
	if got := toolResult(next, "call_del7"); got != "The person confirmed. Removed." {
		t.Errorf("restored tool result = %q", got)
	}
	if bytes.Contains(next, []byte("cy-editor")) {
		t.Errorf("the model read who answered: %s", next)
	}
	// The list no longer holds it.
	if err := chromedp.Do(b, chromedp.Navigate(e.pagesURL+"/"), chromedp.WaitVisible(chromedp.CSS(`main p`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, b, `main p`); got != "Nothing is waiting for your answer." {
		t.Errorf("the list after answering reads %q", got)
	}
}

// Someone without the role, and someone who sends the roles header
// themselves (forward_auth replaces it), gets 404 for the card and an
// empty list; their answer runs nothing. dee, named by id, may see it.
func TestApproverWithoutRoleNotFound(t *testing.T) {
	e := newApproverEnv(t)
	setupPost(e)
	l, _ := e.hold(t, "ana")
	b := browser(t, bo)
	if err := chromedp.Do(b, chromedp.Navigate(l), chromedp.WaitVisible(chromedp.CSS(`h1`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, b, `h1`); got != "Not found" {
		t.Errorf("bo's card page heading = %q", got)
	}
	for name, h := range map[string]map[string]string{
		"no role":            nil,
		"own roles header":   {"X-Auth-Roles": "editor"},
		"own user header":    {"X-Auth-User": "cy-editor", "X-Auth-Roles": "editor"},
		"own roles as JSON":  {"X-Auth-Roles": "editor", "Accept": "application/json"},
		"own user, wrong pw": nil,
	} {
		p := bo
		if name == "own user, wrong pw" {
			p = person{"cy-editor", "nope"}
		}
		st, body := e.getAs(p, l, h)
		want := http.StatusNotFound
		if p.password == "nope" {
			want = http.StatusUnauthorized
		}
		if st != want {
			t.Errorf("%s: card %d, want %d: %s", name, st, want, body)
		}
		if p.password == "nope" {
			continue
		}
		st, body = e.getAs(p, e.pagesURL+"/", map[string]string{"Accept": "application/json", "X-Auth-Roles": h["X-Auth-Roles"]})
		if st != http.StatusOK || !strings.HasPrefix(body, `{"waiting":[],"now":`) || strings.Contains(body, `"next"`) {
			t.Errorf("%s: list %d %q", name, st, body)
		}
	}
	_, _, s := e.view(ana, l)
	st, _ := e.answer(bo, l, s.Holds[0].ID, s.Tokens[s.Holds[0].ID], "confirm", nil)
	if st != http.StatusConflict {
		t.Errorf("bo's confirmation: %d, want 409", st)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatalf("the action ran %d times", n)
	}
	if st, body := e.getAs(dee, l, map[string]string{"Accept": "application/json"}); st != http.StatusOK || !strings.Contains(body, `"owner":"ana"`) {
		t.Errorf("dee (by id): %d %s", st, body)
	}
}

// With four_eyes the owner's page offers Decline only and a forged
// Confirm runs nothing (409); an editor confirms it.
func TestBrowserFourEyes(t *testing.T) {
	e := newApproverEnv(t)
	l, msg := e.hold(t, "ana", call{"call_mail", "send_email", `{"to":"bo@example.com","subject":"Agenda"}`, false})
	if !strings.Contains(msg.Content, "Waiting for an approver's confirmation: Send this email now?") {
		t.Errorf("the app read %q", msg.Content)
	}
	b := browser(t, ana)
	if err := chromedp.Do(b, chromedp.Navigate(l), chromedp.WaitVisible(chromedp.CSS(`button.decline`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, b, `h1`); got != "Waiting for an approver" {
		t.Errorf("ana's heading = %q", got)
	}
	confirms, err := chromedp.Run(b, chromedp.Evaluate[int](`document.querySelectorAll('button.confirm').length`))
	if err != nil {
		t.Fatal(err)
	}
	if confirms != 0 {
		t.Errorf("ana is offered %d Confirm buttons", confirms)
	}
	_, _, s := e.view(ana, l)
	st, body := e.answer(ana, l, s.Holds[0].ID, s.Tokens[s.Holds[0].ID], "confirm", nil)
	if st != http.StatusConflict || !strings.Contains(body, "You may not confirm your own request") {
		t.Errorf("ana's own confirmation: %d %s", st, body)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatalf("the action ran %d times after ana's confirmation", n)
	}
	c := browser(t, cy)
	if err := chromedp.Do(c, chromedp.Navigate(l), chromedp.WaitVisible(chromedp.CSS(`button.confirm`)),
		chromedp.Click(chromedp.CSS(`button.confirm`)), chromedp.WaitVisible(chromedp.CSS(`.status`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, c, `.status`); got != "Done. Sent." {
		t.Errorf("status after cy confirmed = %q", got)
	}
	if calls := e.app.Calls(); len(calls) != 1 || calls[0].URI != "/emails" || calls[0].Header.Get("X-Toolgate-Person") != "cy-editor" {
		t.Errorf("action calls: %+v", calls)
	}
	if got := toolResult(e.next(t, "ana", msg, "Thanks"), "call_mail"); got != "The person confirmed. Sent." {
		t.Errorf("restored tool result = %q", got)
	}
}
