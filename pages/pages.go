// Package pages serves the person's side of a hold: the card page (HTML
// that works without JavaScript, and the same as JSON) and the answers to
// it. It trusts nothing the model wrote: everything shown comes from the
// gate's view of the step, built from the policy and the record, and is
// escaped by html/template.
//
// The page speaks the person's language (Accept-Language, matched with
// golang.org/x/text/language): its own words in English, German, French
// or Spanish (words.go), the policy's reason, reply and field titles in
// whichever languages the policy gives. After an answer it says first
// what happened (status.go), read from the hold's state and outcome.
package pages

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/gate"
)

// Pages answers a step's link. The zero value is not usable.
type Pages struct {
	Gate   *gate.Gate
	Secret []byte // keys the per-hold form tokens
	// Previous are secrets being rotated out: tokens they signed (a page
	// opened before the rotation) are still taken.
	Previous [][]byte
	Logger   *zap.Logger
}

// answer is a person's answer as posted (form or JSON).
type answer struct {
	Hold   string          `json:"hold"`
	Answer string          `json:"answer"` // confirm, decline (cards); submit, decline, later (forms)
	Token  string          `json:"token"`
	Values json.RawMessage `json:"values,omitempty"` // a form's answer, as JSON
	// Note is a card's decline note to the assistant (the action's
	// decline_note); posted from the page as decline_note.
	Note string `json:"note,omitempty"`

	form url.Values // a form's answer, form-encoded (without hold, answer, token)
	edit bool       // the post is a card's edit form (gate.EditMarker)
}

// Token is the per-hold CSRF token: an HMAC of the hold id and its owner
// and tenant, so it cannot be made without the secret and is useless to
// anyone else. Each part is length-prefixed: no two triples share a token.
func (p *Pages) Token(holdID string, who gate.Person) string { return token(p.Secret, holdID, who) }

// validToken reports whether tok is the hold's token for who under the
// secret or, during a rotation, a previous one (a page opened before it).
func (p *Pages) validToken(tok, holdID string, who gate.Person) bool {
	for _, secret := range append([][]byte{p.Secret}, p.Previous...) {
		if hmac.Equal([]byte(tok), []byte(token(secret, holdID, who))) {
			return true
		}
	}
	return false
}

func token(secret []byte, holdID string, who gate.Person) string {
	m := hmac.New(sha256.New, secret)
	io.WriteString(m, "toolgate answer v2\x00")
	for _, part := range []string{holdID, who.Owner, who.Tenant} {
		io.WriteString(m, strconv.Itoa(len(part))+":"+part)
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// Serve handles a request for the step whose id is the last path segment
// after "/h/", or for the list of what waits for the person at the pages'
// base path (list.go). who is the signed-in answerer (an empty Owner when
// none), their tenant and their roles.
func (p *Pages) Serve(w http.ResponseWriter, r *http.Request, who gate.Person) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	// The link's step id is a secret: it never leaves in a Referer. Not
	// "no-referrer": with it a browser sends "Origin: null" on the page's
	// own form posts.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")

	stepID, ok := stepFromPath(r.URL.Path)
	list := !ok && p.isListPath(r.URL.Path)
	if !ok && !list {
		p.fail(w, r, http.StatusNotFound, func(w *words) string { return w.NoSuchPage })
		return
	}
	if who.Owner == "" {
		p.fail(w, r, http.StatusUnauthorized, func(w *words) string { return w.SignIn })
		return
	}
	if list {
		p.list(w, r, who)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		p.show(w, r, stepID, who, http.StatusOK, "")
	case http.MethodPost:
		p.answer(w, r, stepID, who)
	default:
		h.Set("Allow", "GET, HEAD, POST")
		p.fail(w, r, http.StatusMethodNotAllowed, func(w *words) string { return w.MethodNotAllowed })
	}
}

func stepFromPath(path string) (string, bool) {
	i := strings.LastIndex(path, "/h/")
	if i < 0 {
		return "", false
	}
	id := path[i+3:]
	if len(id) != 26 {
		return "", false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return "", false
		}
	}
	return id, true
}

func wantsJSON(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := mime.ParseMediaType(strings.TrimSpace(part))
		if mt == "application/json" {
			return true
		}
		if mt == "text/html" {
			return false
		}
	}
	return false
}

// stepJSON is the JSON form of the page.
type stepJSON struct {
	gate.StepView
	Tokens map[string]string `json:"tokens"` // hold id → token to post with an answer
}

func (p *Pages) show(w http.ResponseWriter, r *http.Request, stepID string, who gate.Person, status int, notice string) {
	p.render(w, r, stepID, who, status, notice, nil)
}

