package gemini

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/jsonedit"
)

// Links finds this gate's links in a request. The glue gives the shared
// link finder (today interceptor's hasLink, allSteps and afterLastLink,
// unexported): Gemini only says where the text is.
type Links interface {
	// Has reports whether body may hold a link (a byte search, no JSON).
	Has(body []byte) bool
	// Steps returns the step ids of the links in text, in order.
	Steps(text string) []string
	// After returns the text after the last link in text, and whether
	// there is one.
	After(text string) (rest string, found bool)
}

// RewriteRequest restores the history behind this gate's links in a
// generateContent request body (wire-formats.md §9.11).
//
// A body links.Has says no to is returned as is, the same slice, without
// JSON work. Otherwise it must be valid JSON. Every model content whose
// text parts hold links is looked up with r.Restore, step by step in the
// order the links appear, each step once per request (userFollows: a later
// user content holds a part that is no functionResponse, so the person
// wrote). The steps restored take the content's place:
//
//   - each step's stored model content (Restored.Message), verbatim: its
//     thought parts, its functionCall parts with their ids (or none, as
//     Gemini 2.x sent them) and the thoughtSignature on the part it came
//     on, as Gemini 3 requires it back;
//   - after it, one user content with a functionResponse per call of the
//     step, in call order (Gemini pairs id-less calls by position): a held
//     call's is {"name","id"?, "response":{"output":<Result.Content>}}
//     ("id" only when the stored call has one); a call that passed to the
//     app gets the app's own functionResponse, moved from the user content
//     after the app's, paired with the app's call parts by id, else by
//     order (their names must agree, or it is an error), its id made the
//     stored call's (dropped when the stored call has none: the app may
//     have invented one, as @ai-sdk/google and llm-gemini do);
//   - the last step's results go at the start of the user content right
//     after the app's (its other parts stay after them), or in a user
//     content inserted there when there is none;
//   - when the app's content goes on after its last link (the model's
//     reply once the person answered, Turn.Resume), every step gets its
//     own user content of results, and the app's content stays after
//     them made that reply: the parts after the link part, its first text
//     without the blank line the gate put before it.
//
// The functionResponse key is spelled as the body spells its own
// ("function_response" when it uses snake_case, as llm-gemini does). A
// Restored.Message that is no content with parts is an error. Nothing else
// changes: the body is spliced, not re-encoded.
func RewriteRequest(ctx context.Context, body []byte, links Links, r provider.Restorer) ([]byte, error) {
	if !links.Has(body) {
		return body, nil
	}
	if !gjson.ValidBytes(body) {
		return nil, errors.New("gemini request: invalid JSON carrying a gate link")
	}
	root := gjson.ParseBytes(body)
	list, _, err := member(root, "contents")
	if err != nil {
		return nil, fmt.Errorf("gemini request: %w", err)
	}
	if !list.IsArray() {
		return body, nil
	}
	contents := list.Array()
	key := "functionResponse"
	if containsFoldBytes(body, []byte("function_call")) || containsFoldBytes(body, []byte("function_response")) {
		key = "function_response"
	}
	person := make([]bool, len(contents)+1) // person[i]: a user content at or after i has the person's words
	for i := len(contents) - 1; i >= 0; i-- {
		person[i] = person[i+1] || roleOf(contents[i]) == "user" && personWrote(contents[i])
	}
	var edits []jsonedit.Edit
	done := make(map[string]bool)
	for i, m := range contents {
		if roleOf(m) != "model" {
			continue
		}
		ps, err := partsOfContent(m)
		if err != nil {
			return nil, fmt.Errorf("gemini request: content %d: %w", i, err)
		}
		var steps []provider.Restored
		lastLink := -1
		for j, p := range ps {
			t, _, _ := member(p.raw, "text")
			if t.Type != gjson.String {
				continue
			}
			ids := links.Steps(t.Str)
			if len(ids) > 0 {
				lastLink = j
			}
			for _, id := range ids {
				if done[id] {
					continue
				}
				done[id] = true
				if st, ok := r.Restore(ctx, id, person[i+1]); ok {
					steps = append(steps, st)
				}
			}
		}
		if len(steps) == 0 {
			continue
		}
		var next gjson.Result
		if i+1 < len(contents) && roleOf(contents[i+1]) == "user" {
			next = contents[i+1]
		}
		e, err := restoreContent(body, m, ps, lastLink, next, steps, links, key)
		if err != nil {
			return nil, fmt.Errorf("gemini request: content %d: %w", i, err)
		}
		edits = append(edits, e...)
	}
	if len(edits) == 0 {
		return body, nil
	}
	return jsonedit.Apply(body, edits), nil
}

