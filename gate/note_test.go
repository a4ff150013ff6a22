package gate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/store"
)

// withDeclineNote turns decline_note on for delete_post.
func withDeclineNote(p string) string {
	return strings.Replace(p, "    reply: Removed.\n", "    reply: Removed.\n    decline_note: true\n", 1)
}

// TestDeclineNoteReachesTheModelOnce (issue 19 §2): the person declines
// with a note holding quotation marks, a backslash, a newline and a
// direction mark. The model reads it once, cleaned and quoted as a JSON
// string, in the fixed sentence; the next turn reads that it is not kept.
// Nothing ran; the store's files, the audit and the person's page hold no
// trace of the note, only that one was given, on either backend.
func TestDeclineNoteReachesTheModelOnce(t *testing.T) {
	for _, b := range valuesBackends {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, rigOptions{disk: true})
			dir, flush := b.setup(t, r)
			r.policy = r.parsePolicy("policy.yaml", withDeclineNote)
			r.app.SetRecord("/posts/7", `{"title":"Spring meetup"}`)
			ctx := context.Background()
			value := distinctive(t)
			note := "Not \"that\" one,\n" + value + ` \ keep it` + "\u202e!"

			step, _ := r.hold(ana, call(0, 7))
			hold := r.step(step)[0]
			v, err := r.gate.View(ctx, step, ana, "")
			if err != nil || !v.Holds[0].DeclineNote {
				t.Fatalf("the card does not offer a note: %+v, %v", v, err)
			}
			if _, err := r.gate.Decline(ctx, step, hold.ID, ana, note); err != nil {
				t.Fatalf("declining with a note: %v", err)
			}
			settled := r.settled(hold.ID)
			if n := len(r.app.Calls()); n != 0 {
				t.Fatalf("a declined card ran %d times", n)
			}
			want := `The person declined: "Not \"that\" one, ` + value + ` \\ keep it!". Nothing ran.`
			wantResults(t, r.restore(ana, step, false), want)
			wantResults(t, r.restore(ana, step, false), outcomeNoteGone)
			if h := r.step(step)[0]; len(h.Reply) != 0 || len(h.Values) != 0 {
				t.Errorf("after the model read it the hold keeps reply %d bytes, values %d bytes", len(h.Reply), len(h.Values))
			}
			sv, err := r.gate.View(ctx, step, ana, "")
			if page, _ := json.Marshal(sv); err != nil || strings.Contains(string(page), value) || sv.Holds[0].Outcome != outcomeNotePage || sv.Holds[0].Result.Kind != ResultDeclined {
				t.Errorf("the person's page after the decline: %s, %v", page, err)
			}
			if summary := string(OutcomeSummary(&settled)); summary != `{"kind":"declined","note":"given"}` {
				t.Errorf("the operators' outcome = %s", summary)
			}
			log, _ := json.Marshal(r.auditLog())
			if strings.Contains(string(log), value) || !strings.Contains(string(log), `{\"kind\":\"declined\",\"note\":\"given\"}`) {
				t.Errorf("the audit log holds the note, or not that one was given: %s", log)
			}
			flush()
			if found := grepFiles(t, dir, value); len(found) > 0 {
				t.Errorf("the store's files hold the note after the model read it: %v", found)
			}
		})
	}
}