// render writes the step's page in the person's language; refused, when
// set, is a refused form answer, shown under its fields with the values
// the person typed.
func (p *Pages) render(w http.ResponseWriter, r *http.Request, stepID string, who gate.Person, status int, notice string, refused *refusedAnswer) {
	lang := r.Header.Get("Accept-Language")
	v, err := p.Gate.View(r.Context(), stepID, who, lang)
	if err != nil {
		p.viewError(w, r, err)
		return
	}
	tokens := make(map[string]string, len(v.Holds))
	for _, h := range v.Holds {
		tokens[h.ID] = p.Token(h.ID, who)
	}
	if wantsJSON(r) {
		writeJSON(w, status, stepJSON{StepView: v, Tokens: tokens})
		return
	}
	nonce := p.nonce()
	// The page's one script (checking a form before it is sent) runs by
	// its nonce; nothing else may run, load or frame the page.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; connect-src 'self'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Language", speak(lang).Tag)
	w.Header().Add("Vary", "Accept-Language")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	if err := pageTemplate.Execute(w, newPage(speak(lang), v, tokens, notice, refused, nonce)); err != nil {
		p.log().Error("rendering page", zap.Error(err))
	}
}

func (p *Pages) viewError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, gate.ErrNotFound), errors.Is(err, gate.ErrNotOwner):
		// Another person gets the same answer as a wrong link: the page
		// does not tell them the link exists.
		p.fail(w, r, http.StatusNotFound, func(w *words) string { return w.NoSuchConfirmation })
	default:
		p.log().Error("reading step", zap.Error(err))
		p.fail(w, r, gate.Status(err), func(w *words) string { return w.CannotReadNow })
	}
}

func (p *Pages) answer(w http.ResponseWriter, r *http.Request, stepID string, who gate.Person) {
	if !sameOrigin(r) {
		p.log().Warn("cross-origin answer refused", zap.String("origin", r.Header.Get("Origin")), zap.String("answered_by", who.Owner), zap.String("tenant", who.Tenant))
		p.fail(w, r, http.StatusConflict, func(w *words) string { return w.CrossSite })
		return
	}
	a, err := readAnswer(r)
	if err != nil {
		p.fail(w, r, http.StatusBadRequest, func(w *words) string { return w.Unreadable })
		return
	}
	if !p.validToken(a.Token, a.Hold, who) {
		p.log().Warn("answer with a bad token refused", zap.String("hold_id", a.Hold), zap.String("answered_by", who.Owner), zap.String("tenant", who.Tenant))
		p.fail(w, r, http.StatusConflict, func(w *words) string { return w.BadToken })
		return
	}
	var hv gate.HoldView
	if a.Answer == "submit" || a.Answer == "confirm" {
		check := r.Header.Get("Precognition") == "true" && a.Answer == "submit"
		if a.Answer == "submit" {
			hv, err = p.Gate.Submit(r.Context(), stepID, a.Hold, who, r.Header.Get("Accept-Language"), a.form, a.Values, check)
		} else if a.Note != "" {
			err = gate.ErrNote // a note goes with a decline only
		} else if edits := (gate.Edits{Form: a.form, Posted: a.edit, JSON: a.Values}); wantsJSON(r) || isJSON(r) {
			hv, err = p.Gate.Confirm(r.Context(), stepID, a.Hold, who, r.Header.Get("Accept-Language"), edits)
		} else {
			// The page redirects to the step, which reads it again: no
			// view of the answered hold is needed here.
			err = p.Gate.ConfirmOnly(r.Context(), stepID, a.Hold, who, r.Header.Get("Accept-Language"), edits)
		}
		var fe gate.FieldErrors
		if errors.As(err, &fe) {
			// Laravel Precognition's shape: {"errors": {field: [rules]}}.
			if check || wantsJSON(r) || isJSON(r) {
				if check {
					w.Header().Set("Precognition", "true")
				}
				// errors keep the rule words (the API); messages say them in
				// the person's language, for the page's script.
				sp := speak(r.Header.Get("Accept-Language"))
				messages := make(map[string][]fieldError, len(fe))
				for k, rules := range fe {
					messages[k] = sp.rules(rules)
				}
				writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "The answer has errors.", "errors": fe, "messages": messages})
				return
			}
			p.render(w, r, stepID, who, http.StatusUnprocessableEntity, speak(r.Header.Get("Accept-Language")).W.FixFields, &refusedAnswer{hold: a.Hold, errs: fe, values: a.form})
			return
		}
		if err == nil && check {
			w.Header().Set("Precognition", "true")
			w.Header().Set("Precognition-Success", "true")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	} else if a.Answer == "decline" {
		hv, err = p.Gate.Decline(r.Context(), stepID, a.Hold, who, a.Note)
	} else if a.Note != "" {
		err = gate.ErrNote // a note goes with a decline only
	} else if wantsJSON(r) || isJSON(r) {
		hv, err = p.Gate.Answer(r.Context(), stepID, a.Hold, who, a.Answer)
	} else {
		// The page redirects to the step, which reads it again: no view
		// of the answered hold is needed here.
		err = p.Gate.AnswerOnly(r.Context(), stepID, a.Hold, who, a.Answer)
	}
	if errors.Is(err, gate.ErrNotEditable) {
		p.log().Warn("answer changing an argument that is not editable refused", zap.String("hold_id", a.Hold), zap.String("answered_by", who.Owner), zap.String("tenant", who.Tenant))
	}
	if err != nil {
		status := gate.Status(err)
		msg := func(w *words) string { return w.AnswerRefused }
		if errors.Is(err, gate.ErrFourEyes) {
			msg = func(w *words) string { return w.FourEyesRefused }
		}
		if errors.Is(err, gate.ErrNote) {
			msg = func(w *words) string { return w.NoteRefused }
		}
		if errors.Is(err, gate.ErrNotEditable) {
			msg = func(w *words) string { return w.NotEditable }
		}
		if status >= 500 {
			p.log().Error("answering", zap.Error(err))
			msg = func(w *words) string { return w.CannotTakeAnswers }
		}
		p.fail(w, r, status, msg)
		return
	}
	if wantsJSON(r) || isJSON(r) {
		writeJSON(w, http.StatusOK, hv)
		return
	}
	// Post/Redirect/Get: a reload of the result page does not post again.
	http.Redirect(w, r, r.URL.Path, http.StatusSeeOther)
}

