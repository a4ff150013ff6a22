package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// browser starts headless Chromium signed in as p (basic auth on every
// request, as the platform's sign-in would be).
func browser(t *testing.T, p person) context.Context {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("chromium not found at %s (.ci/run installs it)", path)
		}
		t.Skipf("chromium not found at %s: apt-get install -y chromium", path)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	tctx, cancelT := context.WithTimeout(bctx, 60*time.Second) // a hang guard
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(p.name+":"+p.password))
	if _, err := chromedp.Call(tctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	if _, err := chromedp.Call(tctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}}); err != nil {
		t.Fatalf("signing in: %v", err)
	}
	return tctx
}

func TestBrowserConfirm(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	l, msg := e.hold(t, "ana")
	b := browser(t, ana)

	if err := chromedp.Do(b, chromedp.Navigate(l), chromedp.WaitVisible(chromedp.CSS(`button.confirm`))); err != nil {
		t.Fatal(err)
	}
	sentence := text(t, b, `.sentence`)
	rows := text(t, b, `dl`)
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`button.confirm`)), chromedp.WaitVisible(chromedp.CSS(`.status`))); err != nil {
		t.Fatal(err)
	}
	status := text(t, b, `.status`)
	if sentence != "Delete this post? This cannot be undone." {
		t.Errorf("sentence = %q", sentence)
	}
	for _, want := range []string{"Post", "Spring meetup", "Status", "draft"} {
		if !strings.Contains(rows, want) {
			t.Errorf("rows %q lack %q", rows, want)
		}
	}
	if !strings.Contains(status, "Confirmed") {
		t.Errorf("status after confirm = %q", status)
	}
	calls := e.app.Calls()
	if len(calls) != 1 {
		t.Fatalf("the action ran %d times", len(calls))
	}
	c := calls[0]
	if c.Method != "DELETE" || c.URI != "/posts/7" || string(c.Body) != `{"post":7}` || c.SignatureErr != nil || c.Header.Get("X-Toolgate-Person") != "ana" {
		t.Errorf("action got %s %s %s person=%q signature=%v", c.Method, c.URI, c.Body, c.Header.Get("X-Toolgate-Person"), c.SignatureErr)
	}
	if got := toolResult(e.next(t, "ana", msg, "Thanks"), "call_del7"); got != "The person confirmed. Removed." {
		t.Errorf("restored tool result = %q", got)
	}
}

func TestBrowserDecline(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	l, _ := e.hold(t, "ana")
	b := browser(t, ana)
	err := chromedp.Do(b,
		chromedp.Navigate(l),
		chromedp.WaitVisible(chromedp.CSS(`button.decline`)),
		chromedp.Click(chromedp.CSS(`button.decline`)),
		chromedp.WaitVisible(chromedp.CSS(`.status`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	status := text(t, b, `.status`)
	if !strings.Contains(status, "Declined") {
		t.Errorf("status = %q", status)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Errorf("a declined call ran")
	}
}

// text reads the visible text of the first element matching a CSS selector.
func text(t *testing.T, b context.Context, css string) string {
	t.Helper()
	s, err := chromedp.Run(b, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("reading %s: %v", css, err)
	}
	return s
}

func TestBrowserFillsForm(t *testing.T) {
	e := newEnv(t, envOptions{})
	// The model gives a title and values the schema refuses for the
	// checkbox, the multi-select and the date-time: the form holds them all.
	l, msg := e.hold(t, "ana", call{"call_form", "draft_post", `{"title":"Launch notes","featured":"yes","tags":"news","publish_at":"soon"}`, false})
	b := browser(t, ana)
	err := chromedp.Do(b,
		chromedp.Navigate(l),
		chromedp.WaitVisible(chromedp.CSS(`form.answer`)),
		chromedp.SendKeys(chromedp.CSS(`#f-body`), "What shipped this week."),
		chromedp.SetValue(chromedp.CSS(`#f-status`), "published"),
		chromedp.Click(chromedp.CSS(`#f-featured`)),
		chromedp.Click(chromedp.CSS(`input[name=tags][value=news]`)),
		chromedp.Click(chromedp.CSS(`input[name=tags][value=events]`)),
		chromedp.SendKeys(chromedp.CSS(`#f-publish_at`), "tomorrow morning"),
		chromedp.Click(chromedp.CSS(`button.submit`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	// The page asked the server first (Precognition): the error shows under
	// its field, put there by the page's script, and nothing was sent.
	waitFor(t, b, `document.querySelector('#err-publish_at .error') !== null`)
	if msg := text(t, b, `#err-publish_at .error`); msg == "" || strings.Contains(msg, "tomorrow") {
		t.Errorf("error under the field = %q", msg)
	}
	if title := text(t, b, `label[for=f-title]`); !strings.Contains(title, "Title") {
		t.Errorf("title label = %q", title)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Fatal("an answer with an error ran")
	}
	if _, err := chromedp.Run(b, chromedp.Evaluate[bool](`document.getElementById('f-publish_at').value = ''; true`)); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(b,
		chromedp.SendKeys(chromedp.CSS(`#f-publish_at`), "2026-12-01T09:00:00Z"),
		chromedp.Click(chromedp.CSS(`button.submit`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, `document.querySelector('.status') !== null`)
	calls := e.app.Calls()
	if len(calls) != 1 {
		t.Fatalf("the action ran %d times", len(calls))
	}
	var got map[string]any
	if err := json.Unmarshal(calls[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"title": "Launch notes", "body": "What shipped this week.", "status": "published", "featured": true, "tags": []any{"news", "events"}, "publish_at": "2026-12-01T09:00:00Z"}
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	if res := toolResult(e.next(t, "ana", msg, "ok"), "call_form"); !strings.HasPrefix(res, "The person filled in: title, body, status, featured, tags, publish_at.") {
		t.Errorf("tool result = %q", res)
	}
}

// waitFor polls a JavaScript condition until it holds (a hang guard of 20s).
func waitFor(t *testing.T, b context.Context, cond string) {
	t.Helper()
	for range 200 {
		ok, err := chromedp.Run(b, chromedp.Evaluate[bool](cond))
		if err != nil {
			t.Fatalf("evaluating %s: %v", cond, err)
		}
		if ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("never true: %s", cond)
}
