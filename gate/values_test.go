package gate

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/policies"
	"github.com/toolgate/toolgate/provider"
	"github.com/toolgate/toolgate/store"
)

// valuesBackend is one store backend for the tests of what the store's
// files keep: the rig runs on it, flush makes everything written reach
// the files, and dir is where they are.
type valuesBackend struct {
	name  string
	setup func(t *testing.T, r *rig) (dir string, flush func())
}

var valuesBackends = []valuesBackend{
	{"badger", func(t *testing.T, r *rig) (string, func()) {
		// While it runs, every write is in the memtable's log file (the
		// .mem file a crash leaves behind), old versions too; the test
		// reads the files then and again after Close has written the
		// memtables out.
		return r.dir, func() {}
	}},
	{"postgres", func(t *testing.T, r *rig) (string, func()) {
		dsn := pgtest.DSN(t)
		pg, err := store.OpenPostgres(dsn, store.PostgresOptions{Schema: pgtest.Schema(t, dsn), Now: r.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		r.gate.Stop(0)
		r.db.Close()
		r.db = pg
		r.newGate()
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		var dir string
		if err := conn.QueryRow(context.Background(), `SHOW data_directory`).Scan(&dir); err != nil {
			t.Skipf("the test cluster's data directory cannot be read here: %v", err)
		}
		if _, err := os.ReadDir(filepath.Join(dir, "pg_wal")); err != nil {
			t.Skipf("the test cluster's files cannot be read here (%v): run the test as the cluster's owner", err)
		}
		// A checkpoint writes every dirty page out; the WAL already
		// holds every change.
		return dir, func() {
			if _, err := conn.Exec(context.Background(), `CHECKPOINT`); err != nil {
				t.Fatal(err)
			}
		}
	}},
}

// TestPersonsValuesNeverReachTheStoresFiles (issue 15 §3): the person types
// a value into a read's form and the app's answer echoes it. The model
// reads the answer once; after the run, nothing in the store's files
// holds the value — not a live row, not an old row version, the WAL or
// Badger's value log — nor does the audit log or the operators' view of
// the outcome, on either backend.
func TestPersonsValuesNeverReachTheStoresFiles(t *testing.T) {
	for _, b := range valuesBackends {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, rigOptions{disk: true})
			dir, flush := b.setup(t, r)
			pol, err := policies.Parse("policy.yaml", []byte(strings.ReplaceAll(testPolicy+testkit.SearchPostsAction, "APP", r.app.URL)))
			if err != nil {
				t.Fatal(err)
			}
			r.policy = pol
			value := distinctive(t)
			r.app.Answer(200, `{"results":[],"query":"`+value+`"}`, 0)
			ctx := context.Background()

			step, v := r.hold(ana, searchCall(0))
			if step == "" {
				t.Fatalf("the read without its query was not held: %+v", v)
			}
			hold := r.step(step)[0]
			if _, err := r.gate.Submit(ctx, step, hold.ID, ana, "", map[string][]string{"q": {value}}, nil, false); err != nil {
				t.Fatalf("submit: %v", err)
			}
			settled := r.settled(hold.ID)
			if calls := r.app.Calls(); len(calls) != 1 || !bytes.Contains(calls[0].Body, []byte(value)) {
				t.Fatalf("the app did not get the person's value: %+v", calls)
			}

			// The person's page shows what became of the hold, not the
			// app's answer to the model.
			sv, err := r.gate.View(ctx, step, ana, "")
			if err != nil {
				t.Fatal(err)
			}
			if page, _ := json.Marshal(sv); strings.Contains(string(page), value) || sv.Holds[0].Result.Kind != ResultDone {
				t.Errorf("the person's page after the run: %s", page)
			}

			// The model reads the app's answer once, then no more.
			first := r.restore(ana, step, false)
			if len(first) != 1 || !strings.HasPrefix(first[0], "The person filled in: q. ") || !strings.Contains(first[0], value) {
				t.Fatalf("the model read %q, want the app's answer after the person's part", first)
			}
			if again := r.restore(ana, step, false); len(again) != 1 || again[0] != "The person filled in: q. "+replyGone {
				t.Errorf("the model reads on the next turn %q, want the reply dropped", again)
			}
			if h := r.step(step)[0]; len(h.Reply) != 0 || len(h.Values) != 0 {
				t.Errorf("after the model read it the hold keeps reply %d bytes, values %d bytes", len(h.Reply), len(h.Values))
			}

			// Operators read the outcome's kind, never the reply.
			summary := string(OutcomeSummary(&settled))
			if strings.Contains(summary, value) || !strings.Contains(summary, `"kind":"done"`) {
				t.Errorf("the operators' outcome = %s", summary)
			}
			log, _ := json.Marshal(r.auditLog())
			if strings.Contains(string(log), value) {
				t.Errorf("the audit log holds the person's value: %s", log)
			}
			if !strings.Contains(string(log), `{\"kind\":\"done\",\"person\":\"filled\",\"filled\":[\"q\"],\"reply\":\"app\"}`) {
				t.Errorf("the settled event does not carry the structured outcome: %s", log)
			}

			flush()
			if found := grepFiles(t, dir, value); len(found) > 0 {
				t.Errorf("the store's files hold the person's value after the run: %v", found)
			}
			r.gate.Stop(0)
			r.db.Close()
			flush()
			if found := grepFiles(t, dir, value); len(found) > 0 {
				t.Errorf("the store's files hold the person's value once it is closed: %v", found)
			}
		})
	}
}

