package policies

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// operateYAML gives the file a mode and a notify that two of its actions
// take, one turns off and one replaces; delete_post has approvers with the
// four-eyes rule.
const operateYAML = `app: Blog
mode: shadow
notify:
  url: https://hooks.internal/toolgate?team=blog
  headers: {X-Team: blog}
actions:
  delete_post:
    effect: destructive
    mode: enforce
    card: {reason: 'Delete?'}
    run: {url: 'http://blog.internal/posts'}
    approvers:
      roles: [editor, moderator]
      ids: [cy]
    four_eyes: true
  send_email:
    effect: external
    card: {reason: 'Send?'}
    run: {url: 'http://blog.internal/emails'}
    notify: {url: 'http://mail.internal/hook'}
  publish:
    effect: external
    card: {reason: 'Publish?'}
    run: {url: 'http://blog.internal/publish'}
    approvers: {ids: [dee]}
    notify: false
  list_posts:
    effect: read
    run: {url: 'http://blog.internal/posts'}
`

func TestOperateKeysLoad(t *testing.T) {
	p := mustLoad(t, "blog.yaml", operateYAML)
	if p.Mode != Shadow {
		t.Errorf("file mode = %q, want shadow", p.Mode)
	}
	fileNotify := &Notify{URL: "https://hooks.internal/toolgate?team=blog", Headers: map[string]string{"X-Team": "blog"}}
	for _, tc := range []struct {
		action    string
		mode      Mode
		notify    *Notify
		approvers *Approvers
		fourEyes  bool
	}{
		{"delete_post", Enforce, fileNotify, &Approvers{Roles: []string{"editor", "moderator"}, IDs: []string{"cy"}}, true},
		{"send_email", Shadow, &Notify{URL: "http://mail.internal/hook"}, nil, false},
		{"publish", Shadow, nil, &Approvers{IDs: []string{"dee"}}, false},
		{"list_posts", Shadow, fileNotify, nil, false},
	} {
		a := p.Action(tc.action)
		if a.Mode != tc.mode || a.Shadow() != (tc.mode == Shadow) {
			t.Errorf("%s: mode %q (shadow %v), want %q", tc.action, a.Mode, a.Shadow(), tc.mode)
		}
		if !reflect.DeepEqual(a.Notify, tc.notify) {
			t.Errorf("%s: notify %+v, want %+v", tc.action, a.Notify, tc.notify)
		}
		if !reflect.DeepEqual(a.Approvers, tc.approvers) || a.FourEyes != tc.fourEyes {
			t.Errorf("%s: approvers %+v four_eyes %v, want %+v %v", tc.action, a.Approvers, a.FourEyes, tc.approvers, tc.fourEyes)
		}
	}
	// Without the keys: enforce, no notices, the owner alone.
	b := mustLoad(t, "base.yaml", base).Action("delete_post")
	if b.Mode != Enforce || b.Notify != nil || b.Approvers != nil || b.FourEyes {
		t.Errorf("defaults: mode %q notify %v approvers %v four_eyes %v", b.Mode, b.Notify, b.Approvers, b.FourEyes)
	}
}

func TestApproversInclude(t *testing.T) {
	a := &Approvers{Roles: []string{"editor"}, IDs: []string{"cy"}}
	for _, tc := range []struct {
		id    string
		roles []string
		want  bool
	}{
		{"cy", nil, true},
		{"bo", []string{"viewer", "editor"}, true},
		{"bo", []string{"Editor"}, false}, // names are exact
		{"bo", nil, false},
		{"", []string{"editor"}, false}, // nobody signed in
		{"CY", nil, false},
	} {
		if got := a.Includes(tc.id, tc.roles); got != tc.want {
			t.Errorf("Includes(%q, %q) = %v, want %v", tc.id, tc.roles, got, tc.want)
		}
	}
	var none *Approvers
	if none.Includes("cy", []string{"editor"}) {
		t.Error("nil approvers include someone")
	}
}

