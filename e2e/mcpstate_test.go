package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client that retries by hand (multi round-trip off) sees the gate's
// input_required as it is on the wire, and can abuse its requestState.

// manual connects as user with a form-capable client that does not retry.
func (e *mcpEnv) manual(t *testing.T, user string) *mcp.ClientSession {
	t.Helper()
	return e.connect(t, user, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			t.Error("the client's handler ran although multi round-trip is off")
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}, "")
}

var springArgs = map[string]any{"title": "Spring"}

// askDraft calls draft_post without its body and returns the form's key
// and the requestState.
func askDraft(t *testing.T, cs *mcp.ClientSession) (key, state string) {
	t.Helper()
	res := callTool(t, cs, &mcp.CallToolParams{Name: "draft_post", Arguments: springArgs})
	if !res.NeedsInput() || res.IsError {
		t.Fatalf("want input_required, got isError=%v %q", res.IsError, resultText(res))
	}
	if len(res.InputRequests) != 1 {
		t.Fatalf("input requests %v, want one form", res.InputRequests)
	}
	for k, ir := range res.InputRequests {
		p, ok := ir.(*mcp.ElicitParams)
		if !ok {
			t.Fatalf("input request %q is %T, want an elicitation", k, ir)
		}
		if props, _ := formSchema(t, p); props["body"] == nil || len(props) != 1 {
			t.Errorf("form asks %v, want body", props)
		}
		if !strings.Contains(k, "/") {
			t.Errorf("form key %q is not namespaced", k)
		}
		key = k
	}
	if res.RequestState == "" {
		t.Fatal("no requestState")
	}
	return key, res.RequestState
}

// retry sends a by-hand retry of draft_post with a body.
func retry(t *testing.T, cs *mcp.ClientSession, args map[string]any, key, state string) *mcp.CallToolResult {
	t.Helper()
	return callTool(t, cs, &mcp.CallToolParams{
		Name: "draft_post", Arguments: args, RequestState: state,
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"body": "Spring is here."}}},
	})
}

const draftRan = `draft_post {"title":"Spring","body":"Spring is here."}`

// wantRan checks the server ran draft_post exactly n times, as drafted.
func (e *mcpEnv) wantRan(t *testing.T, n int) {
	t.Helper()
	got := e.server.Calls()
	if len(got) != n {
		t.Fatalf("server ran %d calls %q, want %d", len(got), got, n)
	}
	for _, c := range got {
		if c != draftRan {
			t.Errorf("server ran %q, want %q", c, draftRan)
		}
	}
}

func wantDrafted(t *testing.T, res *mcp.CallToolResult) {
	t.Helper()
	if res.IsError || res.NeedsInput() || resultText(res) != "drafted Spring" {
		t.Fatalf("retry: isError=%v needsInput=%v %q", res.IsError, res.NeedsInput(), resultText(res))
	}
}

// flip changes the character at i to another of the base64url alphabet.
func flip(s string, i int) string {
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

func TestMCPStateTampered(t *testing.T) {
	e := newMCPEnv(t, modern)
	cs := e.manual(t, "ana")
	key, state := askDraft(t, cs)
	dot := strings.LastIndexByte(state, '.')
	if dot < 0 {
		t.Fatalf("requestState %q has no signature part", state)
	}
	for name, bad := range map[string]string{
		"payload":   flip(state, dot/2+2),
		"signature": flip(state, dot+(len(state)-dot)/2),
		"truncated": state[:dot],
		"foreign":   "s1",
	} {
		t.Run(name, func(t *testing.T) {
			if bad == state {
				t.Fatal("the tampered state is the state")
			}
			res := retry(t, cs, springArgs, key, bad)
			if name == "foreign" {
				// Not ours: the gate treats it as a first call and asks again.
				if !res.NeedsInput() || res.RequestState == "s1" {
					t.Fatalf("foreign state: isError=%v needsInput=%v %q", res.IsError, res.NeedsInput(), resultText(res))
				}
			} else {
				wantToolError(t, res, "requestState", "nothing ran")
			}
			e.wantRan(t, 0)
		})
	}
	// None of that used the ticket up: the genuine state still runs, once.
	wantDrafted(t, retry(t, cs, springArgs, key, state))
	e.wantRan(t, 1)
}

func TestMCPStateReplayed(t *testing.T) {
	e := newMCPEnv(t, modern)
	cs := e.manual(t, "ana")
	key, state := askDraft(t, cs)
	wantDrafted(t, retry(t, cs, springArgs, key, state))
	e.wantRan(t, 1)
	for range 2 {
		wantToolError(t, retry(t, cs, springArgs, key, state), "already used", "nothing ran")
	}
	// Another session of the same person cannot replay it either.
	wantToolError(t, retry(t, e.manual(t, "ana"), springArgs, key, state), "already used")
	e.wantRan(t, 1)
}

func TestMCPStateExpired(t *testing.T) {
	e := newMCPEnv(t, mcpEnvOptions{stateless: true, stateTTL: "1s"})
	cs := e.manual(t, "ana")
	key, state := askDraft(t, cs)
	time.Sleep(2100 * time.Millisecond)
	wantToolError(t, retry(t, cs, springArgs, key, state), "expired", "nothing ran")
	e.wantRan(t, 0)
	// A fresh call asks again and, answered in time, runs.
	key, state = askDraft(t, cs)
	wantDrafted(t, retry(t, cs, springArgs, key, state))
	e.wantRan(t, 1)
}

func TestMCPStateOtherPerson(t *testing.T) {
	e := newMCPEnv(t, modern)
	key, state := askDraft(t, e.manual(t, "ana"))
	wantToolError(t, retry(t, e.manual(t, "bo"), springArgs, key, state), "someone else", "nothing ran")
	wantToolError(t, retry(t, e.manual(t, ""), springArgs, key, state), "who is calling")
	e.wantRan(t, 0)
	// bo's attempt used nothing up: ana's own retry still runs.
	wantDrafted(t, retry(t, e.manual(t, "ana"), springArgs, key, state))
	e.wantRan(t, 1)
}

func TestMCPStateChangedArguments(t *testing.T) {
	e := newMCPEnv(t, modern)
	cs := e.manual(t, "ana")
	key, state := askDraft(t, cs)
	for name, args := range map[string]map[string]any{
		"other title": {"title": "Autumn"},
		"added field": {"title": "Spring", "status": "published"},
		"body given":  {"title": "Spring", "body": "Sneaked in."},
	} {
		t.Run(name, func(t *testing.T) {
			wantToolError(t, retry(t, cs, args, key, state), "other arguments", "nothing ran")
		})
	}
	// Another gated tool cannot redeem it either.
	res := callTool(t, cs, &mcp.CallToolParams{
		Name: "ask_srv", Arguments: springArgs, RequestState: state,
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"note": "n"}}},
	})
	wantToolError(t, res, "another tool", "nothing ran")
	if got := e.server.Calls(); len(got) != 0 {
		t.Errorf("server ran %q", got)
	}
	// The same arguments in another key order are the same arguments.
	wantDrafted(t, retry(t, cs, springArgs, key, state))
	e.wantRan(t, 1)
}

