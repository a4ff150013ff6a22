package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The person's pages are checked in headless Chromium as a person sees
// them: axe-core (the npm package pinned in .ci/axe) on every state, in
// light and dark colours and at 320 px, with screenshots of each, and
// answered with the keyboard alone.

// axeSource is axe.min.js: $TOOLGATE_AXE, else .ci/axe's node_modules
// (`npm ci --prefix .ci/axe`). Without it the test fails in CI and is
// skipped loudly elsewhere.
func axeSource(t *testing.T) string {
	t.Helper()
	axeOnce.Do(func() {
		path := os.Getenv("TOOLGATE_AXE")
		if path == "" {
			path = filepath.Join("..", ".ci", "axe", "node_modules", "axe-core", "axe.min.js")
		}
		b, err := os.ReadFile(path)
		if err == nil {
			axeJS = string(b)
		}
	})
	if axeJS == "" {
		needTool(t, "axe-core", "the pages' accessibility is measured with axe-core; install it with `npm ci --prefix .ci/axe` (as .ci/run does) or set TOOLGATE_AXE to axe.min.js")
	}
	return axeJS
}

var (
	axeOnce sync.Once
	axeJS   string
)

// artifacts is the folder screenshots are written to: $TOOLGATE_ARTIFACTS
// (CI keeps it), else a temporary folder. Its path is logged.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TOOLGATE_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	dir = filepath.Join(dir, "screenshots", strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// violation is one axe-core rule a page breaks.
type violation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		HTML    string `json:"html"`
		Summary string `json:"summary"`
	} `json:"nodes"`
}

// axe runs axe-core's default rules (WCAG 2.x A and AA, and best
// practices) on the page as it is and returns what it breaks.
func axe(t *testing.T, b context.Context) []violation {
	t.Helper()
	src := axeSource(t)
	loaded, err := chromedp.Run(b, chromedp.Evaluate[bool](`typeof axe !== 'undefined'`))
	if err != nil {
		t.Fatalf("looking for axe: %v", err)
	}
	if !loaded {
		// Evaluated through the DevTools protocol, not as a page script:
		// the page's Content-Security-Policy stays as it is.
		if _, err := chromedp.Run(b, chromedp.Evaluate[bool](src+";true")); err != nil {
			t.Fatalf("injecting axe: %v", err)
		}
	}
	out, err := chromedp.Run(b, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ['violations']}).then(function (r) {
		return JSON.stringify(r.violations.map(function (v) {
			return {id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(function (n) { return {target: n.target, html: n.html, summary: n.failureSummary}; })};
		}));
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("running axe: %v", err)
	}
	var vs []violation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		t.Fatalf("axe's answer: %v: %s", err, out)
	}
	return vs
}

// look is one way a person sees a page.
type look struct {
	name  string
	width int64
	dark  bool
}

var looks = []look{{"light", 1024, false}, {"dark", 1024, true}, {"light-320px", 320, false}, {"dark-320px", 320, true}}

