package interceptor

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
}

// Fail implements Turn.
func (c *turnCore[S]) Fail(reason string) {
	if c.done > 0 && c.fail == "" {
		c.fail = couldNotContinue(reason)
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

// advance makes the built follow-up the request last sent; false when
// there is none to send (then nothing changes).
func (c *turnCore[S]) advance() bool {
	if c.next == nil || c.pending == nil || c.finished {
		return false
	}
	c.request, c.next, c.pending = c.next, nil, nil
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