// A requestState is single use under concurrency: of 100 racing retries
// exactly one reaches the server.
func TestMCPStateConcurrentRetries(t *testing.T) {
	e := newMCPEnv(t, modern)
	cs := e.manual(t, "ana")
	key, state := askDraft(t, cs)
	const n = 100
	results := make([]*mcp.CallToolResult, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := cs.CallTool(c, &mcp.CallToolParams{
				Name: "draft_post", Arguments: springArgs, RequestState: state,
				InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"body": "Spring is here."}}},
			})
			if err != nil {
				t.Errorf("retry %d: %v", i, err)
			}
			results[i] = res
		}()
	}
	close(start)
	wg.Wait()
	ok, used := 0, 0
	for _, r := range results {
		if r == nil {
			continue // reported above
		}
		switch txt := resultText(r); {
		case !r.IsError && txt == "drafted Spring":
			ok++
		case r.IsError && strings.Contains(txt, "already used"):
			used++
		default:
			t.Errorf("retry got isError=%v %q", r.IsError, txt)
		}
	}
	if ok != 1 || used != n-1 {
		t.Errorf("%d retries ran and %d were told the state was used, want 1 and %d", ok, used, n-1)
	}
	e.wantRan(t, 1)
	if got := len(e.server.ToolRequests("draft_post")); got != 1 {
		t.Errorf("%d draft_post requests reached the server, want 1", got)
	}
}

// The answer to the form is checked like a page's: only the asked fields
// are taken, against the form's rules; a refused answer runs nothing.
func TestMCPFormAnswerChecked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content map[string]any
		want    string // "" runs
		ran     string
	}{
		{"wrong type", map[string]any{"body": 42}, "answer was refused", ""},
		{"missing", map[string]any{}, "answer was refused", ""},
		{"field not asked", map[string]any{"body": "Spring is here.", "title": "Hacked"}, "", draftRan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newMCPEnv(t, modern)
			cs := e.manual(t, "ana")
			key, state := askDraft(t, cs)
			res := callTool(t, cs, &mcp.CallToolParams{
				Name: "draft_post", Arguments: springArgs, RequestState: state,
				InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: tc.content}},
			})
			got := e.server.Calls()
			if tc.want != "" {
				wantToolError(t, res, tc.want, "nothing ran")
				if len(got) != 0 {
					t.Errorf("server ran %q", got)
				}
				return
			}
			if res.IsError || res.NeedsInput() {
				t.Fatalf("isError=%v needsInput=%v %q", res.IsError, res.NeedsInput(), resultText(res))
			}
			if len(got) != 1 || got[0] != tc.ran {
				t.Errorf("server ran %q, want %q", got, tc.ran)
			}
		})
	}
}

// A retry without an answer to the form is asked again, with a fresh
// state; the old one is used up.
func TestMCPFormRetryWithoutAnswer(t *testing.T) {
	e := newMCPEnv(t, modern)
	cs := e.manual(t, "ana")
	key, state := askDraft(t, cs)
	res := callTool(t, cs, &mcp.CallToolParams{Name: "draft_post", Arguments: springArgs, RequestState: state})
	if !res.NeedsInput() || res.RequestState == "" || res.RequestState == state || res.InputRequests[key] == nil {
		t.Fatalf("retry without answer: needsInput=%v isError=%v %q %v", res.NeedsInput(), res.IsError, resultText(res), res.InputRequests)
	}
	wantToolError(t, retry(t, cs, springArgs, key, state), "already used")
	e.wantRan(t, 0)
	wantDrafted(t, retry(t, cs, springArgs, key, res.RequestState))
	e.wantRan(t, 1)
}
