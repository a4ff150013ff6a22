package e2e

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toolgate/toolgate/internal/testkit"
)

// confirmedOutcome holds delete_post for post 7, confirms it as ana, and
// returns what the model reads next and what the person's page says.
func (e *env) confirmedOutcome(t *testing.T, before func()) (model, page string) {
	t.Helper()
	l, msg := e.hold(t, "ana")
	if before != nil {
		before()
	}
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	_, _, s := e.view(ana, l)
	return toolResult(e.next(t, "ana", msg, "ok"), "call_del7"), s.Holds[0].Outcome
}

// TestReleaseDroppedConnectionRunsOnce: the app reads the release and
// drops the connection (after the record read left a kept-alive one). It
// gets the release once, and the model and the person read that the
// outcome is unknown, never "Removed." nor "did not answer in time".
// Before releases had a transport of their own, the app got it twice.
func TestReleaseDroppedConnectionRunsOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	model, page := e.confirmedOutcome(t, func() { e.app.Behave(testkit.Drop) })
	const want = "The person confirmed, but the app did not answer; it may or may not have run; nothing was retried."
	if model != want || page != want {
		t.Errorf("model read %q\npage says %q\nwant %q", model, page, want)
	}
	for key, n := range e.app.Runs() {
		if n != 1 {
			t.Errorf("release %s reached the app %d times", key, n)
		}
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the app got %d releases, want 1", n)
	}
}

// TestReleaseServerErrorIsTold: a 500 does not prove nothing changed: the
// model reads that the app failed and that it may have made changes.
func TestReleaseServerErrorIsTold(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	model, page := e.confirmedOutcome(t, func() { e.app.Answer(500, `{"message":"db down"}`, 0) })
	const want = "The person confirmed, but the app failed (HTTP 500); it may or may not have made changes; nothing was retried."
	if model != want || page != want {
		t.Errorf("model read %q\npage says %q\nwant %q", model, page, want)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the app got %d releases, want 1", n)
	}
}

// TestReleaseRecordUnreadableIsNotChanged: a record that is gone, or that
// the person may no longer read, when they confirm runs nothing and is
// "could not be checked", with the reason, not "changed".
func TestReleaseRecordUnreadableIsNotChanged(t *testing.T) {
	for _, tt := range []struct {
		name   string
		before func(e *env)
		want   string
	}{
		{"not found", func(e *env) { e.app.SetRecord("/posts/7", "") }, "The person confirmed, but the record could not be checked (not found); nothing ran."},
		{"not allowed", func(e *env) { e.app.Allow("somebody-else") }, "The person confirmed, but the record could not be checked (not allowed); nothing ran."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			setupPost(e)
			model, page := e.confirmedOutcome(t, func() { tt.before(e) })
			if model != tt.want || page != tt.want {
				t.Errorf("model read %q\npage says %q\nwant %q", model, page, tt.want)
			}
			if n := len(e.app.Calls()); n != 0 {
				t.Errorf("the call ran %d times", n)
			}
		})
	}
}

// TestReleaseSurvivesAClosedConfirm: the person's browser gives up on the
// Confirm request while the app is still answering the release (a closed
// tab). The release goes on: the app gets it once, the hold ends settled
// with the app's real answer and the model reads it. Before, the release
// was cut with the request and the hold stayed answered for good.
func TestReleaseSurvivesAClosedConfirm(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	e.app.Answer(200, `{"ok":true}`, 800*time.Millisecond)
	l, msg := e.hold(t, "ana")
	_, _, s := e.view(ana, l)
	hold := s.Holds[0].ID
	e.confirmThenLeave(t, l, hold, s.Tokens[hold])
	const want = "The person confirmed. Removed."
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, s = e.view(ana, l)
		if s.Holds[0].State == "settled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hold still %s 10s after the confirm", s.Holds[0].State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s.Holds[0].Outcome != want {
		t.Errorf("outcome = %q, want %q", s.Holds[0].Outcome, want)
	}
	if got := toolResult(e.next(t, "ana", msg, "ok"), "call_del7"); got != want {
		t.Errorf("model read %q", got)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the app got %d releases", n)
	}
}