// TestSealedValuesAreBoundToTheirHold: a sealed value opens only for the
// hold and the purpose it was sealed for, and only with the secret it was
// sealed under; values stored before sealing still read.
func TestSealedValuesAreBoundToTheirHold(t *testing.T) {
	r := newRig(t, rigOptions{})
	sealed, err := r.gate.seal(sealReply, "hold-a", []byte("the app's answer"))
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := r.gate.unseal(sealReply, "hold-a", sealed); err != nil || string(plain) != "the app's answer" {
		t.Fatalf("unseal = %q, %v", plain, err)
	}
	if _, err := r.gate.unseal(sealReply, "hold-b", sealed); err == nil {
		t.Error("a reply sealed for one hold opens for another")
	}
	if _, err := r.gate.unseal(sealValues, "hold-a", sealed); err == nil {
		t.Error("a reply opens as values")
	}
	other := New(Config{Store: r.db, Secret: []byte("another-secret-0123456789")})
	if _, err := other.unseal(sealReply, "hold-a", sealed); err == nil {
		t.Error("a reply opens under another secret")
	}
	legacy := json.RawMessage(`{"args":{"q":"x"},"filled":["q"]}`)
	if plain, err := r.gate.unsealValuesJSON("hold-a", legacy); err != nil || !bytes.Equal(plain, legacy) {
		t.Errorf("values stored before sealing read %q, %v", plain, err)
	}
}

// TestLegacyOutcomesReadAsBefore: a hold settled by an earlier version
// keeps its sentence: the model reads it as stored, the page reads its
// kind from it, and operators see only that kind.
func TestLegacyOutcomesReadAsBefore(t *testing.T) {
	r := newRig(t, rigOptions{})
	h := store.Hold{ID: "old", State: store.Settled, Answer: store.AnswerSubmit, Outcome: "The person filled in: q. 3 posts found for SECRET"}
	if got := r.gate.outcomeText(h); got != h.Outcome {
		t.Errorf("the model reads %q, want the stored sentence", got)
	}
	if got := resultOf(h, store.Settled, true); got.Kind != ResultDone {
		t.Errorf("the page reads %+v", got)
	}
	if got := string(OutcomeSummary(&h)); got != `{"kind":"done","legacy":true}` {
		t.Errorf("operators read %s", got)
	}
	if got := r.gate.pageOutcome(h); strings.Contains(got, "SECRET") {
		t.Errorf("the page shows %q", got)
	}
	removed := store.Hold{ID: "old2", Action: "delete_post", State: store.Settled, Answer: store.AnswerConfirm, Outcome: "The person confirmed. Removed."}
	if got := r.gate.pageOutcome(removed); got != removed.Outcome {
		t.Errorf("the page shows %q for a legacy outcome with the policy's reply", got)
	}
}

// searchCall is a search_posts call without its query.
func searchCall(i int) provider.Call {
	c := call(i, 0)
	c.Name, c.Arguments = "search_posts", []byte(`{}`)
	c.Raw = []byte(`{"id":"` + c.ID + `","type":"function","function":{"name":"search_posts","arguments":"{}"}}`)
	return c
}

// distinctive is a value no file holds by chance.
func distinctive(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "TGVAL" + strings.ToUpper(hex.EncodeToString(b))
}

// grepFiles lists the files under dir holding s, as it is or base64
// encoded at any alignment (Badger's records keep raw fields, such as the
// person's values, as base64).
func grepFiles(t *testing.T, dir, s string) []string {
	t.Helper()
	needles := [][]byte{[]byte(s)}
	for k := range 3 {
		enc := base64.StdEncoding.EncodeToString(append(make([]byte, k), s...))
		// Keep the characters made of s's bytes alone.
		var run []byte
		for i := range len(enc) {
			if first, last := i*6/8, (i*6+5)/8; first >= k && last < k+len(s) {
				run = append(run, enc[i])
			}
		}
		needles = append(needles, run)
	}
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed meanwhile (another test's database)
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, n := range needles {
			if bytes.Contains(b, n) {
				found = append(found, path)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
