// Package turn is the bookkeeping every adapter's provider.Turn shares:
// the follow-ups allowed and sent, the refused calls waiting to go back,
// the held step an answer may wait for, the JSON answer so far, the end
// written when the turn finishes (a stream says what it withheld through
// Ender); and the small JSON helpers turns use (messages appended to a
// request, usage summed).
package turn

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
)

// Core is the bookkeeping every adapter's Turn shares: the request last
// sent upstream, the follow-ups allowed and sent, the step of refused calls
// waiting to go back (S is the adapter's step), the follow-up body once
// built, the text for a follow-up that brought no usable answer, and the
// JSON answer so far. What differs between wire protocols (how a follow-up
// is built, how a JSON answer is merged and ended, how a stream ends) the
// adapter passes in.
type Core[S any] struct {
	Request  []byte // the body of the last request sent upstream
	Max      int    // follow-ups allowed
	Done     int    // follow-ups sent
	Pending  *S     // refused calls of the last response, to send back
	Next     []byte // the follow-up body, once built
	FailText string // the text for a follow-up that brought no usable answer

	Streaming bool
	Acc       []byte // JSON mode: the answer so far
	Finished  bool

	// Resume: the answer waits for the person's answers to held calls.
	resume   bool   // AllowResume was called
	held     string // the step the last response's held calls wait in, when the answer may go on after them
	heldText string // the text shown in their place, which carries the step's link
}

// AllowResume implements provider.Turn.
func (c *Core[S]) AllowResume() { c.resume = true }

// Held implements provider.Turn.
func (c *Core[S]) Held() string {
	if c.Finished || c.Pending != nil {
		return ""
	}
	return c.held
}

// HoldsStep notes the step of a response's held calls when the answer may
// wait for them and go on (see Turn.Held): resume allowed, a stream, one
// step holding every held call, a follow-up left, and ok, which the
// adapter gives: no call of the turn reached the app (the app would have
// to answer it first) and the request allows a follow-up. Call it after
// the response's pending step is known: refused calls go back first.
func (c *Core[S]) HoldsStep(v provider.Verdict, ok bool) {
	c.held, c.heldText = "", ""
	if ok && c.resume && c.Streaming && v.Step != "" && v.Text != "" && c.Pending == nil && c.Done < c.Max && c.Request != nil {
		c.held, c.heldText = v.Step, v.Text
	}
}

// HeldStep is the step HoldsStep last noted ("" for none), whatever the
// turn did since (Held is "" once the turn finished or calls wait to go
// back).
func (c *Core[S]) HeldStep() string { return c.held }

// Withholds reports whether the current response's end is to be withheld:
// a follow-up may continue the answer (refused calls go back, or held ones
// may be answered while the stream waits).
func (c *Core[S]) Withholds() bool { return c.Pending != nil || c.held != "" }

// ResumeWith makes the follow-up request for the held step (see
// Turn.Resume): build appends to the last request the assistant message
// the app read, its text holding the step's link, and restore restores
// the history behind that link, as in the app's next request. A body that
// restore leaves as it was restored nothing: no follow-up is made.
func (c *Core[S]) ResumeWith(build func(request []byte, text string) ([]byte, error), restore func([]byte) ([]byte, error)) ([]byte, bool) {
	if c.Held() == "" {
		return nil, false
	}
	body, err := build(c.Request, c.heldText)
	if err != nil {
		return nil, false
	}
	restored, err := restore(body)
	if err != nil || bytes.Equal(restored, body) {
		return nil, false
	}
	c.Next = restored
	return restored, true
}

// Fail implements provider.Turn.
func (c *Core[S]) Fail(reason string) {
	if c.Done > 0 && c.FailText == "" {
		c.FailText = provider.CouldNotContinue(reason)
	}
}

// FollowUp returns the follow-up for the pending step, built once by
// build. ready says whether the response may be continued now (a stream
// only at its withheld end, with no error). A step that cannot be built is
// not continued: Finish shows its refusals in place.
func (c *Core[S]) FollowUp(ready bool, build func(request []byte, step *S) ([]byte, error)) ([]byte, bool) {
	if c.Pending == nil || c.Finished || !ready {
		return nil, false
	}
	if c.Next == nil {
		next, err := build(c.Request, c.Pending)
		if err != nil {
			return nil, false
		}
		c.Next = next
	}
	return c.Next, true
}

// Advance makes the built follow-up (a continuation's or a resume's) the
// request last sent; false when there is none to send (then nothing
// changes).
func (c *Core[S]) Advance() bool {
	if c.Next == nil || c.Finished {
		return false
	}
	c.Request, c.Next, c.Pending = c.Next, nil, nil
	c.held, c.heldText = "", ""
	c.Done++
	return true
}

// TakeJSON keeps a rewritten JSON answer and its refused step, merged
// after the answer so far by merge.
func (c *Core[S]) TakeJSON(out []byte, step *S, merge func(acc, next []byte) ([]byte, error)) error {
	if c.Acc != nil {
		var err error
		if out, err = merge(c.Acc, out); err != nil {
			return err
		}
	}
	c.Acc, c.Pending = out, step
	return nil
}

