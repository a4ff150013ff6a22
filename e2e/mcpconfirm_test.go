package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Destructive calls over MCP are confirmed by the person on the card page,
// reached through URL-mode elicitation.

const postRecord = `{"title":"Spring meetup","status":"draft"}`

// urlCaps declares URL-mode elicitation.
var urlCaps = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}

// pageVisit is what the person saw on the card page.
type pageVisit struct {
	url, sentence, rows, status string
}

// visit opens a card page in the browser and presses a button (confirm or
// decline). It reports errors instead of failing: it runs on the client's
// goroutine, not the test's.
func visit(b context.Context, url, button string) (pageVisit, error) {
	v := pageVisit{url: url}
	err := chromedp.Do(b, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`button.`+button)))
	if err == nil {
		v.sentence, err = chromedp.Run(b, chromedp.Text(chromedp.CSS(`.sentence`)))
	}
	if err == nil {
		v.rows, err = chromedp.Run(b, chromedp.Text(chromedp.CSS(`dl`)))
	}
	if err == nil {
		err = chromedp.Do(b, chromedp.Click(chromedp.CSS(`button.`+button)), chromedp.WaitVisible(chromedp.CSS(`.status`)))
	}
	if err == nil {
		v.status, err = chromedp.Run(b, chromedp.Text(chromedp.CSS(`.status`)))
	}
	return v, err
}

// urlClient is a client that opens the confirmation page in the browser
// as the person, presses button, runs then (if set), and accepts.
type urlClient struct {
	t      *testing.T
	b      context.Context
	button string
	then   func(url string)

	mu     sync.Mutex
	visits []pageVisit
	modes  []string
}

func (u *urlClient) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	u.mu.Lock()
	u.modes = append(u.modes, req.Params.Mode)
	u.mu.Unlock()
	if req.Params.Mode != "url" {
		u.t.Errorf("asked %q mode: %+v", req.Params.Mode, req.Params)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	if !strings.HasPrefix(req.Params.Message, "Please confirm in your browser: Delete this post?") {
		u.t.Errorf("URL elicitation message %q", req.Params.Message)
	}
	v, err := visit(u.b, req.Params.URL, u.button)
	if err != nil {
		u.t.Errorf("in the browser: %v", err)
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	u.mu.Lock()
	u.visits = append(u.visits, v)
	u.mu.Unlock()
	if u.then != nil {
		u.then(req.Params.URL)
	}
	return &mcp.ElicitResult{Action: "accept"}, nil // consent; the page gave the answer
}

func (u *urlClient) Visits() []pageVisit {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]pageVisit(nil), u.visits...)
}

// wantCard checks the one visit showed the card built from the record, and
// that its URL carries nothing but a random id under the pages.
func (e *mcpEnv) wantCard(t *testing.T, visits []pageVisit, status string) {
	t.Helper()
	if len(visits) != 1 {
		t.Fatalf("the person visited %d pages, want 1", len(visits))
	}
	v := visits[0]
	if v.sentence != "Delete this post? This cannot be undone." {
		t.Errorf("sentence = %q", v.sentence)
	}
	if !strings.Contains(v.rows, "Post") || !strings.Contains(v.rows, "Spring meetup") {
		t.Errorf("rows = %q, want the post's title from the record", v.rows)
	}
	if !strings.Contains(v.status, status) {
		t.Errorf("status = %q, want %q", v.status, status)
	}
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(e.pagesURL+"/h/") + `[a-z2-7]{26}$`).MatchString(v.url) {
		t.Errorf("URL %q: want the pages' base and a random id only", v.url)
	}
	if strings.Contains(strings.ToLower(v.url), "spring") || strings.Contains(v.url, "?") {
		t.Errorf("URL %q carries data", v.url)
	}
}

// cardReads counts the record reads the gate made as a person.
func (e *mcpEnv) cardReads(person string) int {
	n := 0
	for _, r := range e.app.Reads() {
		if r.URI == "/posts/7" && r.Header.Get("X-Toolgate-Person") == person && r.SignatureErr == nil {
			n++
		}
	}
	return n
}