// Every mistake in the new keys fails the load, naming the file, the
// action and the key.
func TestOperateMistakes(t *testing.T) {
	const act = `action "delete_post": `
	add := func(lines string) string { return base + lines }
	top := func(lines string) string { return lines + base }
	tests := []struct{ name, body, want string }{
		{"unknown mode", add("    mode: dry-run\n"), act + `mode: unknown mode "dry-run"; want enforce or shadow`},
		{"unknown file mode", top("mode: audit\n"), `mode: unknown mode "audit"`},
		{"mode not a string", add("    mode: [shadow]\n"), act + "mode: must be a string"},
		{"notify without url", add("    notify: {headers: {X-A: b}}\n"), act + "notify.url: required"},
		{"notify unknown key", add("    notify: {url: 'http://h/', retries: 3}\n"), act + "notify.retries: unknown key; known keys are url, headers"},
		{"notify relative url", add("    notify: {url: /hook}\n"), act + "notify.url: must be an absolute http or https URL"},
		{"notify not http", add("    notify: {url: 'ftp://h/hook'}\n"), act + "notify.url: must be an absolute http or https URL"},
		{"notify names a field", add("    notify: {url: 'http://h/hook/{post}'}\n"), act + "notify.url: may not name fields"},
		{"notify true", add("    notify: true\n"), act + "notify: want {url: ...}, or false"},
		{"file notify false", top("notify: false\n"), "notify: want {url: ...}"},
		{"notify a string", add("    notify: http://h/hook\n"), act + "notify: must be a mapping"},
		{"notify gate header", add("    notify: {url: 'http://h/', headers: {X-Toolgate-Signature: x}}\n"), act + "notify.headers.X-Toolgate-Signature: is set by the gate"},
		{"notify header twice", add("    notify: {url: 'http://h/', headers: {X-A: x, x-a: y}}\n"), act + "notify.headers.x-a: given twice"},
		{"file notify unknown key", top("notify: {url: 'http://h/', to: ops}\n"), "notify.to: unknown key"},
		{"approvers on a read", "actions:\n  delete_post:\n    effect: read\n    run: {url: 'http://h/'}\n    approvers: {roles: [editor]}\n", act + "approvers: only destructive and external actions have approvers; a read call's form is for its owner"},
		{"approvers on a write", "actions:\n  delete_post:\n    effect: write\n    ask_for_missing: true\n    run: {url: 'http://h/'}\n    approvers: {roles: [editor]}\n", act + "approvers: only destructive and external actions"},
		{"approvers empty", add("    approvers: {}\n"), act + "approvers: names nobody; give roles, ids or both"},
		{"approvers empty lists", add("    approvers: {roles: [], ids: []}\n"), act + "approvers: names nobody"},
		{"approvers unknown key", add("    approvers: {groups: [editor]}\n"), act + "approvers.groups: unknown key; known keys are roles, ids"},
		{"approvers a list", add("    approvers: [editor]\n"), act + "approvers: must be a mapping"},
		{"role not a list", add("    approvers: {roles: editor}\n"), act + "approvers.roles: must be a list of roles"},
		{"role with a comma", add("    approvers: {roles: ['a,b']}\n"), act + `approvers.roles: role "a,b" holds a comma or a space`},
		{"role with a space", add("    approvers: {roles: ['chief editor']}\n"), act + `approvers.roles: role "chief editor" holds a comma or a space`},
		{"role twice", add("    approvers: {roles: [editor, editor]}\n"), act + `approvers.roles: role "editor" given twice`},
		{"empty id", add("    approvers: {ids: ['']}\n"), act + "approvers.ids: must be a list of ids"},
		{"null id", add("    approvers: {ids: [~]}\n"), act + "approvers.ids: must be a list of ids"},
		{"id with spaces around", add("    approvers: {ids: [' cy']}\n"), act + `approvers.ids: id " cy" holds a control character or surrounding space`},
		{"id twice", add("    approvers: {ids: [cy, cy]}\n"), act + `approvers.ids: id "cy" given twice`},
		{"four eyes alone", add("    four_eyes: true\n"), act + "four_eyes: needs approvers"},
		{"four eyes not a boolean", add("    approvers: {ids: [cy]}\n    four_eyes: yes please\n"), act + "four_eyes: must be true or false"},
		{"approvers at the top", top("approvers: {ids: [cy]}\n"), "approvers: unknown key; known keys are app, actions, forbidden_keys, notify, mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writePolicy(t, "blog.yaml", tt.body)
			_, err := Load(path)
			if err == nil {
				t.Fatalf("Load succeeded; want error containing %q\nfile:\n%s", tt.want, tt.body)
			}
			want := "policy " + path + ": " + tt.want
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error:\n%v\nwant prefix:\n%s", err, want)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.File != path || pe.Line == 0 {
				t.Errorf("error %T does not carry the file and line: %+v", err, pe)
			}
			checkMessage(t, err)
		})
	}
}
