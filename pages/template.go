package pages

import (
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/forms"
	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/store"
)

// page is what the HTML template reads. Every string in it is escaped by
// html/template in its context.
type page struct {
	App     string
	Notice  string
	Nonce   string
	Current *holdPage // the first hold still waiting, shown with its buttons
	Number  int       // its position, 1-based
	Total   int
	Done    []holdPage // the holds already answered or expired
	// Resumes: the app's answer is waiting for this step and goes on once
	// the person has answered (gate.StepView.AssistantWaiting).
	Resumes bool
}

type holdPage struct {
	gate.HoldView
	Token  string
	Status string // what happened, for the person
	Fields []fieldPage
}

// fieldPage is one form field with what the control shows.
type fieldPage struct {
	forms.Field
	Input    string // the input type for text-like kinds
	Text     string // the value a text-like control holds
	Checked  bool   // checkbox
	Options  []option
	Errors   []string
	Textarea bool
}

type option struct {
	Value, Label string
	Selected     bool
}

func newPage(v gate.StepView, tokens map[string]string, notice string, refused *refusedAnswer, nonce string) page {
	pg := page{App: v.App, Notice: notice, Total: len(v.Holds), Nonce: nonce, Resumes: v.AssistantWaiting}
	for i, h := range v.Holds {
		hp := holdPage{HoldView: h, Token: tokens[h.ID], Status: personStatus(h)}
		if pg.Current == nil && h.State == store.Waiting {
			if h.Form != nil {
				var r *refusedAnswer
				if refused != nil && refused.hold == h.ID {
					r = refused
				}
				hp.Fields = fieldPages(*h.Form, r)
			}
			pg.Current, pg.Number = &hp, i+1
			continue
		}
		pg.Done = append(pg.Done, hp)
	}
	return pg
}

