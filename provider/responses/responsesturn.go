package responses

import (
	"context"
	"errors"
	"io"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
	"github.com/toolgate/toolgate/wire/turn"
)

// NewTurn returns the rewriter of the answer to one Responses API request
// (see Turn). Each response is rewritten as by NewStream or RewriteJSON, and:
//
// When Hold refuses calls (all with a call_id) of a response whose status is
// "completed", fewer than continuations follow-ups were made, the request is
// not a background one and the refusals can go back without breaking the
// provider's pairing rules (below), the refused calls are taken out without
// text and Continuation gives the follow-up request, every other byte of the
// last request kept:
//
//   - With previous_response_id: previous_response_id becomes this
//     response's id and "input" the tool results alone (one
//     {"type":"function_call_output","call_id":…,"output":<the refusal>} per
//     refused call; "custom_tool_call_output" for a custom tool). Only when
//     every call the app would run in the response is refused: the provider
//     wants a result for each call of the previous response, and a held or
//     passed call has none yet.
//   - With conversation: "input" becomes the tool results alone (the
//     conversation holds the calls); same condition.
//   - Otherwise (the input list the app manages; a string input becomes
//     [{"role":"user","content":<string>}] first): "input" is extended by the
//     response's output items verbatim, up to and including the last refused
//     call, then the tool results. A held call among them stays, with the
//     result "Waiting for the person's answer; nothing has run yet." (the
//     app's next request carries the real one); a passed call, or a call the
//     gate does not inspect, is left out, as its result is the app's to give,
//     unless a reasoning item comes right before it (a reasoning item must
//     be followed by its original next item, wire-formats.md §2.4): then no
//     follow-up is made and the refusals are shown in place. With
//     store:false, reasoning items without encrypted_content are left out
//     (the provider could not resolve them).
//
// Streams. The terminal event (response.completed) of a response whose
// refusals go back is withheld, with any [DONE] after it. The follow-up's
// events then continue the same answer: its response.created,
// response.in_progress and response.queued are dropped, its output_index
// values follow the items already written and every sequence_number is
// raised above the last one written. Its calls are judged again (same
// rules, recursively). One terminal event ends the answer: the last
// response's, whose response.output is the merged output the app read
// (every response's items, as rewritten) and whose response.usage is the
// sum of every response's usage (numbers added member by member, nested
// details too). Its response.id is the first response's, as
// response.created said (openai-go's Responses accumulator rejects an event
// of another response), except with previous_response_id: there it is the
// last response's, the stored response whose history holds the refused
// calls and their results, which an app continuing with
// previous_response_id must name (the first one's calls lack results: the
// provider would answer 400 "No tool output found"). Text and reasoning
// deltas flow as they arrive. If the turn finishes while the end is still
// withheld it is written then: after the refusals' contents as a message
// item when no follow-up was sent, after the Fail text, or after
// "Toolgate could not continue: the provider's answer ended early." when
// the follow-up stream ended without its terminal event.
//
// JSON. The answer is the last response's body, its "output" the items of
// every response (as rewritten), its "usage" their sum and its "id" the
// first response's (the last one's with previous_response_id).
func (Responses) NewTurn(ctx context.Context, h provider.Holder, request []byte, continuations int) provider.Turn {
	t := &respTurn{ctx: ctx, h: h, Core: turn.Core[respStep]{Request: request, Max: continuations}}
	t.s.t = t
	t.s.lastSeq = -1
	t.s.r.first = -1
	return t
}

