package pages

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/actions"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// The pages served over real HTTP, on a real gate with a Badger store (in
// memory) and a fake app: the person's answers and what reached the app.
// The signed-in person comes in the X-Person and X-Tenant headers, as
// toolgate_pages takes them from the platform's sign-in.

const testSecret = "pages-test-secret-0123456789"

// policyYAML has a destructive card action and a write action asked for
// with a form; APP is the fake app's URL.
const policyYAML = "app: Test blog\nactions:\n" + testkit.DeletePostAction + `  draft_post:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        title: {type: string, title: Title}
        body: {type: string, title: Body, maxLength: 20}
      required: [title, body]
    run:
      url: APP/drafts
    reply: Drafted.
`

// site is the pages of one gate, served over HTTP.
type site struct {
	t      *testing.T
	app    *testkit.App
	clock  *testkit.Clock
	db     store.Store
	gate   *gate.Gate
	pages  *Pages
	policy *policies.Policy
	url    string // the pages' base URL, ".../toolgate"
}

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{t: t, app: testkit.NewApp(t, []byte(testSecret)), clock: testkit.NewClock(time.Date(2031, 5, 4, 10, 0, 0, 0, time.UTC))}
	p, err := policies.Parse("policy.yaml", []byte(strings.ReplaceAll(policyYAML, "APP", s.app.URL)))
	if err != nil {
		t.Fatal(err)
	}
	s.policy = p
	db, err := store.OpenBadger("", store.BadgerOptions{InMemory: true, Now: s.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	s.db = db
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.pages.Serve(w, r, gate.Person{Owner: r.Header.Get("X-Person"), Tenant: r.Header.Get("X-Tenant")})
	}))
	s.url = srv.URL + "/toolgate"
	s.gate = gate.New(gate.Config{
		Store:   db,
		Actions: &actions.Client{Secret: []byte(testSecret), Timeout: 5 * time.Second},
		Pages:   s.url,
		Policy:  func(string) *policies.Policy { return s.policy },
		Secret:  []byte(testSecret),
		Now:     s.clock.Now,
	})
	s.pages = &Pages{Gate: s.gate, Secret: []byte(testSecret)}
	t.Cleanup(func() { srv.Close(); s.gate.Stop(5 * time.Second); db.Close() })
	return s
}

var (
	ana = gate.Person{Owner: "ana", Tenant: "acme"}
	bo  = gate.Person{Owner: "bo", Tenant: "acme"}
)

// hold makes the model, in who's conversation, call delete_post for each
// post (draft_post without a body for post 0) and returns the step's link
// and its holds, in order.
func (s *site) hold(who gate.Person, posts ...int) (string, []store.Hold) {
	s.t.Helper()
	var calls []provider.Call
	for i, post := range posts {
		name, args := "delete_post", fmt.Sprintf(`{"post":%d}`, post)
		if post == 0 {
			name, args = "draft_post", `{"title":"Hi"}`
		} else {
			s.app.SetRecord(fmt.Sprintf("/posts/%d", post), `{"title":"Spring meetup"}`)
		}
		calls = append(calls, provider.Call{Position: i, ID: fmt.Sprintf("call_%d", i), Type: "function", Name: name, Arguments: []byte(args), Raw: []byte(`{}`)})
	}
	v := s.gate.Front(s.policy, "policy.yaml", func() gate.Person { return who }, "openai-chat").Hold(context.Background(), calls, []byte(`{"role":"assistant"}`), provider.Kept{})
	i := strings.Index(v.Text, s.url+"/h/")
	if i < 0 {
		s.t.Fatalf("nothing held: %+v", v)
	}
	link := v.Text[i : i+len(s.url)+3+26]
	holds, err := s.db.Step(context.Background(), link[len(link)-26:])
	if err != nil {
		s.t.Fatal(err)
	}
	return link, holds
}

