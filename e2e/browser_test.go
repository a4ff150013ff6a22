package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// browser starts headless Chromium signed in as p (basic auth on every
// request, as the platform's sign-in would be).
func browser(t *testing.T, p person) context.Context {
	t.Helper()
	return browserWith(t, p, browserOptions{})
}

// browserOptions change what browserWith starts.
type browserOptions struct {
	lang    string        // the Accept-Language every request sends; "" for Chromium's own
	timeout time.Duration // the hang guard for the whole browser; default 60s
}

// browserWith is browser with options.
func browserWith(t *testing.T, p person, o browserOptions) context.Context {
	t.Helper()
	path := chromium(t)
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
	if o.timeout == 0 {
		o.timeout = 60 * time.Second
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	tctx, cancelT := context.WithTimeout(bctx, o.timeout) // a hang guard
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	headers := network.Headers{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(p.name+":"+p.password))}
	if o.lang != "" {
		headers["Accept-Language"] = o.lang
	}
	if _, err := chromedp.Call(tctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	if _, err := chromedp.Call(tctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: headers}); err != nil {
		t.Fatalf("signing in: %v", err)
	}
	return tctx
}

// chromium finds headless Chromium: $CHROMIUM, else /usr/bin/chromium,
// else chromium, chromium-browser or google-chrome on the PATH. Without
// one, a test run in CI (CI set) fails; elsewhere the test is skipped,
// loudly (see needTool).
func chromium(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"}
	if candidates[0] != "" {
		candidates = candidates[:1] // asked for this one: no other will do
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if path, err := exec.LookPath(c); err == nil {
			return path
		}
	}
	needTool(t, "Chromium", "the person's pages are tested in headless Chromium; install it (apt-get install -y chromium, as .ci/run does) or set CHROMIUM to its path")
	return ""
}

// needTool stops a test that needs a tool this machine lacks. In CI (CI
// set) that is a failure: a check that silently did not run is not a pass.
// Elsewhere the test is skipped, and the skip is said where a person sees
// it even when go test hides a passing package's output: on the terminal.
func needTool(t *testing.T, tool, how string) {
	t.Helper()
	msg := fmt.Sprintf("%s is missing: %s", tool, how)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	if _, said := missingSaid.LoadOrStore(tool, true); !said {
		line := "\n!!! toolgate e2e: SKIPPING the tests that need " + tool + ". " + msg + "\n\n"
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			fmt.Fprint(tty, line)
			tty.Close()
		}
		fmt.Fprint(os.Stderr, line)
	}
	t.Skip("!!! " + msg)
}

// missingSaid holds the tools whose absence was said on the terminal.
var missingSaid sync.Map

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
	if status != "Done. Removed." {
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
	if status := text(t, b, `.status`); status != "Declined. Nothing ran." {
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
		chromedp.Click(chromedp.CSS(`input[name="f.tags"][value=news]`)),
		chromedp.Click(chromedp.CSS(`input[name="f.tags"][value=events]`)),
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
