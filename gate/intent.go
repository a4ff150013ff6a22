package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/cards"
	"github.com/toolgate/toolgate/interceptor"
	"github.com/toolgate/toolgate/store"
)

// One card per intent. Models and agents repeat a call whose answer they
// have not seen yet. While a hold waits, the same call again — the same
// person (tenant and owner), tool and arguments, compared in canonical
// JSON — attaches to the waiting hold: its link is repeated instead of a
// second card the person would have to answer twice. Once the hold is
// answered (or expired), a repeat is a new call.
//
// The waiting holds of an intent are found through the store's index
// (Index, Indexed, Unindex), under a key made of the person and a digest
// of the tool and its canonical arguments: no index of its own. The
// lookup is bounded: the newest maxIntentSteps steps filed under the key
// are read, and those that no longer wait for it are taken off. Two equal
// calls held at the very same moment may still both get a card: the
// lookup and the Put are not one operation (a store that made them one
// would need an intent column unique among waiting holds).

// maxIntentSteps bounds the steps read to find a waiting hold of an
// intent.
const maxIntentSteps = 4

// intent is a call's identity for attaching: its index key, or "" when
// its arguments are not JSON (nothing attaches to it).
func (f *Front) intent(action string, args []byte) (key string, canonical []byte) {
	canonical, err := interceptor.CanonicalJSON(args)
	if err != nil || f.person.Owner == "" {
		return "", nil
	}
	sum := sha256.Sum256(append([]byte(action+"\x00"), canonical...))
	return indexKey("intent", f.person, hex.EncodeToString(sum[:])), canonical
}

// attached is a call attached to a hold that was already waiting.
type attached struct {
	stepID string
	card   bool
	say    string // the card's sentence or the form's message
}

// attach finds a waiting hold of the same intent as a call about to be
// held, of another step; ok is false when there is none (the call gets its
// own hold).
func (f *Front) attach(ctx context.Context, action string, args []byte) (attached, bool) {
	g := f.g
	key, canonical := f.intent(action, args)
	if key == "" {
		return attached{}, false
	}
	steps, err := g.cfg.Store.Indexed(ctx, key)
	if err != nil {
		g.log.Warn("finding a waiting hold of the same call", zap.String("action", action), zap.Error(err))
		return attached{}, false
	}
	now := g.cfg.Now()
	for i, n := len(steps)-1, 0; i >= 0 && n < maxIntentSteps; i, n = i-1, n+1 {
		holds, err := g.cfg.Store.Step(ctx, steps[i])
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			g.log.Warn("finding a waiting hold of the same call", zap.String("step_id", steps[i]), zap.Error(err))
			return attached{}, false
		}
		for _, h := range holds {
			if h.Action != action || !f.person.owns(h) || h.StateAt(now) != store.Waiting || h.Kind == store.KindTicket {
				continue
			}
			if c, err := interceptor.CanonicalJSON(h.Arguments); err != nil || string(c) != string(canonical) {
				continue
			}
			return attached{stepID: h.StepID, card: h.Kind == store.KindCard, say: shownSay(h)}, true
		}
		// Nothing of this intent waits there any more.
		if err := g.cfg.Store.Unindex(ctx, key, steps[i]); err != nil {
			g.log.Warn("unindexing an answered intent", zap.String("step_id", steps[i]), zap.Error(err))
		}
	}
	return attached{}, false
}

// fileIntents files a new step's waiting holds under their intents.
func (f *Front) fileIntents(ctx context.Context, holds []store.Hold) {
	for _, h := range holds {
		if h.State != store.Waiting {
			continue
		}
		key, _ := f.intent(h.Action, h.Arguments)
		if key == "" {
			continue
		}
		if err := f.g.cfg.Store.Index(ctx, key, h.StepID, h.Expires); err != nil {
			f.g.log.Warn("filing a held call's intent", zap.String("step_id", h.StepID), zap.Error(err))
		}
	}
}

// shownSay is what a waiting text says of a hold: its card's sentence, or
// its form's message.
func shownSay(h store.Hold) string {
	if h.Kind == store.KindForm {
		s, _ := readShown(h.Shown)
		return s.Message
	}
	var c cards.Card
	_ = json.Unmarshal(h.Shown, &c)
	return c.Sentence
}
