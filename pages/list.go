package pages

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/gate"
)

// The list of what waits for the signed-in person: GET on the pages' base
// path with no step id (<pages>/), as HTML or JSON. It lists the holds,
// in the person's tenant, of the actions that have approvers, that the
// person may confirm (as an approver, or as the owner where four_eyes
// does not stop them), so an approver needs no link. Each entry links to
// the step's page, which checks everything again.

// listJSON is the JSON form of the list.
type listJSON struct {
	Waiting []gate.WaitingHold `json:"waiting"`
}

// listPage is what the list template reads.
type listPage struct {
	Lang    string
	W       *words
	Entries []listEntry
}

type listEntry struct {
	Asker        string // "ana's assistant wants to:" or "Your assistant wants to:"
	Sentence     string
	SentenceLang string
	Href         string // the step's page, as a path on this site
	App          string
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
	waiting, err := p.Gate.Waiting(r.Context(), who, lang)
	if err != nil {
		p.log().Error("listing what waits", zap.String("person", who.Owner), zap.Error(err))
		p.fail(w, r, gate.Status(err), func(w *words) string { return w.CannotReadNow })
		return
	}
	if wantsJSON(r) {
		writeJSON(w, http.StatusOK, listJSON{Waiting: waiting})
		return
	}
	sp := speak(lang)
	pg := listPage{Lang: sp.Tag, W: sp.W}
	for _, h := range waiting {
		e := listEntry{Sentence: h.Sentence, SentenceLang: sp.otherLang(h.SentenceLang), App: h.App, Href: h.Link}
		if e.Sentence == "" {
			e.Sentence, e.SentenceLang = h.Action, "" // a card that cannot be read: the link still needs a name
		}
		if u, err := url.Parse(h.Link); err == nil {
			e.Href = u.Path // the same site: no step id leaves in a Referer
		}
		e.Asker = sp.W.AssistantWants
		if h.Approver {
			e.Asker = fmt.Sprintf(sp.W.AssistantOfWants, cards.Clean(h.Owner, 80))
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
{{range .Entries}}<li class="card"><p class="asker">{{.Asker}}</p>
<p class="sentence"><a href="{{.Href}}"{{with .SentenceLang}} lang="{{.}}"{{end}}>{{.Sentence}}</a></p>
{{with .App}}<p class="muted">{{.}}</p>{{end}}</li>
{{end}}</ul>
{{else}}<p>{{.W.ListEmpty}}</p>{{end}}
</main>
</body>
</html>
`))
