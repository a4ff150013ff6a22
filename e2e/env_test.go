// Package e2e drives the whole gate: a real Caddy running the module from a
// Caddyfile, a real Badger store on disk, openai-go as the app and headless
// Chromium as the person. Only the model provider and the app's action
// endpoint are fakes (internal/testkit).
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"golang.org/x/crypto/bcrypt"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/toolgate/toolgate/caddymodule"
	"github.com/toolgate/toolgate/internal/testkit"
)

const secret = "test-secret-0123456789abcdef"

// env is one running gate with its fakes.
type env struct {
	t         *testing.T
	provider  *testkit.Provider
	app       *testkit.App
	caddy     string // the Caddyfile loaded
	apiURL    string // the model route
	shopURL   string // the other app's model route (envOptions.shop)
	pagesURL  string // the pages' base URL
	storeDir  string
	lastSent  string // the body the last request through (shadow_test.go) sent
	responses int    // the Responses answers heldOn gave (rules_recheck_test.go), for their ids
}

type envOptions struct {
	policy  string // extra YAML for the actions block; "" uses the default
	ttl     string // the app's default TTL
	handler string // more lines for the model route's toolgate handler
	admin   string // the admin global option; "" is "admin off"
	// pagesRoute replaces what the pages' route runs (default: basic_auth
	// for ana and bo, then toolgate_pages).
	pagesRoute string
	// shop adds a second model route, at env.shopURL, whose policy is
	// another app's: its delete_post reads and runs APP/shopitems/{post}.
	shop bool
	app  string // more lines for the toolgate global options
	// upstream replaces the fake provider as the model route's upstream
	// (a geminitest server, say).
	upstream string
	// logFile, when set, is where Caddy and the gate log, as JSON lines
	// from level INFO on (default: stderr, from WARN on).
	logFile string
}

// policyYAML is the test policy; APP is replaced by the fake app's URL.
const policyYAML = `app: Test blog
actions:
  delete_post:
    effect: destructive
    schema:
      type: object
      properties:
        post: {type: integer}
      required: [post]
    card:
      reason: Delete this post? This cannot be undone.
      record: APP/posts/{post}
      rows:
        Post: title
        Status: status
    run:
      method: DELETE
      url: APP/posts/{post}
    reply: Removed.
  send_email:
    effect: external
    schema:
      type: object
      properties:
        to: {type: string}
        subject: {type: string}
      required: [to, subject]
    card:
      reason: Send this email now?
    run:
      url: APP/emails
    reply: Sent.
  post_note:
    effect: external
    card:
      reason: Publish this note?
    run:
      url: APP/notes
  updateIssueList:
    effect: external
    card:
      reason: Update the issue list?
    run:
      url: APP/issues
  weather:
    effect: external
    card:
      reason: Look up the weather for you?
    run:
      url: APP/weather
  calculator:
    effect: external
    card:
      reason: Run the calculator?
    run:
      url: APP/calc
    reply: Calculated.
  GetWeatherArgs:
    effect: external
    card:
      reason: Look up the weather for you?
    run:
      url: APP/weather
  get_weather:
    effect: external
    card:
      reason: Look up the weather for you?
    run:
      url: APP/weather
  get_stock_price:
    effect: read
    run:
      method: GET
      url: APP/stocks
  draft_post:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        title: {type: string, title: Title, minLength: 1, maxLength: 120}
        body: {type: string, title: Body, maxLength: 5000}
        status: {type: string, enum: [draft, published]}
        featured: {type: boolean, title: Featured}
        tags: {type: array, title: Tags, items: {type: string, enum: [news, events, jobs]}, maxItems: 2}
        publish_at: {type: [string, "null"], format: date-time, title: Publish at}
      required: [title, body, status]
    titles:
      body: {de: Inhalt}
    ask:
      message: A few details for your post.
      confirm: [title]
      textarea: [body]
      choices:
        status: {draft: Draft, published: Published}
      default: {status: draft}
    run:
      url: APP/posts
    reply: Drafted.
  rotate_key:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        service: {type: string}
        apiKey: {type: string}
      required: [service, apiKey]
    run:
      url: APP/keys
  schedule_post:
    effect: write
    required_for_agents: [publish_on]
    schema:
      type: object
      properties:
        post: {type: integer}
        publish_on: {type: [string, "null"], format: date}
      required: [post]
    run:
      url: APP/schedule
  assign_post:
    effect: write
    ask_for_missing: true
    schema:
      type: object
      properties:
        post: {type: integer}
        owner: {type: string, title: Owner}
        city: {type: string, title: City}
      required: [post, owner, city]
    ask:
      choices_from: {owner: APP/members}
      default_from: {city: APP/me/city}
    run:
      url: APP/assign
  note_later:
    effect: write
    ask_for_missing: true
    ask:
      textarea: [n]
    run:
      url: APP/notes
  list_posts:
    effect: read
    schema:
      type: object
      properties:
        limit: {type: integer, maximum: 50}
      required: [limit]
    run:
      method: GET
      url: APP/posts?limit={limit}
`

