package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/gate"
	"github.com/toolgate/toolgate/store"
)

func init() {
	caddy.RegisterModule(Admin{})
}

// Admin is the `admin.api.toolgate` module: Toolgate's routes on Caddy's
// own admin endpoint, for operators. Nothing of it is on the public
// listeners; it has the admin endpoint's access controls (its listen
// address, origins, remote admin with client certificates).
//
//	GET  /toolgate/holds                list holds (filters, pages)
//	GET  /toolgate/holds/<id>           one hold
//	POST /toolgate/holds/<id>/expire    withdraw a waiting hold
//
// A hold is shown without the person's values, the call, its arguments or
// the assistant message: what it shows the person (a card's sentence and
// rows, a form's message and field names), who it is for, its state and
// outcome, and its times. See docs/operations.md, "Admin API", for the JSON.
//
// It needs no configuration: Caddy loads every admin.api module, so a
// Caddy with this module has these routes whenever its admin endpoint is
// on; they answer 503 while no toolgate app runs.
type Admin struct{}

// CaddyModule returns the Caddy module information.
func (Admin) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "admin.api.toolgate", New: func() caddy.Module { return new(Admin) }}
}

// Routes returns the admin routes.
func (a Admin) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/toolgate/holds", Handler: caddy.AdminHandlerFunc(a.handleList)},
		{Pattern: "/toolgate/holds/", Handler: caddy.AdminHandlerFunc(a.handleHold)},
	}
}

// running is the toolgate app that runs now: set by Start, cleared by its
// Stop. At a reload the new app starts before the old one stops, so the
// newest start wins and an old app's Stop leaves it alone.
var running struct {
	mu  sync.RWMutex
	app *App
}

func setRunning(a *App) {
	running.mu.Lock()
	defer running.mu.Unlock()
	running.app = a
}

func clearRunning(a *App) {
	running.mu.Lock()
	defer running.mu.Unlock()
	if running.app == a {
		running.app = nil
	}
}

func runningApp() (*App, error) {
	running.mu.RLock()
	defer running.mu.RUnlock()
	if running.app == nil {
		return nil, apiError(http.StatusServiceUnavailable, errors.New("no toolgate app is running"))
	}
	return running.app, nil
}

// Admin list limits.
const (
	adminDefaultLimit = 50
	adminMaxLimit     = store.MaxListLimit
)

// adminHold is a hold as the admin API shows it: never the person's
// values, the call, its arguments or the assistant message.
type adminHold struct {
	ID     string `json:"id"`
	StepID string `json:"step_id"`
	Tenant string `json:"tenant"`
	Owner  string `json:"owner"`
	Policy string `json:"policy"`
	// PolicyFile is the file this gate reads the policy from now, when it
	// reads this very version (policy names it by identity: its name and
	// content hash).
	PolicyFile string          `json:"policy_file,omitempty"`
	Action     string          `json:"action"`
	Kind       store.Kind      `json:"kind"`
	Protocol   string          `json:"protocol"`
	State      store.State     `json:"state"`
	Shown      json.RawMessage `json:"shown,omitempty"`

	Answer     string `json:"answer,omitempty"`
	AnsweredBy string `json:"answered_by,omitempty"`
	// Outcome is the structured outcome (kind, status, why; gate.Outcome),
	// never a sentence: no reply of the app's, no value of the person's.
	Outcome json.RawMessage `json:"outcome,omitempty"`

	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires"`
	AnsweredAt time.Time `json:"answered_at,omitzero"`
	StartedAt  time.Time `json:"started_at,omitzero"`
}

func (a *App) showHold(h *store.Hold, now time.Time) adminHold {
	return adminHold{
		PolicyFile: a.policyFileOf(h.Policy),
		ID:         h.ID, StepID: h.StepID, Tenant: h.Tenant, Owner: h.Owner, Policy: h.Policy, Action: h.Action,
		Kind: h.Kind, Protocol: h.Protocol, State: h.StateAt(now), Shown: gate.ShownSummary(h),
		Answer: h.Answer, AnsweredBy: h.AnsweredBy, Outcome: gate.OutcomeSummary(h),
		Created: h.Created, Expires: h.Expires, AnsweredAt: h.AnsweredAt, StartedAt: h.StartedAt,
	}
}

// adminPage is one page of the list.
type adminPage struct {
	Holds []adminHold `json:"holds"`
	// Next is the cursor of the next page; absent on the last.
	Next string `json:"next,omitempty"`
}

// handleList: GET /toolgate/holds?state=&kind=&action=&owner=&tenant=
// &older_than=&newer_than=&limit=&cursor=
func (Admin) handleList(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return apiError(http.StatusMethodNotAllowed, errors.New("method not allowed: GET lists holds"))
	}
	app, err := runningApp()
	if err != nil {
		return err
	}
	now := time.Now()
	f, limit, cursor, err := listQuery(r, now)
	if err != nil {
		return apiError(http.StatusBadRequest, err)
	}
	page, err := (*appStore)(app).List(r.Context(), f, cursor, limit)
	if err != nil {
		return storeError("listing holds", err, http.StatusBadRequest)
	}
	out := adminPage{Holds: make([]adminHold, 0, len(page.Holds)), Next: page.Next}
	for i := range page.Holds {
		out.Holds = append(out.Holds, app.showHold(&page.Holds[i], now))
	}
	return writeJSON(w, http.StatusOK, out)
}