// TestDeclineNoteIsTakenOnlyWhereOffered: without decline_note, on a
// form, with Confirm, or longer than 500 characters, a note is refused
// (400) and nothing is answered; an empty note is a plain decline.
func TestDeclineNoteIsTakenOnlyWhereOffered(t *testing.T) {
	r := newRig(t, rigOptions{})
	r.app.SetRecord("/posts/7", `{"title":"Spring meetup"}`)
	ctx := context.Background()
	step, _ := r.hold(ana, call(0, 7))
	hold := r.step(step)[0]
	if v, _ := r.gate.View(ctx, step, ana, ""); v.Holds[0].DeclineNote {
		t.Errorf("a card without decline_note offers a note")
	}
	if _, err := r.gate.Decline(ctx, step, hold.ID, ana, "no thanks"); !errors.Is(err, ErrNote) || Status(err) != 400 {
		t.Errorf("a note without decline_note: %v (%d), want ErrNote, 400", err, Status(err))
	}
	r.policy = r.parsePolicy("policy.yaml", withDeclineNote)
	if _, err := r.gate.Decline(ctx, step, hold.ID, ana, strings.Repeat("é", MaxDeclineNote+1)); !errors.Is(err, ErrNote) {
		t.Errorf("a note of %d characters: %v, want ErrNote", MaxDeclineNote+1, err)
	}
	if h := r.step(step)[0]; h.State != store.Waiting {
		t.Fatalf("a refused note answered the hold: %s", h.State)
	}
	// At the limit after cleaning (the newlines and the direction marks
	// go), it is taken.
	long := strings.Repeat("é", MaxDeclineNote-2) + "\n\u2066\u2069x"
	if _, err := r.gate.Decline(ctx, step, hold.ID, ana, long); err != nil {
		t.Fatalf("a note of %d characters after cleaning: %v", MaxDeclineNote, err)
	}
	r.settled(hold.ID)
	wantResults(t, r.restore(ana, step, false), `The person declined: "`+strings.Repeat("é", MaxDeclineNote-2)+` x". Nothing ran.`)

	// An empty note (spaces and marks only) is a plain decline.
	step2, _ := r.hold(ana, call(1, 7))
	h2 := r.step(step2)[0]
	if _, err := r.gate.Decline(ctx, step2, h2.ID, ana, " \u200b\n"); err != nil {
		t.Fatal(err)
	}
	r.settled(h2.ID)
	wantResults(t, r.restore(ana, step2, false), OutcomeDeclined)
}

// TestCleanNote: the note is cleaned as every text a form shows is.
func TestCleanNote(t *testing.T) {
	for in, want := range map[string]string{
		"fine":                        "fine",
		" two\n\nlines\t":             "two lines",
		"a\u202eb\u2066c\u200fd\x00e": "abcde",
		"\u2028\u2029":                "",
		`say "hi" \o/`:                `say "hi" \o/`,
	} {
		if got, ok := CleanNote(in); got != want || !ok {
			t.Errorf("CleanNote(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if got := quoteNote(`say "hi" \o/ <b>&`); got != `"say \"hi\" \\o/ <b>&"` {
		t.Errorf("quoteNote = %s", got)
	}
}

// TestDeclinedNoteFollowed: a call that shares another
// conversation's card reads that the note went there, never the note.
func TestDeclinedNoteFollowed(t *testing.T) {
	o := followedFrom(store.Hold{Outcome: Outcome{Kind: ResultDeclined, Note: noteGiven}.encode(), Reply: []byte("sealed")})
	if got := o.sentence(""); got != outcomeNoteElsewhere {
		t.Errorf("an attached call reads %q", got)
	}
}

// TestDeclineNoteOverMCP: a card confirmed over MCP (URL mode) and
// declined on the page with a note: the client's retry reads the note's
// sentence, and the store keeps the note no longer (the requestState is
// used up: no retry reads it again).
func TestDeclineNoteOverMCP(t *testing.T) {
	r := newRig(t, rigOptions{})
	p, err := policies.Parse("policy.yaml", []byte(withDeclineNote(strings.Replace(strings.ReplaceAll(testPolicy, "APP", r.app.URL),
		"    effect: destructive\n", "    effect: destructive\n    mcp: {confirm: true}\n", 1))))
	if err != nil {
		t.Fatal(err)
	}
	r.policy = p
	r.app.SetRecord("/posts/1", `{"title":"One"}`)
	state, step := r.askMCPConfirm(ana)
	id := r.step(step)[0].ID
	if _, err := r.gate.Decline(context.Background(), step, id, ana, `use "the other" one`); err != nil {
		t.Fatal(err)
	}
	r.settled(id)
	want := `The person declined: "use \"the other\" one". Nothing ran.`
	if v := r.retryMCPConfirm(ana, state); v.Rewritten || !strings.Contains(gjson.GetBytes(v.Result, "content.0.text").String(), want) {
		t.Errorf("the retry: rewritten=%v %s, want %q", v.Rewritten, v.Result, want)
	}
	if h := r.step(step)[0]; len(h.Reply) != 0 || len(h.Values) != 0 {
		t.Errorf("after the client read it the hold keeps reply %d bytes, values %d bytes", len(h.Reply), len(h.Values))
	}
}
