package pages

import (
	"fmt"
	"html/template"
	"slices"

	"github.com/toolgate/toolgate/forms"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/plaintext"
	"github.com/toolgate/toolgate/store"
)

// page is what the HTML template reads. Every string in it is escaped by
// html/template in its context.
type page struct {
	Lang    string // the page's language (BCP 47)
	W       *words
	Title   string
	App     string
	Notice  string
	Nonce   string
	Current *holdPage // the first hold still waiting, shown with its buttons
	Number  int       // its position, 1-based
	Total   int
	Done    []holdPage // the holds already answered or expired
	// Single: no hold waits and there is one: its status is the page's
	// heading, said first.
	Single bool
	// Resumes: the app's answer is waiting for this step and goes on once
	// the person has answered (gate.StepView.AssistantWaiting).
	Resumes bool
}

type holdPage struct {
	gate.HoldView
	W            *words
	Token        string
	Status       status
	Heading      string // a waiting card's heading
	Note         string // under it: why the owner has no Confirm (four_eyes)
	MayConfirm   bool   // the viewer may confirm (a waiting card)
	MayDecline   bool   // the viewer may decline (a waiting card)
	Asker        string // "Your assistant wants to:" or "ana's assistant wants to:", above the sentence
	Sentence     string // the card's sentence (or a form's message) to show
	SentenceLang string // its language when not the page's
	Rows         []rowPage
	Fields       []fieldPage
	// EditFields are a waiting card's editable arguments (card.editable),
	// posted with its Confirm; nil when it has none.
	EditFields []fieldPage
}

type rowPage struct {
	Label, Value string
	LabelLang    string // the label's language when not the page's
	Cut          bool
}

// fieldPage is one form field with what the control shows.
type fieldPage struct {
	forms.Field
	W        *words
	ID       string // the control's id; ErrID and HelpID name its error list and help
	ErrID    string
	HelpID   string
	Input    string // the input type for text-like kinds
	Text     string // the value a text-like control holds
	Checked  bool   // checkbox
	Options  []option
	Errors   []fieldError
	Textarea bool
}

type option struct {
	Value, Label string
	Selected     bool
}

func newPage(sp speech, v gate.StepView, tokens map[string]string, notice string, refused *refusedAnswer, nonce string) page {
	pg := page{Lang: sp.Tag, W: sp.W, App: v.App, Notice: notice, Total: len(v.Holds), Nonce: nonce, Resumes: v.AssistantWaiting}
	for i, h := range v.Holds {
		hp := newHoldPage(sp, h, tokens[h.ID], v.Approver)
		if pg.Current == nil && h.State == store.Waiting {
			var r *refusedAnswer
			if refused != nil && refused.hold == h.ID {
				r = refused
			}
			if h.Form != nil {
				hp.Fields = fieldPages(sp, *h.Form, r)
			}
			if h.Edit != nil && hp.MayConfirm {
				hp.EditFields = fieldPages(sp, *h.Edit, r)
			}
			pg.Current, pg.Number = &hp, i+1
			continue
		}
		pg.Done = append(pg.Done, hp)
	}
	switch {
	case pg.Current != nil && pg.Current.Card != nil:
		pg.Title = pg.Current.Heading
	case pg.Current != nil:
		pg.Title = sp.W.WaitingForm
	case len(pg.Done) == 1:
		pg.Single = true
		pg.Title = pg.Done[0].Status.Head
	case len(pg.Done) > 1:
		pg.Title = sp.W.YourAnswers
	default:
		pg.Title = sp.W.NothingWaiting
	}
	return pg
}