// storedStep is one restored step, read.
type storedStep struct {
	raw     string // the stored content
	calls   []provider.Call
	results map[string]string
}

// restoreContent returns the edits that put steps in place of the app's
// model content m (parts ps, the last link in part lastLink) and their
// results in the user content next (see RewriteRequest).
func restoreContent(body []byte, m gjson.Result, ps []part, lastLink int, next gjson.Result, steps []provider.Restored, links Links, key string) ([]jsonedit.Edit, error) {
	st := make([]storedStep, len(steps))
	var waiting []struct{ step, call int } // calls with no Result: the app's to answer
	for k, s := range steps {
		sps, err := contentParts(s.Message)
		if err != nil {
			return nil, fmt.Errorf("stored step: %w", err)
		}
		st[k] = storedStep{raw: string(s.Message), results: make(map[string]string)}
		for _, res := range s.Results {
			st[k].results[res.CallID] = res.Content
		}
		for _, p := range sps {
			if !p.call {
				continue
			}
			c := provider.Call{Position: len(st[k].calls), ID: p.id, Name: p.name}
			if c.ID == "" {
				c.ID = SyntheticID(c.Position)
			}
			st[k].calls = append(st[k].calls, c)
			if _, ok := st[k].results[c.ID]; !ok {
				waiting = append(waiting, struct{ step, call int }{k, len(st[k].calls) - 1})
			}
		}
	}

	// The words after the last link, if any: the model's reply.
	var follow []string
	if lastLink >= 0 {
		t, _, _ := member(ps[lastLink].raw, "text")
		if rest, found := links.After(t.Str); found && wordy(rest) {
			follow = append(follow, textPart(rest, false))
		}
		for _, p := range ps[lastLink+1:] {
			raw := p.raw.Raw
			if p.text && len(follow) == 0 {
				// The first text: without the blank line the gate put
				// between the waiting text and the reply.
				tt, k, _ := member(p.raw, "text")
				var err error
				if raw, err = sjson.Set(raw, gjson.Escape(k), strings.TrimLeft(tt.Str, " \t\r\n")); err != nil {
					return nil, err
				}
			}
			follow = append(follow, raw)
		}
		if !anyWords(follow) {
			follow = nil
		}
	}

	// The app's calls (before its last link when it goes on) answer the
	// waiting calls in order; its responses in next pair with them.
	var appCalls []part
	for j, p := range ps {
		if p.call && (follow == nil || j < lastLink) {
			appCalls = append(appCalls, p)
		}
	}
	if len(appCalls) > len(waiting) {
		return nil, fmt.Errorf("the app's content has %d calls, the steps left %d for it", len(appCalls), len(waiting))
	}
	var appResp []gjson.Result // next's functionResponse parts
	var rest []string          // next's other parts
	if next.Exists() {
		nps, err := partsOfContent(next)
		if err != nil {
			return nil, err
		}
		for _, p := range nps {
			if fr, _, _ := member(p.raw, "functionresponse"); fr.IsObject() {
				appResp = append(appResp, p.raw)
			} else {
				rest = append(rest, p.raw.Raw)
			}
		}
	}
	answer := make(map[[2]int]string) // (step, call) → the app's response part, id fixed
	used := make([]bool, len(appResp))
	for a, c := range appCalls {
		w := waiting[a]
		sc := st[w.step].calls[w.call]
		if c.name != sc.Name {
			return nil, fmt.Errorf("the app's call %q does not match the stored call %q", c.name, sc.Name)
		}
		j := -1
		for r, resp := range appResp {
			fr, _, _ := member(resp, "functionresponse")
			if id, _, _ := member(fr, "id"); !used[r] && c.id != "" && id.Str == c.id {
				j = r
				break
			}
		}
		for r := range appResp {
			if j < 0 && !used[r] {
				j = r
			}
		}
		if j < 0 {
			continue // the app did not answer it: the provider says so
		}
		used[j] = true
		raw, err := fixResponseID(appResp[j], sc)
		if err != nil {
			return nil, err
		}
		answer[[2]int{w.step, w.call}] = raw
	}
	var left []string // next's responses answering no stored call
	for r, resp := range appResp {
		if !used[r] {
			left = append(left, resp.Raw)
		}
	}
	results := func(k int) []string {
		var out []string
		for ci, c := range st[k].calls {
			if a, ok := answer[[2]int{k, ci}]; ok {
				out = append(out, a)
			} else if text, ok := st[k].results[c.ID]; ok {
				out = append(out, string(appendResponse(nil, key, c, "output", text)))
			}
		}
		return out
	}

	var before []byte
	last := len(st) - 1
	if follow != nil {
		last = len(st)
	}
	for k := 0; k < last; k++ {
		before = append(before, st[k].raw...)
		before = append(before, ',')
		before = append(before, userContent(results(k))...)
		before = append(before, ',')
	}
	var edits []jsonedit.Edit
	var mine []string // the results that go into next
	if follow != nil {
		before = before[:len(before)-1]
		e, err := jsonedit.Of(body, m, string(before)+","+modelContentLike(m, follow))
		if err != nil {
			return nil, err
		}
		edits = append(edits, e)
	} else {
		e, err := jsonedit.Of(body, m, string(before)+st[last].raw)
		if err != nil {
			return nil, err
		}
		edits = append(edits, e)
		mine = results(last)
	}
	switch {
	case next.Exists():
		parts := append(append(mine, left...), rest...)
		np, k, _ := member(next, "parts")
		if !np.Exists() {
			k = "parts"
		}
		out, err := sjson.SetRaw(next.Raw, gjson.Escape(k), "["+strings.Join(parts, ",")+"]")
		if err != nil {
			return nil, err
		}
		e, err := jsonedit.Of(body, next, out)
		if err != nil {
			return nil, err
		}
		edits = append(edits, e)
	case len(mine) > 0:
		at := m.Index + len(m.Raw)
		edits = append(edits, jsonedit.Edit{Start: at, End: at, Repl: "," + userContent(mine)})
	}
	return edits, nil
}