// NewStream returns the rewriter of a Responses API event stream
// (wire-formats.md §2.2), for a request that cannot continue: refusals are
// shown in place. The upstream body may arrive in any split.
//
// Events are passed on whole, as soon as their closing blank line arrives;
// flush (may be nil) is called once after each Write that wrote any. An
// event whose bytes hold neither "function_call" nor "custom_tool_call" is
// written as it came, by a byte search, until the first inspected call
// begins. From its response.output_item.added on, every event is held
// back until the response's terminal event (response.completed,
// .incomplete or .failed), when Hold judges the response's inspected calls.
// Then the held events go out: those of held and refused calls dropped
// (their arguments and input deltas included), the message item in place
// of the first held one through the events a real message uses
// (output_item.added, content_part.added, output_text.delta,
// output_text.done, content_part.done, output_item.done), the passed calls'
// own events as they came, every output_index made dense and every
// sequence_number strictly increasing. The terminal event's
// response.output is patched the same way, as openai-node's finalResponse
// and @openai/agents read calls from it (wire-formats.md §0.3). No event
// type is invented.
//
// Errors fail closed: nothing more is written. They come from invalid JSON
// in an event naming a call, a call item without a name or output_index,
// argument fragments of a call that never began, more than 32 MiB held
// back, an event over 8 MiB, or dst and flush. Close reports a body that
// ends mid-line. A stream that ends (or sends an "error" event) before its
// terminal event writes what it held back, minus every inspected call,
// which is never judged. A second terminal event of the same response is
// dropped.
func (Responses) NewStream(ctx context.Context, dst io.Writer, flush func() error, h provider.Holder) provider.Stream {
	return Responses{}.NewTurn(ctx, h, nil, 0).Stream(dst, flush)
}

// respTurn is a Responses Turn. Its stream is held by value: a turn is one
// allocation.
type respTurn struct {
	ctx context.Context
	h   provider.Holder

	turn.Core[respStep]

	read       bool   // readRequest ran
	mode       byte   // how a follow-up is made: 0 it cannot be; 'a' input list; 'p' previous_response_id; 'c' conversation
	conv       string // the request's conversation id
	storeFalse bool   // the request set store:false

	s respStream // stream mode
}

// readRequest reads what a follow-up needs from the request body, once.
func (t *respTurn) readRequest() {
	if t.read {
		return
	}
	t.read = true
	if t.Request == nil || !gjson.ValidBytes(t.Request) {
		return
	}
	r := gjson.ParseBytes(t.Request)
	if !r.IsObject() {
		return
	}
	t.storeFalse = r.Get("store").Type == gjson.False
	switch conv := r.Get("conversation"); {
	case conv.Type == gjson.String:
		t.conv = conv.Str
	case conv.IsObject():
		t.conv = conv.Get("id").Str
	}
	if r.Get("background").Type == gjson.True {
		return // its answer is fetched later, not by this request
	}
	prev, in := r.Get("previous_response_id"), r.Get("input")
	switch {
	case prev.Type == gjson.String && prev.Str != "":
		t.mode = 'p'
	case t.conv != "":
		t.mode = 'c'
	case in.IsArray() || in.Type == gjson.String || jsonedit.IsNull(in):
		t.mode = 'a'
	}
}

// allowed reports whether a response's refusals may go back to the model.
func (t *respTurn) allowed() bool {
	if t.Done >= t.Max || t.Request == nil {
		return false
	}
	t.readRequest()
	return t.mode != 0
}

// stepFor returns the follow-up's items and results for the refused calls,
// or nil when they cannot go back (see NewTurn).
func (t *respTurn) stepFor(items []gjson.Result, calls []*respCall, contents []string, responseID string) *respStep {
	type judged struct {
		c       *respCall
		content string
	}
	at := make(map[int]judged, len(calls))
	last := -1
	for i, c := range calls {
		if c.fate == provider.Refused {
			if c.pos < 0 {
				return nil // not among the items: where it stood is unknown
			}
			last = max(last, c.pos)
		}
		if c.pos >= 0 {
			at[c.pos] = judged{c, contents[i]}
		}
	}
	if last < 0 || items == nil {
		return nil
	}
	step := &respStep{responseID: responseID}
	switch t.mode {
	case 'p', 'c':
		if t.mode == 'p' && responseID == "" {
			return nil
		}
		for i, it := range items {
			if !isClientCall(it.Get("type").Str) {
				continue
			}
			j, ok := at[i]
			if !ok || j.c.fate != provider.Refused {
				return nil
			}
			step.outputs = append(step.outputs, toolOutput(j.c.typ, j.c.callID, j.content))
		}
		return step
	case 'a':
		for k := 0; k <= last; k++ {
			it := items[k]
			typ := it.Get("type").Str
			switch {
			case isClientCall(typ):
				j, ok := at[k]
				switch {
				case ok && j.c.fate == provider.Refused:
					step.outputs = append(step.outputs, toolOutput(j.c.typ, j.c.callID, j.content))
				case ok && j.c.fate == provider.Held && j.c.callID != "":
					step.outputs = append(step.outputs, toolOutput(j.c.typ, j.c.callID, respWaitingOutput))
				default:
					if k > 0 && items[k-1].Get("type").Str == "reasoning" {
						return nil
					}
					continue
				}
			case typ == "reasoning" && t.storeFalse && it.Get("encrypted_content").Str == "":
				continue
			}
			step.items = append(step.items, it.Raw)
		}
		return step
	}
	return nil
}