// listQuery reads the list's filters from the query string.
func listQuery(r *http.Request, now time.Time) (f store.HoldFilter, limit int, cursor string, err error) {
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "state", "kind", "action", "owner", "tenant", "older_than", "newer_than", "limit", "cursor":
			if len(q[k]) > 1 {
				return f, 0, "", fmt.Errorf("%s: given more than once", k)
			}
		default:
			return f, 0, "", fmt.Errorf("unknown parameter %q; known are state, kind, action, owner, tenant, older_than, newer_than, limit, cursor", k)
		}
	}
	f.State = store.State(q.Get("state"))
	switch f.State {
	case "", store.Waiting, store.Expired, store.Answered, store.Running, store.Settled:
	default:
		return f, 0, "", fmt.Errorf("state %q: want waiting, expired, answered, running or settled", f.State)
	}
	f.Kind = store.Kind(q.Get("kind"))
	switch f.Kind {
	case "", store.KindCard, store.KindForm, store.KindTicket:
	default:
		return f, 0, "", fmt.Errorf("kind %q: want card, form or ticket", f.Kind)
	}
	f.Action, f.Owner = q.Get("action"), q.Get("owner")
	if q.Has("tenant") {
		t := q.Get("tenant")
		f.Tenant = &t
	}
	for _, age := range []struct {
		key string
		dst *time.Time
	}{{"older_than", &f.CreatedBefore}, {"newer_than", &f.CreatedAfter}} {
		if s := q.Get(age.key); s != "" {
			d, err := caddy.ParseDuration(s)
			if err != nil || d < 0 {
				return f, 0, "", fmt.Errorf("%s %q: want a duration such as 10m or 2d", age.key, s)
			}
			*age.dst = now.Add(-d)
		}
	}
	limit = adminDefaultLimit
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > adminMaxLimit {
			return f, 0, "", fmt.Errorf("limit %q: want 1 to %d", s, adminMaxLimit)
		}
	}
	return f, limit, q.Get("cursor"), nil
}

// handleHold: GET /toolgate/holds/<id>, POST /toolgate/holds/<id>/expire.
func (Admin) handleHold(w http.ResponseWriter, r *http.Request) error {
	rest := strings.TrimPrefix(r.URL.Path, "/toolgate/holds/")
	id, action, _ := strings.Cut(rest, "/")
	if id == "" || strings.Contains(action, "/") || (action != "" && action != "expire") {
		return apiError(http.StatusNotFound, fmt.Errorf("no such route %q", r.URL.Path))
	}
	switch {
	case action == "" && r.Method != http.MethodGet:
		return apiError(http.StatusMethodNotAllowed, errors.New("method not allowed: GET shows a hold"))
	case action == "expire" && r.Method != http.MethodPost:
		return apiError(http.StatusMethodNotAllowed, errors.New("method not allowed: POST expires a hold"))
	}
	app, err := runningApp()
	if err != nil {
		return err
	}
	if action == "" {
		h, err := (*appStore)(app).Get(r.Context(), id)
		if err != nil {
			return storeError("reading hold", err, http.StatusInternalServerError)
		}
		return writeJSON(w, http.StatusOK, app.showHold(&h, time.Now()))
	}
	by := operator(r)
	h, err := app.gate.Withdraw(r.Context(), id, by)
	switch {
	case errors.Is(err, gate.ErrNotWithdrawable):
		return apiError(http.StatusConflict, fmt.Errorf("hold %s: %w", id, err))
	case errors.Is(err, store.ErrAnswered):
		return apiError(http.StatusConflict, fmt.Errorf("hold %s is no longer waiting: it was answered", id))
	case errors.Is(err, store.ErrExpired):
		return apiError(http.StatusConflict, fmt.Errorf("hold %s is no longer waiting: it expired", id))
	case err != nil:
		return storeError("expiring hold", err, http.StatusInternalServerError)
	}
	app.logger.Info("hold withdrawn through the admin API", zap.String("hold_id", id), zap.String("action", h.Action),
		zap.String("by", by), zap.String("remote_ip", r.RemoteAddr))
	return writeJSON(w, http.StatusOK, app.showHold(&h, time.Now()))
}

// operator is who the audit names as withdrawing a hold: "admin", with
// the client certificate's common name on a remote admin endpoint.
func operator(r *http.Request) string {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && r.TLS.PeerCertificates[0].Subject.CommonName != "" {
		return "admin:" + r.TLS.PeerCertificates[0].Subject.CommonName
	}
	return "admin"
}

// storeError maps a store's error: not found 404, unavailable 503, any
// other otherwise (List's other errors are its input's: a cursor it did
// not give).
func storeError(doing string, err error, otherwise int) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apiError(http.StatusNotFound, errors.New("hold not found"))
	case errors.Is(err, store.ErrUnavailable):
		return apiError(http.StatusServiceUnavailable, fmt.Errorf("%s: %w", doing, err))
	}
	return apiError(otherwise, fmt.Errorf("%s: %w", doing, err))
}

func apiError(status int, err error) error {
	return caddy.APIError{HTTPStatus: status, Err: err}
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return apiError(http.StatusInternalServerError, err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}

// Interface guards
var _ caddy.AdminRouter = Admin{}