// fixResponseID returns the app's functionResponse part with its id made
// the stored call's (dropped when that has none).
func fixResponseID(resp gjson.Result, c provider.Call) (string, error) {
	fr, frKey, _ := member(resp, "functionresponse")
	id, idKey, _ := member(fr, "id")
	want := c.ID
	if strings.HasPrefix(want, SyntheticIDPrefix) {
		want = ""
	}
	if id.Str == want && (want != "" || !id.Exists()) {
		return resp.Raw, nil
	}
	out := fr.Raw
	var err error
	if idKey == "" {
		idKey = "id"
	}
	if want == "" {
		out, err = sjson.Delete(out, gjson.Escape(idKey))
	} else {
		out, err = sjson.Set(out, gjson.Escape(idKey), want)
	}
	if err != nil {
		return "", err
	}
	return sjson.SetRaw(resp.Raw, gjson.Escape(frKey), out)
}

// userContent is a user content holding parts.
func userContent(parts []string) string {
	return `{"role":"user","parts":[` + strings.Join(parts, ",") + `]}`
}

// modelContentLike is m with its parts made parts.
func modelContentLike(m gjson.Result, parts []string) string {
	_, k, _ := member(m, "parts")
	if k == "" {
		k = "parts"
	}
	out, err := sjson.SetRaw(m.Raw, gjson.Escape(k), "["+strings.Join(parts, ",")+"]")
	if err != nil {
		return `{"role":"model","parts":[` + strings.Join(parts, ",") + `]}`
	}
	return out
}

// roleOf is a content's role ("user" when absent, as Gemini reads it).
func roleOf(c gjson.Result) string {
	r, _, _ := member(c, "role")
	if r.Str == "" {
		return "user"
	}
	return r.Str
}

// partsOfContent reads a content's parts.
func partsOfContent(c gjson.Result) ([]part, error) {
	list, _, err := member(c, "parts")
	if err != nil || !list.IsArray() {
		return nil, err
	}
	return readParts(list)
}

// readParts reads each part of a parts array; the first part that cannot
// be read is the error.
func readParts(list gjson.Result) ([]part, error) {
	var ps []part
	var err error
	list.ForEach(func(_, p gjson.Result) bool {
		var pt part
		if pt, err = readPart(p); err != nil {
			return false
		}
		ps = append(ps, pt)
		return true
	})
	return ps, err
}

// personWrote reports whether a user content holds a part that is no
// functionResponse.
func personWrote(c gjson.Result) bool {
	list, _, _ := member(c, "parts")
	wrote := false
	list.ForEach(func(_, p gjson.Result) bool {
		fr, _, _ := member(p, "functionresponse")
		wrote = !fr.Exists()
		return !wrote
	})
	return wrote
}

// wordy reports whether s holds a letter or a digit.
func wordy(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// anyWords reports whether raw parts hold a text part with words.
func anyWords(parts []string) bool {
	for _, p := range parts {
		if t, _, _ := member(gjson.Parse(p), "text"); t.Type == gjson.String && wordy(t.Str) {
			return true
		}
	}
	return false
}
