package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/toolgate/toolgate/internal/testkit"
)

// The inbox (issue 19 §3), end to end: two tenants, acme and globex, each
// with an ana; cy edits in acme. The sign-in service (forward_auth, a
// fake: it lies outside the product) reads "name@tenant" and answers
// with the person's id, roles and tenant in headers.

// tenantSignIn answers for "name@tenant" with X-Auth-User, X-Auth-Roles
// (editor for cy) and X-Auth-Tenant; the password is the name's.
func tenantSignIn(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pw, ok := r.BasicAuth()
		name, tenant, at := strings.Cut(user, "@")
		if !ok || !at || pw != name+"-pw" {
			w.Header().Set("WWW-Authenticate", `Basic realm="platform"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Auth-User", name)
		w.Header().Set("X-Auth-Tenant", tenant)
		if name == "cy" {
			w.Header().Set("X-Auth-Roles", "editor")
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

var (
	anaAcme   = person{"ana@acme", "ana-pw"}
	anaGlobex = person{"ana@globex", "ana-pw"}
	cyAcme    = person{"cy@acme", "cy-pw"}
	boAcme    = person{"bo@acme", "bo-pw"}
)

func newInboxEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, envOptions{policy: "decline_note: true\n" + approverPolicy, handler: "tenant {http.request.header.X-Tenant}", pagesRoute: fmt.Sprintf(`forward_auth %s {
			uri /check
			copy_headers X-Auth-User X-Auth-Roles X-Auth-Tenant
		}
		toolgate_pages {
			answerer {http.request.header.X-Auth-User}
			roles {http.request.header.X-Auth-Roles}
			tenant {http.request.header.X-Auth-Tenant}
		}`, tenantSignIn(t))})
}

// holdIn makes the model call c in owner's conversation in tenant, as
// openai-go, and returns the link.
func (e *env) holdIn(t *testing.T, owner, tenant string, c call) string {
	t.Helper()
	e.provider.Enqueue(testkit.Reply{Body: jsonCompletion("", c)})
	got, err := e.tenantClient(owner, tenant).Chat.Completions.New(ctx, userAsks("Please."))
	if err != nil {
		t.Fatal(err)
	}
	l := linkRe.FindString(got.Choices[0].Message.Content)
	if l == "" {
		t.Fatalf("%s@%s's %s was not held: %q", owner, tenant, c.name, got.Choices[0].Message.Content)
	}
	time.Sleep(2 * time.Millisecond) // newest first: each made after the last
	return l
}

type inboxJSON struct {
	Waiting []struct {
		Link, Action, Owner, Sentence, App, Kind string
		Approver                                 bool
		FourEyes                                 bool `json:"four_eyes"`
		Created, Expires                         time.Time
	} `json:"waiting"`
	Next string `json:"next"`
	Now  time.Time
}

// inboxLinks pages through p's inbox as JSON, limit at a time.
func (e *env) inboxLinks(t *testing.T, p person, limit int) ([]string, inboxJSON) {
	t.Helper()
	var links []string
	var first inboxJSON
	after := ""
	for i := 0; ; i++ {
		u := fmt.Sprintf("%s/?limit=%d", e.pagesURL, limit)
		if after != "" {
			u += "&after=" + after
		}
		st, body := e.getAs(p, u, map[string]string{"Accept": "application/json"})
		var page inboxJSON
		if err := json.Unmarshal([]byte(body), &page); st != 200 || err != nil {
			t.Fatalf("%s's inbox: %d %s %v", p.name, st, body, err)
		}
		if i == 0 {
			first = page
		}
		if len(page.Waiting) > limit || i > 10 {
			t.Fatalf("%s's inbox: page %d holds %d of %d", p.name, i, len(page.Waiting), limit)
		}
		for _, w := range page.Waiting {
			links = append(links, w.Link)
		}
		if after = page.Next; after == "" {
			return links, first
		}
	}
}

func TestBrowserInbox(t *testing.T) {
	e := newInboxEnv(t)
	setupPost(e)
	mail := call{"call_mail", "send_email", `{"to":"team@example.com","subject":"Hi"}`, false}
	anaCard := e.holdIn(t, "ana", "acme", del7)
	boCard := e.holdIn(t, "bo", "acme", del7)
	anaForm := e.holdIn(t, "ana", "acme", formCall)
	globexCard := e.holdIn(t, "ana", "globex", del7)
	globexForm := e.holdIn(t, "ana", "globex", formCall)
	anaMail := e.holdIn(t, "ana", "acme", mail) // four_eyes: an editor confirms it

	// JSON, paged one at a time: each person's own and approvable holds,
	// newest first, in their tenant only.
	for _, c := range []struct {
		who  person
		want []string
	}{
		{anaAcme, []string{anaMail, anaForm, anaCard}},
		{anaGlobex, []string{globexForm, globexCard}},
		{cyAcme, []string{anaMail, boCard, anaCard}},
		{boAcme, []string{boCard}},
	} {
		got, _ := e.inboxLinks(t, c.who, 1)
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s's inbox:\n  %v\nwant\n  %v", c.who.name, got, c.want)
		}
	}
	_, page := e.inboxLinks(t, anaAcme, 10)
	if w := page.Waiting; len(w) != 3 || w[0].Action != "send_email" || !w[0].FourEyes || w[1].Kind != "form" || w[1].Sentence != "A few details for your post." ||
		w[2].App != "Test blog" || w[2].Approver || !w[2].Expires.After(page.Now) || w[2].Created.After(page.Now) {
		t.Errorf("ana's inbox: %+v", page)
	}

	// HTML without JavaScript, two to a page.
	b := browserWith(t, anaAcme, browserOptions{timeout: 3 * time.Minute})
	noScript(t, b)
	if err := chromedp.Do(b, chromedp.Navigate(e.pagesURL+"/?limit=2"), chromedp.WaitVisible(chromedp.CSS(`nav.pager a[rel=next]`))); err != nil {
		t.Fatal(err)
	}
	if got := squash(text(t, b, `ul.waiting`)); !strings.Contains(got, "Test blog Your assistant wants to: Send this email now? Waiting for 1 min · expires in 29 min") ||
		!strings.Contains(got, "Your assistant asks: A few details for your post.") || strings.Contains(got, "Delete this post") {
		t.Errorf("ana's first page reads %q", got)
	}
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`nav.pager a[rel=next]`)), chromedp.WaitVisible(chromedp.CSS(`ul.waiting`))); err != nil {
		t.Fatal(err)
	}
	if got := squash(text(t, b, `main`)); !strings.Contains(got, "Delete this post? This cannot be undone.") || strings.Contains(got, "Send this email") || !strings.Contains(got, "Newest questions") || strings.Contains(got, "Older questions") {
		t.Errorf("ana's second page reads %q", got)
	}
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`ul.waiting a`)), chromedp.WaitVisible(chromedp.CSS(`button.confirm`))); err != nil {
		t.Fatal(err)
	}
	if where, _ := chromedp.Run(b, chromedp.Location()); where != anaCard {
		t.Errorf("the inbox led to %s, want %s", where, anaCard)
	}

	// With JavaScript (axe runs in the page), in English and in German
	// for cy: axe clean, light and dark, wide and at 320 px.
	dir := artifacts(t)
	axeSource(t)
	if _, err := chromedp.Call(b, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: false}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(b, chromedp.Navigate(e.pagesURL+"/?limit=2"), chromedp.WaitVisible(chromedp.CSS(`nav.pager a[rel=next]`))); err != nil {
		t.Fatal(err)
	}
	audit(t, b, dir, "inbox")
	if err := chromedp.Do(b, chromedp.Navigate(anaCard), chromedp.WaitVisible(chromedp.CSS(`textarea[name=decline_note]`))); err != nil {
		t.Fatal(err)
	}
	audit(t, b, dir, "card-with-note")

	cy := browserWith(t, cyAcme, browserOptions{lang: "de", timeout: 3 * time.Minute})
	if err := chromedp.Do(cy, chromedp.Navigate(e.pagesURL+"/"), chromedp.WaitVisible(chromedp.CSS(`ul.waiting`))); err != nil {
		t.Fatal(err)
	}
	audit(t, cy, dir, "inbox-de")
	if got := squash(text(t, cy, `ul.waiting`)); !strings.Contains(got, "Der Assistent von ana möchte:") || !strings.Contains(got, "Der Assistent von bo möchte:") || strings.Contains(got, "A few details") {
		t.Errorf("cy's German inbox reads %q", got)
	}
	if err := chromedp.Do(cy, chromedp.Navigate(anaCard), chromedp.WaitVisible(chromedp.CSS(`textarea[name=decline_note]`))); err != nil {
		t.Fatal(err)
	}
	audit(t, cy, dir, "card-with-note-de")

	// Globex's ana sees hers only; acme's links lead nowhere for her.
	if st, body := e.getAs(anaGlobex, e.pagesURL+"/", nil); st != 200 || strings.Contains(body, "Send this email") || strings.Count(body, `<li class="card">`) != 2 {
		t.Errorf("globex's inbox: %d %s", st, body)
	}
	if st, _ := e.getAs(anaGlobex, anaCard, nil); st != http.StatusNotFound {
		t.Errorf("acme's card for globex's ana: %d", st)
	}
	if st, _ := e.getAs(anaAcme, e.pagesURL+"/?after=bogus!", map[string]string{"Accept": "application/json"}); st != http.StatusBadRequest {
		t.Errorf("a forged cursor: %d", st)
	}
}