// fieldPages lays out a form's fields; a refused answer's values and
// errors are shown again.
func fieldPages(f forms.Form, refused *refusedAnswer) []fieldPage {
	var out []fieldPage
	for _, fd := range f.Fields() {
		fp := fieldPage{Field: fd, Textarea: slices.Contains(f.Textarea, fd.Key)}
		var typed []string
		if refused != nil {
			typed = refused.values[fd.Key]
			fp.Errors = refused.errs[fd.Key]
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

// personStatus says in a word or two what became of a hold.
func personStatus(h gate.HoldView) string {
	switch h.State {
	case store.Waiting:
		return "Waiting"
	case store.Expired:
		return "Expired: nothing ran"
	case store.Answered:
		switch h.Answer {
		case store.AnswerDecline:
			return "Declined"
		case store.AnswerLater:
			return "Closed without answering"
		}
		return "Answered; waiting for the other questions"
	case store.Running:
		if h.Answer == store.AnswerSubmit {
			return "Submitted; the app is being asked now"
		}
		return "Confirmed; the app is being asked now"
	}
	switch h.Answer {
	case store.AnswerConfirm:
		if h.Outcome == gate.OutcomeChanged {
			return "Not run: the record changed while waiting"
		}
		return afterPerson("Confirmed", h.Outcome, gate.PersonConfirmed)
	case store.AnswerSubmit:
		return afterPerson("Submitted", h.Outcome, gate.PersonFilledIn, gate.PersonSubmitted)
	case store.AnswerDecline:
		return "Declined: nothing ran"
	case store.AnswerLater:
		return "Closed without answering: nothing ran"
	case store.AnswerMovedOn:
		return "Closed: you moved on in the conversation"
	case store.AnswerTimedOut:
		return "Expired: nothing ran"
	}
	return h.Outcome
}

// afterPerson says a released hold's outcome to the person: the model's
// text without the person's part (gate.Ran.After), after word: "Confirmed:
// Removed.", "Confirmed, but the app failed (HTTP 500); …". An outcome
// that does not start with one of the person's parts is shown as it is.
func afterPerson(word, outcome string, parts ...string) string {
	for _, part := range parts {
		rest, ok := strings.CutPrefix(outcome, part)
		if !ok {
			continue
		}
		// A form's part lists field names; what follows it starts at
		// whichever comes first: ", but the " (a failure clause) or ". "
		// (the reply).
		but, dot := strings.Index(rest, ", but the "), strings.Index(rest, ". ")
		switch {
		case but >= 0 && (dot < 0 || but < dot):
			return word + rest[but:]
		case dot >= 0:
			return word + ": " + rest[dot+2:]
		}
	}
	return outcome
}

var funcs = template.FuncMap{
	"deref": func(p *int) int { return *p },
}

var pageTemplate = template.Must(template.New("page").Funcs(funcs).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>{{if .Current}}Waiting for your answer{{else}}Confirmation{{end}}{{with .App}} · {{.}}{{end}}</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
.card{border:1px solid #ccc;border-radius:.5rem;padding:1rem 1.25rem;margin:1rem 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{color:#555}dd{margin:0;overflow-wrap:anywhere}
form.inline{display:inline}button{font:inherit;padding:.4rem 1rem;margin-right:.5rem;border-radius:.3rem;border:1px solid #888;background:#fff}
button.confirm{background:#b3261e;border-color:#b3261e;color:#fff}button.submit{background:#1f5fbf;border-color:#1f5fbf;color:#fff}.muted{color:#555}
h1{font-size:1.4rem;margin:.2rem 0 .8rem}.field{margin:0 0 1rem}.field label.name{display:block;font-weight:600}
.field input[type=text],.field input[type=email],.field input[type=url],.field input[type=number],.field input[type=date],.field select,.field textarea{font:inherit;width:100%;box-sizing:border-box;padding:.3rem}
.cut{display:inline-block;margin-left:.4rem;padding:0 .35rem;border:1px solid #8a5a00;border-radius:.25rem;color:#8a5a00;font-size:.85em;white-space:nowrap}
.req{color:#b3261e;font-weight:400}.help{color:#555;margin:.1rem 0}.error{color:#b3261e;margin:.2rem 0}
</style>
</head>
<body>
{{with .App}}<p class="muted">Asked by {{.}}</p>{{end}}
{{with .Notice}}<p role="status" class="notice">{{.}}</p>{{end}}
{{if and .Current .Resumes}}<p role="status" class="resumes">The assistant is waiting for your answer and will continue as soon as you have answered.</p>{{end}}
{{with .Current}}
<section class="card" id="hold-{{.ID}}">
{{if gt $.Total 1}}<p class="muted">{{$.Number}} of {{$.Total}}</p>{{end}}
{{if .Card}}
<h1>Waiting for your confirmation</h1>
<p class="sentence">{{.Card.Sentence}}</p>
{{if .Card.Rows}}<dl>{{range .Card.Rows}}{{template "row" .}}{{end}}</dl>{{end}}
<form method="post" class="inline"><input type="hidden" name="hold" value="{{.ID}}"><input type="hidden" name="token" value="{{.Token}}"><input type="hidden" name="answer" value="decline"><button type="submit" class="decline">Decline</button></form>
<form method="post" class="inline"><input type="hidden" name="hold" value="{{.ID}}"><input type="hidden" name="token" value="{{.Token}}"><input type="hidden" name="answer" value="confirm"><button type="submit" class="confirm">Confirm</button></form>
{{else if .Form}}
<h1 class="sentence">{{.Form.Message}}</h1>
<form method="post" id="form-{{.ID}}" class="answer">
<input type="hidden" name="hold" value="{{.ID}}"><input type="hidden" name="token" value="{{.Token}}">
{{range .Fields}}
<div class="field" data-field="{{.Key}}">
{{if eq .Kind "checkbox"}}
<label class="name"><input type="checkbox" name="{{.Key}}" value="true" id="f-{{.Key}}"{{if .Checked}} checked{{end}}> {{.Label}}</label>
{{else if eq .Kind "multiselect"}}{{$key := .Key}}
<fieldset><legend class="name">{{.Label}}{{if .Required}} <span class="req">(required)</span>{{end}}</legend>
<input type="hidden" name="{{$key}}" value="">
{{range .Options}}<label><input type="checkbox" name="{{$key}}" value="{{.Value}}"{{if .Selected}} checked{{end}}> {{.Label}}</label><br>{{end}}
</fieldset>
{{else}}
<label class="name" for="f-{{.Key}}">{{.Label}}{{if .Required}} <span class="req">(required)</span>{{end}}</label>
{{end}}
{{with .Description}}<p class="help">{{.}}</p>{{end}}
{{if eq .Kind "select"}}
<select name="{{.Key}}" id="f-{{.Key}}"{{if .Required}} required{{end}}><option value="">—</option>{{range .Options}}<option value="{{.Value}}"{{if .Selected}} selected{{end}}>{{.Label}}</option>{{end}}</select>
{{else if .Textarea}}
<textarea name="{{.Key}}" id="f-{{.Key}}" rows="6"{{if .Required}} required{{end}}{{with .MinLength}} minlength="{{deref .}}"{{end}}{{with .MaxLength}} maxlength="{{deref .}}"{{end}}>{{.Text}}</textarea>
{{else if .Input}}
<input type="{{.Input}}" name="{{.Key}}" id="f-{{.Key}}" value="{{.Text}}"{{if .Required}} required{{end}}{{with .MinLength}} minlength="{{deref .}}"{{end}}{{with .MaxLength}} maxlength="{{deref .}}"{{end}}{{with .Minimum}} min="{{.}}"{{end}}{{with .Maximum}} max="{{.}}"{{end}}{{if eq .Kind "integer"}} step="1"{{else if eq .Kind "number"}} step="any"{{end}}{{if eq .Kind "datetime"}} placeholder="2026-12-01T09:00:00Z"{{end}}>
{{end}}
<div class="errors" id="err-{{.Key}}">{{range .Errors}}<p class="error">{{.}}</p>{{end}}</div>
</div>
{{end}}
<div class="errors" id="err-"></div>
<button type="submit" name="answer" value="submit" class="submit">Submit</button>
<button type="submit" name="answer" value="decline" formnovalidate class="decline">Decline</button>
<button type="submit" name="answer" value="later" formnovalidate class="later">Not now</button>
</form>
<script nonce="{{$.Nonce}}">
// Checks the answer with the server (a Precognition request: nothing runs)
// before sending it, and shows the errors under their fields. Without
// JavaScript the server does the same on submit.
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
        if (r.status === 204) { form.dataset.checked = 'yes'; form.requestSubmit(btn); return; }
        if (r.status !== 422) { form.dataset.checked = 'yes'; form.requestSubmit(btn); return; }
        return r.json().then(function (body) {
          Object.keys(body.errors || {}).forEach(function (k) {
            var box = document.getElementById('err-' + k) || document.getElementById('err-');
            (body.errors[k] || []).forEach(function (msg) {
              var p = document.createElement('p'); p.className = 'error'; p.textContent = msg; box.appendChild(p);
            });
          });
        });
      });
  });
});
</script>
{{else}}
<h1>This question cannot be shown right now</h1>
{{end}}
</section>
{{else}}
<h1>Nothing is waiting for you here</h1>
{{end}}
{{range .Done}}
<section class="card done" id="hold-{{.ID}}">
{{with .Card}}<p class="sentence">{{.Sentence}}</p>
{{if .Rows}}<dl>{{range .Rows}}{{template "row" .}}{{end}}</dl>{{end}}{{end}}
<p class="status"><strong>{{.Status}}</strong></p>
</section>
{{end}}
</body>
</html>
{{define "row"}}<dt>{{.Label}}</dt><dd>{{.Value}}{{if .Cut}} <span class="cut" title="The full value is longer than shown here.">shortened</span>{{end}}</dd>{{end}}
`))

var errorTemplate = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>Not accepted</title></head>
<body style="font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem">
<h1>Not accepted</h1><p class="error">{{.}}</p>
</body></html>
`))