func TestMCPConfirmInBrowser(t *testing.T) {
	b := browser(t, ana)

	t.Run("confirm", func(t *testing.T) {
		e := newMCPEnv(t, modern)
		e.app.SetRecord("/posts/7", postRecord)
		boB := browser(t, bo)
		var boStatus int64
		var boBody string
		u := &urlClient{t: t, b: b, button: "confirm"}
		cs := e.connect(t, "ana", &mcp.ClientOptions{Capabilities: urlCaps, ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			// Before ana answers, bo opens her link in his browser.
			resp, err := chromedp.RunResponse(boB, chromedp.Navigate(req.Params.URL))
			if err == nil {
				boStatus = resp.Status
				boBody, err = chromedp.Run(boB, chromedp.Text(chromedp.CSS(`body`)))
			}
			if err != nil {
				t.Errorf("bo's browser: %v", err)
			}
			return u.handle(ctx, req)
		}}, "")
		res := callTool(t, cs, &mcp.CallToolParams{Name: "delete_post", Arguments: map[string]any{"post": 7}})
		if res.IsError || res.NeedsInput() || resultText(res) != "deleted 7" {
			t.Fatalf("result isError=%v %q", res.IsError, resultText(res))
		}
		e.wantCard(t, u.Visits(), "Confirmed")
		if got := e.server.Calls(); len(got) != 1 || got[0] != `delete_post {"post":7}` {
			t.Errorf("server ran %q, want delete_post {\"post\":7} once", got)
		}
		if n := len(e.server.ToolRequests("delete_post")); n != 1 {
			t.Errorf("%d delete_post requests reached the server, want 1", n)
		}
		if boStatus != http.StatusNotFound || !strings.Contains(boBody, "no such confirmation") || strings.Contains(boBody, "Delete this post") || strings.Contains(boBody, "Spring meetup") || strings.Contains(boBody, "Confirm") {
			t.Errorf("bo opening ana's link got %d %q", boStatus, boBody)
		}
		// The card was read as ana (built, then built again before the
		// run); the app's own endpoint ran nothing: the MCP server runs it.
		if n := e.cardReads("ana"); n < 2 {
			t.Errorf("the record was read %d times as ana, want the card built and checked again", n)
		}
		if n := e.cardReads("bo"); n != 0 {
			t.Errorf("the record was read %d times as bo", n)
		}
		if c := e.app.Calls(); len(c) != 0 {
			t.Errorf("the app's endpoint ran: %+v", c)
		}
	})

	t.Run("declined in the browser", func(t *testing.T) {
		e := newMCPEnv(t, modern)
		e.app.SetRecord("/posts/7", postRecord)
		u := &urlClient{t: t, b: b, button: "decline"}
		cs := e.connect(t, "ana", &mcp.ClientOptions{Capabilities: urlCaps, ElicitationHandler: u.handle}, "")
		res := callTool(t, cs, &mcp.CallToolParams{Name: "delete_post", Arguments: map[string]any{"post": 7}})
		wantToolError(t, res, "declined", "nothing ran")
		e.wantCard(t, u.Visits(), "Declined")
		e.wantNoCalls(t, "delete_post")
		if n := len(e.server.ToolRequests("delete_post")); n != 0 {
			t.Errorf("%d delete_post requests reached the server", n)
		}
	})

	t.Run("record changed", func(t *testing.T) {
		e := newMCPEnv(t, modern)
		e.app.SetRecord("/posts/7", postRecord)
		u := &urlClient{t: t, b: b, button: "confirm", then: func(string) {
			e.app.SetRecord("/posts/7", `{"title":"Autumn fair","status":"draft"}`)
		}}
		cs := e.connect(t, "ana", &mcp.ClientOptions{Capabilities: urlCaps, ElicitationHandler: u.handle}, "")
		res := callTool(t, cs, &mcp.CallToolParams{Name: "delete_post", Arguments: map[string]any{"post": 7}})
		wantToolError(t, res, "record changed", "nothing ran")
		e.wantCard(t, u.Visits(), "Confirmed")
		e.wantNoCalls(t, "delete_post")
		if n := len(e.server.ToolRequests("delete_post")); n != 0 {
			t.Errorf("%d delete_post requests reached the server", n)
		}
	})
}

