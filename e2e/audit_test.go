package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/openai/openai-go/v3"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/policies"
)

// auditCommand runs `toolgate audit ARGS...` in this process, the
// command as the module registers it with Caddy, and returns what it
// wrote and its error.
func auditCommand(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	c, ok := caddycmd.Commands()["audit"]
	if !ok {
		t.Fatal("the module registers no audit command")
	}
	cmd := &cobra.Command{Use: "audit", SilenceUsage: true, SilenceErrors: true}
	c.CobraFunc(cmd)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// storeFlags are the audit command's flags naming the env's store, read
// from its Caddyfile (Badger, or PostgreSQL under TOOLGATE_E2E_STORE).
func (e *env) storeFlags(t *testing.T) []string {
	t.Helper()
	m := regexp.MustCompile(`store (badger|postgres) (\S+)`).FindStringSubmatch(e.caddy)
	if m == nil {
		t.Fatalf("no store in the Caddyfile:\n%s", e.caddy)
	}
	return []string{"--" + m[1], m[2]}
}

// policyFile is the env's policy file and the policy as it reads it.
func (e *env) policyFile(t *testing.T) (string, *policies.Policy) {
	t.Helper()
	m := regexp.MustCompile(`policy (\S+)`).FindStringSubmatch(e.caddy)
	b, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	p, err := policies.Parse(m[1], b)
	if err != nil {
		t.Fatal(err)
	}
	// The policy's version is its file's SHA-256, cut short.
	if sum := sha256.Sum256(b); !strings.HasPrefix(hex.EncodeToString(sum[:]), p.Version()) || p.Version() == "" {
		t.Fatalf("policy version %q is not its file's hash", p.Version())
	}
	return m[1], p
}

// TestAuditExportsEveryHoldsLife: four holds — confirmed, declined,
// expired, and confirmed but failing at the app (HTTP 500) — go through a
// real Caddy; then, with Caddy stopped, `audit verify` finds the chain
// whole and `audit export` gives every event of each hold's life, checked
// field by field: nothing but what the issue lists, never the call's
// arguments, and the card exactly as the person's page showed it.
func TestAuditExportsEveryHoldsLife(t *testing.T) {
	e := newEnv(t, envOptions{policy: policyYAML + archivePolicy})
	for post, title := range map[string]string{"7": "Spring meetup", "8": "Summer picnic", "9": "Autumn fair", "10": "Winter market"} {
		e.app.SetRecord("/posts/"+post, `{"title":"`+title+`","status":"draft"}`)
	}
	start := time.Now().Add(-time.Second)
	_, policy := e.policyFile(t)

	type held struct {
		link string
		id   string
		card json.RawMessage // the card as the page showed it
		msg  openai.ChatCompletionMessage
	}
	var holds []held
	hold := func(c call, answer string) held {
		t.Helper()
		l, msg := e.hold(t, "ana", c)
		h := held{link: l, msg: msg}
		if answer == "" {
			status, body, _ := e.view(ana, l) // shown, never answered
			var s stepJSON
			if status != 200 || json.Unmarshal(body, &s) != nil {
				t.Fatalf("view: %d %s", status, body)
			}
			h.id = s.Holds[0].ID
			h.card, _ = json.Marshal(s.Holds[0].Card)
			return h
		}
		status, body, s := e.view(ana, l)
		if status != 200 || len(s.Holds) != 1 {
			t.Fatalf("view: %d %s", status, body)
		}
		h.id = s.Holds[0].ID
		h.card, _ = json.Marshal(s.Holds[0].Card)
		if st, b := e.answer(ana, l, h.id, s.Tokens[h.id], answer, nil); st != http.StatusSeeOther {
			t.Fatalf("%s: %d %s", answer, st, b)
		}
		return h
	}
	holds = append(holds,
		hold(call{"call_c", "delete_post", `{"post":7}`, false}, "confirm"),
		hold(call{"call_d", "delete_post", `{"post":8}`, false}, "decline"),
		hold(call{"call_e", "archive_post", `{"post":9}`, false}, ""),
	)
	e.app.Answer(500, `{"message":"database on fire"}`, 0)
	holds = append(holds, hold(call{"call_f", "delete_post", `{"post":10}`, false}, "confirm"))
	// The archive card's TTL (1s) passes; the model's next request
	// settles it.
	time.Sleep(1100 * time.Millisecond)
	if got := toolResult(e.next(t, "ana", holds[2].msg, "well?"), "call_e"); got != "The person did not answer in time; nothing ran." {
		t.Fatalf("expired hold: the model read %q", got)
	}
	until := time.Now().Add(time.Second)
	testkit.Stop(t)

	flags := e.storeFlags(t)
	out, errOut, err := auditCommand(t, append([]string{"verify"}, flags...)...)
	if err != nil || !strings.Contains(out, " holds: ") {
		t.Fatalf("audit verify: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = auditCommand(t, append([]string{"export", "--since", start.Format(time.RFC3339Nano), "--until", until.Format(time.RFC3339Nano)}, flags...)...)
	if err != nil {
		t.Fatalf("audit export: %v\n%s", err, errOut)
	}
	byHold := map[string][]map[string]any{}
	var lastSeq float64
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.HasPrefix(line, `{"export":`) {
			continue // the export's end line
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		if seq := m["seq"].(float64); seq <= lastSeq {
			t.Fatalf("export out of order at %s", line)
		} else {
			lastSeq = seq
		}
		for _, k := range []string{"seq", "prev", "hash", "time"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("export line without %s: %s", k, line)
			}
		}
		at, err := time.Parse(time.RFC3339Nano, m["time"].(string))
		if err != nil || at.Before(start) || !at.Before(until) {
			t.Errorf("event time %v outside %v to %v", m["time"], start, until)
		}
		if id, _ := m["hold_id"].(string); id != "" {
			byHold[id] = append(byHold[id], m)
		}
	}

	// what each hold's events say beside seq, prev, hash and time; the
	// fields every event of a hold carries are added below.
	type want map[string]any
	released := func(status float64) want {
		return want{"kind": "released", "endpoint": "DELETE " + e.app.URL + "/posts/{post}", "status": status}
	}
	lives := [][]want{
		{{"kind": "held"}, {"kind": "shown", "by": "ana"}, {"kind": "answered", "by": "ana", "answer": "confirm"},
			released(200), {"kind": "settled", "outcome": `{"kind":"done","person":"confirmed","reply":"policy"}`}},
		{{"kind": "held"}, {"kind": "shown", "by": "ana"}, {"kind": "answered", "by": "ana", "answer": "decline"},
			{"kind": "settled", "outcome": `{"kind":"declined"}`}},
		{{"kind": "held"}, {"kind": "shown", "by": "ana"}, {"kind": "answered", "by": "toolgate", "answer": "timed_out"},
			{"kind": "settled", "outcome": `{"kind":"expired"}`}},
		{{"kind": "held"}, {"kind": "shown", "by": "ana"}, {"kind": "answered", "by": "ana", "answer": "confirm"},
			released(500), {"kind": "settled", "outcome": `{"kind":"unknown","person":"confirmed","status":500,"why":"failed"}`}},
	}
	actions := []string{"delete_post", "delete_post", "archive_post", "delete_post"}
	for i, h := range holds {
		got := byHold[h.id]
		if len(got) != len(lives[i]) {
			t.Errorf("hold %d (%s): %d events, want %d: %v", i, actions[i], len(got), len(lives[i]), got)
			continue
		}
		var step string
		for j, w := range lives[i] {
			g := got[j]
			full := map[string]any{"hold_id": h.id, "owner": "ana", "action": actions[i], "hold_kind": "card",
				"protocol": "openai-chat", "policy": policy.Identity()}
			for k, v := range w {
				full[k] = v
			}
			if j == 0 {
				full["policy_version"] = policy.Version()
				full["action_version"] = policy.Action(actions[i]).Version()
				step, _ = g["step_id"].(string)
				if len(step) != 26 || !strings.Contains(h.link, step) {
					t.Errorf("hold %d: held step_id %q, link %s", i, step, h.link)
				}
				// The card as the page showed it, byte for byte once
				// re-encoded; nothing of the call's arguments.
				var card any
				if err := json.Unmarshal(h.card, &card); err != nil {
					t.Fatal(err)
				}
				shown, _ := json.Marshal(g["shown"])
				if page, _ := json.Marshal(card); string(shown) != string(page) {
					t.Errorf("hold %d: held shown\n %s\nwant the page's card\n %s", i, shown, page)
				}
				full["shown"] = g["shown"]
			}
			full["step_id"] = step
			if w["kind"] == "released" {
				if d, ok := g["duration_ms"].(float64); !ok || d <= 0 {
					t.Errorf("hold %d: released without a duration: %v", i, g)
				}
				full["duration_ms"] = g["duration_ms"]
			}
			for _, k := range []string{"seq", "prev", "hash", "time"} {
				delete(g, k)
			}
			gb, _ := json.Marshal(g)
			wb, _ := json.Marshal(full)
			if string(gb) != string(wb) {
				t.Errorf("hold %d (%s), event %d:\n got %s\nwant %s", i, actions[i], j, gb, wb)
			}
		}
	}
	if strings.Contains(out, `"post"`) || strings.Contains(out, "database on fire") {
		t.Errorf("the export holds the call's arguments or the app's message:\n%s", out)
	}
}
