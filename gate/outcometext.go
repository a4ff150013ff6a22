package gate

import (
	"context"
	"encoding/json"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/store"
)

// What the person's page shows in place of a read's reply: the app's
// words went to the model, not to the page.
const replyForPage = "The app's answer went to the assistant."

// outcomeText is what the model reads of a settled hold: its outcome's
// sentence, with a read's reply unsealed while it is kept. An outcome
// stored as a sentence (legacyoutcome.go) reads as stored.
func (g *Gate) outcomeText(h store.Hold) string {
	o, ok := decodeOutcome(h.Outcome)
	if !ok {
		return h.Outcome
	}
	return o.sentence(g.replyText(h, o))
}

// pageOutcome is outcomeText for the person's page: never the app's words.
func (g *Gate) pageOutcome(h store.Hold) string {
	o, ok := decodeOutcome(h.Outcome)
	if !ok {
		r := legacyResult(h.Outcome)
		if a := g.action(h); r.Kind == ResultDone && r.reply != "" && (a == nil || r.reply != "legacy:"+a.Reply) {
			return "" // not the policy's reply: it may be a read's, with the person's value in it
		}
		return h.Outcome
	}
	if o.Reply == replyApp {
		return o.sentence(replyForPage)
	}
	if o.Note != "" {
		return outcomeNotePage // note.go: the note is the assistant's to read
	}
	return o.sentence(g.replyText(h, o))
}

// replyText is what follows the person's part of a done outcome: the
// read's body while the store keeps it (until the model has read it), the
// action's reply as the policy says it now, or "Done.".
func (g *Gate) replyText(h store.Hold, o Outcome) string {
	if o.Note == noteGiven {
		return g.noteText(h) // note.go
	}
	switch o.Reply {
	case replyElsewhere:
		return replyOther
	case replyApp:
		if len(h.Reply) == 0 {
			return replyGone
		}
		plain, err := g.unseal(sealReply, h.ID, h.Reply)
		if err != nil {
			g.log.Error("reading a read's reply", zap.String("hold_id", h.ID), zap.Error(err))
			return replyGone
		}
		return string(plain)
	case replyPolicy:
		if a := g.action(h); a != nil && a.Reply != "" {
			return a.Reply
		}
	}
	return "Done."
}

// replyRead drops the replies of holds whose outcome the model has just
// been given (history restoration): a read's body is kept only until the
// model has read it. Later restorations of the same history read
// replyGone in its place. A failure is logged; the reply stays sealed
// until the record is deleted at the end of its retention.
func (g *Gate) replyRead(ctx context.Context, holds []store.Hold) {
	for _, h := range holds {
		if len(h.Reply) == 0 || h.State != store.Settled {
			continue
		}
		if err := g.cfg.Store.DropReply(ctx, h.ID); err != nil {
			g.log.Error("dropping a read reply", zap.String("hold_id", h.ID), zap.Error(err))
		}
	}
}

// confirmedOverMCP reports whether a hold settled as confirmed over MCP:
// its call runs once, when the client continues it.
func confirmedOverMCP(h store.Hold) bool {
	if o, ok := decodeOutcome(h.Outcome); ok {
		return o.Kind == ResultConfirmedMCP
	}
	return h.Outcome == OutcomeMCPConfirmed // stored as a sentence (legacyoutcome.go)
}

// OutcomeSummary is a hold's outcome for operators (the admin API): the
// structured outcome, which holds neither the person's values nor the
// app's words; for an outcome stored as a sentence by an earlier version,
// only its kind. nil when the hold has none yet.
func OutcomeSummary(h *store.Hold) json.RawMessage {
	if h.Outcome == "" {
		return nil
	}
	if o, ok := decodeOutcome(h.Outcome); ok {
		return json.RawMessage(o.summary())
	}
	b, _ := json.Marshal(struct {
		Kind   string `json:"kind"`
		Legacy bool   `json:"legacy"`
	}{legacyResult(h.Outcome).Kind, true})
	return b
}
