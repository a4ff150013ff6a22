package testkit

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/actions"
)

// Call is one request the fake app received.
type Call struct {
	Method string
	URI    string
	Header http.Header
	Body   []byte
	// SignatureErr is what verifying the gate's signature said (nil: valid).
	SignatureErr error
}

// Behaviour is how the fake app's action endpoint answers.
type Behaviour int

const (
	// Respond answers with the status and body set by Answer (default).
	Respond Behaviour = iota
	// Drop reads the request, then closes the connection without an
	// answer, as an app that crashed mid-request would.
	Drop
	// Hang reads the request, then answers nothing until the client gives
	// up (closes the connection) or a minute has passed.
	Hang
)

// App is a fake app: GET reads the record set for the path (404 when
// none), any other method is the action and is recorded. Every request
// is checked against the gate's signature.
type App struct {
	*httptest.Server
	Secret []byte

	mu      sync.Mutex
	records map[string]string // path → JSON
	allowed map[string]bool   // person ids allowed to read (nil: everyone)
	status  int               // action status (default 200)
	reply   string
	delay   time.Duration
	behave  Behaviour
	script  func(key string) (Behaviour, int)
	calls   []Call
	runs    map[string]int // action requests by Idempotency-Key
	reads   []Call
}

// NewApp starts a fake app.
func NewApp(t testing.TB, secret []byte) *App {
	a := &App{Secret: secret, records: map[string]string{}, status: 200, reply: `{"ok":true}`}
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.Close)
	return a
}

// SetRecord sets the record at a path ("" deletes it).
func (a *App) SetRecord(id, json string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if json == "" {
		delete(a.records, id)
		return
	}
	a.records[id] = json
}

// Allow restricts reads to these persons (403 for anyone else).
func (a *App) Allow(persons ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.allowed = map[string]bool{}
	for _, p := range persons {
		a.allowed[p] = true
	}
}

// Answer sets the action's status and body.
func (a *App) Answer(status int, body string, delay time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status, a.reply, a.delay = status, body, delay
}

// Behave sets how the action endpoint answers from now on.
func (a *App) Behave(b Behaviour) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.behave = b
}

// Script makes the action endpoint answer each request by its
// Idempotency-Key (the hold id): f returns the behaviour and, for Respond,
// the status (the body is the one set by Answer). nil ends the script. f
// runs under the app's lock: it must not call the App.
func (a *App) Script(f func(key string) (b Behaviour, status int)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.script = f
}

// Runs counts the action requests received by Idempotency-Key (the hold
// id): a release seen twice counts 2.
func (a *App) Runs() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := make(map[string]int, len(a.runs))
	for k, v := range a.runs {
		n[k] = v
	}
	return n
}

// RunCount is Runs()[key], without copying.
func (a *App) RunCount(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runs[key]
}

// Calls returns the action requests received (not the reads).
func (a *App) Calls() []Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Call(nil), a.calls...)
}

// Reads returns the record reads received.
func (a *App) Reads() []Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Call(nil), a.reads...)
}

func (a *App) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c := Call{Method: r.Method, URI: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body,
		SignatureErr: actions.Verify(a.Secret, r, body, time.Now(), 5*time.Minute)}
	id := r.URL.Path
	a.mu.Lock()
	if r.Method == http.MethodGet {
		a.reads = append(a.reads, c)
		rec, ok := a.records[id]
		allowed := a.allowed == nil || a.allowed[r.Header.Get(actions.HeaderPerson)]
		a.mu.Unlock()
		switch {
		case c.SignatureErr != nil:
			http.Error(w, "bad signature", http.StatusUnauthorized)
		case !allowed:
			http.Error(w, `{"message":"forbidden"}`, http.StatusForbidden)
		case !ok:
			http.Error(w, `{"message":"not found"}`, http.StatusNotFound)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, rec)
		}
		return
	}
	a.calls = append(a.calls, c)
	if a.runs == nil {
		a.runs = map[string]int{}
	}
	a.runs[r.Header.Get(actions.HeaderIdempotency)]++
	status, reply, delay, behave := a.status, a.reply, a.delay, a.behave
	if a.script != nil {
		behave, status = a.script(r.Header.Get(actions.HeaderIdempotency))
	}
	a.mu.Unlock()
	switch behave {
	case Drop:
		drop(w)
		return
	case Hang:
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
		return
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	if c.SignatureErr != nil {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, reply)
}

// drop closes the connection under w without writing a response.
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // a connection that cannot be taken over is reset
	}
	conn.Close()
}
