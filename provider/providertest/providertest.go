// Package providertest holds the test fakes every adapter's tests share:
// a Holder that judges calls by tool name (or by position) and records
// what it was asked, a Restorer that answers for known steps and records
// what it was asked, Events, which cuts an SSE body into its events,
// PassedAsRead and CRVariants for the stream fuzzers, and HideVariants and
// NodeSees for the tests of every reader's line ends.
// It imports no adapter package.
package providertest

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/sse"
)

// The link, step and waiting text a Holder answers with by default: the
// step is what follows the link's "/h/".
const (
	Link     = "https://gate.example/toolgate/h/"
	Step     = "abcdefghijklmnopqrstuvwxyz"
	WaitText = "Waiting for your confirmation: Delete this post? Answer here: " + Link + Step
)

// Holder is a provider.Holder for tests. It inspects the tools named in
// NewHolder, Passing and Refusing (or every tool, after GatingAll). It
// passes the calls named in Passing, refuses those named in Refusing
// (with that content), and holds the others; when it holds any, the
// verdict's Text is its text (WaitText unless Saying changed it) and its
// Step what follows the text's last "/h/". ByPosition judges by a call's
// place among the calls instead. It records every Hold; it is safe for
// concurrent use.
type Holder struct {
	mu       sync.Mutex
	gated    map[string]bool
	pass     map[string]bool
	refuse   map[string]string
	all      bool
	fates    []provider.Fate
	byPlace  bool
	text     string
	watching *bytes.Buffer
	holds    []Hold
}

// Hold is one call to Holder.Hold, as it was asked.
type Hold struct {
	Calls   []provider.Call
	Message []byte
	Kept    provider.Kept
	// Before is what the watched buffer held when Hold was asked (see
	// Watching); "" when none is watched.
	Before string
}

// NewHolder returns a Holder that inspects and holds the calls of names.
func NewHolder(names ...string) *Holder {
	h := &Holder{gated: make(map[string]bool), pass: make(map[string]bool), refuse: make(map[string]string), text: WaitText}
	for _, n := range names {
		h.gated[n] = true
	}
	return h
}

// Passing marks names as inspected and passed.
func (h *Holder) Passing(names ...string) *Holder {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range names {
		h.gated[n], h.pass[n] = true, true
	}
	return h
}

// Refusing marks name as inspected and refused with content, the tool
// result the model reads.
func (h *Holder) Refusing(name, content string) *Holder {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gated[name], h.refuse[name] = true, content
	return h
}

// GatingAll makes every tool inspected; the ones neither passed nor
// refused are held.
func (h *Holder) GatingAll() *Holder {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.all = true
	return h
}

// ByPosition judges the calls of each Hold by their place instead of
// their names: the i-th call gets fates[i] (Held past the end). A refused
// call's content is the one Refusing gave its name, or "Refused: NAME
// needs a reason.".
func (h *Holder) ByPosition(fates ...provider.Fate) *Holder {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fates, h.byPlace = slices.Clone(fates), true
	return h
}

// Saying sets the text shown in place of held calls ("": none, and no
// step).
func (h *Holder) Saying(text string) *Holder {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.text = text
	return h
}

// Watching makes each Hold record what dst held when it was asked (what
// the app had read by then).
func (h *Holder) Watching(dst *bytes.Buffer) *Holder {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.watching = dst
	return h
}

// Gated implements provider.Holder.
func (h *Holder) Gated(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.all || h.gated[name]
}

// Blocks reports whether a call of name is inspected and not passed by
// name: it may not reach the app as it came.
func (h *Holder) Blocks(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return (h.all || h.gated[name]) && !h.pass[name]
}

// Hold implements provider.Holder.
func (h *Holder) Hold(_ context.Context, calls []provider.Call, message []byte, kept provider.Kept) provider.Verdict {
	h.mu.Lock()
	defer h.mu.Unlock()
	rec := Hold{Calls: slices.Clone(calls), Message: slices.Clone(message), Kept: kept}
	if h.watching != nil {
		rec.Before = h.watching.String()
	}
	h.holds = append(h.holds, rec)
	v := provider.Verdict{Pass: make([]bool, len(calls))}
	held := false
	for i, c := range calls {
		switch h.fate(i, c.Name) {
		case provider.Passed:
			v.Pass[i] = true
		case provider.Refused:
			content := h.refuse[c.Name]
			if content == "" {
				content = "Refused: " + c.Name + " needs a reason."
			}
			v.Refusals = append(v.Refusals, provider.Refusal{CallID: c.ID, Content: content})
		default:
			held = true
		}
	}
	if held {
		v.Text = h.text
		if i := strings.LastIndex(h.text, "/h/"); i >= 0 {
			v.Step = h.text[i+3:]
		}
	}
	return v
}