func isJSON(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "application/json"
}

// FieldPrefix goes before each of an action's field names in the page's
// form posts (name="f.title"), so that no field, whatever its schema calls
// it, can be taken for one of the page's own keys (hold, answer, token,
// decline_note, gate.EditMarker). The JSON API needs none: its values are
// an object of their own.
const FieldPrefix = "f."

func readAnswer(r *http.Request) (answer, error) {
	r.Body = http.MaxBytesReader(nil, r.Body, 256<<10)
	var a answer
	if isJSON(r) {
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		err := dec.Decode(&a)
		return a, err
	}
	if err := r.ParseForm(); err != nil {
		return a, err
	}
	a.Hold, a.Answer, a.Token = r.PostForm.Get("hold"), r.PostForm.Get("answer"), r.PostForm.Get("token")
	if a.Answer == "decline" {
		// A card's decline form carries its note; a form's fields are
		// its own (one may be called decline_note: f.decline_note).
		a.Note = r.PostForm.Get("decline_note")
	}
	// The page posts an action's fields under FieldPrefix, so no field
	// name is one of its own keys. A post without any prefixed key is the
	// older shape: every key but the page's own is a field.
	prefixed := false
	for k := range r.PostForm {
		if strings.HasPrefix(k, FieldPrefix) {
			prefixed = true
			break
		}
	}
	a.form = url.Values{}
	for k, v := range r.PostForm {
		if field, ok := strings.CutPrefix(k, FieldPrefix); ok {
			a.form[field] = v
			continue
		}
		switch k {
		case "hold", "answer", "token":
		case gate.EditMarker:
			a.edit = true
		case "decline_note":
			if !prefixed {
				a.form[k] = v // the older shape: a form's field of this name
			}
		default:
			if prefixed {
				// Both shapes at once: is "x" a field or the page's?
				return a, fmt.Errorf("the post mixes prefixed and bare field %q", k)
			}
			a.form[k] = v
		}
	}
	return a, nil
}

// sameOrigin is the first CSRF defence (the per-hold token is the second):
// a browser says where a POST comes from in Sec-Fetch-Site, or at least in
// Origin; it must be this site. A client that sends neither is not a
// browser acting for another site.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin":
		return true
	case "":
	default: // cross-site, same-site (a sibling subdomain), none (typed or bookmarked: never a form post)
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || origin == "null" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers with an error: JSON in English (an API's words), or a page
// in the person's language. A refused answer's page links back to the
// question, which says what became of it.
func (p *Pages) fail(w http.ResponseWriter, r *http.Request, status int, say func(*words) string) {
	if wantsJSON(r) || isJSON(r) {
		writeJSON(w, status, map[string]string{"error": say(&english)})
		return
	}
	sp := speak(r.Header.Get("Accept-Language"))
	e := errorPage{Lang: sp.Tag, Title: sp.W.NotAccepted, Message: say(sp.W), Show: sp.W.ShowQuestion}
	switch status {
	case http.StatusNotFound:
		e.Title = sp.W.NotFound
	case http.StatusUnauthorized:
		e.Title = sp.W.SignInTitle
	}
	if _, ok := stepFromPath(r.URL.Path); ok && r.Method == http.MethodPost && status != http.StatusNotFound {
		e.Back = r.URL.Path
	}
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Language", sp.Tag)
	w.Header().Add("Vary", "Accept-Language")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	if err := errorTemplate.Execute(w, e); err != nil {
		p.log().Error("rendering error page", zap.Error(err))
	}
}

// refusedAnswer is a form answer sent back with its errors.
type refusedAnswer struct {
	hold   string
	errs   gate.FieldErrors
	values url.Values
}

// nonce is a fresh CSP nonce for the page's script.
func (p *Pages) nonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawStdEncoding.EncodeToString(b[:])
}

func (p *Pages) log() *zap.Logger {
	if p.Logger == nil {
		return zap.NewNop()
	}
	return p.Logger
}
