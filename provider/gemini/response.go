package gemini

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
)

// ErrStreamedArguments is returned for a functionCall part whose arguments
// are streamed (Vertex's streamFunctionCallArguments: "partialArgs",
// "willContinue", or the empty {} that ends them): the call is not whole in
// one part, so the gate cannot judge it there. A gated route fails closed
// on it; see StreamsArguments for refusing such a request up front.
var ErrStreamedArguments = errors.New("gemini response: function-call arguments are streamed (partialArgs); a gated route needs them whole (toolConfig.functionCallingConfig.streamFunctionCallArguments off)")

// SyntheticIDPrefix starts the Call.ID given to a call the model sent
// without an id (Gemini 2.x): the prefix and the call's position among its
// candidate's calls ("gemini-position-1"). Pairing by position is what
// Gemini does when ids are absent (wire-formats.md §9.5), and the gate
// needs an id per call to name refusals and results. It never reaches the
// provider: functionResponse parts get an id only when the call had one.
const SyntheticIDPrefix = "gemini-position-"

// SyntheticID returns the Call.ID of the id-less call at position.
func SyntheticID(position int) string { return SyntheticIDPrefix + strconv.Itoa(position) }

// Calls returns the functionCall parts of a GenerateContentResponse (a
// unary body, or one stream chunk, which is a whole response too), every
// candidate's, in order. Each Call has Choice the candidate's "index" (its
// position in candidates when absent, as on Vertex), Position its index
// among the candidate's call parts, ID the call's "id" (Gemini 3.x) or
// SyntheticID(Position) when it has none (Gemini 2.x), Type "function",
// Name, Arguments the raw "args" object ("{}" when absent: a no-argument
// call may omit it) and Raw the whole part, thoughtSignature included.
//
// A body MayHoldCall says no to gives nil at once. Otherwise it must be
// valid JSON (an error otherwise: a call in it could not be checked). Keys
// are read in every spelling a reader takes (see member); a key given
// twice in one object is an error. A call part whose arguments are
// streamed is ErrStreamedArguments. A call id that equals another call's
// synthetic id is an error (the two could not be told apart).
func Calls(body []byte) ([]provider.Call, error) {
	if !MayHoldCall(body) {
		return nil, nil
	}
	if !gjson.ValidBytes(body) {
		return nil, errors.New("gemini response: invalid JSON around a functionCall")
	}
	cands, err := candidates(gjson.ParseBytes(body))
	if err != nil {
		return nil, err
	}
	var calls []provider.Call
	seen := make(map[int]bool)
	for _, c := range cands {
		if seen[c.index] {
			// Two candidates one index: their calls could not be told
			// apart, nor the text placed in the right one.
			return nil, fmt.Errorf("gemini response: two candidates have the index %d", c.index)
		}
		seen[c.index] = true
		ids := make(map[string]bool)
		from := len(calls)
		for _, p := range c.parts {
			if !p.call {
				continue
			}
			call := provider.Call{
				Choice:    c.index,
				Position:  len(calls) - from,
				ID:        p.id,
				Type:      "function",
				Name:      p.name,
				Arguments: []byte(p.args),
				Raw:       []byte(p.raw.Raw),
			}
			if call.ID == "" {
				call.ID = SyntheticID(call.Position)
			}
			if ids[call.ID] {
				return nil, fmt.Errorf("gemini response: two calls of candidate %d have the id %q", c.index, call.ID)
			}
			ids[call.ID] = true
			calls = append(calls, call)
		}
	}
	return calls, nil
}

// candidate is one candidate as read: its index, its content and parts.
type candidate struct {
	index   int
	raw     gjson.Result // the candidate object
	content gjson.Result // its content object
	list    gjson.Result // its parts array
	parts   []part
}

// part is one part as read.
type part struct {
	raw     gjson.Result
	call    bool
	name    string
	id      string
	args    string // raw JSON object; "{}" when absent
	sig     gjson.Result
	sigKey  string // the signature's key as spelled
	text    bool   // a text part that is no thought summary, with text
	thought bool
}

