package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testkit"
)

// searchPolicy adds a read action asked for with a form to the test
// policy: the person types the query; the app's answer echoes it.
const searchPolicy = policyYAML + testkit.SearchPostsAction

// TestReadReplyNeverReachesOperators (issue 15 §3): a value the person
// typed into a read's form comes back in the app's answer. The model
// reads that answer once (and on later turns that it was given); the
// admin API's outcome and the audit export's settled event carry the
// structured outcome, never the answer or the value. Before outcomes were
// data, the stored sentence, with the app's answer in it, was both.
func TestReadReplyNeverReachesOperators(t *testing.T) {
	port := testkit.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	e := newEnv(t, envOptions{policy: searchPolicy, admin: fmt.Sprintf("admin 127.0.0.1:%d", port)})
	const value = "Birchwood-Lane-Meetup-4471"
	e.app.Answer(200, `{"query":"`+value+`","results":[]}`, 0)

	l, msg := e.hold(t, "ana", call{"call_search", "search_posts", `{}`, false})
	status, body, s := e.view(ana, l)
	if status != 200 || len(s.Holds) != 1 {
		t.Fatalf("view: %d %s", status, body)
	}
	h := s.Holds[0]
	if st, b := e.formPost(ana, l, h.ID, s.Tokens[h.ID], url.Values{"q": {value}}, false); st != http.StatusSeeOther {
		t.Fatalf("submit: %d %s", st, b)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, _, s = e.view(ana, l); s.Holds[0].State == "settled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the read was not settled")
		}
	}
	if strings.Contains(s.Holds[0].Outcome, value) {
		t.Errorf("the page shows the app's answer: %q", s.Holds[0].Outcome)
	}
	if got := toolResult(e.next(t, "ana", msg, "and?"), "call_search"); !strings.HasPrefix(got, "The person filled in: q. ") || !strings.Contains(got, value) {
		t.Errorf("the model read %q, want the app's answer", got)
	}
	if got := toolResult(e.next(t, "ana", msg, "and then?"), "call_search"); strings.Contains(got, value) || !strings.HasPrefix(got, "The person filled in: q. ") {
		t.Errorf("the model reads the app's answer again on a later turn: %q", got)
	}

	_, raw := admin(t, base, "GET", "/toolgate/holds")
	if strings.Contains(string(raw), value) || !strings.Contains(string(raw), `"outcome":{"kind":"done","person":"filled","filled":["q"],"reply":"app"}`) {
		t.Errorf("the admin API: %s", raw)
	}
	testkit.Stop(t)
	out, errOut, err := auditCommand(t, append([]string{"export"}, e.storeFlags(t)...)...)
	if err != nil {
		t.Fatalf("audit export: %v\n%s", err, errOut)
	}
	if strings.Contains(out, value) {
		t.Errorf("the audit export holds the person's value:\n%s", out)
	}
	if !strings.Contains(out, `"kind":"settled"`) || !strings.Contains(out, `"outcome":"{\"kind\":\"done\",\"person\":\"filled\",\"filled\":[\"q\"],\"reply\":\"app\"}"`) {
		t.Errorf("the audit export's settled event:\n%s", out)
	}
}
