package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/forms"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// formShown is what a form hold keeps of its call: the decision (which
// fields, and the model's values validation accepted and that are safe to
// show) and the tool's schema when it came from the request. The form
// itself is built anew for each page view and answer, in the person's
// language and with the choices as they read then.
type formShown struct {
	Fields   []string          `json:"fields"`
	Reasons  map[string]string `json:"reasons,omitempty"`
	Accepted map[string]any    `json:"accepted,omitempty"`
	Schema   json.RawMessage   `json:"schema,omitempty"`
	Message  string            `json:"message"`
	// Roles are the roles of the person the form was asked of, for the
	// action's rules when it is submitted (rules.go).
	Roles []string `json:"roles,omitempty"`
}

func (s formShown) decision() forms.Decision {
	return forms.Decision{Outcome: forms.Ask, Fields: s.Fields, Reasons: s.Reasons, Accepted: s.Accepted}
}

func readShown(b []byte) (formShown, error) {
	var s formShown
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // accepted numbers stay json.Number, as Plan made them
	err := dec.Decode(&s)
	return s, err
}

// buildForm builds the form of an action for a decision, reading the
// choices_from and default_from endpoints as the person.
func (g *Gate) buildForm(ctx context.Context, a *policies.Action, schema json.RawMessage, d forms.Decision, lang string, who Person) (forms.Form, error) {
	var fetched forms.Fetched
	if a.Ask != nil {
		for field, t := range a.Ask.ChoicesFrom {
			body, err := g.fetchJSON(ctx, t, who)
			if err != nil {
				return forms.Form{}, fmt.Errorf("reading choices of %s: %w", field, err)
			}
			cs, err := forms.ChoicesFromJSON(body)
			if err != nil {
				return forms.Form{}, fmt.Errorf("reading choices of %s: %w", field, err)
			}
			if fetched.Choices == nil {
				fetched.Choices = map[string][]policies.Choice{}
			}
			fetched.Choices[field] = cs
		}
		for field, t := range a.Ask.DefaultFrom {
			body, err := g.fetchJSON(ctx, t, who)
			if err != nil {
				return forms.Form{}, fmt.Errorf("reading default of %s: %w", field, err)
			}
			v, err := forms.DefaultFromJSON(body)
			if err != nil {
				return forms.Form{}, fmt.Errorf("reading default of %s: %w", field, err)
			}
			if fetched.Defaults == nil {
				fetched.Defaults = map[string]any{}
			}
			fetched.Defaults[field] = v
		}
	}
	return forms.Build(a, schema, d, lang, fetched)
}

func (g *Gate) fetchJSON(ctx context.Context, t *policies.Template, who Person) ([]byte, error) {
	u, err := t.Expand([]byte(`{}`))
	if err != nil {
		return nil, err
	}
	resp, err := g.cfg.Actions.Fetch(ctx, u, who.caller())
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return nil, fmt.Errorf("HTTP %d", resp.Status)
	}
	return resp.Body, nil
}

// formOf rebuilds the form of a hold as it reads now, for the person.
func (g *Gate) formOf(ctx context.Context, h store.Hold, lang string) (forms.Form, *policies.Action, error) {
	var a *policies.Action
	if p := g.cfg.Policy(h.Policy); p != nil {
		a = p.Action(h.Action)
	}
	if a == nil {
		return forms.Form{}, nil, errors.New("the policy no longer declares the action")
	}
	s, err := readShown(h.Shown)
	if err != nil {
		return forms.Form{}, nil, fmt.Errorf("reading hold: %w", err)
	}
	f, err := g.buildForm(ctx, a, s.Schema, s.decision(), lang, Person{Owner: h.Owner, Tenant: h.Tenant})
	return f, a, err
}

// FieldErrors are a refused answer's errors by field (short rules, never
// the value). The key "" is about the form as a whole.
type FieldErrors map[string][]string

func (e FieldErrors) Error() string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + strings.Join(e[k], ", ")
	}
	return "answer refused: " + strings.Join(parts, "; ")
}

// submitted is what a form hold keeps of the answer until the run: the
// final arguments and the names of the fields the person filled.
type submitted struct {
	Args   json.RawMessage `json:"args"`
	Filled []string        `json:"filled"`
}

