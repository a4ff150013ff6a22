package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rulesMCPEdit gives the MCP policy's delete_post the rules of
// rulesPolicyYAML (rules_test.go): a draft passes, a locked post is
// refused with a because, a broken one cannot be decided (record.nope is
// not there), anything else is the effect's card.
func rulesMCPEdit(t *testing.T) func(string) string {
	return func(p string) string {
		const at = "      rows:\n        Post: title\n"
		if strings.Count(p, at) != 1 {
			t.Fatalf("the MCP policy's delete_post rows changed: cannot place the rules")
		}
		return strings.Replace(p, at, at+`    rules:
      - when: record.status == "draft"
        then: allow
      - name: locked
        when: has(record.locked) && record.locked == true
        then: deny
        because: The post is locked; nothing ran.
      - when: record.status == "broken" && record.nope == 1
        then: deny
        because: never read
`, 1)
	}
}

// TestRulesEndToEndMCP: each outcome of delete_post's rules on the MCP
// front, through real Caddy, as the official MCP go-sdk client parsed it
// and as the fake MCP server received it. The confirm-time cases change
// the record after the person confirmed on the page and before the
// client's retry: the rules run again and nothing runs.
func TestRulesEndToEndMCP(t *testing.T) {
	o := modern
	o.policyEdit = rulesMCPEdit(t)
	e := newMCPEnv(t, o)
	pg := &env{t: t}
	const (
		draft     = `{"title":"Spring meetup","status":"draft"}`
		published = `{"title":"Spring meetup","status":"published"}`
		locked    = `{"title":"Spring meetup","status":"published","locked":true}`
		broken    = `{"title":"Spring meetup","status":"broken"}`
	)
	for _, c := range []struct {
		name    string
		record  string
		urlMode bool   // the client declares URL-mode elicitation
		version string // the protocol version the client asks for ("" the newest)
		answer  string // the person's answer on the card page ("" not asked)
		after   string // the record once the person answered ("" unchanged)
		want    string // "deleted 7" (the server's result), or the tool error's text
	}{
		{name: "allow", record: draft, urlMode: true, want: "deleted 7"},
		{name: "allow without URL mode", record: draft, want: "deleted 7"},
		{name: "allow on 2025-11-25", record: draft, version: "2025-11-25", want: "deleted 7"},
		{name: "deny", record: locked, urlMode: true, want: lockedRefusal},
		{name: "deny without URL mode", record: locked, want: lockedRefusal},
		{name: "deny on 2025-11-25", record: locked, version: "2025-11-25", want: lockedRefusal},
		{name: "evaluation error", record: broken, urlMode: true, want: ruleError},
		{name: "evaluation error without URL mode", record: broken, want: ruleError},
		{name: "ask confirmed", record: published, urlMode: true, answer: "confirm", want: "deleted 7"},
		{name: "ask declined", record: published, urlMode: true, answer: "decline", want: declinedText},
		{name: "ask without URL mode", record: published, want: "Toolgate refused delete_post: it needs the person's confirmation on a page, and this client cannot open one (it declares no URL-mode elicitation); nothing ran."},
		{name: "confirm-time deny", record: published, urlMode: true, answer: "confirm", after: locked, want: recordChangedText},
		{name: "confirm-time allow", record: published, urlMode: true, answer: "confirm", after: draft, want: recordChangedText},
		{name: "confirm-time evaluation error", record: published, urlMode: true, answer: "confirm", after: broken, want: confirmTimeRuleError},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.app.SetRecord("/posts/7", c.record)
			callsBefore, reqsBefore, readsBefore := len(e.server.Calls()), len(e.server.ToolRequests("delete_post")), e.cardReads("ana")
			var (
				mu    sync.Mutex
				asked []*mcp.ElicitParams
				cards []stepJSON
			)
			opts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked = append(asked, req.Params)
				mu.Unlock()
				if c.answer == "" || req.Params.Mode != "url" {
					return &mcp.ElicitResult{Action: "decline"}, nil
				}
				// The person opens the page, reads the card, answers; the
				// record may change before the client retries.
				status, body, s := pg.view(ana, req.Params.URL)
				if status != http.StatusOK || len(s.Holds) != 1 {
					t.Errorf("the card page: %d %s", status, body)
					return &mcp.ElicitResult{Action: "cancel"}, nil
				}
				mu.Lock()
				cards = append(cards, s)
				mu.Unlock()
				h := s.Holds[0]
				if st, _ := pg.answer(ana, req.Params.URL, h.ID, s.Tokens[h.ID], c.answer, nil); st != http.StatusSeeOther {
					t.Errorf("%s on the page: %d", c.answer, st)
				}
				if c.after != "" {
					e.app.SetRecord("/posts/7", c.after)
				}
				return &mcp.ElicitResult{Action: "accept"}, nil // consent; the page gave the answer
			}}
			if c.urlMode {
				opts.Capabilities = urlCaps
			}
			res := callTool(t, e.connect(t, "ana", opts, c.version), &mcp.CallToolParams{Name: "delete_post", Arguments: map[string]any{"post": 7}})

			ran := c.want == "deleted 7"
			if got := resultText(res); res.IsError == ran || res.NeedsInput() || got != c.want {
				t.Fatalf("the client got isError=%v needsInput=%v %q, want %q", res.IsError, res.NeedsInput(), got, c.want)
			}
			calls, reqs := e.server.Calls()[callsBefore:], e.server.ToolRequests("delete_post")[reqsBefore:]
			if ran {
				if len(calls) != 1 || calls[0] != `delete_post {"post":7}` || len(reqs) != 1 {
					t.Errorf("the server ran %q in %d tools/call requests, want delete_post {\"post\":7} once", calls, len(reqs))
				}
			} else if len(calls) != 0 || len(reqs) != 0 {
				t.Errorf("the server ran %q in %d tools/call requests, want none", calls, len(reqs))
			}

			mu.Lock()
			defer mu.Unlock()
			if c.answer == "" {
				// The rules decided before the client was asked anything.
				if len(asked) != 0 {
					t.Errorf("the client was asked %d times: %+v", len(asked), asked[0])
				}
			} else {
				if len(asked) != 1 || asked[0].Mode != "url" || asked[0].RequestedSchema != nil || !strings.HasPrefix(asked[0].Message, "Please confirm in your browser: Delete this post?") {
					t.Fatalf("asked %d times, want one URL-mode request: %+v", len(asked), asked)
				}
				if !strings.HasPrefix(asked[0].URL, e.pagesURL+"/h/") {
					t.Errorf("URL %q is not a card page", asked[0].URL)
				}
				if len(cards) != 1 || cards[0].Holds[0].Card.Sentence != "Delete this post? This cannot be undone." ||
					len(cards[0].Holds[0].Card.Rows) != 1 || cards[0].Holds[0].Card.Rows[0].Value != "Spring meetup" {
					t.Errorf("the card: %+v", cards)
				}
			}
			// The rules read the record as ana: once to decide (the card
			// is built from the same bytes), again to check it at
			// confirm time.
			wantReads := 1
			if c.answer == "confirm" {
				wantReads = 2
			}
			if n := e.cardReads("ana") - readsBefore; n != wantReads {
				t.Errorf("the record was read %d times as ana, want %d", n, wantReads)
			}
		})
	}
	if c := e.app.Calls(); len(c) != 0 {
		t.Errorf("the app's endpoint ran: %+v", c)
	}
}

// What the MCP client reads for a declined card, for a confirmed card
// whose rules decide otherwise now, and for one whose rules cannot decide
// now (as the model routes read it: gate/rules.go's outcomeRuleError).
const (
	declinedText         = "The person declined; nothing ran."
	recordChangedText    = "The record changed while waiting; nothing ran."
	confirmTimeRuleError = "The person confirmed, but the gate's policy could not decide on this call now; nothing ran."
)
