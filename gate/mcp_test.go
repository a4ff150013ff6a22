package gate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

func TestRequestStateSignature(t *testing.T) {
	g := New(Config{Secret: []byte("0123456789abcdef0123")})
	s := mcpState{Kind: "form", ID: "ABC", Person: g.personMAC(Person{Owner: "ana"}), Tool: "draft_post", Digest: "d", Expires: 42, Upstream: "up"}
	tok := g.signState(s)
	if !strings.HasPrefix(tok, statePrefix) {
		t.Fatalf("token %q lacks the prefix", tok)
	}
	if strings.Contains(tok, "ana") {
		t.Errorf("token %q names the person", tok)
	}
	got, ok := g.readState(tok)
	if !ok || got != s {
		t.Fatalf("read back %+v %v", got, ok)
	}
	// Every single-character change after the prefix is refused.
	for i := len(statePrefix); i < len(tok); i++ {
		b := []byte(tok)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		if _, ok := g.readState(string(b)); ok {
			t.Fatalf("changed token accepted at %d: %s", i, b)
		}
	}
	other := New(Config{Secret: []byte("another-secret-0123456")})
	if _, ok := other.readState(tok); ok {
		t.Error("a token signed with another secret was accepted")
	}
	if _, ok := g.readState(tok + strings.Repeat("x", maxState)); ok {
		t.Error("an oversized token was accepted")
	}
	if g.personMAC(Person{Owner: "ana"}) == g.personMAC(Person{Owner: "bo"}) || g.personMAC(Person{Owner: "ana"}) == g.personMAC(Person{Owner: "ana", Tenant: "t"}) {
		t.Error("person MACs collide")
	}
}

func TestArgsDigestIsCanonical(t *testing.T) {
	a, _ := argsDigest([]byte(`{"b":[1,2],"a":"x"}`))
	b, _ := argsDigest([]byte(`{ "a":"x", "b":[1,2] }`))
	c, _ := argsDigest([]byte(`{"a":"x","b":[2,1]}`))
	if a != b || a == c {
		t.Errorf("digests %s %s %s", a, b, c)
	}
	if _, err := argsDigest([]byte(`{`)); err == nil {
		t.Error("broken JSON digested")
	}
}

// downStore is a store whose every operation fails, as a closed or broken
// database does.
type downStore struct{ store.Store }

func (downStore) Put(context.Context, []store.Hold, ...store.Event) error {
	return store.ErrUnavailable
}
func (downStore) Get(context.Context, string) (store.Hold, error) {
	return store.Hold{}, store.ErrUnavailable
}
func (downStore) Claim(context.Context, string, store.Answer, ...store.Event) (store.Claimed, error) {
	return store.Claimed{}, store.ErrUnavailable
}
func (downStore) Audit(context.Context, ...store.Event) error {
	return store.ErrUnavailable
}

// With the store down nothing is asked for and nothing goes on: the client
// reads a tool error saying so, for a new call and for a retry.
func TestMCPStoreDown(t *testing.T) {
	p, err := policies.Parse("p.yaml", []byte("actions:\n  draft_post:\n    effect: write\n    ask_for_missing: true\n    schema:\n      type: object\n      properties:\n        title: {type: string}\n        body: {type: string}\n      required: [title, body]\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := New(Config{Store: downStore{}, Secret: []byte("0123456789abcdef0123"), Policy: func(string) *policies.Policy { return p }})
	who := func() Person { return Person{Owner: "ana"} }
	call := MCPCall{Name: "draft_post", Arguments: []byte(`{"title":"x"}`), Modern: true, Elicit: interceptor.ElicitModes{Form: true}}

	v := g.MCPFront(p, "p.yaml", who, 0, 0).MCP(context.Background(), call)
	if v.Rewritten || !strings.Contains(string(v.Result), `"isError":true`) || !strings.Contains(string(v.Result), "could not keep") {
		t.Errorf("new call: %+v %s", v, v.Result)
	}
	digest, _ := argsDigest(call.Arguments)
	call.State = g.signState(mcpState{Kind: "form", ID: "T", Person: g.personMAC(Person{Owner: "ana"}), Tool: "draft_post", Digest: digest, Expires: time.Now().Add(time.Minute).UnixMilli()})
	v = g.MCPFront(p, "p.yaml", who, 0, 0).MCP(context.Background(), call)
	if v.Rewritten || !strings.Contains(string(v.Result), "store is unavailable") {
		t.Errorf("retry: %+v %s", v, v.Result)
	}
}

// TestRequestStateAcrossRotation (issue 15 §4): a requestState signed
// before a rotation is read by a gate whose previous secrets hold the old
// secret, its person bound under the key that signed it; once the old
// secret is dropped it is refused.
func TestRequestStateAcrossRotation(t *testing.T) {
	oldSecret, newSecret := []byte("old-secret-0123456789"), []byte("new-secret-0123456789")
	before := New(Config{Secret: oldSecret})
	tok := before.signState(mcpState{Kind: "form", ID: "ABC", Person: before.personMAC(Person{Owner: "ana"}), Tool: "draft_post", Expires: 42})
	rotating := New(Config{Secret: newSecret, PreviousSecrets: [][]byte{oldSecret}})
	st, key, ok := rotating.readStateKey(tok)
	if !ok || st.Person != rotating.personMACWith(key, Person{Owner: "ana"}) || st.Person == rotating.personMACWith(key, Person{Owner: "bo"}) {
		t.Fatalf("during the rotation: read %v, person bound %v", ok, st.Person == rotating.personMACWith(key, Person{Owner: "ana"}))
	}
	if _, ok := New(Config{Secret: newSecret}).readState(tok); ok {
		t.Error("after the rotation the old secret's state was taken")
	}
}
