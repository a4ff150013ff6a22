package pages

import (
	"html/template"
	"strings"

	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/store"
)

// page is what the HTML template reads. Every string in it is escaped by
// html/template in its context.
type page struct {
	App     string
	Notice  string
	Current *holdPage // the first hold still waiting, shown with its buttons
	Number  int       // its position, 1-based
	Total   int
	Done    []holdPage // the holds already answered or expired
}

type holdPage struct {
	gate.HoldView
	Token  string
	Status string // what happened, for the person
}

func newPage(v gate.StepView, tokens map[string]string, notice string) page {
	pg := page{App: v.App, Notice: notice, Total: len(v.Holds)}
	for i, h := range v.Holds {
		hp := holdPage{HoldView: h, Token: tokens[h.ID], Status: personStatus(h)}
		if pg.Current == nil && h.State == store.Waiting {
			pg.Current, pg.Number = &hp, i+1
			continue
		}
		pg.Done = append(pg.Done, hp)
	}
	return pg
}

// personStatus says in a word or two what became of a hold.
func personStatus(h gate.HoldView) string {
	switch h.State {
	case store.Waiting:
		return "Waiting"
	case store.Expired:
		return "Expired: nothing ran"
	case store.Answered:
		if h.Answer == store.AnswerDecline {
			return "Declined"
		}
		return "Answered"
	}
	switch h.Answer {
	case store.AnswerConfirm:
		switch h.Outcome {
		case gate.OutcomeChanged:
			return "Not run: the record changed while waiting"
		}
		return "Confirmed: " + strings.TrimPrefix(h.Outcome, "The person confirmed. ")
	case store.AnswerDecline:
		return "Declined: nothing ran"
	case store.AnswerMovedOn:
		return "Closed: you moved on in the conversation"
	case store.AnswerTimedOut:
		return "Expired: nothing ran"
	}
	return h.Outcome
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>{{if .Current}}Waiting for your confirmation{{else}}Confirmation{{end}}{{with .App}} · {{.}}{{end}}</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
.card{border:1px solid #ccc;border-radius:.5rem;padding:1rem 1.25rem;margin:1rem 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{color:#555}dd{margin:0;overflow-wrap:anywhere}
form{display:inline}button{font:inherit;padding:.4rem 1rem;margin-right:.5rem;border-radius:.3rem;border:1px solid #888;background:#fff}
button.confirm{background:#b3261e;border-color:#b3261e;color:#fff}.muted{color:#555}h1{font-size:1.4rem;margin:.2rem 0 .8rem}
</style>
</head>
<body>
{{with .App}}<p class="muted">Asked by {{.}}</p>{{end}}
{{with .Notice}}<p role="status">{{.}}</p>{{end}}
{{with .Current}}
<section class="card" id="hold-{{.ID}}">
<h1>Waiting for your confirmation</h1>
{{if gt $.Total 1}}<p class="muted">{{$.Number}} of {{$.Total}}</p>{{end}}
<p class="sentence">{{.Card.Sentence}}</p>
{{if .Card.Rows}}<dl>{{range .Card.Rows}}<dt>{{.Label}}</dt><dd>{{.Value}}</dd>{{end}}</dl>{{end}}
<form method="post"><input type="hidden" name="hold" value="{{.ID}}"><input type="hidden" name="token" value="{{.Token}}"><input type="hidden" name="answer" value="decline"><button type="submit" class="decline">Decline</button></form>
<form method="post"><input type="hidden" name="hold" value="{{.ID}}"><input type="hidden" name="token" value="{{.Token}}"><input type="hidden" name="answer" value="confirm"><button type="submit" class="confirm">Confirm</button></form>
</section>
{{else}}
<h1>Nothing is waiting for you here</h1>
{{end}}
{{range .Done}}
<section class="card done" id="hold-{{.ID}}">
<p class="sentence">{{.Card.Sentence}}</p>
{{if .Card.Rows}}<dl>{{range .Card.Rows}}<dt>{{.Label}}</dt><dd>{{.Value}}</dd>{{end}}</dl>{{end}}
<p class="status"><strong>{{.Status}}</strong></p>
</section>
{{end}}
</body>
</html>
`))

var errorTemplate = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="same-origin"><title>Not accepted</title></head>
<body style="font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem">
<h1>Not accepted</h1><p class="error">{{.}}</p>
</body></html>
`))
