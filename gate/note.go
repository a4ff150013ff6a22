package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/plaintext"
	"github.com/toolgate/toolgate/store"
)

// Declining with a note (an action's decline_note): the person's own words
// to their own assistant. They are handled like a form's values: cleaned as
// plain text on one line (plaintext.Clean, which also cleans every text a form
// shows), sealed under the hold's own key (seal.go) from the claim on,
// moved at settlement into the sealed reply the model is still to read
// (Hold.Reply), and dropped once the model has read them (replyRead; over
// MCP, at the client's retry). The audit and the log record that a note
// was given (Outcome.Note), never the note.
//
// The model reads
//
//	The person declined: "<note>". Nothing ran.
//
// with the note written as a JSON string: a quotation mark or a backslash
// in it is escaped (\" and \\), so the note ends at the first unescaped
// quotation mark and cannot close the sentence early or read as the
// gate's words. Cleaning has already removed every control character, so
// nothing else is escaped (no \n, no \u escapes; <, > and & stay as they
// are).

// MaxDeclineNote is the longest note, in characters, after cleaning.
const MaxDeclineNote = 500

// sealNote: a decline's note, from the claim (Hold.Values) to the
// settlement, which moves it into the reply the model is still to read.
const sealNote = "note"

// Where a declined card's note is (Outcome.Note).
const (
	// noteGiven: the person wrote one; it is sealed in Hold.Reply until
	// the model has read it.
	noteGiven = "given"
	// noteElsewhere: an attached call (intent.go) whose card was declined
	// with a note, which went to the card's own conversation.
	noteElsewhere = "elsewhere"
)

// What the model reads of a note it can no longer be given.
const (
	outcomeNoteGone      = "The person declined with a note to the assistant, given earlier in this conversation and not kept; nothing ran."
	outcomeNoteElsewhere = "The person declined with a note to the assistant in the conversation where they answered; nothing ran."
	// outcomeNotePage is what the person's page says: the note is the
	// assistant's to read, not the page's to show again.
	outcomeNotePage = "The person declined with a note to the assistant; nothing ran."
)

// ErrNote: a note the gate does not take (the action has no decline_note,
// the hold is not a card, or it is too long). Nothing is claimed; Status
// maps it to 400 (it is an ErrChoice).
var ErrNote = fmt.Errorf("%w: decline note not taken", ErrChoice)

// CleanNote is a note as the gate keeps it: cleaned to plain text on one
// line (control, format and direction characters removed, newlines and
// tabs made spaces, spaces collapsed, trimmed). ok is false when the
// cleaned note is longer than MaxDeclineNote characters: it is refused,
// not cut, so the person's words never reach the model shortened.
func CleanNote(s string) (note string, ok bool) {
	note = plaintext.Clean(s, MaxDeclineNote+1)
	return note, utf8.RuneCountInString(note) <= MaxDeclineNote
}

// quoteNote writes a cleaned note as a JSON string.
func quoteNote(note string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(note) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// declinedWithNote is the sentence the model reads of a card declined
// with note.
func declinedWithNote(note string) string {
	return "The person declined: " + quoteNote(note) + ". Nothing ran."
}

// Decline declines a card of a step, as Answer does, with the person's
// note to their assistant. An empty note (after cleaning) is a plain
// decline. A note is taken only for a card whose action has decline_note
// (as the policy reads now) and only up to MaxDeclineNote characters;
// otherwise nothing is claimed and the error is ErrNote (400).
func (g *Gate) Decline(ctx context.Context, stepID, holdID string, who Person, note string) (HoldView, error) {
	clean, ok := CleanNote(note)
	if clean == "" && ok {
		return g.Answer(ctx, stepID, holdID, who, store.AnswerDecline)
	}
	h, r, err := g.answerable(ctx, stepID, holdID, who)
	if err != nil {
		return HoldView{}, err
	}
	if a := g.action(h); h.Kind != store.KindCard || a == nil || !a.DeclineNote || !r.decline {
		g.log.Info("decline note refused: the action takes none", zap.String("hold_id", h.ID), zap.String("action", h.Action))
		return HoldView{}, ErrNote
	}
	if !ok {
		return HoldView{}, ErrNote
	}
	sealed, err := g.seal(sealNote, h.ID, []byte(clean))
	if err != nil {
		return HoldView{}, fmt.Errorf("sealing a decline note: %w", err)
	}
	values, err := json.Marshal(sealed) // Hold.Values is JSON: a base64 string
	if err != nil {
		return HoldView{}, err
	}
	return g.claimAndRelease(ctx, h, who, r, store.AnswerDecline, values, true)
}

// declinedNote is the note of a card declined with one, read from the
// claim's sealed values; "" when there is none or it cannot be read (the
// model then reads a plain decline: the note is not kept unsealed).
func (g *Gate) declinedNote(h store.Hold) string {
	if h.Kind != store.KindCard || h.Answer != store.AnswerDecline || len(h.Values) == 0 {
		return ""
	}
	var sealed []byte
	if err := json.Unmarshal(h.Values, &sealed); err != nil {
		g.log.Error("reading a decline note", zap.String("hold_id", h.ID), zap.Error(err))
		return ""
	}
	plain, err := g.unseal(sealNote, h.ID, sealed)
	if err != nil {
		g.log.Error("reading a decline note", zap.String("hold_id", h.ID), zap.Error(err))
		return ""
	}
	return string(plain)
}

// noteText is what a declined card's outcome says of its note: the note
// while the store keeps it for the model, else "".
func (g *Gate) noteText(h store.Hold) string {
	if len(h.Reply) == 0 {
		return ""
	}
	plain, err := g.unseal(sealReply, h.ID, h.Reply)
	if err != nil {
		g.log.Error("reading a decline note", zap.String("hold_id", h.ID), zap.Error(err))
		return ""
	}
	return string(plain)
}