// The client turning the page down (decline or cancel on the URL request)
// settles the card: nothing runs, now or on a later answer on the page.
func TestMCPConfirmPageRefusedByClient(t *testing.T) {
	for _, action := range []string{"decline", "cancel"} {
		t.Run(action, func(t *testing.T) {
			e := newMCPEnv(t, modern)
			e.app.SetRecord("/posts/7", postRecord)
			var url string
			cs := e.connect(t, "ana", &mcp.ClientOptions{Capabilities: urlCaps, ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				url = req.Params.URL
				return &mcp.ElicitResult{Action: action}, nil
			}}, "")
			res := callTool(t, cs, &mcp.CallToolParams{Name: "delete_post", Arguments: map[string]any{"post": 7}})
			wantToolError(t, res, "declined to open the confirmation", "nothing ran")
			pg := &env{t: t}
			status, body, s := pg.view(ana, url)
			if status != http.StatusOK || len(s.Holds) != 1 || s.Holds[0].State != "settled" || s.Holds[0].Answer != "decline" {
				t.Fatalf("the card after the client declined: %d %s", status, body)
			}
			e.wantNoCalls(t, "delete_post")
		})
	}
}

// The card's requestState by hand: a retry before the person answered
// asks again (a fresh state; the old one is used up); after the person
// confirmed on the page the retry runs once; any further retry runs
// nothing.
func TestMCPConfirmStateChain(t *testing.T) {
	// confirm_wait 0: a retry before the answer is asked again at once.
	e := newMCPEnv(t, mcpEnvOptions{stateless: true, confirmWait: "0"})
	e.app.SetRecord("/posts/7", postRecord)
	cs := e.connect(t, "ana", &mcp.ClientOptions{
		Capabilities: urlCaps,
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, fmt.Errorf("not by hand")
		},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}, "")
	args := map[string]any{"post": 7}
	first := callTool(t, cs, &mcp.CallToolParams{Name: "delete_post", Arguments: args})
	if !first.NeedsInput() || len(first.InputRequests) != 1 {
		t.Fatalf("first answer: needsInput=%v %v", first.NeedsInput(), first.InputRequests)
	}
	var key, url string
	for k, ir := range first.InputRequests {
		p, _ := ir.(*mcp.ElicitParams)
		if p == nil || p.Mode != "url" || p.URL == "" || p.RequestedSchema != nil {
			t.Fatalf("input request %q = %+v, want URL mode", k, ir)
		}
		key, url = k, p.URL
	}
	consent := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept"}}
	again := callTool(t, cs, &mcp.CallToolParams{Name: "delete_post", Arguments: args, RequestState: first.RequestState, InputResponses: consent})
	if !again.NeedsInput() || again.RequestState == first.RequestState {
		t.Fatalf("retry before the answer: needsInput=%v isError=%v %q", again.NeedsInput(), again.IsError, resultText(again))
	}
	if p, _ := again.InputRequests[key].(*mcp.ElicitParams); p == nil || p.URL != url {
		t.Errorf("the retry points elsewhere: %+v", again.InputRequests)
	}
	wantToolError(t, callTool(t, cs, &mcp.CallToolParams{Name: "delete_post", Arguments: args, RequestState: first.RequestState, InputResponses: consent}), "already used")
	e.wantNoCalls(t, "delete_post")

	pg := &env{t: t}
	// bo cannot answer ana's card.
	if status, _, _ := pg.view(bo, url); status != http.StatusNotFound {
		t.Errorf("bo viewing ana's card: %d", status)
	}
	if st := pg.answerOnly(ana, url, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirming: %d", st)
	}
	e.wantNoCalls(t, "delete_post") // the page runs nothing on an MCP route
	// Another person's session cannot run ana's confirmed call.
	boCS := e.connect(t, "bo", &mcp.ClientOptions{Capabilities: urlCaps, ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, fmt.Errorf("no") }, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, "")
	wantToolError(t, callTool(t, boCS, &mcp.CallToolParams{Name: "delete_post", Arguments: args, RequestState: again.RequestState, InputResponses: consent}), "someone else")
	// Nor can ana's own retry with other arguments.
	wantToolError(t, callTool(t, cs, &mcp.CallToolParams{Name: "delete_post", Arguments: map[string]any{"post": 8}, RequestState: again.RequestState, InputResponses: consent}), "other arguments")

	res := callTool(t, cs, &mcp.CallToolParams{Name: "delete_post", Arguments: args, RequestState: again.RequestState, InputResponses: consent})
	if res.IsError || resultText(res) != "deleted 7" {
		t.Fatalf("retry after confirming: isError=%v %q", res.IsError, resultText(res))
	}
	wantToolError(t, callTool(t, cs, &mcp.CallToolParams{Name: "delete_post", Arguments: args, RequestState: again.RequestState, InputResponses: consent}), "already used")
	if got := e.server.Calls(); len(got) != 1 || got[0] != `delete_post {"post":7}` {
		t.Errorf("server ran %q", got)
	}
}