// End marks the turn finished and returns the text that ends it: the
// pending step's fallback when no follow-up was sent for it, else the
// failure text.
func (c *Core[S]) End(fallback func(*S) string) string {
	c.Finished = true
	text := c.FailText
	if c.Pending != nil {
		text = fallback(c.Pending)
		c.Pending = nil
	}
	return text
}

// Ender is a turn's stream as FinishWith and EndStream end it: what
// every adapter's stream tells about its withheld end, and how it writes
// it.
type Ender interface {
	// Err is the stream's error; once it has one nothing more is written.
	Err() error
	// Ending reports whether the last response finished with its end
	// withheld (a follow-up could have continued it).
	Ending() bool
	// Continued reports whether the stream read a follow-up that ended
	// without finishing the message.
	Continued() bool
	// WriteEnd writes the withheld end after text ("" for none); a stream
	// with nothing withheld may write nothing.
	WriteEnd(text string)
}

// FinishWith is a Turn's Finish for what every adapter shares: once
// finished, the answer so far and s's error; else End with fallback, then
// the JSON answer ended by add (see EndJSON), or the stream s ended by
// EndStream.
func (c *Core[S]) FinishWith(s Ender, fallback func(*S) string, add func(body []byte, text string) ([]byte, error)) ([]byte, error) {
	if c.Finished {
		return c.Acc, s.Err()
	}
	text := c.End(fallback)
	if !c.Streaming {
		return c.EndJSON(text, add), nil
	}
	return nil, c.EndStream(s, text)
}

// EndStream writes the stream's withheld end when the turn finishes, text
// being what End returned: after text when the last response finished
// (its end withheld), else after the Fail text, else, when a follow-up's
// stream ended without finishing the message, after "Toolgate could not
// continue: the provider's answer ended early.". It returns s's error:
// a stream that failed gets nothing more.
func (c *Core[S]) EndStream(s Ender, text string) error {
	if err := s.Err(); err != nil {
		return err
	}
	switch {
	case s.Ending():
		s.WriteEnd(text)
	case c.FailText != "":
		s.WriteEnd(c.FailText)
	case s.Continued():
		s.WriteEnd(provider.CouldNotContinue("the provider's answer ended early."))
	}
	return s.Err()
}

// EndJSON ends the JSON answer with text, when there is text and an
// answer; an answer the text cannot be added to stays as it is.
func (c *Core[S]) EndJSON(text string, add func(body []byte, text string) ([]byte, error)) []byte {
	if text != "" && c.Acc != nil {
		if out, err := add(c.Acc, text); err == nil {
			c.Acc = out
		}
	}
	return c.Acc
}

// AppendMessages returns req with msgs (JSON messages, comma-separated)
// appended to its "messages" array (Chat and Anthropic), every other byte
// kept.
func AppendMessages(req, msgs []byte) ([]byte, error) {
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
	if HasElements(list) {
		repl = "," + repl
	}
	return jsonedit.Apply(req, []jsonedit.Edit{{Start: at, End: at, Repl: repl}}), nil
}

// HasElements reports whether the JSON array arr has at least one element.
func HasElements(arr gjson.Result) bool {
	found := false
	arr.ForEach(func(_, _ gjson.Result) bool {
		found = true
		return false
	})
	return found
}

// SumUsage returns the usage objects a and b (raw JSON; "" or null for
// none) added up: numbers present in both are summed, nested objects
// (completion_tokens_details, …) likewise; any other member is b's if b
// has it, else a's.
func SumUsage(a, b string) string {
	ra, rb := gjson.Parse(a), gjson.Parse(b)
	switch {
	case !rb.IsObject():
		if ra.IsObject() {
			return ra.Raw
		}
		return b
	case !ra.IsObject():
		return rb.Raw
	}
	out := []byte{'{'}
	member := func(k gjson.Result, v string) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, k.Raw...)
		out = append(out, ':')
		out = append(out, v...)
	}
	inA := make(map[string]bool)
	ra.ForEach(func(k, va gjson.Result) bool {
		inA[k.Str] = true
		vb := rb.Get(gjson.Escape(k.Str))
		switch {
		case va.Type == gjson.Number && vb.Type == gjson.Number:
			member(k, addNumbers(va, vb))
		case va.IsObject() && vb.IsObject():
			member(k, SumUsage(va.Raw, vb.Raw))
		case vb.Exists() && vb.Type != gjson.Null:
			member(k, vb.Raw)
		default:
			member(k, va.Raw)
		}
		return true
	})
	rb.ForEach(func(k, vb gjson.Result) bool {
		if !inA[k.Str] {
			member(k, vb.Raw)
		}
		return true
	})
	return string(append(out, '}'))
}

// addNumbers adds two JSON numbers: as integers when both are written as
// integers, else as floats.
func addNumbers(a, b gjson.Result) string {
	if isInt(a.Raw) && isInt(b.Raw) {
		x, errA := strconv.ParseInt(a.Raw, 10, 64)
		y, errB := strconv.ParseInt(b.Raw, 10, 64)
		if errA == nil && errB == nil && (y <= 0 || x <= 1<<63-1-y) && (y >= 0 || x >= -1<<63-y) {
			return strconv.FormatInt(x+y, 10)
		}
	}
	return strconv.FormatFloat(a.Float()+b.Float(), 'g', -1, 64)
}

func isInt(raw string) bool {
	if raw == "" {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return false
		}
	}
	return true
}

// Interface guard