// TestChangePastTheCutRunsNothing: the person sees a value cut to 200
// characters and marked as shortened; a change to the record past the cut
// is still a change: nothing runs. Before the fingerprint covered full
// values, the call ran.
func TestChangePastTheCutRunsNothing(t *testing.T) {
	e := newEnv(t, envOptions{})
	long := strings.Repeat("a", 250)
	e.app.SetRecord("/posts/7", `{"title":"`+long+`-first","status":"draft"}`)
	l, msg := e.hold(t, "ana")
	_, raw, _ := e.view(ana, l)
	if !strings.Contains(string(raw), `"cut":true`) {
		t.Errorf("the page JSON does not mark the cut row: %s", raw)
	}
	e.app.SetRecord("/posts/7", `{"title":"`+long+`-second","status":"draft"}`)
	if st := e.answerOnly(ana, l, "confirm"); st != http.StatusSeeOther {
		t.Fatalf("confirm: %d", st)
	}
	if n := len(e.app.Calls()); n != 0 {
		t.Errorf("the call ran against a record changed past the cut")
	}
	if got := toolResult(e.next(t, "ana", msg, "ok"), "call_del7"); got != "The record changed while waiting; nothing ran." {
		t.Errorf("model read %q", got)
	}
}

// TestBrowserShowsAShortenedValue: in Chromium, a cut value reads with its
// "shortened" mark as visible text, next to the value.
func TestBrowserShowsAShortenedValue(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.app.SetRecord("/posts/7", `{"title":"`+strings.Repeat("b", 300)+`","status":"draft"}`)
	l, _ := e.hold(t, "ana")
	b := browser(t, ana)
	if err := chromedp.Do(b, chromedp.Navigate(l), chromedp.WaitVisible(chromedp.CSS(`button.confirm`))); err != nil {
		t.Fatal(err)
	}
	row := text(t, b, `dd`)
	if !strings.HasSuffix(row, "… shortened") || !strings.HasPrefix(row, strings.Repeat("b", 199)) {
		t.Errorf("the cut row reads %q", row)
	}
	if status := text(t, b, `dl dd:nth-of-type(2)`); status != "draft" {
		t.Errorf("a full value reads %q", status)
	}
}

// confirmThenLeave posts ana's Confirm from a browser that goes away (the
// request is cancelled) once the release has reached the app.
func (e *env) confirmThenLeave(t *testing.T, link, hold, token string) {
	t.Helper()
	u, _ := url.Parse(link)
	form := url.Values{"hold": {hold}, "token": {token}, "answer": {"confirm"}}
	req, err := http.NewRequest("POST", link, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(ana.name, ana.password)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	rctx, cancel := context.WithCancel(context.Background())
	answered := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req.WithContext(rctx))
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	for deadline := time.Now().Add(10 * time.Second); len(e.app.Calls()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("the release did not reach the app within 10s")
		}
	}
	cancel()
	select {
	case st := <-answered:
		if st != 0 {
			t.Fatalf("the confirm answered (%d) before the app did", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled confirm did not end within 10s")
	}
}

// TestStopWaitsForTheRelease: Caddy stops (or reloads) while a release is
// in flight: the stop waits for it to finish and settle instead of cutting
// it, so after a restart the hold reads the app's real answer.
func TestStopWaitsForTheRelease(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	e.app.Answer(200, `{"ok":true}`, time.Second)
	l, msg := e.hold(t, "ana")
	_, _, s := e.view(ana, l)
	e.confirmThenLeave(t, l, s.Holds[0].ID, s.Tokens[s.Holds[0].ID])
	testkit.Stop(t)
	testkit.Run(t, e.caddy)
	_, _, s = e.view(ana, l)
	const want = "The person confirmed. Removed."
	if s.Holds[0].State != "settled" || s.Holds[0].Outcome != want {
		t.Errorf("after the restart: %s %q, want settled %q", s.Holds[0].State, s.Holds[0].Outcome, want)
	}
	if got := toolResult(e.next(t, "ana", msg, "ok"), "call_del7"); got != want {
		t.Errorf("model read %q", got)
	}
	if n := len(e.app.Calls()); n != 1 {
		t.Errorf("the app got %d releases", n)
	}
}