// toolOutput is the input item carrying a call's result.
func toolOutput(typ, callID, output string) string {
	b := []byte(`{"type":"function_call_output","call_id":`)
	if typ == "custom" {
		b = []byte(`{"type":"custom_tool_call_output","call_id":`)
	}
	b = gjson.AppendJSONString(b, callID)
	b = append(b, `,"output":`...)
	b = gjson.AppendJSONString(b, output)
	return string(append(b, '}'))
}

// followUp returns the follow-up request body for step.
func (t *respTurn) followUp(step *respStep) ([]byte, error) {
	req := t.Request
	switch t.mode {
	case 'p':
		out, err := sjson.SetBytes(req, "previous_response_id", step.responseID)
		if err != nil {
			return nil, err
		}
		return sjson.SetRawBytes(out, "input", []byte(joinItems(step.outputs)))
	case 'c':
		return sjson.SetRawBytes(req, "input", []byte(joinItems(step.outputs)))
	case 'a':
		return appendInput(req, append(append([]string(nil), step.items...), step.outputs...))
	}
	return nil, errors.New("responses request: no input to continue")
}

// resumeRequest returns the request the app's next one would be, with
// nothing new from the person, for the held calls of the response
// responseID shown as text: with previous_response_id, that response's id
// and an empty input (the gate gives the results, see provider.StateRestorer);
// with conversation, an empty input; otherwise the input with
// {"role":"assistant","content":text} appended.
func (t *respTurn) resumeRequest(req []byte, text, responseID string) ([]byte, error) {
	switch t.mode {
	case 'p':
		if responseID == "" {
			return nil, errors.New("responses request: no response id to continue from")
		}
		out, err := sjson.SetBytes(req, "previous_response_id", responseID)
		if err != nil {
			return nil, err
		}
		return sjson.SetRawBytes(out, "input", []byte("[]"))
	case 'c':
		return sjson.SetRawBytes(req, "input", []byte("[]"))
	case 'a':
		msg := append([]byte(`{"role":"assistant","content":`), gjson.AppendJSONString(nil, text)...)
		return appendInput(req, []string{string(append(msg, '}'))})
	}
	return nil, errors.New("responses request: no input to continue")
}

// appendInput returns req with the items add appended to its input list (a
// string input becomes [{"role":"user","content":<string>}] first; an
// absent or null one the list of add), every other byte kept.
func appendInput(req []byte, add []string) ([]byte, error) {
	in := gjson.GetBytes(req, "input")
	switch {
	case in.IsArray():
		joined := joinItems(add)
		repl := in.Raw[:len(in.Raw)-1]
		if turn.HasElements(in) {
			repl += ","
		}
		repl += joined[1:]
		e, err := jsonedit.Of(req, in, repl)
		if err != nil {
			return nil, err
		}
		return jsonedit.Apply(req, []jsonedit.Edit{e}), nil
	case in.Type == gjson.String:
		user := `{"role":"user","content":` + in.Raw + `}`
		e, err := jsonedit.Of(req, in, joinItems(append([]string{user}, add...)))
		if err != nil {
			return nil, err
		}
		return jsonedit.Apply(req, []jsonedit.Edit{e}), nil
	case jsonedit.IsNull(in):
		return sjson.SetRawBytes(req, "input", []byte(joinItems(add)))
	}
	return nil, errors.New("responses request: no input to continue")
}

// Resume implements Turn: the follow-up request is the one the app's next
// request would be with nothing new from the person (see resumeRequest),
// history then restored by restore; its response continues the answer as
// a continuation's does.
func (t *respTurn) Resume(restore func([]byte) ([]byte, error)) ([]byte, bool) {
	return t.ResumeWith(func(req []byte, text string) ([]byte, error) {
		return t.resumeRequest(req, text, t.s.r.id)
	}, restore)
}