func newEnv(t *testing.T, opts envOptions) *env {
	t.Helper()
	e := &env{t: t, provider: testkit.NewProvider(t), app: testkit.NewApp(t, []byte(secret))}
	dir := t.TempDir()
	e.storeDir = filepath.Join(dir, "store")
	pol := opts.policy
	if pol == "" {
		pol = policyYAML
	}
	pol = strings.ReplaceAll(pol, "APP", e.app.URL)
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	ttl := opts.ttl
	if ttl == "" {
		ttl = "30m"
	}
	pagesRoute := opts.pagesRoute
	if pagesRoute == "" {
		pagesRoute = fmt.Sprintf("basic_auth {\n\t\t\tana %s\n\t\t\tbo %s\n\t\t}\n\t\ttoolgate_pages", hash(t, "ana-pw"), hash(t, "bo-pw"))
	}
	upstream := e.provider.URL
	if opts.upstream != "" {
		upstream = opts.upstream
	}
	apiPort, pagesPort := testkit.FreePort(t), testkit.FreePort(t)
	e.apiURL = fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	pagesHost := fmt.Sprintf("127.0.0.1:%d", pagesPort)
	e.pagesURL = "http://" + pagesHost + "/toolgate"
	admin := opts.admin
	if admin == "" {
		admin = "admin off"
	}
	logging := "level WARN"
	if opts.logFile != "" {
		logging = fmt.Sprintf("output file %s\n\t\tformat json\n\t\tlevel INFO", opts.logFile)
	}
	e.caddy = fmt.Sprintf(`{
	%s
	auto_https off
	default_bind 127.0.0.1
	log {
		%s
	}
	persist_config off
	grace_period 1ns
	toolgate {
		%s
		secret %s
		pages %s
		ttl %s
		action_timeout 5s
		%s
	}
}

http://127.0.0.1:%d {
	toolgate {
		policy %s
		owner {http.request.header.X-User-Id}
		%s
	}
	reverse_proxy %s
}

http://%s {
	route /toolgate/* {
		%s
	}
}
`, admin, logging, storeOption(t, e.storeDir), secret, e.pagesURL, ttl, opts.app, apiPort, policyFile, opts.handler, upstream, pagesHost, pagesRoute)
	if opts.shop {
		shopFile := filepath.Join(dir, "shop.yaml")
		shop := strings.ReplaceAll(strings.Replace(pol, "app: Test blog", "app: Test shop", 1), e.app.URL+"/posts/", e.app.URL+"/shopitems/")
		if err := os.WriteFile(shopFile, []byte(shop), 0o600); err != nil {
			t.Fatal(err)
		}
		shopPort := testkit.FreePort(t)
		e.shopURL = fmt.Sprintf("http://127.0.0.1:%d", shopPort)
		e.caddy += fmt.Sprintf(`
http://127.0.0.1:%d {
	toolgate {
		policy %s
		owner {http.request.header.X-User-Id}
	}
	reverse_proxy %s
}
`, shopPort, shopFile, e.provider.URL)
	}
	testkit.Run(t, e.caddy)
	return e
}

var hashes = map[string]string{}

func hash(t *testing.T, pw string) string {
	if h, ok := hashes[pw]; ok {
		return h
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	hashes[pw] = string(h)
	return string(h)
}

// client is the app: openai-go pointed at the gate, as the given person.
func (e *env) client(owner string) *openai.Client {
	opts := []option.RequestOption{option.WithBaseURL(e.apiURL + "/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0)}
	if owner != "" {
		opts = append(opts, option.WithHeader("X-User-Id", owner))
	}
	c := openai.NewClient(opts...)
	return &c
}

var linkRe = regexp.MustCompile(`http://127\.0\.0\.1:\d+/toolgate/h/[a-z2-7]{26}`)

// link finds the step link in text the app received.
func link(t *testing.T, text string) string {
	t.Helper()
	l := linkRe.FindString(text)
	if l == "" {
		t.Fatalf("no link in %q", text)
	}
	return l
}

// person is someone signed in to the pages with basic auth.
type person struct {
	name, password string
}

var (
	ana = person{"ana", "ana-pw"}
	bo  = person{"bo", "bo-pw"}
)

// stepJSON is the JSON form of a step's page.
type stepJSON struct {
	Step  string `json:"step"`
	App   string `json:"app"`
	Holds []struct {
		ID   string `json:"id"`
		Card struct {
			Sentence string `json:"sentence"`
			Rows     []struct {
				Label string `json:"label"`
				Value string `json:"value"`
			} `json:"rows"`
		} `json:"card"`
		State   string `json:"state"`
		Answer  string `json:"answer"`
		Outcome string `json:"outcome"`
	} `json:"holds"`
	Tokens map[string]string `json:"tokens"`
}

// view reads a step's page as JSON, returning the status and raw body.
func (e *env) view(p person, link string) (int, []byte, stepJSON) {
	e.t.Helper()
	req, err := http.NewRequest("GET", link, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.SetBasicAuth(p.name, p.password)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	var s stepJSON
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(b, &s); err != nil {
			e.t.Fatalf("page JSON: %v: %s", err, b)
		}
	}
	return resp.StatusCode, b, s
}

// answer posts an answer as a browser form from the page's own origin.
func (e *env) answer(p person, link, holdID, token, choice string, header map[string]string) (int, string) {
	e.t.Helper()
	u, _ := url.Parse(link)
	h := map[string]string{"Origin": u.Scheme + "://" + u.Host}
	for k, v := range header {
		h[k] = v
	}
	return e.post(p, link, url.Values{"hold": {holdID}, "token": {token}, "answer": {choice}}, h)
}

// post sends a form-encoded POST to a page as p, without following a
// redirect, and returns the status and body.
func (e *env) post(p person, link string, form url.Values, header map[string]string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest("POST", link, strings.NewReader(form.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	req.SetBasicAuth(p.name, p.password)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// answerOnly answers the only hold of a step as p and returns the status.
func (e *env) answerOnly(p person, link, choice string) int {
	e.t.Helper()
	status, body, s := e.view(ana, link)
	if status != 200 || len(s.Holds) != 1 {
		e.t.Fatalf("view: %d %s", status, body)
	}
	st, _ := e.answer(p, link, s.Holds[0].ID, s.Tokens[s.Holds[0].ID], choice, nil)
	return st
}

var ctx = context.Background()
