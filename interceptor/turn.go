package interceptor

import (
	"bytes"
	"errors"

	"github.com/toolgate/toolgate/wire/jsonedit"

	"github.com/toolgate/toolgate/provider"

	"github.com/tidwall/gjson"
)

// turnCore is the bookkeeping every adapter's Turn shares: the request last
// sent upstream, the follow-ups allowed and sent, the step of refused calls
// waiting to go back (S is the adapter's step), the follow-up body once
// built, the text for a follow-up that brought no usable answer, and the
// JSON answer so far. What differs between wire protocols (how a follow-up
// is built, how a JSON answer is merged and ended, how a stream ends) the
// adapter passes in.
type turnCore[S any] struct {
	request []byte // the body of the last request sent upstream
	max     int    // follow-ups allowed
	done    int    // follow-ups sent
	pending *S     // refused calls of the last response, to send back
	next    []byte // the follow-up body, once built
	fail    string // the text for a follow-up that brought no usable answer

	streaming bool
	acc       []byte // JSON mode: the answer so far
	finished  bool

	// Resume: the answer waits for the person's answers to held calls.
	resume   bool   // AllowResume was called
	held     string // the step the last response's held calls wait in, when the answer may go on after them
	heldText string // the text shown in their place, which carries the step's link
}

// AllowResume implements Turn.
func (c *turnCore[S]) AllowResume() { c.resume = true }

// Held implements Turn.
func (c *turnCore[S]) Held() string {
	if c.finished || c.pending != nil {
		return ""
	}
	return c.held
}

// holdsStep notes the step of a response's held calls when the answer may
// wait for them and go on (see Turn.Held): resume allowed, a stream, one
// step holding every held call, a follow-up left, and ok, which the
// adapter gives: no call of the turn reached the app (the app would have
// to answer it first) and the request allows a follow-up. Call it after
// the response's pending step is known: refused calls go back first.
func (c *turnCore[S]) holdsStep(v provider.Verdict, ok bool) {
	c.held, c.heldText = "", ""
	if ok && c.resume && c.streaming && v.Step != "" && v.Text != "" && c.pending == nil && c.done < c.max && c.request != nil {
		c.held, c.heldText = v.Step, v.Text
	}
}

// withholds reports whether the current response's end is to be withheld:
// a follow-up may continue the answer (refused calls go back, or held ones
// may be answered while the stream waits).
func (c *turnCore[S]) withholds() bool { return c.pending != nil || c.held != "" }

// resumeWith makes the follow-up request for the held step (see
// Turn.Resume): build appends to the last request the assistant message
// the app read, its text holding the step's link, and restore restores
// the history behind that link, as in the app's next request. A body that
// restore leaves as it was restored nothing: no follow-up is made.
func (c *turnCore[S]) resumeWith(build func(request []byte, text string) ([]byte, error), restore func([]byte) ([]byte, error)) ([]byte, bool) {
	if c.Held() == "" {
		return nil, false
	}
	body, err := build(c.request, c.heldText)
	if err != nil {
		return nil, false
	}
	restored, err := restore(body)
	if err != nil || bytes.Equal(restored, body) {
		return nil, false
	}
	c.next = restored
	return restored, true
}

// Fail implements Turn.
func (c *turnCore[S]) Fail(reason string) {
	if c.done > 0 && c.fail == "" {
		c.fail = provider.CouldNotContinue(reason)
	}
}

// continuation returns the follow-up for the pending step, built once by
// build. ready says whether the response may be continued now (a stream
// only at its withheld end, with no error). A step that cannot be built is
// not continued: Finish shows its refusals in place.
func (c *turnCore[S]) continuation(ready bool, build func(request []byte, step *S) ([]byte, error)) ([]byte, bool) {
	if c.pending == nil || c.finished || !ready {
		return nil, false
	}
	if c.next == nil {
		next, err := build(c.request, c.pending)
		if err != nil {
			return nil, false
		}
		c.next = next
	}
	return c.next, true
}

// advance makes the built follow-up (a continuation's or a resume's) the
// request last sent; false when there is none to send (then nothing
// changes).
func (c *turnCore[S]) advance() bool {
	if c.next == nil || c.finished {
		return false
	}
	c.request, c.next, c.pending = c.next, nil, nil
	c.held, c.heldText = "", ""
	c.done++
	return true
}

// takeJSON keeps a rewritten JSON answer and its refused step, merged
// after the answer so far by merge.
func (c *turnCore[S]) takeJSON(out []byte, step *S, merge func(acc, next []byte) ([]byte, error)) error {
	if c.acc != nil {
		var err error
		if out, err = merge(c.acc, out); err != nil {
			return err
		}
	}
	c.acc, c.pending = out, step
	return nil
}

// finish marks the turn finished and returns the text that ends it: the
// pending step's fallback when no follow-up was sent for it, else the
// failure text.
func (c *turnCore[S]) finish(fallback func(*S) string) string {
	c.finished = true
	text := c.fail
	if c.pending != nil {
		text = fallback(c.pending)
		c.pending = nil
	}
	return text
}

// endJSON ends the JSON answer with text, when there is text and an
// answer; an answer the text cannot be added to stays as it is.
func (c *turnCore[S]) endJSON(text string, add func(body []byte, text string) ([]byte, error)) []byte {
	if text != "" && c.acc != nil {
		if out, err := add(c.acc, text); err == nil {
			c.acc = out
		}
	}
	return c.acc
}

// appendMessages returns req with msgs (JSON messages, comma-separated)
// appended to its "messages" array (Chat and Anthropic), every other byte
// kept.
func appendMessages(req, msgs []byte) ([]byte, error) {
	list := gjson.GetBytes(req, "messages")
	if !list.IsArray() {
		return nil, errors.New("request: no messages")
	}
	e, err := jsonedit.Of(req, list, list.Raw)
	if err != nil {
		return nil, err
	}
	at := e.End - 1 // the closing bracket
	repl := string(msgs)
	if hasElements(list) {
		repl = "," + repl
	}
	return jsonedit.Apply(req, []jsonedit.Edit{{Start: at, End: at, Repl: repl}}), nil
}
