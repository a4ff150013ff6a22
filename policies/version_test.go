package policies

import (
	"strings"
	"testing"
)

const versionBase = `actions:
  delete_post:
    effect: destructive
    description: Removes a post.
    card:
      reason: Delete this post
      record: http://blog/posts/{post}
      rows: {Post: title}
    run: {method: DELETE, url: "http://blog/posts/{post}"}
    reply: Removed.
    ttl: 10m
  find_post:
    effect: read
    run: {method: GET, url: "http://blog/search"}
`

func mustParse(t *testing.T, src string) *Policy {
	t.Helper()
	p, err := Parse("v.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPolicyVersion(t *testing.T) {
	base := mustParse(t, versionBase)
	if v := base.Version(); len(v) != 12 || strings.Trim(v, "0123456789abcdef") != "" {
		t.Fatalf("Version() = %q, want 12 hex digits", v)
	}
	if again := mustParse(t, versionBase); again.Version() != base.Version() || again.Action("delete_post").Version() != base.Action("delete_post").Version() {
		t.Fatal("the same bytes give another version")
	}
	if (*Policy)(nil).Version() != "" || (*Action)(nil).Version() != "" {
		t.Fatal("nil has a version")
	}
	for _, tc := range []struct {
		name, from, to string
		same           bool // the action's version stays
	}{
		{"description", "Removes a post.", "Deletes a post for good.", true},
		{"reply", "reply: Removed.", "reply: {en: Gone., de: Weg.}", true},
		{"ttl", "ttl: 10m", "ttl: 20m", true},
		{"another action", "url: \"http://blog/search\"", "url: \"http://blog/find\"", true},
		{"endpoint", "url: \"http://blog/posts/{post}\"}", "url: \"http://blog/v2/posts/{post}\"}", false},
		{"method", "method: DELETE", "method: POST", false},
		{"effect", "effect: destructive", "effect: external", false},
		{"reason", "reason: Delete this post", "reason: Remove this post", false},
		{"rows", "rows: {Post: title}", "rows: {Post: title, Status: status}", false},
		{"record", "record: http://blog/posts/{post}", "record: http://blog/drafts/{post}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(versionBase, tc.from, tc.to, 1)
			if src == versionBase {
				t.Fatalf("%q is not in the policy", tc.from)
			}
			p := mustParse(t, src)
			if p.Version() == base.Version() {
				t.Error("the policy's version did not change with its bytes")
			}
			if got := p.Action("delete_post").Version() == base.Action("delete_post").Version(); got != tc.same {
				t.Errorf("delete_post's version unchanged: %v, want %v", got, tc.same)
			}
		})
	}
}