// candidates reads the candidates of a response.
func candidates(root gjson.Result) ([]candidate, error) {
	list, _, err := member(root, "candidates")
	if err != nil {
		return nil, fmt.Errorf("gemini response: %w", err)
	}
	if !list.IsArray() {
		return nil, nil
	}
	var out []candidate
	pos := 0
	list.ForEach(func(_, c gjson.Result) bool {
		var cd candidate
		if cd, err = readCandidate(c, pos); err != nil {
			return false
		}
		out = append(out, cd)
		pos++
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("gemini response: candidate %d: %w", pos, err)
	}
	return out, nil
}

func readCandidate(c gjson.Result, pos int) (candidate, error) {
	cd := candidate{index: pos, raw: c}
	idx, _, err := member(c, "index")
	if err != nil {
		return cd, err
	}
	if idx.Type == gjson.Number {
		cd.index = int(idx.Int())
	}
	if cd.content, _, err = member(c, "content"); err != nil {
		return cd, err
	}
	if cd.list, _, err = member(cd.content, "parts"); err != nil {
		return cd, err
	}
	if !cd.list.IsArray() {
		return cd, nil
	}
	cd.list.ForEach(func(_, p gjson.Result) bool {
		var pt part
		if pt, err = readPart(p); err != nil {
			return false
		}
		cd.parts = append(cd.parts, pt)
		return true
	})
	return cd, err
}

// readPart reads one part of a content (of a response, or of a request's
// history).
func readPart(p gjson.Result) (part, error) {
	pt := part{raw: p}
	fc, _, err := member(p, "functioncall")
	if err != nil {
		return pt, err
	}
	if pt.sig, pt.sigKey, err = member(p, "thoughtsignature"); err != nil {
		return pt, err
	}
	th, _, err := member(p, "thought")
	if err != nil {
		return pt, err
	}
	pt.thought = th.Type == gjson.True
	if t, _, err := member(p, "text"); err != nil {
		return pt, err
	} else if t.Type == gjson.String && t.Str != "" && !pt.thought {
		pt.text = true
	}
	if !fc.Exists() || fc.Type == gjson.Null {
		return pt, nil
	}
	if !fc.IsObject() {
		return pt, errors.New("a functionCall that is not an object")
	}
	pt.call = true
	for _, k := range []string{"partialargs", "willcontinue"} {
		v, _, err := member(fc, k)
		if err != nil {
			return pt, err
		}
		if v.Exists() {
			return pt, ErrStreamedArguments
		}
	}
	name, _, err := member(fc, "name")
	if err != nil {
		return pt, err
	}
	id, _, err := member(fc, "id")
	if err != nil {
		return pt, err
	}
	args, _, err := member(fc, "args")
	if err != nil {
		return pt, err
	}
	if !name.Exists() && !args.Exists() && !id.Exists() {
		return pt, ErrStreamedArguments // the {} that ends streamed arguments
	}
	if name.Type != gjson.String || name.Str == "" {
		return pt, errors.New("a functionCall without a name")
	}
	pt.name, pt.id = name.Str, id.Str
	switch {
	case !args.Exists() || args.Type == gjson.Null:
		pt.args = "{}"
	case args.IsObject():
		pt.args = args.Raw
	default:
		return pt, fmt.Errorf("functionCall %q: args is not an object", pt.name)
	}
	return pt, nil
}

// Fate is what becomes of one call in a rewritten response: provider's,
// as every adapter reads a Verdict. Its zero value is Held (fail closed):
// a call the gate does not inspect is marked Passed explicitly.
type Fate = provider.Fate

// The fates of a call.
const (
	// Passed: the call reaches the app untouched.
	Passed = provider.Passed
	// Held: the call is removed; its candidate's text takes the place of
	// the first held call.
	Held = provider.Held
	// Refused: the call is removed without text; its refusal goes back to
	// the model (Continuation). A refusal shown in place instead is Held,
	// its content added to the text.
	Refused = provider.Refused
)

// Rewrite takes the held and refused calls out of a response body (unary,
// or one stream chunk). calls are what Calls returned for body, fates one
// per call (Passed for the calls the gate does not inspect), texts the
// text per candidate (by Call.Choice) for its held calls.
//
// In a candidate with a call that is not Passed: held and refused call
// parts are removed; one text part {"text": text} takes the place of the
// first held call (or, with none held, is appended after the parts), after
// a blank line when the model wrote text before it (thought summaries do
// not count); text before and after stays, every passed part stays byte
// for byte. thoughtSignature: only the first call part of a parallel set
// carries it (wire-formats.md §9.8), so when that part is removed and a
// later call part of the candidate stays, the signature moves to the
// first call part that stays (unless it has one): the app's history then
// has the signature where Gemini 3 checks for it, on the turn's first
// call. The signature never rides on the waiting text. finishReason stays
// (Gemini has no reason for calls: they end with STOP); finishMessage
// ("Model generated function call(s).") is dropped when no call part of
// the candidate stays. usageMetadata stays: it counts what the model
// generated.
//
// Nothing to change returns body itself; otherwise a new slice, only the
// changed candidates spliced in.
func Rewrite(body []byte, calls []provider.Call, fates []Fate, texts map[int]string) ([]byte, error) {
	if len(calls) != len(fates) {
		return nil, errors.New("gemini response: a fate per call is needed")
	}
	touched := make(map[int]bool)
	for i, c := range calls {
		if fates[i] != Passed {
			touched[c.Choice] = true
		}
	}
	for ch, t := range texts {
		if t != "" {
			touched[ch] = true
		}
	}
	if len(touched) == 0 {
		return body, nil
	}
	cands, err := candidates(gjson.ParseBytes(body))
	if err != nil {
		return nil, err
	}
	var edits []jsonedit.Edit
	k := 0 // index into calls
	for _, c := range cands {
		n := 0
		for _, p := range c.parts {
			if p.call {
				n++
			}
		}
		if k+n > len(calls) {
			return nil, errors.New("gemini response: calls do not match the body")
		}
		cf := fates[k : k+n]
		k += n
		if !touched[c.index] {
			continue
		}
		out, err := rewriteCandidate(c, cf, texts[c.index])
		if err != nil {
			return nil, fmt.Errorf("gemini response: candidate %d: %w", c.index, err)
		}
		e, err := jsonedit.Of(body, c.raw, out)
		if err != nil {
			return nil, fmt.Errorf("gemini response: %w", err)
		}
		edits = append(edits, e)
	}
	return jsonedit.Apply(body, edits), nil
}

// rewriteCandidate returns the candidate object c with its parts
// rewritten (see Rewrite); fates are its call parts'.
func rewriteCandidate(c candidate, fates []Fate, text string) (string, error) {
	parts, left, err := keptParts(c.parts, fates, text, true)
	if err != nil {
		return "", err
	}
	content, err := sjson.SetRaw(c.content.Raw, keyOf(c.content, "parts", "parts"), "["+strings.Join(parts, ",")+"]")
	if err != nil {
		return "", err
	}
	out, err := sjson.SetRaw(c.raw.Raw, keyOf(c.raw, "content", "content"), content)
	if err != nil {
		return "", err
	}
	if left == 0 {
		if fm := keyOf(c.raw, "finishmessage", ""); fm != "" {
			if out, err = sjson.Delete(out, gjson.Escape(fm)); err != nil {
				return "", err
			}
		}
	}
	return out, nil
}

// keptParts returns the raw parts of a content that stay: the parts but
// the removed calls, with text in place of the first held call (appended
// when none is held and withText), the signature moved as Rewrite says.
// left counts the call parts kept.
func keptParts(ps []part, fates []Fate, text string, withText bool) (out []string, left int, err error) {
	var sig gjson.Result // the removed first call's signature, to move
	sigKey := ""
	first := true // the next call part is the candidate's first
	placed := text == "" || !withText
	visible := false
	k := 0
	for _, p := range ps {
		if !p.call {
			out = append(out, p.raw.Raw)
			visible = visible || p.text
			continue
		}
		f := fates[k]
		k++
		wasFirst := first
		first = false
		if f != Passed {
			if wasFirst && p.sig.Exists() {
				sig, sigKey = p.sig, p.sigKey
			}
			if f == Held && !placed {
				out = append(out, textPart(text, visible))
				placed = true
			}
			continue
		}
		raw := p.raw.Raw
		if sig.Exists() && !p.sig.Exists() {
			if raw, err = sjson.SetRaw(raw, gjson.Escape(sigKey), sig.Raw); err != nil {
				return nil, 0, err
			}
		}
		sig = gjson.Result{}
		out = append(out, raw)
		left++
	}
	if !placed {
		out = append(out, textPart(text, visible))
	}
	return out, left, nil
}

// textPart is a text part holding text, after a blank line when the model
// wrote text before it.
func textPart(text string, after bool) string {
	if after {
		text = "\n\n" + text
	}
	b := append([]byte(`{"text":`), gjson.AppendJSONString(nil, text)...)
	return string(append(b, '}'))
}

// keyOf returns the key of obj's member folding to key, as spelled, or def
// when it has none.
func keyOf(obj gjson.Result, key, def string) string {
	if _, k, err := member(obj, key); err == nil && k != "" {
		return gjson.Escape(k)
	}
	return def
}

// Content returns the model content of candidate ch of a response as Hold
// gets it and as it would be sent back in a request's history:
// {"role":"model","parts":[every part, as the response has them]}. For a
// stream, give the parts of every chunk of the candidate to ContentOf.
func Content(body []byte, ch int) ([]byte, error) {
	cands, err := candidates(gjson.ParseBytes(body))
	if err != nil {
		return nil, err
	}
	for _, c := range cands {
		if c.index == ch {
			var raws []string
			for _, p := range c.parts {
				raws = append(raws, p.raw.Raw)
			}
			return ContentOf(raws), nil
		}
	}
	return nil, fmt.Errorf("gemini response: no candidate %d", ch)
}

// ContentOf returns {"role":"model","parts":[parts…]}.
func ContentOf(parts []string) []byte {
	b := []byte(`{"role":"model","parts":[`)
	b = append(b, strings.Join(parts, ",")...)
	return append(b, "]}"...)
}

// Parts returns the raw parts of candidate ch of a response (a stream
// chunk's increment), in order; nil when it has none.
func Parts(body []byte, ch int) ([]string, error) {
	cands, err := candidates(gjson.ParseBytes(body))
	if err != nil {
		return nil, err
	}
	var raws []string
	for _, c := range cands {
		if c.index == ch {
			for _, p := range c.parts {
				raws = append(raws, p.raw.Raw)
			}
		}
	}
	return raws, nil
}
