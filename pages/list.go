package pages

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/plaintext"
	"github.com/toolgate/toolgate/store"
)

// The inbox: GET on the pages' base path with no step id (<pages>/), as
// HTML or JSON. It lists everything, in the person's tenant, waiting for
// their answer (gate.Inbox): their own cards and forms, and the cards they
// may answer as an approver, newest first, each with its app, its
// sentence, how long it has waited and how long it has left, linking to
// the step's page, which checks everything again. It is paged: ?after=
// takes a page's next cursor, ?limit= a page size (gate.InboxPageSize by
// default, at most gate.MaxInboxPageSize).

// listPage is what the list template reads.
type listPage struct {
	Lang    string
	W       *words
	Entries []listEntry
	Older   string // the next page's link; "" when there is none
	Newest  string // the first page's link, on a later page
}

type listEntry struct {
	Asker        string // "ana's assistant wants to:", "Your assistant wants to:" or "Your assistant asks:"
	Sentence     string
	SentenceLang string
	Href         string // the step's page, as a path on this site
	App          string
	Created      string // RFC 3339, for <time>
	Expires      string
	Waited       string // how long it has waited, in the person's language
	Left         string // how long it has left
}

// isListPath reports whether path is the pages' own base path (with or
// without its trailing slash), where the list is served.
func (p *Pages) isListPath(path string) bool {
	base := "/"
	if u, err := url.Parse(p.Gate.LinkPrefix()); err == nil {
		base = strings.TrimSuffix(u.Path, "h/")
	}
	return path == base || path+"/" == base
}

func (p *Pages) list(w http.ResponseWriter, r *http.Request, who gate.Person) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		p.fail(w, r, http.StatusMethodNotAllowed, func(w *words) string { return w.MethodNotAllowed })
		return
	}
	lang := r.Header.Get("Accept-Language")
	q := r.URL.Query()
	limit := 0
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			p.fail(w, r, http.StatusBadRequest, func(w *words) string { return w.Unreadable })
			return
		}
		limit = n
	}
	inbox, err := p.Gate.Inbox(r.Context(), who, lang, q.Get("after"), limit)
	if errors.Is(err, gate.ErrCursor) {
		p.fail(w, r, http.StatusBadRequest, func(w *words) string { return w.Unreadable })
		return
	}
	if err != nil {
		p.log().Error("listing what waits", zap.String("person", who.Owner), zap.Error(err))
		p.fail(w, r, gate.Status(err), func(w *words) string { return w.CannotReadNow })
		return
	}
	if wantsJSON(r) {
		writeJSON(w, http.StatusOK, inbox)
		return
	}
	sp := speak(lang)
	pg := listPage{Lang: sp.Tag, W: sp.W}
	page := func(after string) string {
		v := url.Values{}
		if after != "" {
			v.Set("after", after)
		}
		if limit > 0 {
			v.Set("limit", strconv.Itoa(limit))
		}
		if len(v) == 0 {
			return r.URL.Path
		}
		return r.URL.Path + "?" + v.Encode()
	}
	if inbox.Next != "" {
		pg.Older = page(inbox.Next)
	}
	if q.Get("after") != "" {
		pg.Newest = page("")
	}
	for _, h := range inbox.Waiting {
		e := listEntry{Sentence: h.Sentence, SentenceLang: sp.otherLang(h.SentenceLang), App: h.App, Href: h.Link,
			Created: h.Created.UTC().Format(time.RFC3339), Expires: h.Expires.UTC().Format(time.RFC3339),
			Waited: fmt.Sprintf(sp.W.WaitedFor, sp.duration(inbox.Now.Sub(h.Created))),
			Left:   fmt.Sprintf(sp.W.ExpiresIn, sp.duration(h.Expires.Sub(inbox.Now)))}
		if e.Sentence == "" {
			e.Sentence, e.SentenceLang = h.Action, "" // a card that cannot be read: the link still needs a name
		}
		if u, err := url.Parse(h.Link); err == nil {
			e.Href = u.Path // the same site: no step id leaves in a Referer
		}
		switch {
		case h.Approver:
			e.Asker = fmt.Sprintf(sp.W.AssistantOfWants, plaintext.Clean(h.Owner, 80))
		case h.Kind == store.KindForm:
			e.Asker = sp.W.AssistantAsks
		default:
			e.Asker = sp.W.AssistantWants
		}
		pg.Entries = append(pg.Entries, e)
	}
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Language", sp.Tag)
	w.Header().Add("Vary", "Accept-Language")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if err := listTemplate.Execute(w, pg); err != nil {
		p.log().Error("rendering list", zap.Error(err))
	}
}

// duration says d in whole minutes (at least one), or hours and minutes.
func (sp speech) duration(d time.Duration) string {
	m := max(int(d/time.Minute), 1)
	if m < 60 {
		return fmt.Sprintf(sp.W.Minutes, m)
	}
	return fmt.Sprintf(sp.W.Hours, m/60, m%60)
}

var listTemplate = template.Must(template.Must(template.New("list").Parse(style)).Parse(`<!doctype html>
<html lang="{{.Lang}}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="same-origin">
<title>{{.W.WaitingList}}</title>
{{template "style"}}
</head>
<body>
<main>
<h1>{{.W.WaitingList}}</h1>
{{if .Entries}}<ul class="waiting">
{{range .Entries}}<li class="card">{{with .App}}<p class="muted app">{{.}}</p>{{end}}<p class="asker">{{.Asker}}</p>
<p class="sentence"><a href="{{.Href}}"{{with .SentenceLang}} lang="{{.}}"{{end}}>{{.Sentence}}</a></p>
<p class="muted when"><time datetime="{{.Created}}">{{.Waited}}</time> · <time datetime="{{.Expires}}">{{.Left}}</time></p></li>
{{end}}</ul>
{{else}}<p>{{.W.ListEmpty}}</p>{{end}}
{{if or .Older .Newest}}<nav class="pager" aria-label="{{.W.WaitingList}}">{{with .Newest}}<a href="{{.}}">{{$.W.NewestPage}}</a> {{end}}{{with .Older}}<a href="{{.}}" rel="next">{{$.W.OlderPage}}</a>{{end}}</nav>{{end}}
</main>
</body>
</html>
`))
