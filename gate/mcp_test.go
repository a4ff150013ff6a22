package gate

import (
	"strings"
	"testing"
)

func TestRequestStateSignature(t *testing.T) {
	g := New(Config{Secret: []byte("0123456789abcdef0123")})
	s := mcpState{Kind: "form", ID: "ABC", Person: g.personMAC("ana"), Tool: "draft_post", Digest: "d", Expires: 42, Upstream: "up"}
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
	if g.personMAC("ana") == g.personMAC("bo") {
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
