package gate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// A form's requestState lives its TTL to the millisecond: with a TTL of
// one second, asked at .95 of a second and answered a tenth of a second
// later (past the next whole second) it still runs; a second after the
// ask it has expired. Whole seconds gave a window anywhere from 0 to 1 s.
func TestMCPStateTTLKeepsSubSeconds(t *testing.T) {
	p, err := policies.Parse("p.yaml", []byte("actions:\n  draft_post:\n    effect: write\n    ask_for_missing: true\n    schema:\n      type: object\n      properties:\n        title: {type: string}\n        body: {type: string}\n      required: [title, body]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		after time.Duration
		runs  bool
	}{
		{"across the next whole second", 100 * time.Millisecond, true},
		{"a millisecond before the end", 999 * time.Millisecond, true},
		{"at the end", time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testkit.NewClock(time.Unix(1_800_000_010, 950_000_000))
			st, err := store.OpenBadger("", store.BadgerOptions{InMemory: true, Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			g := New(Config{Store: st, Secret: []byte("0123456789abcdef0123"), Now: clk.Now, Policy: func(string) *policies.Policy { return p }})
			who := func() Person { return Person{Owner: "ana"} }
			call := MCPCall{Name: "draft_post", Arguments: []byte(`{"title":"x"}`), Modern: true, Elicit: interceptor.ElicitModes{Form: true}}
			v := g.MCPFront(p, "p.yaml", who, time.Second, 0).MCP(context.Background(), call)
			state := gjson.GetBytes(v.Result, "requestState").String()
			if !strings.HasPrefix(state, statePrefix) {
				t.Fatalf("no form: %s", v.Result)
			}
			clk.Advance(tc.after)
			call.State = state
			call.Responses = map[string][]byte{MCPFormKey: []byte(`{"action":"accept","content":{"body":"y"}}`)}
			v = g.MCPFront(p, "p.yaml", who, time.Second, 0).MCP(context.Background(), call)
			if tc.runs && (!v.Rewritten || v.Result != nil) {
				t.Errorf("answered %v after the ask: %s, want it to run", tc.after, v.Result)
			}
			if !tc.runs && !strings.Contains(string(v.Result), "expired") {
				t.Errorf("answered %v after the ask: %+v %s, want expired", tc.after, v, v.Result)
			}
		})
	}
}