// Submit takes the person's answer to a form. answer is form-encoded
// values or, when jsonBody is set, a JSON object. Every check runs: the
// owner, the hold still waiting, the answer against the form as it reads
// now (errors come back as FieldErrors, nothing runs). With check set (a
// Precognition request) it stops there. Otherwise it claims the hold once
// and, when this is the step's last answer, releases the step.
func (g *Gate) Submit(ctx context.Context, stepID, holdID string, who Person, lang string, answer map[string][]string, jsonBody []byte, check bool) (HoldView, error) {
	h, r, err := g.answerable(ctx, stepID, holdID, who)
	if err != nil {
		return HoldView{}, err
	}
	if h.Kind != store.KindForm {
		return HoldView{}, ErrChoice
	}
	if st := h.StateAt(g.cfg.Now()); st != store.Waiting {
		if st == store.Expired {
			return HoldView{}, store.ErrExpired
		}
		return HoldView{}, store.ErrAnswered
	}
	f, a, err := g.formOf(ctx, h, lang)
	if err != nil {
		g.log.Error("rebuilding form", zap.String("hold_id", h.ID), zap.String("action", h.Action), zap.Error(err))
		return HoldView{}, FieldErrors{"": {"the form cannot be built now"}}
	}
	s, _ := readShown(h.Shown)
	values, args, err := answerArgs(f, h.Arguments, answer, jsonBody, func(args []byte) error { return a.CheckArgumentsWith(s.Schema, args) })
	if err != nil {
		return HoldView{}, err
	}
	if check {
		return HoldView{ID: h.ID}, nil
	}
	filled := make([]string, 0, len(values))
	for _, fd := range f.Fields() {
		if _, ok := values[fd.Key]; ok {
			filled = append(filled, fd.Key)
		}
	}
	kept, _ := json.Marshal(submitted{Args: args, Filled: filled})
	// The store keeps the person's values sealed, and only until the
	// hold settles (seal.go).
	sealed, err := g.sealValuesJSON(h.ID, kept)
	if err != nil {
		return HoldView{}, fmt.Errorf("sealing the person's values: %w", err)
	}
	return g.claimAndRelease(ctx, h, who, r, store.AnswerSubmit, sealed, true)
}

// runForm releases a submitted form with the person's values over the
// model's arguments. released and ok as for send.
func (g *Gate) runForm(ctx context.Context, h store.Hold) (outcome Outcome, reply string, released []store.Event, ok bool) {
	a := g.action(h)
	if a == nil || a.Run.URL == nil {
		return Outcome{Kind: ResultNotRun, Why: notRunPolicyGone}, "", nil, true
	}
	s, err := g.submittedOf(h)
	if err != nil {
		g.log.Error("reading submitted values", zap.String("hold_id", h.ID), zap.Error(err))
		return Outcome{Kind: ResultNotRun, Why: notRunAnswerLost}, "", nil, true
	}
	shown, _ := readShown(h.Shown)
	if why := g.filledRules(h, a, s.Args, shown.Roles); why != "" {
		return Outcome{Kind: ResultNotRun, Why: notRunRuleDeny, Refusal: "Toolgate refused " + h.Action + ": " + why, Person: personFilled, Filled: s.Filled}, "", nil, true
	}
	outcome, reply, released, ok = g.send(ctx, h, a, s.Args)
	outcome.Person, outcome.Filled = personFilled, s.Filled
	return outcome, reply, released, ok
}

// submittedOf unseals a submitted hold's values.
func (g *Gate) submittedOf(h store.Hold) (submitted, error) {
	var s submitted
	plain, err := g.unsealValuesJSON(h.ID, h.Values)
	if err != nil {
		return s, err
	}
	err = json.Unmarshal(plain, &s)
	return s, err
}

// withPerson is o with the person's part of a released hold, for an
// outcome written without the run (the sweeper's).
func (g *Gate) withPerson(h store.Hold, o Outcome) Outcome {
	if h.Answer != store.AnswerSubmit {
		o.Person = personConfirmed
		if e, ok, _ := g.editOf(h); ok {
			o.Changed = e.Changed
		}
		return o
	}
	s, err := g.submittedOf(h)
	if err != nil {
		o.Person = personAnswered
		return o
	}
	o.Person, o.Filled = personFilled, s.Filled
	return o
}

// formDeclined is the outcome of a form the person did not submit.
func formDeclined(h store.Hold) Outcome {
	o := Outcome{Kind: ResultDeclined, Form: true}
	if s, err := readShown(h.Shown); err == nil && len(s.Fields) > 0 {
		o.Fields = s.Fields
	}
	if h.Answer == store.AnswerLater {
		o.Kind = ResultClosed
	}
	return o
}

// answerArgs checks a person's answer to form f (form-encoded, or JSON when
// jsonBody is not nil), merges it into the call's args, and checks the
// result with schema: the form checks what a form can express, the tool's
// full schema (patterns, other formats, exclusive bounds) is checked on the
// final arguments, before anything is claimed. What either refuses is
// FieldErrors, by field.
func answerArgs(f forms.Form, args []byte, answer map[string][]string, jsonBody []byte, schema func([]byte) error) (map[string]any, []byte, error) {
	var values map[string]any
	var errs map[string][]string
	if jsonBody != nil {
		values, errs = forms.CheckJSON(f, jsonBody)
	} else {
		values, errs = forms.Check(f, answer)
	}
	if len(errs) > 0 {
		return nil, nil, FieldErrors(errs)
	}
	merged, err := forms.Merge(f, args, values)
	if err != nil {
		return nil, nil, FieldErrors{"": {"the answer cannot be merged with the call"}}
	}
	if err := schema(merged); err != nil {
		var ae *policies.ArgumentError
		if !errors.As(err, &ae) {
			return nil, nil, FieldErrors{"": {"the answer does not fit the tool's schema"}}
		}
		fe := FieldErrors{}
		for _, x := range ae.Fields {
			fe[x.Field] = append(fe[x.Field], x.Rule)
		}
		return nil, nil, fe
	}
	return values, merged, nil
}
