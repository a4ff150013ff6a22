package store

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// The record encodings read bytes from disk, which a crash, a bug or an
// older version may have written: decoding never panics, and what decodes
// encodes back to the same record.

func FuzzStepRecord(f *testing.F) {
	for _, seed := range []string{
		"{\"ids\":[\"a\",\"b\"]}\n{\"role\":\"assistant\",\n\"content\":\"x\"}",
		"{\"ids\":[\"a\"]}\n",
		`["a","b"]`,
		"{\"ids\":[]}\nx",
		"{\"ids\":null}\n",
		"\n",
		"",
		"{\"ids\":[\"a\\n\"]}\n\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		r, err := decodeStep(v)
		if err != nil {
			return
		}
		if len(r.IDs) == 0 {
			t.Fatalf("decodeStep(%q) gave a step without ids", v)
		}
		again, err := encodeStep(r)
		if err != nil {
			t.Fatalf("encodeStep of a decoded step: %v", err)
		}
		back, err := decodeStep(again)
		if err != nil {
			t.Fatalf("decodeStep(encodeStep(%q)): %v", v, err)
		}
		if !reflect.DeepEqual(back.IDs, r.IDs) || !bytes.Equal(back.Message, r.Message) {
			t.Fatalf("round trip of %q: %+v, then %+v", v, r, back)
		}
	})
}