// response is what a request to the pages got.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends a request as who (nobody when who.Owner is "") and returns the
// response, redirects not followed.
func (s *site) do(method, link string, who gate.Person, header map[string]string, body string) response {
	s.t.Helper()
	req, err := http.NewRequest(method, link, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if who.Owner != "" {
		req.Header.Set("X-Person", who.Owner)
		req.Header.Set("X-Tenant", who.Tenant)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, string(b)}
}

var formPost = map[string]string{"Content-Type": "application/x-www-form-urlencoded"}

// answer posts a form answer as a client that is not a browser (no Origin).
func (s *site) answer(link string, who gate.Person, form url.Values) response {
	s.t.Helper()
	return s.do("POST", link, who, formPost, form.Encode())
}

// token is the token the page gives who for a hold.
func (s *site) token(holdID string, who gate.Person) string { return s.pages.Token(holdID, who) }

// states reads the state of each hold of a step.
func (s *site) states(link string) []store.State {
	s.t.Helper()
	holds, err := s.db.Step(context.Background(), link[len(link)-26:])
	if err != nil {
		s.t.Fatal(err)
	}
	var out []store.State
	for _, h := range holds {
		out = append(out, h.StateAt(s.clock.Now()))
	}
	return out
}

// wantNothingRan fails unless every hold of the step still waits and the
// app got no action request.
func (s *site) wantNothingRan(link string) {
	s.t.Helper()
	for i, st := range s.states(link) {
		if st != store.Waiting {
			s.t.Errorf("hold %d is %s, want waiting", i, st)
		}
	}
	if n := len(s.app.Calls()); n != 0 {
		s.t.Errorf("the app got %d action requests, want none", n)
	}
}

func wantStatus(t *testing.T, what string, r response, status int, says string) {
	t.Helper()
	if r.status != status || !strings.Contains(r.body, says) {
		t.Errorf("%s: %d %s, want %d saying %q", what, r.status, r.body, status, says)
	}
}

// TestAnswerWithOwnTokenForAnothersHold: bo, signed in to ana's tenant,
// posts an answer to her hold with a token that is valid for him (the
// token check passes): it is refused as not his, and runs nothing. Ana's
// answer runs after.
func TestAnswerWithOwnTokenForAnothersHold(t *testing.T) {
	s := newSite(t)
	link, holds := s.hold(ana, 7)
	id := holds[0].ID
	for _, choice := range []string{"confirm", "decline"} {
		r := s.answer(link, bo, url.Values{"hold": {id}, "token": {s.token(id, bo)}, "answer": {choice}})
		wantStatus(t, "bo's "+choice+" with his own token", r, http.StatusConflict, "Nothing ran.")
	}
	r := s.do("POST", link, bo, map[string]string{"Content-Type": "application/json", "Accept": "application/json"},
		fmt.Sprintf(`{"hold":%q,"token":%q,"answer":"confirm"}`, id, s.token(id, bo)))
	wantStatus(t, "bo's JSON confirm with his own token", r, http.StatusConflict, `"error"`)
	s.wantNothingRan(link)
	r = s.answer(link, ana, url.Values{"hold": {id}, "token": {s.token(id, ana)}, "answer": {"confirm"}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != strings.TrimPrefix(link, s.url[:strings.Index(s.url, "/toolgate")]) {
		t.Errorf("ana's confirm: %d, Location %q", r.status, r.header.Get("Location"))
	}
	if calls := s.app.Calls(); len(calls) != 1 || calls[0].Method != "DELETE" || calls[0].URI != "/posts/7" || calls[0].Header.Get(actions.HeaderPerson) != "ana" {
		t.Errorf("the app got %+v, want one DELETE /posts/7 as ana", calls)
	}
}

// TestAnswerWithoutItsTokenIsRefused: the person's own answer without the
// token the page gave for that hold (none, another hold's, another
// tenant's, a made-up one) is refused: another site could have posted it.
func TestAnswerWithoutItsTokenIsRefused(t *testing.T) {
	s := newSite(t)
	link, holds := s.hold(ana, 7, 8)
	id := holds[0].ID
	for name, tok := range map[string]string{
		"no token":              "",
		"another hold's":        s.token(holds[1].ID, ana),
		"another tenant's":      s.token(id, gate.Person{Owner: "ana", Tenant: "globex"}),
		"made up":               "AAAAAAAAAAAAAAAAAAAAAAAA",
		"the token with a tail": s.token(id, ana) + "x",
	} {
		r := s.answer(link, ana, url.Values{"hold": {id}, "token": {tok}, "answer": {"confirm"}})
		wantStatus(t, name, r, http.StatusConflict, "Nothing ran.")
	}
	s.wantNothingRan(link)
}

// TestCrossSiteAnswerIsRefused: a browser's answer that another site
// posted is refused even with the right token; the page's own is taken.
func TestCrossSiteAnswerIsRefused(t *testing.T) {
	s := newSite(t)
	link, holds := s.hold(ana, 7)
	id := holds[0].ID
	form := url.Values{"hold": {id}, "token": {s.token(id, ana)}, "answer": {"confirm"}}.Encode()
	for _, h := range []map[string]string{
		{"Origin": "http://evil.example"},
		{"Origin": "null"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site", "Origin": "http://sub.example"},
		{"Sec-Fetch-Site": "none"},
	} {
		h["Content-Type"] = formPost["Content-Type"]
		wantStatus(t, fmt.Sprint(h), s.do("POST", link, ana, h, form), http.StatusConflict, "another site")
	}
	s.wantNothingRan(link)
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	r := s.do("POST", link, ana, map[string]string{"Content-Type": formPost["Content-Type"], "Origin": "http://" + u.Host, "Sec-Fetch-Site": "same-origin"}, form)
	if r.status != http.StatusSeeOther || len(s.app.Calls()) != 1 {
		t.Errorf("the page's own answer: %d, %d runs", r.status, len(s.app.Calls()))
	}
}

// TestJSONAnswerIsReadWhole: a JSON answer with a field the page does not
// know is refused (400), not read without it; the same answer without it
// runs and returns the hold as JSON.
func TestJSONAnswerIsReadWhole(t *testing.T) {
	s := newSite(t)
	link, holds := s.hold(ana, 7)
	id := holds[0].ID
	jsonPost := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	for _, extra := range []string{`"by":"bo"`, `"answer_by":"ana"`, `"values":{},"hold_id":"x"`} {
		body := fmt.Sprintf(`{"hold":%q,"token":%q,"answer":"confirm",%s}`, id, s.token(id, ana), extra)
		wantStatus(t, extra, s.do("POST", link, ana, jsonPost, body), http.StatusBadRequest, "could not be read")
	}
	wantStatus(t, "not JSON", s.do("POST", link, ana, jsonPost, `{"hold":`), http.StatusBadRequest, "could not be read")
	s.wantNothingRan(link)
	r := s.do("POST", link, ana, jsonPost, fmt.Sprintf(`{"hold":%q,"token":%q,"answer":"confirm"}`, id, s.token(id, ana)))
	var hv gate.HoldView
	if err := json.Unmarshal([]byte(r.body), &hv); r.status != http.StatusOK || err != nil {
		t.Fatalf("JSON confirm: %d %s", r.status, r.body)
	}
	if hv.ID != id || hv.State != store.Settled || hv.Outcome != "The person confirmed. Removed." {
		t.Errorf("JSON confirm returned %+v", hv)
	}
	if n := len(s.app.Calls()); n != 1 {
		t.Errorf("the app got %d action requests, want 1", n)
	}
}

// TestAnswerFitsTheHold: a form's submit posted to a card, a card's
// confirm posted to a form, and a hold answered under another step's link
// are refused and claim nothing.
func TestAnswerFitsTheHold(t *testing.T) {
	s := newSite(t)
	link, holds := s.hold(ana, 7, 0)
	other, _ := s.hold(ana, 8)
	card, form := holds[0].ID, holds[1].ID
	r := s.answer(link, ana, url.Values{"hold": {card}, "token": {s.token(card, ana)}, "answer": {"submit"}, "body": {"Spring"}})
	wantStatus(t, "submit to a card", r, http.StatusBadRequest, "Nothing ran.")
	r = s.answer(link, ana, url.Values{"hold": {form}, "token": {s.token(form, ana)}, "answer": {"confirm"}})
	wantStatus(t, "confirm to a form", r, http.StatusBadRequest, "Nothing ran.")
	r = s.answer(other, ana, url.Values{"hold": {card}, "token": {s.token(card, ana)}, "answer": {"confirm"}})
	wantStatus(t, "a card under another step's link", r, http.StatusNotFound, "Nothing ran.")
	r = s.answer(other, ana, url.Values{"hold": {form}, "token": {s.token(form, ana)}, "answer": {"submit"}, "body": {"Spring"}})
	wantStatus(t, "a form under another step's link", r, http.StatusNotFound, "Nothing ran.")
	s.wantNothingRan(link)
	s.wantNothingRan(other)
}

// TestLateFormAnswerIsRefused: past its TTL a form is refused as expired
// (409) whether the answer is complete or not: the person is not asked to
// fix a form that can no longer run.
func TestLateFormAnswerIsRefused(t *testing.T) {
	s := newSite(t)
	link, holds := s.hold(ana, 0)
	id := holds[0].ID
	s.clock.Advance(gate.DefaultTTL)
	for name, body := range map[string]string{"complete": "Spring", "too long": strings.Repeat("x", 21)} {
		r := s.answer(link, ana, url.Values{"hold": {id}, "token": {s.token(id, ana)}, "answer": {"submit"}, "body": {body}})
		wantStatus(t, name, r, http.StatusConflict, "has expired")
	}
	if n := len(s.app.Calls()); n != 0 {
		t.Errorf("a late form ran %d actions", n)
	}
}

// TestFormAnswerIsChecked: a form answer that breaks the form's rules is
// sent back with its errors (the page again with the values typed, or
// JSON), a Precognition check runs nothing either way, and a valid answer
// runs the call with the person's values over the model's.
func TestFormAnswerIsChecked(t *testing.T) {
	s := newSite(t)
	link, holds := s.hold(ana, 0)
	id := holds[0].ID
	bad := url.Values{"hold": {id}, "token": {s.token(id, ana)}, "answer": {"submit"}, "body": {"<b>far too long a body</b>"}}
	r := s.answer(link, ana, bad)
	wantStatus(t, "HTML", r, http.StatusUnprocessableEntity, "Please fix the fields marked below.")
	if !strings.Contains(r.body, "&lt;b&gt;far too long a body&lt;/b&gt;") || strings.Contains(r.body, "<b>far") {
		t.Errorf("the typed value is not shown back, escaped:\n%s", r.body)
	}
	r = s.do("POST", link, ana, map[string]string{"Content-Type": formPost["Content-Type"], "Accept": "application/json"}, bad.Encode())
	var got struct {
		Errors map[string][]string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(r.body), &got); r.status != http.StatusUnprocessableEntity || err != nil || len(got.Errors["body"]) == 0 {
		t.Errorf("JSON: %d %s", r.status, r.body)
	}
	r = s.do("POST", link, ana, map[string]string{"Content-Type": formPost["Content-Type"], "Precognition": "true"}, bad.Encode())
	if r.status != http.StatusUnprocessableEntity || r.header.Get("Precognition") != "true" || !strings.Contains(r.body, `"body"`) {
		t.Errorf("Precognition of a bad answer: %d %v %s", r.status, r.header, r.body)
	}
	good := url.Values{"hold": {id}, "token": {s.token(id, ana)}, "answer": {"submit"}, "body": {"Spring"}}
	r = s.do("POST", link, ana, map[string]string{"Content-Type": formPost["Content-Type"], "Precognition": "true"}, good.Encode())
	if r.status != http.StatusNoContent || r.header.Get("Precognition-Success") != "true" {
		t.Errorf("Precognition of a good answer: %d %v", r.status, r.header)
	}
	s.wantNothingRan(link)
	if r := s.answer(link, ana, good); r.status != http.StatusSeeOther {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	calls := s.app.Calls()
	if len(calls) != 1 || calls[0].URI != "/drafts" || string(calls[0].Body) != `{"title":"Hi","body":"Spring"}` {
		t.Errorf("the app got %+v", calls)
	}
	wantStatus(t, "a second submit", s.answer(link, ana, good), http.StatusConflict, "already answered")
}

// TestPageIsShownOnlyToItsPerson: the step's page shows its holds, with a
// token for each, to the person in her tenant; anyone else gets the same
// answer as for a link that does not exist, nobody signed in is asked to
// sign in.
func TestPageIsShownOnlyToItsPerson(t *testing.T) {
	s := newSite(t)
	link, holds := s.hold(ana, 7, 0)
	accept := map[string]string{"Accept": "application/json"}
	r := s.do("GET", link, ana, accept, "")
	var page struct {
		Step   string            `json:"step"`
		App    string            `json:"app"`
		Holds  []gate.HoldView   `json:"holds"`
		Tokens map[string]string `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(r.body), &page); r.status != http.StatusOK || err != nil {
		t.Fatalf("ana's page: %d %s", r.status, r.body)
	}
	if page.App != "Test blog" || len(page.Holds) != 2 || page.Holds[0].Card == nil || page.Holds[0].Card.Sentence != "Delete this post?" || page.Holds[1].Form == nil {
		t.Errorf("ana's page: %s", r.body)
	}
	for _, h := range holds {
		if page.Tokens[h.ID] != s.token(h.ID, ana) {
			t.Errorf("token of hold %s: %q", h.ID, page.Tokens[h.ID])
		}
	}
	for _, h := range []string{"Cache-Control", "Referrer-Policy", "X-Frame-Options", "X-Content-Type-Options"} {
		if r.header.Get(h) == "" {
			t.Errorf("the page lacks %s", h)
		}
	}
	unknown := s.do("GET", link[:len(link)-26]+strings.Repeat("a", 26), ana, nil, "")
	for _, who := range []gate.Person{bo, {Owner: "ana", Tenant: "globex"}, {Owner: "ana"}} {
		r := s.do("GET", link, who, nil, "")
		if r.status != http.StatusNotFound || r.body != unknown.body || strings.Contains(r.body, "Spring meetup") {
			t.Errorf("%+v: %d %s, want the unknown link's 404", who, r.status, r.body)
		}
	}
	wantStatus(t, "nobody signed in", s.do("GET", link, gate.Person{}, nil, ""), http.StatusUnauthorized, "Sign in")
	wantStatus(t, "a malformed link", s.do("GET", link[:len(link)-1], ana, nil, ""), http.StatusNotFound, "no such page")
	if r := s.do("PUT", link, ana, nil, ""); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("PUT: %d, Allow %q", r.status, r.header.Get("Allow"))
	}
	if r := s.do("HEAD", link, ana, nil, ""); r.status != http.StatusOK || r.body != "" {
		t.Errorf("HEAD: %d %q", r.status, r.body)
	}
	// The page of a form runs one script, by the nonce the CSP names. (A
	// site of its own: on this one the same call attaches to the step
	// above, whose card is asked first.)
	fs := newSite(t)
	formLink, _ := fs.hold(ana, 0)
	r = fs.do("GET", formLink, ana, nil, "")
	csp := r.header.Get("Content-Security-Policy")
	i := strings.Index(csp, "'nonce-")
	if r.status != http.StatusOK || i < 0 || !strings.Contains(r.body, `name="f.body"`) {
		t.Fatalf("HTML page: %d, CSP %q", r.status, csp)
	}
	nonce := csp[i+len("'nonce-") : i+strings.Index(csp[i:], "';")]
	_, attr, _ := strings.Cut(r.body, `<script nonce="`)
	attr, _, _ = strings.Cut(attr, `"`)
	if html.UnescapeString(attr) != nonce {
		t.Errorf("the page's script carries nonce %q, the CSP %q", attr, nonce)
	}
	if r2 := fs.do("GET", formLink, ana, nil, ""); strings.Contains(r2.header.Get("Content-Security-Policy"), nonce) {
		t.Error("two page views share a nonce")
	}
}

// downStore is a store whose every operation fails, as a broken database
// does.
type downStore struct{ store.Store }

func (downStore) Get(context.Context, string) (store.Hold, error) {
	return store.Hold{}, store.ErrUnavailable
}
func (downStore) Step(context.Context, string) ([]store.Hold, error) {
	return nil, store.ErrUnavailable
}

// TestStoreDownIsSaid: with the store down the page says it cannot read
// or take answers now (503), and nothing runs.
func TestStoreDownIsSaid(t *testing.T) {
	s := newSite(t)
	link, holds := s.hold(ana, 7)
	s.pages.Gate = gate.New(gate.Config{Store: downStore{}, Pages: s.url, Policy: func(string) *policies.Policy { return s.policy }, Secret: []byte(testSecret)})
	wantStatus(t, "view", s.do("GET", link, ana, nil, ""), http.StatusServiceUnavailable, "cannot read")
	r := s.answer(link, ana, url.Values{"hold": {holds[0].ID}, "token": {s.token(holds[0].ID, ana)}, "answer": {"confirm"}})
	wantStatus(t, "answer", r, http.StatusServiceUnavailable, "cannot take answers right now")
	s.wantNothingRan(link)
}

// TestFieldsArePostedUnderTheirPrefix: the page posts an action's fields
// under FieldPrefix, so a field named like one of the page's own keys
// (hold, answer, token, decline_note, the edit marker) is read as the
// field, and the page's own keys as the page's. A post without any
// prefixed key is the older shape, still read; one that mixes both is
// refused (a bare key could be either).
func TestFieldsArePostedUnderTheirPrefix(t *testing.T) {
	read := func(form url.Values) (answer, error) {
		r := httptest.NewRequest("POST", "/h/x", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return readAnswer(r)
	}
	own := []string{"hold", "answer", "token", "decline_note", gate.EditMarker}
	form := url.Values{"hold": {"h1"}, "answer": {"decline"}, "token": {"t1"}, "decline_note": {"no"}, FieldPrefix + "subject": {"Hi"}}
	want := url.Values{"subject": {"Hi"}}
	for _, k := range own {
		form.Set(FieldPrefix+k, "field "+k)
		want.Set(k, "field "+k)
	}
	a, err := read(form)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.form, want) || a.Hold != "h1" || a.Answer != "decline" || a.Token != "t1" || a.Note != "no" || a.edit {
		t.Errorf("read fields %v, hold %q answer %q token %q note %q edit %v", a.form, a.Hold, a.Answer, a.Token, a.Note, a.edit)
	}
	// The older shape: bare field names beside the page's own keys.
	a, err = read(url.Values{"hold": {"h1"}, "answer": {"submit"}, "token": {"t1"}, "subject": {"Hi"}, gate.EditMarker: {"1"}})
	if err != nil || !reflect.DeepEqual(a.form, url.Values{"subject": {"Hi"}}) || a.Answer != "submit" || !a.edit {
		t.Errorf("older shape: fields %v, answer %q, edit %v, %v", a.form, a.Answer, a.edit, err)
	}
	// Both shapes in one post: refused, and by the page with 400.
	mixed := url.Values{"hold": {"h1"}, "answer": {"submit"}, "token": {"t1"}, FieldPrefix + "subject": {"Hi"}, "body": {"text"}}
	if _, err := read(mixed); err == nil {
		t.Error("a post mixing prefixed and bare fields was read")
	}
	s := newSite(t)
	link, holds := s.hold(ana, 7)
	mixed.Set("hold", holds[0].ID)
	mixed.Set("token", s.token(holds[0].ID, ana))
	mixed.Set("answer", "confirm")
	wantStatus(t, "mixed post", s.answer(link, ana, mixed), http.StatusBadRequest, "")
	s.wantNothingRan(link)
}