// anyClientCall reports whether any of the items is a call the app runs.
func anyClientCall(items []string) bool {
	for _, it := range items {
		if isClientCall(gjson.Get(it, "type").Str) {
			return true
		}
	}
	return false
}

// Stream implements Turn.
func (t *respTurn) Stream(dst io.Writer, flush func() error) provider.Stream {
	t.Streaming = true
	t.s.Attach(dst, flush, "responses stream", &t.s)
	return &t.s
}

// JSON implements Turn.
func (t *respTurn) JSON(body []byte) error {
	out, step, err := rewriteResponsesJSON(t.ctx, body, t.h, t)
	if err != nil {
		return err
	}
	return t.TakeJSON(out, step, func(acc, next []byte) ([]byte, error) {
		return mergeResponsesJSON(acc, next, t.mode != 'p')
	})
}

// Continuation implements Turn.
func (t *respTurn) Continuation() ([]byte, bool) {
	return t.FollowUp(!t.Streaming || t.s.Err() == nil && t.s.ending, func(_ []byte, step *respStep) ([]byte, error) {
		return t.followUp(step)
	})
}

// Continue implements Turn.
func (t *respTurn) Continue() {
	if t.Advance() && t.Streaming {
		t.s.continueResponse()
	}
}

// Finish implements Turn.
func (t *respTurn) Finish() ([]byte, error) {
	if t.Finished {
		return t.Acc, t.s.Err()
	}
	body, err := t.FinishWith(&t.s, func(s *respStep) string { return s.fallback }, appendMessage)
	if err != nil || !t.Streaming {
		return body, err
	}
	s := &t.s
	if s.owesDone {
		s.owesDone = false
		s.Emit([]byte("data: [DONE]\n\n"))
	}
	s.FlushNow()
	return nil, s.Err()
}

// Ending implements turn.Ender: the terminal event is withheld.
func (s *respStream) Ending() bool { return s.ending }

// Continued implements turn.Ender: a follow-up's stream that never
// ended.
func (s *respStream) Continued() bool { return s.inCont && !s.r.ended }

// WriteEnd implements turn.Ender: the withheld end (writeEnd), but only
// a terminal event kept to end with: a follow-up that ended left nothing
// withheld.
func (s *respStream) WriteEnd(text string) {
	if s.ending || s.endData != nil {
		s.writeEnd(text)
	}
}

// mergeResponsesJSON merges the follow-up body next (already rewritten)
// into the answer acc; see NewTurn. With firstID the answer keeps acc's id.
func mergeResponsesJSON(acc, next []byte, firstID bool) ([]byte, error) {
	if !gjson.ValidBytes(next) {
		return nil, errors.New("responses response: follow-up is not valid JSON")
	}
	var items []string
	for _, b := range [][]byte{acc, next} {
		gjson.GetBytes(b, "output").ForEach(func(_, it gjson.Result) bool {
			items = append(items, it.Raw)
			return true
		})
	}
	out, err := setOutput(next, items)
	if err != nil {
		return nil, err
	}
	if u := turn.SumUsage(gjson.GetBytes(acc, "usage").Raw, gjson.GetBytes(next, "usage").Raw); u != "" && !jsonedit.IsNull(gjson.Parse(u)) {
		if out, err = sjson.SetRawBytes(out, "usage", []byte(u)); err != nil {
			return nil, err
		}
	}
	if id := gjson.GetBytes(acc, "id"); firstID && id.Exists() {
		if out, err = sjson.SetRawBytes(out, "id", []byte(id.Raw)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendMessage appends a message item holding text to the output of body.
func appendMessage(body []byte, text string) ([]byte, error) {
	var items []string
	gjson.GetBytes(body, "output").ForEach(func(_, it gjson.Result) bool {
		items = append(items, it.Raw)
		return true
	})
	salt := gjson.GetBytes(body, "id").Str + "/end/" + strconv.Itoa(len(items))
	return setOutput(body, append(items, messageItem(synthID(text, salt), text)))
}

// Interface guards
var (
	_ provider.Adapter = Responses{}
	_ provider.Turn    = (*respTurn)(nil)
	_ provider.Stream  = (*respStream)(nil)
)
