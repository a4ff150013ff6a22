package anthropic

// Test helpers copied from interceptor's tests (chathelpers_test.go,
// framing_test.go) for the Anthropic adapter's own tests: the fakes
// should move to a provider/providertest package with exported names.

import (
	"bytes"
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/wire/sse"
)

const (
	testLink = "https://gate.example/toolgate/h/"
	testStep = "abcdefghijklmnopqrstuvwxyz"
	waitText = "Waiting for your confirmation: Delete this post? Answer here: " + testLink + testStep
)

type fakeHolder struct {
	gated  map[string]bool
	pass   map[string]bool
	refuse map[string]string
	text   string

	mu    sync.Mutex
	holds []holdRecord
}

type holdRecord struct {
	calls   []provider.Call
	message []byte
}

func newHolder(names ...string) *fakeHolder {
	h := &fakeHolder{gated: make(map[string]bool), pass: make(map[string]bool), refuse: make(map[string]string), text: waitText}
	for _, n := range names {
		h.gated[n] = true
	}
	return h
}

func (h *fakeHolder) passing(names ...string) *fakeHolder {
	for _, n := range names {
		h.gated[n], h.pass[n] = true, true
	}
	return h
}

func (h *fakeHolder) refusing(name, content string) *fakeHolder {
	h.gated[name], h.refuse[name] = true, content
	return h
}

func (h *fakeHolder) Gated(name string) bool { return h.gated[name] }

func (h *fakeHolder) Hold(_ context.Context, calls []provider.Call, message []byte, kept provider.Kept) provider.Verdict {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holds = append(h.holds, holdRecord{slices.Clone(calls), slices.Clone(message)})
	v := provider.Verdict{Pass: make([]bool, len(calls))}
	held := false
	for i, c := range calls {
		switch {
		case h.pass[c.Name]:
			v.Pass[i] = true
		case h.refuse[c.Name] != "":
			v.Refusals = append(v.Refusals, provider.Refusal{CallID: c.ID, Content: h.refuse[c.Name]})
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

func events(b []byte) [][]byte {
	var evs [][]byte
	for len(b) > 0 {
		e := sse.EventLen(b)
		evs = append(evs, b[:e])
		b = b[e:]
	}
	return evs
}

type fakeRestorer struct {
	steps map[string]provider.Restored
	asked []restoreCall
}

type restoreCall struct {
	step        string
	userFollows bool
}

func (r *fakeRestorer) Restore(_ context.Context, step string, userFollows bool) (provider.Restored, bool) {
	r.asked = append(r.asked, restoreCall{step, userFollows})
	res, ok := r.steps[step]
	return res, ok
}

// passedAsRead reports whether a stream without calls came out as it
// went in: byte for byte, or, when its bytes hold a CR or a BOM (which
// readers may read differently, so the gate writes such events in
// canonical form), as the same events for every reader.
func passedAsRead(in, out []byte) bool {
	if bytes.Equal(in, out) {
		return true
	}
	if !bytes.ContainsRune(in, '\r') && !bytes.Contains(in, []byte("\ufeff")) {
		return false
	}
	return reflect.DeepEqual(sse.Parse(in), sse.Parse(out))
}

// crVariants are a stream's seeds for the fuzzers: its lines ended by a
// bare CR, and its events each after a BOM.
func crVariants(in []byte) [][]byte {
	return [][]byte{bytes.ReplaceAll(in, []byte("\n"), []byte("\r")), bytes.ReplaceAll(in, []byte("\n\n"), []byte("\n\n\ufeff"))}
}

func (h *fakeHolder) blocks(name string) bool { return h.gated[name] && !h.pass[name] }
