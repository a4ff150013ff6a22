package gemini

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
	"github.com/toolgate/toolgate/wire/keyscan"
)

// Continuation returns the body of the follow-up request that sends a
// response's refused calls back to the model: request (the body last sent
// upstream) with two contents appended to its "contents" array, every
// other byte kept:
//
//   - {"role":"model","parts":[…]}: the model content the calls came in
//     (content, as Content gives it) up to and including its last refused
//     call, without the call parts that were not refused (Gemini wants a
//     functionResponse for every call of a turn, and the passed and held
//     ones get theirs later); the set's thoughtSignature moved to the
//     first call part kept when its own part was left out, as Rewrite
//     does, since Gemini 3 refuses a function-calling turn whose first
//     call has none;
//   - {"role":"user","parts":[…]}: one
//     {"functionResponse":{"name":…,"id":…,"response":{"error":<content>}}}
//     per refused call, in call order, "id" only when the model gave the
//     call one (calls of Gemini 2.x are paired by position).
//
// calls and fates are the candidate's calls (every call part, in order, as
// Calls gives them) and their fates; contents the refusal content per call.
// No refused call, or a request without a "contents" array, is an error.
func Continuation(request, content []byte, calls []provider.Call, fates []Fate, contents []string) ([]byte, error) {
	if !gjson.ValidBytes(request) {
		return nil, errors.New("gemini request: invalid JSON")
	}
	list, _, err := member(gjson.ParseBytes(request), "contents")
	if err != nil {
		return nil, fmt.Errorf("gemini request: %w", err)
	}
	if !list.IsArray() {
		return nil, errors.New("gemini request: no contents")
	}
	ps, err := contentParts(content)
	if err != nil {
		return nil, err
	}
	last := -1
	k := 0
	for i, p := range ps {
		if p.call {
			if k >= len(fates) {
				return nil, errors.New("gemini response: calls do not match the content")
			}
			if fates[k] == Refused {
				last = i
			}
			k++
		}
	}
	if last < 0 {
		return nil, errors.New("gemini response: no refused call to send back")
	}
	// Keep the refused calls, leave out the others; text is not placed.
	keep := make([]Fate, len(fates))
	for i, f := range fates {
		keep[i] = Refused
		if f == Refused {
			keep[i] = Passed
		}
	}
	kept, _, err := keptParts(ps[:last+1], keep, "", false)
	if err != nil {
		return nil, err
	}
	b := []byte(`{"role":"model","parts":[`)
	b = append(b, strings.Join(kept, ",")...)
	b = append(b, `]},{"role":"user","parts":[`...)
	n := 0
	for i, c := range calls {
		if i >= len(fates) || fates[i] != Refused {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendResponse(b, "functionResponse", c, "error", contents[i])
	}
	b = append(b, "]}"...)
	return appendContents(request, list, b)
}

// appendResponse appends a functionResponse part (under key, the spelling
// the history uses) answering call c, its response {field: text}.
func appendResponse(b []byte, key string, c provider.Call, field, text string) []byte {
	b = append(b, `{"`...)
	b = append(b, key...)
	b = append(b, `":{"name":`...)
	b = gjson.AppendJSONString(b, c.Name)
	if c.ID != "" && !strings.HasPrefix(c.ID, SyntheticIDPrefix) {
		b = append(b, `,"id":`...)
		b = gjson.AppendJSONString(b, c.ID)
	}
	b = append(b, `,"response":{`...)
	b = gjson.AppendJSONString(b, field)
	b = append(b, ':')
	b = gjson.AppendJSONString(b, text)
	return append(b, "}}}"...)
}

// appendContents returns req with contents (JSON objects, comma-separated)
// appended to its contents array list.
func appendContents(req []byte, list gjson.Result, contents []byte) ([]byte, error) {
	e, err := jsonedit.Of(req, list, list.Raw)
	if err != nil {
		return nil, fmt.Errorf("gemini request: %w", err)
	}
	at := e.End - 1 // the closing bracket
	repl := string(contents)
	if len(list.Array()) > 0 {
		repl = "," + repl
	}
	return jsonedit.Apply(req, []jsonedit.Edit{{Start: at, End: at, Repl: repl}}), nil
}

// AppendResumeContent returns req with the model content the app read
// appended to its contents: {"role":"model","parts":[{"text":text}]}, text
// holding the held step's link, for the history behind it to be restored
// (Turn.Resume).
func AppendResumeContent(req []byte, text string) ([]byte, error) {
	if !gjson.ValidBytes(req) {
		return nil, errors.New("gemini request: invalid JSON")
	}
	list, _, err := member(gjson.ParseBytes(req), "contents")
	if err != nil {
		return nil, fmt.Errorf("gemini request: %w", err)
	}
	if !list.IsArray() {
		return nil, errors.New("gemini request: no contents")
	}
	b := append([]byte(`{"role":"model","parts":[{"text":`), gjson.AppendJSONString(nil, text)...)
	return appendContents(req, list, append(b, "}]}"...))
}

// contentParts reads the parts of a content object.
func contentParts(content []byte) ([]part, error) {
	if !gjson.ValidBytes(content) {
		return nil, errors.New("gemini content: invalid JSON")
	}
	list, _, err := member(gjson.ParseBytes(content), "parts")
	if err != nil {
		return nil, err
	}
	if !list.IsArray() {
		return nil, errors.New("gemini content: no parts")
	}
	return readParts(list)
}

// Merge merges the follow-up response next (already rewritten) into the
// answer so far acc, both unary bodies of one candidate (a continuation is
// made only for one): next's parts are appended to acc's (its first
// visible text after a blank line when acc has visible text),
// finishReason and finishMessage come from next (finishMessage dropped
// when next has none), usageMetadata is summed (SumUsage). Every other
// byte of acc stays: its responseId and modelVersion stand for the answer.
func Merge(acc, next []byte) ([]byte, error) {
	if !gjson.ValidBytes(next) {
		return nil, errors.New("gemini response: the follow-up is not valid JSON")
	}
	ac, err := candidates(gjson.ParseBytes(acc))
	if err != nil {
		return nil, err
	}
	nc, err := candidates(gjson.ParseBytes(next))
	if err != nil {
		return nil, err
	}
	if len(ac) != 1 || len(nc) != 1 {
		return nil, errors.New("gemini response: a follow-up continues one candidate")
	}
	a, n := ac[0], nc[0]
	var parts []string
	visible := false
	for _, p := range a.parts {
		parts = append(parts, p.raw.Raw)
		visible = visible || p.text
	}
	for _, p := range n.parts {
		raw := p.raw.Raw
		if p.text && visible {
			t, k, _ := member(p.raw, "text")
			if raw, err = sjson.Set(raw, gjson.Escape(k), "\n\n"+t.Str); err != nil {
				return nil, err
			}
			visible = false
		}
		parts = append(parts, raw)
	}
	cand := a.raw.Raw
	content := a.content.Raw
	if !a.content.IsObject() {
		content = `{"role":"model"}`
	}
	if content, err = sjson.SetRaw(content, keyOf(a.content, "parts", "parts"), "["+strings.Join(parts, ",")+"]"); err != nil {
		return nil, err
	}
	if cand, err = sjson.SetRaw(cand, keyOf(a.raw, "content", "content"), content); err != nil {
		return nil, err
	}
	for _, k := range []string{"finishreason", "finishmessage"} {
		v, _, _ := member(n.raw, k)
		name := keyOf(a.raw, k, "")
		switch {
		case v.Exists() && name == "":
			name = map[string]string{"finishreason": "finishReason", "finishmessage": "finishMessage"}[k]
			fallthrough
		case v.Exists():
			cand, err = sjson.SetRaw(cand, name, v.Raw)
		case name != "":
			cand, err = sjson.Delete(cand, name)
		}
		if err != nil {
			return nil, err
		}
	}
	e, err := jsonedit.Of(acc, a.raw, cand)
	if err != nil {
		return nil, err
	}
	edits := []jsonedit.Edit{e}
	accRoot := gjson.ParseBytes(acc)
	au, _, _ := member(accRoot, "usagemetadata")
	nu, _, _ := member(gjson.ParseBytes(next), "usagemetadata")
	if nu.IsObject() {
		sum := SumUsage(au.Raw, nu.Raw)
		if au.Exists() {
			ue, err := jsonedit.Of(acc, au, sum)
			if err != nil {
				return nil, err
			}
			edits = append(edits, ue)
		} else {
			out := jsonedit.Apply(acc, edits)
			return sjson.SetRawBytes(out, "usageMetadata", []byte(sum))
		}
	}
	return jsonedit.Apply(acc, edits), nil
}

// AppendText appends a text part holding text to candidate 0 of a unary
// body (after a blank line when it has visible text), and drops
// finishMessage when no call part is left: the end of an answer whose
// follow-up was not sent, or failed.
func AppendText(body []byte, text string) ([]byte, error) {
	cs, err := candidates(gjson.ParseBytes(body))
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, errors.New("gemini response: no candidate")
	}
	c := cs[0]
	fates := make([]Fate, 0)
	for _, p := range c.parts {
		if p.call {
			fates = append(fates, Passed)
		}
	}
	out, err := rewriteCandidate(c, fates, text)
	if err != nil {
		return nil, err
	}
	e, err := jsonedit.Of(body, c.raw, out)
	if err != nil {
		return nil, err
	}
	return jsonedit.Apply(body, []jsonedit.Edit{e}), nil
}