// Confirmation is refused with a tool error, the tool never running, for a
// destructive tool whose policy does not set mcp.confirm, and for clients
// that cannot open a page.
func TestMCPConfirmRefused(t *testing.T) {
	e := newMCPEnv(t, modern)
	e.app.SetRecord("/posts/7", postRecord)
	asked := 0
	handler := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	urlClient := e.connect(t, "ana", &mcp.ClientOptions{Capabilities: urlCaps, ElicitationHandler: handler}, "")
	wantToolError(t, callTool(t, urlClient, &mcp.CallToolParams{Name: "wipe_all", Arguments: map[string]any{}}), "wipe_all", "over MCP", "nothing ran")

	formOnly := e.connect(t, "ana", &mcp.ClientOptions{ElicitationHandler: handler}, "")
	wantToolError(t, callTool(t, formOnly, &mcp.CallToolParams{Name: "delete_post", Arguments: map[string]any{"post": 7}}), "delete_post", "URL-mode", "nothing ran")

	legacyURL := e.connect(t, "ana", &mcp.ClientOptions{Capabilities: urlCaps, ElicitationHandler: handler}, "2025-11-25")
	wantToolError(t, callTool(t, legacyURL, &mcp.CallToolParams{Name: "delete_post", Arguments: map[string]any{"post": 7}}), "delete_post", "speaks MCP 2025-11-25")

	if asked != 0 {
		t.Errorf("a client was asked %d times", asked)
	}
	if got := e.server.Calls(); len(got) != 0 {
		t.Errorf("server ran %q", got)
	}
	if n := len(e.server.ToolRequests("delete_post")) + len(e.server.ToolRequests("wipe_all")); n != 0 {
		t.Errorf("%d refused calls reached the server", n)
	}
}

// A client that retries as soon as it opened the page (its accept is the
// person's consent to go there, not their answer): the gate holds that
// retry until the person answers, so the page is asked for once and the
// tool runs once after the confirmation; a decline ends it the same way.
func TestMCPConfirmRetryWaitsForTheAnswer(t *testing.T) {
	e := newMCPEnv(t, modern)
	e.app.SetRecord("/posts/7", postRecord)
	for _, choice := range []string{"decline", "confirm"} {
		var prompts []string
		answered := make(chan int, 1)
		cs := e.connect(t, "ana", &mcp.ClientOptions{
			Capabilities: urlCaps,
			ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				prompts = append(prompts, req.Params.URL)
				go func(url string) { // the person, on the page, a moment later
					time.Sleep(300 * time.Millisecond)
					answered <- (&env{t: t}).answerOnly(ana, url, choice)
				}(req.Params.URL)
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		}, "")
		res := callTool(t, cs, &mcp.CallToolParams{Name: "delete_post", Arguments: map[string]any{"post": 7}})
		if st := <-answered; st != http.StatusSeeOther {
			t.Fatalf("%s on the page: %d", choice, st)
		}
		if len(prompts) != 1 {
			t.Errorf("%s: the client was asked to open the page %d times", choice, len(prompts))
		}
		if choice == "decline" {
			wantToolError(t, res, "declined")
			e.wantNoCalls(t, "delete_post")
			continue
		}
		if res.IsError || resultText(res) != "deleted 7" {
			t.Errorf("after confirming: isError=%v %q", res.IsError, resultText(res))
		}
	}
	if got := e.server.Calls(); len(got) != 1 || got[0] != `delete_post {"post":7}` {
		t.Errorf("server ran %q", got)
	}
}