// audit checks the page as it is in every look: zero axe violations
// (colour contrast included, so dark mode is readable), no horizontal
// scrolling at 320 px, and a screenshot of each in dir.
func audit(t *testing.T, b context.Context, dir, state string) {
	t.Helper()
	for _, l := range looks {
		scheme := "light"
		if l.dark {
			scheme = "dark"
		}
		if _, err := chromedp.Call(b, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatal(err)
		}
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
		if l.width < 600 {
			opts = append(opts, chromedp.EmulateMobile)
		}
		if err := chromedp.Do(b, chromedp.EmulateViewport(l.width, 800, opts...)); err != nil {
			t.Fatal(err)
		}
		// The scheme really switched: the page's background follows it.
		bg, err := chromedp.Run(b, chromedp.Evaluate[string](`getComputedStyle(document.documentElement).backgroundColor`))
		if err != nil {
			t.Fatal(err)
		}
		if isDark := bg == "rgb(22, 24, 29)"; isDark != l.dark {
			t.Errorf("%s, %s: the page's background is %s", state, l.name, bg)
		}
		if l.width < 600 {
			sw, err := chromedp.Run(b, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, document.documentElement.clientWidth, window.innerWidth]`))
			if err != nil {
				t.Fatal(err)
			}
			if sw[1] != int(l.width) || sw[0] > sw[1] {
				t.Errorf("%s, %s: the page scrolls sideways (%d px wide in a %d px window, viewport %d)", state, l.name, sw[0], sw[1], sw[2])
			}
		}
		png, err := chromedp.Run(b, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, state+"-"+l.name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, v := range axe(t, b) {
			var where []string
			for _, n := range v.Nodes {
				where = append(where, fmt.Sprintf("%v %s (%s)", n.Target, n.HTML, n.Summary))
			}
			t.Errorf("%s, %s: axe %s (%s): %s\n\t%s", state, l.name, v.ID, v.Impact, v.Help, strings.Join(where, "\n\t"))
		}
	}
	if err := chromedp.Do(b, chromedp.ResetViewport()); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(b, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		t.Fatal(err)
	}
}

// archivePolicy adds to the test policy an action whose holds expire at
// once.
const archivePolicy = `  archive_post:
    effect: destructive
    ttl: 1s
    schema:
      type: object
      properties:
        post: {type: integer}
      required: [post]
    card:
      reason: Archive this post?
      record: APP/posts/{post}
      rows:
        Post: title
    run:
      url: APP/posts/{post}/archive
`

var formCall = call{"call_form", "draft_post", `{"title":"Launch notes","featured":"yes","tags":"news","publish_at":"soon"}`, false}

// TestPagesAreAccessible: every state of the person's pages — a card, a
// form, a form with errors (shown by the page's script, and by the server
// without it), an answered card, an expired one, a link that leads
// nowhere and a refused answer — passes axe-core with no violation, light
// and dark, wide and at 320 px, without scrolling sideways.
func TestPagesAreAccessible(t *testing.T) {
	e := newEnv(t, envOptions{policy: policyYAML + archivePolicy})
	setupPost(e)
	dir := artifacts(t)
	b := browserWith(t, ana, browserOptions{timeout: 4 * time.Minute})
	axeSource(t)

	archived, _ := e.hold(t, "ana", call{"call_arch", "archive_post", `{"post":7}`, false})
	expiresBy := time.Now().Add(1500 * time.Millisecond)
	card, _ := e.hold(t, "ana")
	form, _ := e.hold(t, "ana", formCall)

	visit := func(url, ready string) {
		t.Helper()
		if err := chromedp.Do(b, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(ready))); err != nil {
			t.Fatalf("opening %s: %v", url, err)
		}
	}

	visit(card, `button.confirm`)
	audit(t, b, dir, "card")

	visit(form, `form.answer`)
	audit(t, b, dir, "form")

	// Errors shown by the page's script (a Precognition check).
	err := chromedp.Do(b,
		chromedp.SendKeys(chromedp.CSS(`#f-body`), "What shipped this week."),
		chromedp.SendKeys(chromedp.CSS(`#f-publish_at`), "tomorrow morning"),
		chromedp.Click(chromedp.CSS(`button.submit`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, `document.querySelector('#err-publish_at .error') !== null`)
	if inv := text(t, b, `#err-publish_at .error`); inv != "Enter a valid date and time, like 2026-12-01T09:00:00Z." {
		t.Errorf("the script's error = %q", inv)
	}
	if focused, _ := chromedp.Run(b, chromedp.Evaluate[string](`document.activeElement.id + ' ' + document.activeElement.getAttribute('aria-invalid')`)); focused != "f-publish_at true" {
		t.Errorf("after the check, focus and aria-invalid: %q", focused)
	}
	audit(t, b, dir, "form-errors-script")

	// The same answer without the script's check: the server sends the
	// page back with the errors.
	if _, err := chromedp.Run(b, chromedp.Evaluate[bool](`document.querySelector('form.answer').dataset.checked = 'yes'; true`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`button.submit`)), chromedp.WaitVisible(chromedp.CSS(`p.notice`))); err != nil {
		t.Fatal(err)
	}
	if notice := text(t, b, `p.notice`); notice != "Please fix the fields marked below. Nothing ran." {
		t.Errorf("notice = %q", notice)
	}
	audit(t, b, dir, "form-errors")
	if n := len(e.app.Calls()); n != 0 {
		t.Fatalf("an answer with errors ran %d times", n)
	}

	visit(card, `button.confirm`)
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`button.confirm`)), chromedp.WaitVisible(chromedp.CSS(`h1.status`))); err != nil {
		t.Fatal(err)
	}
	if got := squash(text(t, b, `main`)); !strings.HasPrefix(got, "Done. Removed. Your assistant asked to: Delete this post? This cannot be undone.") {
		t.Errorf("the answered page reads %q", got)
	}
	audit(t, b, dir, "answered")

	// A refused answer: a second press of a card already answered.
	if _, err := chromedp.Run(b, chromedp.Evaluate[bool](`(function () {
		var f = document.createElement('form'); f.method = 'post';
		[['hold', 'x'], ['token', 'x'], ['answer', 'confirm']].forEach(function (kv) { var i = document.createElement('input'); i.type = 'hidden'; i.name = kv[0]; i.value = kv[1]; f.appendChild(i); });
		document.body.appendChild(f); f.submit(); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(b, chromedp.WaitVisible(chromedp.CSS(`main a`))); err != nil {
		t.Fatal(err)
	}
	if got := squash(text(t, b, `main`)); got != "Not accepted This answer was not accepted. Nothing ran. Show the question" {
		t.Errorf("the refused answer's page reads %q", got)
	}
	audit(t, b, dir, "not-accepted")

	// Two questions behind one link: the second waits below the first's
	// answer, which runs once both are answered.
	e.app.SetRecord("/posts/8", `{"title":"Autumn fair","status":"draft"}`)
	two, _ := e.hold(t, "ana", call{"call_del8", "delete_post", `{"post":8}`, false}, call{"call_form2", "draft_post", `{"title":"Fair notes"}`, false})
	visit(two, `button.confirm`)
	if got := text(t, b, `section.card p.muted`); got != "Question 1 of 2" {
		t.Errorf("the first of two reads %q", got)
	}
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`button.confirm`)), chromedp.WaitVisible(chromedp.CSS(`form.answer`))); err != nil {
		t.Fatal(err)
	}
	if got := squash(text(t, b, `section.done`)); !strings.HasPrefix(got, "Confirmed. It runs once you have answered the other questions here. Your assistant asked to: Delete this post?") {
		t.Errorf("the answered first of two reads %q", got)
	}
	audit(t, b, dir, "two-questions")

	time.Sleep(time.Until(expiresBy))
	visit(archived, `h1.status`)
	if got := text(t, b, `h1.status`); got != "Expired. Nothing ran." {
		t.Errorf("the expired card's status = %q", got)
	}
	audit(t, b, dir, "expired")

	visit(e.pagesURL+"/h/"+strings.Repeat("a", 26), `h1`)
	if got := squash(text(t, b, `main`)); got != "Not found There is no such confirmation, or it is not yours." {
		t.Errorf("the not-found page reads %q", got)
	}
	audit(t, b, dir, "not-found")
}

// focusVisible is true when the focused element shows a focus ring a
// keyboard user can see: :focus-visible matches and the outline is drawn.
const focusVisible = `(function () {
	var el = document.activeElement;
	if (!el || el === document.body) return false;
	var s = getComputedStyle(el);
	return el.matches(':focus-visible') && s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2;
})()`

// tabTo presses Tab until the focused element matches css, checking at
// every stop that the focus can be seen. It gives up after 20 presses.
func tabTo(t *testing.T, b context.Context, css string) {
	t.Helper()
	for range 20 {
		if err := chromedp.Do(b, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		ok, err := chromedp.Run(b, chromedp.Evaluate[bool](focusVisible))
		if err != nil {
			t.Fatal(err)
		}
		desc, _ := chromedp.Run(b, chromedp.Evaluate[string](`document.activeElement.outerHTML.slice(0, 120)`))
		if !ok {
			t.Errorf("the focus on %s cannot be seen", desc)
		}
		at, err := chromedp.Run(b, chromedp.Evaluate[bool](`document.activeElement.matches(`+jsString(css)+`)`))
		if err != nil {
			t.Fatal(err)
		}
		if at {
			return
		}
	}
	t.Fatalf("Tab never reached %s", css)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestPagesKeyboardOnly: a card and a form can be answered with the
// keyboard alone (Tab, typing, Space, arrows, Enter), and every element
// the focus stops on shows it.
func TestPagesKeyboardOnly(t *testing.T) {
	e := newEnv(t, envOptions{})
	setupPost(e)
	card, _ := e.hold(t, "ana")
	form, msg := e.hold(t, "ana", call{"call_kb", "draft_post", `{"title":"Launch notes"}`, false})
	b := browserWith(t, ana, browserOptions{timeout: 2 * time.Minute})

	if err := chromedp.Do(b, chromedp.Navigate(card), chromedp.WaitVisible(chromedp.CSS(`button.confirm`))); err != nil {
		t.Fatal(err)
	}
	tabTo(t, b, `button.confirm`)
	if err := chromedp.Do(b, chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`h1.status`))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, b, `h1.status`); got != "Done. Removed." {
		t.Errorf("after Enter on Confirm: %q", got)
	}
	if calls := e.app.Calls(); len(calls) != 1 || calls[0].Method != "DELETE" {
		t.Fatalf("the card's action: %+v", calls)
	}

	if err := chromedp.Do(b, chromedp.Navigate(form), chromedp.WaitVisible(chromedp.CSS(`form.answer`))); err != nil {
		t.Fatal(err)
	}
	tabTo(t, b, `#f-body`)
	if err := chromedp.Do(b, chromedp.KeyEvent("What shipped this week.")); err != nil {
		t.Fatal(err)
	}
	tabTo(t, b, `#f-status`)
	// The policy's default is draft; ArrowDown picks the next choice.
	if err := chromedp.Do(b, chromedp.KeyEvent(kb.ArrowDown)); err != nil {
		t.Fatal(err)
	}
	tabTo(t, b, `button.submit`)
	if err := chromedp.Do(b, chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, `document.querySelector('h1.status') !== null`)
	if got := text(t, b, `h1.status`); got != "Done. Drafted." {
		t.Errorf("after Enter on Submit: %q", got)
	}
	calls := e.app.Calls()
	if len(calls) != 2 {
		t.Fatalf("the form's action ran %d times", len(calls)-1)
	}
	var got map[string]any
	if err := json.Unmarshal(calls[1].Body, &got); err != nil {
		t.Fatal(err)
	}
	if got["title"] != "Launch notes" || got["body"] != "What shipped this week." || got["status"] != "published" {
		t.Errorf("the form's action got %s", calls[1].Body)
	}
	if res := toolResult(e.next(t, "ana", msg, "ok"), "call_kb"); res != "The person filled in: title, body, status. Drafted." {
		t.Errorf("the model reads %q", res)
	}
}

var germanPolicy = strings.NewReplacer(
	"      reason: Delete this post? This cannot be undone.\n",
	"      reason:\n        en: Delete this post? This cannot be undone.\n        de: Diesen Beitrag löschen? Das kann nicht rückgängig gemacht werden.\n",
	"    reply: Removed.\n",
	"    reply:\n      en: The post was removed.\n      de: Der Beitrag wurde gelöscht.\n",
	"    titles:\n      body: {de: Inhalt}\n",
	"    titles:\n      title: {de: Titel}\n      body: {de: Inhalt}\n      status: {de: Status}\n      featured: {de: Hervorgehoben}\n      tags: {de: Schlagwörter}\n      publish_at: {de: Veröffentlichen am}\n",
	"    reply: Drafted.\n",
	"    reply:\n      en: Drafted.\n      de: Als Entwurf gespeichert.\n",
).Replace(policyYAML)

// TestPagesInGerman: a person whose browser asks for German gets the card
// and the form in German — the page's own words, the card's sentence and
// the reply from the policy's per-language texts, field titles, and the
// errors — while the model reads the policy's English.
func TestPagesInGerman(t *testing.T) {
	if germanPolicy == policyYAML || strings.Count(germanPolicy, "de: ") < 9 {
		t.Fatal("test broken: the German policy's edits do not apply")
	}
	e := newEnv(t, envOptions{policy: germanPolicy})
	setupPost(e)
	dir := artifacts(t)
	card, msg := e.hold(t, "ana")
	if !strings.Contains(msg.Content, "Delete this post? This cannot be undone.") {
		t.Errorf("the app's waiting text is not the policy's English: %q", msg.Content)
	}
	form, fmsg := e.hold(t, "ana", formCall)
	b := browserWith(t, ana, browserOptions{lang: "de-DE,de;q=0.9,en;q=0.5", timeout: 2 * time.Minute})

	if err := chromedp.Do(b, chromedp.Navigate(card), chromedp.WaitVisible(chromedp.CSS(`button.confirm`))); err != nil {
		t.Fatal(err)
	}
	shot(t, b, dir, "card-de")
	if got := squash(text(t, b, `main`)); got != "Wartet auf Ihre Bestätigung Ihr Assistent möchte: Diesen Beitrag löschen? Das kann nicht rückgängig gemacht werden. Post Spring meetup Status draft Ablehnen Bestätigen" {
		t.Errorf("the German card reads %q", got)
	}
	if lang, _ := chromedp.Run(b, chromedp.Evaluate[string](`document.documentElement.lang`)); lang != "de" {
		t.Errorf("html lang = %q", lang)
	}
	if err := chromedp.Do(b, chromedp.Click(chromedp.CSS(`button.confirm`)), chromedp.WaitVisible(chromedp.CSS(`h1.status`))); err != nil {
		t.Fatal(err)
	}
	shot(t, b, dir, "answered-de")
	if got := text(t, b, `h1.status`); got != "Erledigt. Der Beitrag wurde gelöscht." {
		t.Errorf("the German status = %q", got)
	}
	if got := toolResult(e.next(t, "ana", msg, "Danke"), "call_del7"); got != "The person confirmed. The post was removed." {
		t.Errorf("the model reads %q", got)
	}

	if err := chromedp.Do(b, chromedp.Navigate(form), chromedp.WaitVisible(chromedp.CSS(`form.answer`))); err != nil {
		t.Fatal(err)
	}
	labels, err := chromedp.Run(b, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.field .name')).map(function (l) { return l.textContent.trim(); })`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Titel (Pflichtfeld)", "Inhalt (Pflichtfeld)", "Status (Pflichtfeld)", "Hervorgehoben", "Schlagwörter", "Veröffentlichen am"}
	if strings.Join(labels, "|") != strings.Join(want, "|") {
		t.Errorf("the German labels are %q, want %q", labels, want)
	}
	if got := squash(text(t, b, `.actions`)); got != "Absenden Ablehnen Nicht jetzt" {
		t.Errorf("the German buttons read %q", got)
	}
	err = chromedp.Do(b,
		chromedp.SendKeys(chromedp.CSS(`#f-body`), "Was diese Woche erschienen ist."),
		chromedp.SendKeys(chromedp.CSS(`#f-publish_at`), "morgen früh"),
		chromedp.Click(chromedp.CSS(`button.submit`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, `document.querySelector('#err-publish_at .error') !== null`)
	shot(t, b, dir, "form-errors-de")
	if got := text(t, b, `#err-publish_at .error`); got != "Geben Sie ein gültiges Datum mit Uhrzeit ein, z. B. 2026-12-01T09:00:00Z." {
		t.Errorf("the German error = %q", got)
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
	waitFor(t, b, `document.querySelector('h1.status') !== null`)
	shot(t, b, dir, "form-answered-de")
	if got := text(t, b, `h1.status`); got != "Erledigt. Als Entwurf gespeichert." {
		t.Errorf("the German form status = %q", got)
	}
	if got := toolResult(e.next(t, "ana", fmsg, "Danke"), "call_form"); !strings.HasSuffix(got, ". Drafted.") {
		t.Errorf("the model reads %q", got)
	}
}

// squash is text with every run of white space read as one space.
func squash(text string) string {
	return strings.Join(strings.Fields(text), " ")
}

// shot writes a screenshot of the page as it is.
func shot(t *testing.T, b context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(b, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