// newHoldPage lays out one hold: who asked, the sentence in the person's
// language where the policy gives it, the rows, what became of it.
// approver says the viewer answers it for someone else's conversation.
func newHoldPage(sp speech, h gate.HoldView, token string, approver bool) holdPage {
	hp := holdPage{HoldView: h, W: sp.W, Token: token, Status: sp.W.personStatus(h)}
	hp.MayConfirm = slices.Contains(h.Answers, store.AnswerConfirm)
	hp.MayDecline = slices.Contains(h.Answers, store.AnswerDecline)
	hp.Heading = sp.W.WaitingCard
	if h.Card != nil && h.State == store.Waiting && h.FourEyes && !hp.MayConfirm {
		hp.Heading, hp.Note = sp.W.WaitingApprover, sp.W.FourEyesNote
	}
	// The owner's own assistant asked; an approver reads whose it was
	// (approvers answer cards only). The owner id is cleaned like a
	// card's text and escaped by the template.
	waiting := h.State == store.Waiting
	owner := plaintext.Clean(h.Owner, 80)
	switch {
	case approver && h.Card != nil && waiting:
		hp.Asker = fmt.Sprintf(sp.W.AssistantOfWants, owner)
	case approver && h.Card != nil:
		hp.Asker = fmt.Sprintf(sp.W.AssistantOfWanted, owner)
	case h.Card != nil && waiting:
		hp.Asker = sp.W.AssistantWants
	case h.Card != nil:
		hp.Asker = sp.W.AssistantWanted
	case waiting:
		hp.Asker = sp.W.AssistantAsks
	default:
		hp.Asker = sp.W.AssistantAsked
	}
	switch {
	case h.Localized != nil && h.Localized.Sentence != "":
		hp.Sentence, hp.SentenceLang = h.Localized.Sentence, sp.otherLang(h.Localized.SentenceLang)
	case h.Card != nil:
		hp.Sentence = h.Card.Sentence
	case h.Form != nil:
		hp.Sentence = h.Form.Message
	}
	if h.Card != nil {
		var local []gate.LocalText
		if h.Localized != nil && len(h.Localized.Rows) == len(h.Card.Rows) {
			local = h.Localized.Rows
		}
		for i, r := range h.Card.Rows {
			rp := rowPage{Label: r.Label, Value: r.Value, Cut: r.Cut}
			if local != nil && local[i].Text != "" {
				rp.Label, rp.LabelLang = local[i].Text, sp.otherLang(local[i].Lang)
			}
			hp.Rows = append(hp.Rows, rp)
		}
	}
	if hp.Status.DetailLang != "" {
		hp.Status.DetailLang = sp.otherLang(hp.Status.DetailLang)
	}
	return hp
}

// fieldPages lays out a form's fields; a refused answer's values and
// errors are shown again.
func fieldPages(sp speech, f forms.Form, refused *refusedAnswer) []fieldPage {
	var out []fieldPage
	for i, fd := range f.Fields() {
		id := fd.Key
		if !safeID(id) {
			id = fmt.Sprint(i)
		}
		fp := fieldPage{Field: fd, W: sp.W, ID: "f-" + id, ErrID: "err-" + id, Textarea: slices.Contains(f.Textarea, fd.Key)}
		if fd.Description != "" {
			fp.HelpID = "help-" + id
		}
		var typed []string
		if refused != nil {
			typed = refused.values[fd.Key]
			fp.Errors = sp.rules(refused.errs[fd.Key])
		}
		current := func() []string {
			if refused != nil {
				return typed
			}
			switch v := fd.Value.(type) {
			case nil:
				return nil
			case []any:
				s := make([]string, len(v))
				for i, x := range v {
					s[i] = fmt.Sprint(x)
				}
				return s
			default:
				return []string{fmt.Sprint(v)}
			}
		}()
		switch fd.Kind {
		case "checkbox":
			fp.Checked = len(current) > 0 && (current[0] == "true" || current[0] == "on")
		case "select", "multiselect":
			for _, c := range fd.Choices {
				val := fmt.Sprint(c.Value)
				fp.Options = append(fp.Options, option{Value: val, Label: c.Label, Selected: slices.Contains(current, val)})
			}
		default:
			fp.Input = map[string]string{"email": "email", "url": "url", "date": "date", "number": "number", "integer": "number"}[fd.Kind]
			if fp.Input == "" {
				fp.Input = "text"
			}
			if len(current) > 0 {
				fp.Text = current[0]
			}
		}
		out = append(out, fp)
	}
	return out
}

