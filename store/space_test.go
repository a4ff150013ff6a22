package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/store"
)

// gateHold is a hold as the gate makes one for an OpenAI Chat response
// that calls delete_post: a card built from the post's record, the call
// and the assistant message as the provider sent them, the waiting text.
func gateHold(tb testing.TB, now time.Time) store.Hold {
	id, step := newID(tb), newID(tb)
	args := `{"post_id":"p-` + id[:8] + `","reason":"duplicate of an earlier post"}`
	call := `{"id":"call_` + id[:24] + `","type":"function","function":{"name":"delete_post","arguments":` + quote(args) + `}}`
	message := `{"role":"assistant","content":null,"tool_calls":[` + call + `],"refusal":null,"annotations":[]}`
	shown := `{"sentence":"Delete this post?","rows":[` +
		`{"label":"Title","value":"Quarterly planning notes for the platform team"},` +
		`{"label":"Author","value":"Dana Whitfield"},` +
		`{"label":"Published","value":"2026-11-30T09:12:44Z"},` +
		`{"label":"Excerpt","value":"We agreed to move the on-call rotation to weekly shifts and to retire the old dashboards by the end of the quarter. Open questions are listed below…"}]}`
	return store.Hold{
		ID: id, StepID: step, Owner: "user-8c1f2a", Tenant: "acme",
		Policy: "blog", Action: "delete_post", Kind: store.KindCard, Protocol: "openai-chat",
		PolicyVersion: "3f2a9c01b7de", ActionVersion: "a81c44d09e5f",
		Shown:       json.RawMessage(shown),
		Fingerprint: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		CallID:      "call_" + id[:24], Call: json.RawMessage(call), Arguments: json.RawMessage(args),
		Message: json.RawMessage(message),
		Text:    "Waiting for your confirmation: Delete this post? Title: Quarterly planning notes for the platform team. Confirm here: https://gate.example.com/h/" + step,
		State:   store.Waiting, Created: now, Expires: now.Add(30 * time.Minute),
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// settleLikeGate holds, answers, releases and settles h as the gate does
// for a confirmed card: Put with its held event and its intent filed,
// Claim with the answered event, Begin, SettleWithReply with the released
// and settled events (the app's reply sealed), and the reply dropped once
// the model has read it.
func settleLikeGate(tb testing.TB, s store.Store, h store.Hold) {
	ctx := context.Background()
	must := func(what string, err error) {
		if err != nil {
			tb.Fatalf("%s: %v", what, err)
		}
	}
	must("Put", s.Put(ctx, []store.Hold{h}, store.Event{Kind: store.EventHeld, HoldID: h.ID, Owner: h.Owner, Tenant: h.Tenant, Policy: h.Policy, Action: h.Action}))
	must("Index", s.Index(ctx, "intent/"+h.Tenant+"/"+h.Owner+"/delete_post/"+h.Fingerprint[7:39], h.StepID, h.Expires))
	_, err := s.Claim(ctx, h.ID, store.Answer{Choice: store.AnswerConfirm, By: "dana@example.com"},
		store.Event{Kind: store.EventAnswered, HoldID: h.ID, By: "dana@example.com", Answer: store.AnswerConfirm})
	must("Claim", err)
	_, err = s.Begin(ctx, h.ID)
	must("Begin", err)
	outcome := `{"kind":"done","status":200,"action":"delete_post","summary":"Removed."}`
	reply := make([]byte, 180) // the app's answer, sealed (nonce, ciphertext, tag)
	for i := range reply {
		reply[i] = byte(i * 7)
	}
	must("SettleWithReply", s.SettleWithReply(ctx, h.ID, outcome, reply,
		store.Event{Kind: store.EventReleased, HoldID: h.ID, Endpoint: "https://app.example.com/api/posts/delete", Status: 200},
		store.Event{Kind: store.EventSettled, HoldID: h.ID, Outcome: "done"}))
	must("DropReply", s.DropReply(ctx, h.ID))
}

// BenchmarkSpacePerSettledHold stores and settles 300 holds as the gate
// does, closes the store and reports the bytes on disk per settled hold:
// the sum of the files' lengths (disk-B/hold) and of the blocks allocated
// to them (blocks-B/hold; Badger preallocates sparse files), then the same
// after reopening and letting Badger compact (compacted-B/hold). The live
// entries' bytes per kind of key are logged (-v). Run with -benchtime 1x.
func BenchmarkSpacePerSettledHold(b *testing.B) {
	const n = 300
	for range b.N {
		dir := b.TempDir()
		s, err := store.OpenBadger(dir, store.BadgerOptions{})
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		for range n {
			settleLikeGate(b, s, gateHold(b, now))
		}
		if err := s.SyncAudit(context.Background()); err != nil {
			b.Fatal(err)
		}
		bytes, entries, err := store.SpaceByKind(s)
		if err != nil {
			b.Fatal(err)
		}
		var kinds []string
		total := 0
		for k := range bytes {
			kinds = append(kinds, k)
			total += bytes[k]
		}
		sort.Strings(kinds)
		var line strings.Builder
		for _, k := range kinds {
			fmt.Fprintf(&line, " %s=%d B (%d)", k, bytes[k]/n, entries[k])
		}
		b.Logf("live per hold: %d B;%s", total/n, line.String())
		_, open := dirSize(b, dir)
		b.Logf("open: %s", dirFiles(b, dir))
		b.ReportMetric(float64(open)/n, "open-blocks-B/hold")
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		length, blocks := dirSize(b, dir)
		b.Logf("after close: %s", dirFiles(b, dir))
		b.ReportMetric(float64(length)/n, "disk-B/hold")
		b.ReportMetric(float64(blocks)/n, "blocks-B/hold")
		b.ReportMetric(float64(total)/n, "live-B/hold")

		s, err = store.OpenBadger(dir, store.BadgerOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Compact(s); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		_, blocks = dirSize(b, dir)
		b.Logf("after compaction: %s", dirFiles(b, dir))
		b.ReportMetric(float64(blocks)/n, "compacted-B/hold")
	}
}

// dirSize sums the lengths of the files in dir and the blocks allocated
// to them (stat's Blocks × 512).
func dirSize(tb testing.TB, dir string) (length, blocks int64) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			tb.Fatal(err)
		}
		length += info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			blocks += st.Blocks * 512
		}
	}
	return length, blocks
}

func dirFiles(tb testing.TB, dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var s strings.Builder
	for _, e := range entries {
		info, _ := e.Info()
		var blocks int64
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			blocks = st.Blocks * 512
		}
		fmt.Fprintf(&s, " %s %d/%d", filepath.Base(e.Name()), info.Size(), blocks)
	}
	return s.String()
}
