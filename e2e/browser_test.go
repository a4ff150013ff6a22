package e2e

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
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