// safeID reports whether a field key can stand in an HTML id as it is
// (the page's script and tests find fields by it).
func safeID(key string) bool {
	if key == "" || len(key) > 64 {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

var funcs = template.FuncMap{
	"deref": func(p *int) int { return *p },
	"post":  func(key string) string { return FieldPrefix + key },
}

// style is the pages' CSS: readable at 320 px, light and dark
// (prefers-color-scheme), with a focus ring keyboard users can see.
const style = `{{define "style"}}<style>
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1b1b;--muted:#505050;--line:#c4c4c4;--danger:#b3261e;--on-danger:#fff;--primary:#1f5fbf;--on-primary:#fff;--button:#fff;--warn:#7a4f00;--focus:#1f5fbf}
@media (prefers-color-scheme:dark){:root{--bg:#16181d;--fg:#e6e6e6;--muted:#b8b8b8;--line:#5a5f69;--danger:#ffb4ab;--on-danger:#561414;--primary:#a8c7fa;--on-primary:#062e6f;--button:#23262d;--warn:#f0c36b;--focus:#a8c7fa}}
html{background:var(--bg);color:var(--fg)}
body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:1.5rem auto;padding:0 1rem;overflow-wrap:anywhere}
header p{margin:0;color:var(--muted)}
h1{font-size:1.4rem;margin:.4rem 0 .8rem}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
.card{border:1px solid var(--line);border-radius:.5rem;padding:1rem 1.25rem;margin:1rem 0}
.asker{margin:0;color:var(--muted)}.sentence{margin:.1rem 0 .6rem;font-size:1.1rem}
dl{display:grid;grid-template-columns:fit-content(45%) 1fr;gap:.25rem 1rem}dt{color:var(--muted)}dd{margin:0}
.status .head{font-weight:700}
.actions{display:flex;flex-wrap:wrap;gap:.5rem;margin-top:1rem}.actions form{margin:0}
button{font:inherit;padding:.45rem 1rem;border-radius:.3rem;border:1px solid var(--muted);background:var(--button);color:var(--fg);cursor:pointer}
button.confirm{background:var(--danger);border-color:var(--danger);color:var(--on-danger)}
button.submit{background:var(--primary);border-color:var(--primary);color:var(--on-primary)}
a{color:var(--primary)}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.muted{color:var(--muted)}.notice{font-weight:600}.note{font-weight:600}
ul.waiting{list-style:none;padding:0}ul.waiting .muted{margin:0}
.field{margin:0 0 1rem}.field .name{display:block;font-weight:600}fieldset{border:1px solid var(--line);border-radius:.3rem}
input,select,textarea{font:inherit;color:var(--fg);background:var(--bg);border:1px solid var(--muted);border-radius:.2rem}
.field input[type=text],.field input[type=email],.field input[type=url],.field input[type=number],.field input[type=date],.field select,.field textarea{width:100%;box-sizing:border-box;padding:.3rem}
.cut{display:inline-block;margin-left:.4rem;padding:0 .35rem;border:1px solid var(--warn);border-radius:.25rem;color:var(--warn);font-size:.85em;white-space:nowrap}
.req{color:var(--danger);font-weight:400}.help{color:var(--muted);margin:.1rem 0}.error{color:var(--danger);margin:.2rem 0}
[aria-invalid=true]{border-color:var(--danger);border-width:2px}
.actions form.with-note{flex-basis:100%}.with-note label{display:block;font-weight:600}.with-note textarea{display:block;width:100%;box-sizing:border-box;padding:.3rem;margin-bottom:.5rem}
</style>{{end}}`

// note is a card's decline note (the action's decline_note): a plain
// textarea inside the decline form, so it needs no script.
const noteTemplate = `{{define "note"}}{{if .DeclineNote}}<label for="note-{{.ID}}">{{.W.NoteLabel}}</label>
<textarea id="note-{{.ID}}" name="decline_note" rows="3" maxlength="500" aria-describedby="note-help-{{.ID}}"></textarea>
<p class="help" id="note-help-{{.ID}}">{{.W.NoteHelp}}</p>{{end}}{{end}}`

var pageTemplate = template.Must(template.Must(template.Must(template.New("page").Funcs(funcs).Parse(style)).Parse(noteTemplate)).Parse(`<!doctype html>
<html lang="{{.Lang}}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="same-origin">
<title>{{.Title}}{{with .App}} · {{.}}{{end}}</title>
{{template "style"}}
</head>
<body>
{{with .App}}<header><p class="app">{{.}}</p></header>{{end}}
<main>
{{with .Notice}}<p role="alert" class="notice">{{.}}</p>{{end}}
{{if and .Current .Resumes}}<p role="status" class="resumes">{{.W.Resumes}}</p>{{end}}
{{with .Current}}
<section class="card" id="hold-{{.ID}}" aria-labelledby="heading">
{{if gt $.Total 1}}<p class="muted">{{printf $.W.QuestionOf $.Number $.Total}}</p>{{end}}
{{if .Card}}
<h1 id="heading">{{.Heading}}</h1>
{{with .Note}}<p class="note">{{.}}</p>{{end}}
{{template "said" .}}
{{template "edit" .}}
<div class="actions">
{{if .MayDecline}}<form method="post"{{if .DeclineNote}} class="with-note"{{end}}><input type="hidden" name="hold" value="{{.ID}}"><input type="hidden" name="token" value="{{.Token}}"><input type="hidden" name="answer" value="decline">{{template "note" .}}<button type="submit" class="decline">{{$.W.Decline}}</button></form>{{end}}
{{if and .MayConfirm (not .EditFields)}}<form method="post"><input type="hidden" name="hold" value="{{.ID}}"><input type="hidden" name="token" value="{{.Token}}"><input type="hidden" name="answer" value="confirm"><button type="submit" class="confirm">{{$.W.Confirm}}</button></form>{{end}}
</div>
{{else if .Form}}
<h1 id="heading">{{$.W.WaitingForm}}</h1>
{{template "said" .}}
<form method="post" id="form-{{.ID}}" class="answer">
<input type="hidden" name="hold" value="{{.ID}}"><input type="hidden" name="token" value="{{.Token}}">
{{range .Fields}}{{template "field" .}}{{end}}
<div class="errors" id="err-" data-for="" aria-live="polite"></div>
<div class="actions">
<button type="submit" name="answer" value="submit" class="submit">{{$.W.Submit}}</button>
<button type="submit" name="answer" value="decline" formnovalidate class="decline">{{$.W.Decline}}</button>
<button type="submit" name="answer" value="later" formnovalidate class="later">{{$.W.NotNow}}</button>
</div>
</form>
<script nonce="{{$.Nonce}}">
// Checks the answer with the server (a Precognition request: nothing runs)
// before sending it, and shows the errors under their fields, in the
// page's language. Without JavaScript the server does the same on submit.
document.querySelectorAll('form.answer').forEach(function (form) {
  form.addEventListener('submit', function (ev) {
    var btn = ev.submitter;
    if (!btn || btn.value !== 'submit' || form.dataset.checked === 'yes') return;
    ev.preventDefault();
    var data = new URLSearchParams(new FormData(form));
    data.set('answer', 'submit');
    fetch(location.href, {method: 'POST', headers: {'Precognition': 'true', 'Accept': 'application/json'}, body: data, credentials: 'same-origin'})
      .then(function (r) {
        form.querySelectorAll('.errors').forEach(function (e) { e.textContent = ''; });
        form.querySelectorAll('[aria-invalid]').forEach(function (e) { e.removeAttribute('aria-invalid'); });
        if (r.status !== 422) { form.dataset.checked = 'yes'; form.requestSubmit(btn); return; }
        return r.json().then(function (body) {
          var said = body.messages || body.errors || {}, first = null;
          Object.keys(said).forEach(function (k) {
            var box = null;
            form.querySelectorAll('.errors').forEach(function (e) { if (e.dataset.for === k) box = e; });
            if (!box) box = document.getElementById('err-');
            (said[k] || []).forEach(function (m) {
              var p = document.createElement('p'); p.className = 'error';
              if (typeof m === 'string') { p.textContent = m; } else { p.textContent = m.text; if (m.lang) p.lang = m.lang; }
              box.appendChild(p);
            });
            var field = box.parentNode.querySelector('input:not([type=hidden]),select,textarea');
            if (field && box.id !== 'err-') { field.setAttribute('aria-invalid', 'true'); if (!first) first = field; }
          });
          if (first) first.focus();
        });
      });
  });
});
</script>
{{else}}
<h1 id="heading">{{$.W.WaitingForm}}</h1>
<p>{{$.W.CannotShow}}</p>
{{end}}
</section>
{{else}}
{{if .Single}}{{with index .Done 0}}<h1 class="status" id="status-{{.ID}}">{{template "status" .Status}}</h1>{{end}}
{{else if .Done}}<h1>{{.W.YourAnswers}}</h1>
{{else}}<h1>{{.W.NothingWaiting}}</h1>{{end}}
{{end}}
{{if and .Current .Done}}<h2>{{.W.AlreadyAnswered}}</h2>{{end}}
{{range .Done}}
<section class="card done" id="hold-{{.ID}}">
{{if not $.Single}}<p class="status">{{template "status" .Status}}</p>{{end}}
{{template "said" .}}
</section>
{{end}}
</main>
</body>
</html>
{{define "status"}}<span class="head">{{.Head}}</span>{{with .Detail}} <span class="detail"{{with $.DetailLang}} lang="{{.}}"{{end}}>{{.}}</span>{{end}}{{end}}
{{define "field"}}<div class="field" data-field="{{.Key}}">
{{if eq .Kind "checkbox"}}
<label class="name"><input type="checkbox" name="{{post .Key}}" value="true" id="{{.ID}}"{{if .Checked}} checked{{end}}{{template "describedby" .}}> {{.Label}}</label>
{{else if eq .Kind "multiselect"}}{{$key := .Key}}{{$f := .}}
<fieldset aria-describedby="{{if .HelpID}}{{.HelpID}} {{end}}{{.ErrID}}"><legend class="name">{{.Label}}{{if .Required}} <span class="req">{{$.W.Required}}</span>{{end}}</legend>
<input type="hidden" name="{{post $key}}" value="">
{{range .Options}}<label><input type="checkbox" name="{{post $key}}" value="{{.Value}}"{{if .Selected}} checked{{end}}{{if $f.Errors}} aria-invalid="true"{{end}}> {{.Label}}</label><br>{{end}}
</fieldset>
{{else}}
<label class="name" for="{{.ID}}">{{.Label}}{{if .Required}} <span class="req">{{$.W.Required}}</span>{{end}}</label>
{{end}}
{{if .HelpID}}<p class="help" id="{{.HelpID}}">{{.Description}}</p>{{end}}
{{if eq .Kind "select"}}
<select name="{{post .Key}}" id="{{.ID}}"{{if .Required}} required{{end}}{{template "describedby" .}}><option value="">{{$.W.Choose}}</option>{{range .Options}}<option value="{{.Value}}"{{if .Selected}} selected{{end}}>{{.Label}}</option>{{end}}</select>
{{else if .Textarea}}
<textarea name="{{post .Key}}" id="{{.ID}}" rows="6"{{if .Required}} required{{end}}{{with .MinLength}} minlength="{{deref .}}"{{end}}{{with .MaxLength}} maxlength="{{deref .}}"{{end}}{{template "describedby" .}}>{{.Text}}</textarea>
{{else if .Input}}
<input type="{{.Input}}" name="{{post .Key}}" id="{{.ID}}" value="{{.Text}}"{{if .Required}} required{{end}}{{with .MinLength}} minlength="{{deref .}}"{{end}}{{with .MaxLength}} maxlength="{{deref .}}"{{end}}{{with .Minimum}} min="{{.}}"{{end}}{{with .Maximum}} max="{{.}}"{{end}}{{if eq .Kind "integer"}} step="1"{{else if eq .Kind "number"}} step="any"{{end}}{{if eq .Kind "datetime"}} placeholder="2026-12-01T09:00:00Z"{{end}}{{template "describedby" .}}>
{{end}}
<div class="errors" id="{{.ErrID}}" data-for="{{.Key}}" aria-live="polite">{{range .Errors}}<p class="error"{{with .Lang}} lang="{{.}}"{{end}}>{{.Text}}</p>{{end}}</div>
</div>{{end}}
{{define "edit"}}{{if .EditFields}}<form method="post" id="edit-{{.ID}}" class="edit">
<input type="hidden" name="hold" value="{{.ID}}"><input type="hidden" name="token" value="{{.Token}}"><input type="hidden" name="_edit" value="1">
<fieldset><legend class="name">{{.W.EditLegend}}</legend>
{{range .EditFields}}{{template "field" .}}{{end}}
<div class="errors" id="err-" data-for="" aria-live="polite"></div>
</fieldset>
<div class="actions"><button type="submit" name="answer" value="confirm" class="confirm">{{.W.Confirm}}</button></div>
</form>{{end}}{{end}}
{{define "describedby"}}{{if .HelpID}} aria-describedby="{{.HelpID}} {{.ErrID}}"{{else}} aria-describedby="{{.ErrID}}"{{end}}{{if .Errors}} aria-invalid="true"{{end}}{{end}}
{{define "said"}}{{with .Sentence}}<p class="asker">{{$.Asker}}</p>
<p class="sentence"{{with $.SentenceLang}} lang="{{.}}"{{end}}>{{.}}</p>{{end}}
{{if .Rows}}<dl>{{range .Rows}}<dt{{with .LabelLang}} lang="{{.}}"{{end}}>{{.Label}}</dt><dd>{{.Value}}{{if .Cut}} <span class="cut" title="{{$.W.ShortenedTitle}}">{{$.W.Shortened}}</span>{{end}}</dd>{{end}}</dl>{{end}}{{end}}
`))

var errorTemplate = template.Must(template.Must(template.New("error").Parse(style)).Parse(`<!doctype html>
<html lang="{{.Lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark"><meta name="referrer" content="no-referrer"><title>{{.Title}}</title>
{{template "style"}}
</head>
<body>
<main>
<h1>{{.Title}}</h1>
<p class="error">{{.Message}}</p>
{{with .Back}}<p><a href="{{.}}">{{$.Show}}</a></p>{{end}}
</main>
</body></html>
`))

// errorPage is what the error template reads.
type errorPage struct {
	Lang, Title, Message string
	Back                 string // a link back to the question, or ""
	Show                 string // its words
}