// SumUsage returns usageMetadata a and b (raw JSON objects; either may be
// "") added: numbers member by member, token-count details by modality
// (promptTokensDetails and the like, arrays of {modality, tokenCount}),
// anything else from b. An answer made of several responses reads what
// they cost together.
func SumUsage(a, b string) string {
	ra, rb := gjson.Parse(a), gjson.Parse(b)
	switch {
	case !rb.IsObject():
		if ra.IsObject() {
			return ra.Raw
		}
		return "{}"
	case !ra.IsObject():
		return rb.Raw
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	seen := make(map[string]bool)
	write := func(k gjson.Result, v string) {
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		buf.WriteString(k.Raw)
		buf.WriteByte(':')
		buf.WriteString(v)
	}
	ra.ForEach(func(k, va gjson.Result) bool {
		seen[k.Str] = true
		vb := rb.Get(gjson.Escape(k.Str))
		switch {
		case !vb.Exists():
			write(k, va.Raw)
		case va.Type == gjson.Number && vb.Type == gjson.Number:
			write(k, fmt.Sprint(va.Int()+vb.Int()))
		case va.IsArray() && vb.IsArray():
			write(k, sumDetails(va, vb))
		default:
			write(k, vb.Raw)
		}
		return true
	})
	rb.ForEach(func(k, vb gjson.Result) bool {
		if !seen[k.Str] {
			write(k, vb.Raw)
		}
		return true
	})
	buf.WriteByte('}')
	return buf.String()
}

// sumDetails adds two lists of {modality, tokenCount} by modality, in the
// order they first appear.
func sumDetails(a, b gjson.Result) string {
	var order []string
	counts := make(map[string]int64)
	raw := make(map[string]string)
	for _, l := range []gjson.Result{a, b} {
		for _, d := range l.Array() {
			m := d.Get("modality").Str
			if _, ok := counts[m]; !ok {
				order = append(order, m)
				raw[m] = d.Raw
			}
			counts[m] += d.Get("tokenCount").Int()
		}
	}
	out := make([]string, 0, len(order))
	for _, m := range order {
		s, err := sjson.Set(raw[m], "tokenCount", counts[m])
		if err != nil {
			s = raw[m]
		}
		out = append(out, s)
	}
	return "[" + strings.Join(out, ",") + "]"
}

// namesStreamedArguments reports whether b holds
// "streamfunctioncallarguments" or "stream_function_call_arguments" in any
// case: both end in "arguments", found once (where two searches took ~1.3
// us on a 2 KB request, which every request on a Gemini route pays), with
// either head before it. Each "arguments" is found by keyscan.IndexFold,
// which looks at its letters g and u side by side, where the search by g
// alone (keyscan.ScanFold) stopped at every g of the request's prose.
func namesStreamedArguments(b []byte) bool {
	tail := []byte("arguments")
	for at := 0; ; {
		i := keyscan.IndexFold(b[at:], tail)
		if i < 0 {
			return false
		}
		head := b[:at+i]
		if foldSuffix(head, "streamfunctioncall") || foldSuffix(head, "stream_function_call_") {
			return true
		}
		at += i + 1
	}
}

// foldSuffix reports whether b ends in lower (ASCII lower case) in any
// case.
func foldSuffix(b []byte, lower string) bool {
	return len(b) >= len(lower) && bytes.EqualFold(b[len(b)-len(lower):], []byte(lower))
}

// StreamsArguments reports whether a request asks for streamed function
// call arguments (toolConfig.functionCallingConfig.streamFunctionCallArguments
// true, in any key spelling), which the gate cannot judge (see
// ErrStreamedArguments): a gated route refuses such a request before it
// goes upstream, rather than fail on its answer.
func StreamsArguments(body []byte) bool {
	if !namesStreamedArguments(body) && !bytes.Contains(body, []byte(`\u`)) {
		return false
	}
	if !gjson.ValidBytes(body) {
		return true // cannot tell: the caller refuses
	}
	tc, _, err := member(gjson.ParseBytes(body), "toolconfig")
	if err != nil {
		return true
	}
	fc, _, err := member(tc, "functioncallingconfig")
	if err != nil {
		return true
	}
	v, _, err := member(fc, "streamfunctioncallarguments")
	return err != nil || v.Type == gjson.True || v.Type == gjson.String
}
