package policies

import (
	"strings"
	"testing"
)

// TestDeclineNoteKey: the file's decline_note reaches its card actions,
// an action's own wins, and a read or write action asking for one, or a
// value that is not a boolean, fails at load naming the action and key.
func TestDeclineNoteKey(t *testing.T) {
	p := mustLoad(t, "blog.yaml", "decline_note: true\n"+strings.Replace(operateYAML, "    notify: false\n", "    notify: false\n    decline_note: false\n", 1))
	for name, want := range map[string]bool{"delete_post": true, "send_email": true, "publish": false, "list_posts": false} {
		if got := p.Actions[name].DeclineNote; got != want {
			t.Errorf("%s: DeclineNote = %v, want %v", name, got, want)
		}
	}
	if p := mustLoad(t, "blog.yaml", operateYAML); p.Actions["delete_post"].DeclineNote {
		t.Error("decline_note is on without the key")
	}
	for body, want := range map[string]string{
		"actions:\n  l:\n    effect: read\n    run: {url: 'http://h/'}\n    decline_note: true\n":   `action "l": decline_note: only destructive and external actions have a card to decline with a note`,
		"decline_note: yes please\nactions:\n  l:\n    effect: read\n    run: {url: 'http://h/'}\n": "decline_note: must be true or false",
	} {
		_, err := Parse("blog.yaml", []byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}