func FuzzHoldRecord(f *testing.F) {
	h := Hold{
		ID: "a", StepID: "s", Owner: "o", Call: json.RawMessage(`{"x": 1}`), Message: json.RawMessage("{\n}"),
		State: Running, Created: time.Unix(5, 6).UTC(), StartedAt: time.Unix(7, 8).UTC(),
	}
	v, err := encodeHold(&h)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v)
	f.Add([]byte(`{"id":"a","call":"eyJ4IjogMX0=","state":"waiting"}`))
	f.Add([]byte(`{"id":"a","call":"not base64"}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		var h Hold
		if err := decodeHold(v, &h); err != nil {
			return
		}
		again, err := encodeHold(&h)
		if err != nil {
			t.Fatalf("encodeHold of a decoded hold: %v", err)
		}
		var back Hold
		if err := decodeHold(again, &back); err != nil {
			t.Fatalf("decodeHold(encodeHold(%q)): %v", v, err)
		}
		if !reflect.DeepEqual(normal(back), normal(h)) {
			t.Fatalf("round trip of %q:\n%+v\n%+v", v, h, back)
		}
	})
}

// normal maps empty raw fields to nil (a record keeps no difference) and
// times to UTC (the record keeps the instant, not the location).
func normal(h Hold) Hold {
	for _, raw := range []*json.RawMessage{&h.Shown, &h.Call, &h.Arguments, &h.Message, &h.Values} {
		if len(*raw) == 0 {
			*raw = nil
		}
	}
	for _, at := range []*time.Time{&h.Created, &h.Expires, &h.AnsweredAt, &h.StartedAt} {
		*at = at.UTC()
	}
	return h
}

// Records written before a step's message moved to the step's record (each
// hold with its own message, the step a bare list of ids) read, claim and
// settle as before, message and all.
func TestBadgerReadsOldRecords(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	now := time.Now()
	message := json.RawMessage("{\n  \"role\": \"assistant\", \"content\": \"<old>\"\n}")
	holds := []Hold{
		{ID: "holdaaaaaaaaaaaaaaaaaaaaaa", StepID: "stepaaaaaaaaaaaaaaaaaaaaaa", Owner: "ana", Message: message,
			Call: json.RawMessage(`{"id": 1}`), State: Waiting, Created: now, Expires: now.Add(time.Hour)},
		{ID: "holdbbbbbbbbbbbbbbbbbbbbbb", StepID: "stepaaaaaaaaaaaaaaaaaaaaaa", Owner: "ana", Message: message,
			Call: json.RawMessage(`{"id": 2}`), Position: 1, State: Waiting, Created: now, Expires: now.Add(time.Hour)},
	}
	err = b.db.Update(func(txn *badger.Txn) error {
		for i := range holds {
			v, err := encodeHold(&holds[i])
			if err != nil {
				return err
			}
			if err := txn.Set(holdKey(holds[i].ID), v); err != nil {
				return err
			}
		}
		return txn.Set(stepKey(holds[0].StepID), []byte(`["holdaaaaaaaaaaaaaaaaaaaaaa","holdbbbbbbbbbbbbbbbbbbbbbb"]`))
	})
	if err != nil {
		t.Fatal(err)
	}

	step, err := b.Step(ctx, holds[0].StepID)
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	if len(step) != 2 || !bytes.Equal(step[0].Message, message) || !bytes.Equal(step[1].Call, holds[1].Call) {
		t.Fatalf("Step of old records = %+v", step)
	}
	c, err := b.Claim(ctx, holds[0].ID, Answer{Choice: AnswerConfirm, By: "ana"})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if c.Complete || len(c.Step) != 2 || !bytes.Equal(c.Hold.Message, message) {
		t.Errorf("Claim of an old record: complete %v, %d holds, message %s", c.Complete, len(c.Step), c.Hold.Message)
	}
	if _, err := b.Begin(ctx, holds[0].ID); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if err := b.Settle(ctx, holds[0].ID, "done"); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	got, err := b.Get(ctx, holds[0].ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.State != Settled || !bytes.Equal(got.Message, message) {
		t.Errorf("an old record after Settle: %q, message %s; want settled with its message", got.State, got.Message)
	}
}

// Records as 02df1a9 stored them (testdata/hold-*-02df1a9.json: written
// by its encodeHold, the whole hold rewritten at each step, no progress
// record) still read, and answer on: the answered one is begun and
// settled, the settled one's reply is dropped.
func TestBadgerReads02df1a9Records(t *testing.T) {
	b, err := OpenBadger(t.TempDir(), BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	answered, err := os.ReadFile("testdata/hold-answered-02df1a9.json")
	if err != nil {
		t.Fatal(err)
	}
	settled, err := os.ReadFile("testdata/hold-settled-02df1a9.json")
	if err != nil {
		t.Fatal(err)
	}
	const a, s = "holdoldaaaaaaaaaaaaaaaaaaa", "holdoldbbbbbbbbbbbbbbbbbbb"
	err = b.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(holdKey(a), answered); err != nil {
			return err
		}
		return txn.Set(holdKey(s), settled)
	})
	if err != nil {
		t.Fatal(err)
	}

	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	got, err := b.Get(ctx, a)
	if err != nil {
		t.Fatalf("Get(answered): %v", err)
	}
	if got.State != Answered || got.Answer != AnswerConfirm || got.AnsweredBy != "ana" || string(got.Values) != `{"sealed":"x"}` ||
		!got.AnsweredAt.Equal(at.Add(time.Minute)) || got.Tenant != "acme" || got.Action != "delete_post" ||
		string(got.Shown) != `{"sentence":"Delete this post?", "rows":[{"label":"Title","value":"<b>Hi</b> & bye"}]}` ||
		string(got.Arguments) != `{"post": 7}` || got.PolicyVersion != "3f2a9c01b7de" {
		t.Errorf("Get(answered) = %+v", got)
	}
	if _, err := b.Begin(ctx, a); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if err := b.Settle(ctx, a, "done"); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	got, err = b.Get(ctx, a)
	if err != nil || got.State != Settled || got.Outcome != "done" || got.Values != nil || got.Answer != AnswerConfirm ||
		string(got.Call) == "" || got.Text != "Waiting for your confirmation: Delete this post?" {
		t.Errorf("Get(answered) after Settle = %+v, %v", got, err)
	}

	got, err = b.Get(ctx, s)
	if err != nil {
		t.Fatalf("Get(settled): %v", err)
	}
	if got.State != Settled || got.Outcome != `{"kind":"done","status":200}` || !bytes.Equal(got.Reply, []byte{1, 2, 3, 250}) ||
		!got.StartedAt.Equal(at.Add(2*time.Minute)) {
		t.Errorf("Get(settled) = %+v", got)
	}
	if err := b.Settle(ctx, s, `{"kind":"done","status":200}`); err != nil {
		t.Errorf("Settle again with its outcome: %v", err)
	}
	if err := b.DropReply(ctx, s); err != nil {
		t.Fatalf("DropReply: %v", err)
	}
	got, err = b.Get(ctx, s)
	if err != nil || got.Reply != nil || got.State != Settled || got.Outcome != `{"kind":"done","status":200}` || got.AnsweredBy != "ana" {
		t.Errorf("Get(settled) after DropReply = %+v, %v", got, err)
	}
}
