package gate

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// shadowCounts is an Observer that also counts shadow verdicts.
type shadowCounts struct {
	*events
	mu    sync.Mutex
	would map[string]int // "action/would" → count
}

func (s *shadowCounts) Shadowed(action, would string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.would[action+"/"+would]++
}

// newShadowRig is a rig whose policy puts delete_post (or, with file, the
// whole policy) in shadow mode, with the gate's logs and shadow counts
// kept.
func newShadowRig(t *testing.T, file bool) (*rig, *observer.ObservedLogs, *shadowCounts) {
	t.Helper()
	r := newRig(t, rigOptions{})
	pol := strings.Replace(testPolicy, "    reply: Removed.\n", "    reply: Removed.\n    mode: shadow\n", 1)
	if file {
		pol = "mode: shadow\n" + testPolicy
	}
	p, err := policies.Parse("policy.yaml", []byte(strings.ReplaceAll(pol, "APP", r.app.URL)))
	if err != nil {
		t.Fatal(err)
	}
	r.policy = p
	r.app.SetRecord("/posts/7", `{"title":"Spring meetup"}`)
	core, logs := observer.New(zapcore.InfoLevel)
	counts := &shadowCounts{events: r.events, would: map[string]int{}}
	r.gate = New(Config{Store: r.db, Actions: r.actions, Pages: "http://gate.test/toolgate", Policy: func(string) *policies.Policy { return r.policy },
		Observer: counts, Secret: []byte(testSecret), Now: r.clock.Now, ActionTimeout: r.timeout, Logger: zap.New(core)})
	return r, logs, counts
}

// settle waits (bounded by Stop) for the shadow work in the background.
func settleShadow(t *testing.T, r *rig) {
	t.Helper()
	if !r.gate.Stop(10 * time.Second) {
		t.Fatal("the shadow work did not finish")
	}
}

// A shadow call passes untouched, stores nothing, and the log names the
// card enforce mode would have shown, built from the record.
func TestShadowPassesAndLogsTheCard(t *testing.T) {
	r, logs, counts := newShadowRig(t, false)
	f := r.front(ana)
	w := f.Watcher()
	if f.Gated("delete_post") || !f.Gated("draft_post") || w == nil || !w.Gated("delete_post") || w.Gated("draft_post") {
		t.Fatal("the front inspects a shadow action, or the watcher does not")
	}
	if (&Front{policy: r.policy}).Watcher() == nil || newRig(t, rigOptions{}).front(ana).Watcher() != nil {
		t.Fatal("a watcher for a policy without shadow actions, or none with one")
	}
	v := w.Hold(context.Background(), []provider.Call{call(0, 7), call(1, 0)}, []byte(`{}`), provider.Kept{})
	if len(v.Pass) != 2 || !v.Pass[1] {
		t.Fatalf("watcher verdict %+v, want every call passed", v)
	}
	v = f.Hold(context.Background(), []provider.Call{call(0, 7)}, []byte(`{}`), provider.Kept{})
	if len(v.Pass) != 1 || !v.Pass[0] || v.Text != "" || v.Step != "" || len(v.Refusals) != 0 {
		t.Fatalf("verdict %+v, want the call passed", v)
	}
	settleShadow(t, r)
	seen := logs.FilterMessage("shadow: call would wait for confirmation").All()
	if len(seen) != 2 || len(logs.FilterMessage("shadow: call would wait for a form").All()) != 0 {
		t.Fatalf("logs: %+v", logs.All())
	}
	logged := seen[0].ContextMap()
	if logged["action"] != "delete_post" || logged["owner"] != "ana" || !strings.Contains(string(mustJSON(t, logged["card"])), `"value":"Spring meetup"`) {
		t.Errorf("logged %+v", logged)
	}
	if counts.would["delete_post/card"] != 2 || len(r.app.Calls()) != 0 {
		t.Errorf("counts %v, app calls %d", counts.would, len(r.app.Calls()))
	}
	if reads := r.app.Reads(); len(reads) != 2 || reads[0].URI != "/posts/7" || reads[0].Header.Get("X-Toolgate-Person") != "ana" {
		t.Errorf("record reads %+v", reads)
	}
	// The audit names each call enforce mode would have held, with the
	// card it would have shown; nothing else happened.
	log := r.auditLog()
	if kinds(log) != "shadowed shadowed" {
		t.Fatalf("audit: %s", kinds(log))
	}
	for _, e := range log {
		if e.Action != "delete_post" || e.Owner != "ana" || e.HoldKind != store.KindCard || !strings.Contains(string(e.Shown), `"value":"Spring meetup"`) || e.HoldID != "" {
			t.Errorf("audited %+v (shown %s)", e.Event, e.Shown)
		}
	}
}

// What enforce would have refused or asked with a form is logged as such;
// shadow calls pass even without an owner.
func TestShadowWouldRefuseOrAsk(t *testing.T) {
	r, logs, counts := newShadowRig(t, true)
	calls := []provider.Call{call(0, 8), call(1, 0)} // no record for post 8; draft_post misses its body
	v := r.front(ana).Hold(context.Background(), calls, []byte(`{}`), provider.Kept{})
	if !v.Pass[0] || !v.Pass[1] || v.Text != "" || len(v.Refusals) != 0 {
		t.Fatalf("verdict %+v", v)
	}
	v = r.front(Person{}).Hold(context.Background(), []provider.Call{call(0, 7)}, []byte(`{}`), provider.Kept{})
	if !v.Pass[0] || v.Text != "" || len(v.Refusals) != 0 {
		t.Fatalf("verdict without an owner %+v", v)
	}
	settleShadow(t, r)
	reasons := map[string]bool{}
	for _, e := range logs.FilterMessage("shadow: call would be refused").All() {
		reasons[e.ContextMap()["reason"].(string)] = true
	}
	if !reasons["not_found"] || !reasons["no_owner"] || len(reasons) != 2 {
		t.Errorf("refusal reasons %v", reasons)
	}
	forms := logs.FilterMessage("shadow: call would wait for a form").All()
	if len(forms) != 1 || forms[0].ContextMap()["action"] != "draft_post" {
		t.Errorf("form logs %+v", forms)
	}
	if counts.would["delete_post/refuse"] != 2 || counts.would["draft_post/form"] != 1 || counts.refusals("not_found") != 0 {
		t.Errorf("counts %v (refusals must not count as enforce's)", counts.would)
	}
}

// In one response, an enforced call is held as usual beside a shadow one,
// which passes.
func TestShadowBesideEnforced(t *testing.T) {
	r, _, counts := newShadowRig(t, false)
	step, v := r.hold(ana, call(0, 7), call(1, 0))
	if step == "" || !v.Pass[0] || v.Pass[1] || v.Step != step {
		t.Fatalf("verdict %+v", v)
	}
	holds := r.step(step)
	if len(holds) != 1 || holds[0].Action != "draft_post" {
		t.Fatalf("holds %+v", holds)
	}
	settleShadow(t, r)
	if counts.would["delete_post/card"] != 1 {
		t.Errorf("counts %v", counts.would)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