// fate is what becomes of the i-th call, named name.
func (h *Holder) fate(i int, name string) provider.Fate {
	switch {
	case h.byPlace && i < len(h.fates):
		return h.fates[i]
	case h.byPlace:
		return provider.Held
	case h.pass[name]:
		return provider.Passed
	case h.refuse[name] != "":
		return provider.Refused
	}
	return provider.Held
}

// Holds returns the Holds asked so far, oldest first.
func (h *Holder) Holds() []Hold {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.holds)
}

// Restorer is a provider.Restorer for tests: it answers for the steps in
// Steps and records every question. It is safe for concurrent use.
type Restorer struct {
	Steps map[string]provider.Restored

	mu    sync.Mutex
	asked []RestoreCall
}

// RestoreCall is one call to Restorer.Restore.
type RestoreCall struct {
	Step        string
	UserFollows bool
}

// Restore implements provider.Restorer.
func (r *Restorer) Restore(_ context.Context, step string, userFollows bool) (provider.Restored, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, RestoreCall{step, userFollows})
	res, ok := r.Steps[step]
	return res, ok
}

// Asked returns the Restore calls so far, oldest first.
func (r *Restorer) Asked() []RestoreCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.asked)
}

// Events cuts an SSE body into its events, each with its blank line (the
// last one may be cut short).
func Events(b []byte) [][]byte {
	var evs [][]byte
	for len(b) > 0 {
		e := sse.EventLen(b)
		evs = append(evs, b[:e])
		b = b[e:]
	}
	return evs
}

// PassedAsRead reports whether a stream without calls came out as it went
// in: byte for byte, or, when its bytes hold a CR or a BOM (which readers
// may read differently, so the gate writes such events in canonical form),
// as the same events for every reader.
func PassedAsRead(in, out []byte) bool {
	if bytes.Equal(in, out) {
		return true
	}
	if !bytes.ContainsRune(in, '\r') && !bytes.Contains(in, []byte("\ufeff")) {
		return false
	}
	return reflect.DeepEqual(sse.Parse(in), sse.Parse(out))
}

// CRVariants are a stream's seeds for the fuzzers: its lines ended by a
// bare CR, and its events each after a BOM.
func CRVariants(in []byte) [][]byte {
	return [][]byte{bytes.ReplaceAll(in, []byte("\n"), []byte("\r")), bytes.ReplaceAll(in, []byte("\n\n"), []byte("\n\n\ufeff"))}
}

// HideVariants frames the events of a call so that a reader splitting
// lines at LF only would not read them, while the Node SDKs (which split
// at CR, LF and CRLF and drop a BOM at each line start) do.
func HideVariants(callEvents string) map[string]string {
	return map[string]string{
		"a comment ended by a bare CR before it": ": keep-alive\r" + callEvents,
		"bare CR line ends":                      strings.ReplaceAll(callEvents, "\n", "\r"),
		"a BOM at the line start":                "\ufeff" + callEvents,
		"CRLF line ends":                         strings.ReplaceAll(callEvents, "\n", "\r\n"),
	}
}

// NodeSees reports whether any event a Node SDK would dispatch from out
// carries s in its data, bar the error event that ends a stream the gate
// stopped (its message may name the tool).
func NodeSees(out []byte, s string) bool {
	for _, ev := range sse.Parse(out) {
		if ev.Type == "error" || gjson.Get(ev.Data, "error").Exists() {
			continue
		}
		if strings.Contains(ev.Data, s) {
			return true
		}
	}
	return false
}

// Rewrite runs in through the stream newStream makes on dst and flush,
// written in pieces of the given sizes (cycled; all at once if none), and
// returns what came out, how often it flushed, and the first error of its
// Writes and Close.
func Rewrite(newStream func(dst io.Writer, flush func() error) provider.Stream, in []byte, sizes ...int) (out []byte, flushes int, err error) {
	var buf bytes.Buffer
	s := newStream(&buf, func() error { flushes++; return nil })
	for i := 0; len(in) > 0; i++ {
		n := len(in)
		if len(sizes) > 0 {
			n = min(sizes[i%len(sizes)], len(in))
		}
		if _, err = s.Write(in[:n]); err != nil {
			break
		}
		in = in[n:]
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return buf.Bytes(), flushes, err
}
