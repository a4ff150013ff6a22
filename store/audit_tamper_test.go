package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/store"
)

// Tampering with the audit log, directly in each backend's own storage
// (Badger's keys, PostgreSQL's rows), as someone with access to the
// database could: VerifyAudit names the first entry that no longer fits.

// auditData is one backend's audit log, open as a store or as raw data.
type auditData struct {
	open   func(t *testing.T) store.Store // opens the store on the data
	close  func(t *testing.T, s store.Store)
	edit   func(t *testing.T, seq uint64, rehash bool) // replaces "person-1" in an entry's body by "mallory"
	remove func(t *testing.T, seq uint64)
	swap   func(t *testing.T, a, b uint64) // exchanges two entries' places
	retime func(t *testing.T, seq uint64)  // sets the time an entry is found by (not its body) to 0
}

// tamperCases are the changes and the break each must show.
var tamperCases = []struct {
	name    string
	tamper  func(t *testing.T, d auditData)
	seq     uint64
	problem string
}{
	{"edit", func(t *testing.T, d auditData) { d.edit(t, 3, false) }, 3, "does not match its hash"},
	{"edit and rehash", func(t *testing.T, d auditData) { d.edit(t, 3, true) }, 4, "prev is not the hash of seq 3"},
	{"edit and rehash the last", func(t *testing.T, d auditData) { d.edit(t, 6, true) }, 6, "not the one its head records"},
	{"delete", func(t *testing.T, d auditData) { d.remove(t, 3) }, 3, "the entry after seq 2 is seq 4"},
	{"delete the first", func(t *testing.T, d auditData) { d.remove(t, 1) }, 1, "the entry after seq 0 is seq 2"},
	{"delete the last", func(t *testing.T, d auditData) { d.remove(t, 6) }, 6, "head records seq 6"},
	{"reorder", func(t *testing.T, d auditData) { d.swap(t, 3, 4) }, 3, "holds the content of seq 4"},
	// issue 15 §5: the time an export selects by is bound to the hashed
	// body's, so an entry cannot be hidden from `export --since`.
	{"retime", func(t *testing.T, d auditData) { d.retime(t, 3) }, 3, "its stored time"},
}

// runTamper writes six entries of a hold's life for each case, tampers,
// and checks what VerifyAudit reports.
func runTamper(t *testing.T, fresh func(t *testing.T) auditData) {
	for _, c := range tamperCases {
		t.Run(c.name, func(t *testing.T) {
			d := fresh(t)
			s := d.open(t)
			ctx := context.Background()
			h := putStep(t, s, 1, newTestClock().Now())[0]
			evs := []store.Event{
				{Kind: store.EventHeld, HoldID: h.ID},
				{Kind: store.EventShown, HoldID: h.ID, By: "person-1"},
			}
			if err := s.Audit(ctx, evs...); err != nil {
				t.Fatalf("Audit: %v", err)
			}
			if _, err := s.Claim(ctx, h.ID, store.Answer{Choice: store.AnswerConfirm, By: "person-1"},
				store.Event{Kind: store.EventAnswered, HoldID: h.ID, By: "person-1", Answer: store.AnswerConfirm}); err != nil {
				t.Fatalf("Claim: %v", err)
			}
			if err := s.Settle(ctx, h.ID, "done",
				store.Event{Kind: store.EventReleased, HoldID: h.ID, Status: 200},
				store.Event{Kind: store.EventSettled, HoldID: h.ID, Outcome: "done"}); err != nil {
				t.Fatalf("Settle: %v", err)
			}
			if err := s.Audit(ctx, store.Event{Kind: store.EventShown, HoldID: h.ID, By: "person-1"}); err != nil {
				t.Fatalf("Audit: %v", err)
			}
			mustVerify(t, s, 1, 6)
			d.close(t, s)

			c.tamper(t, d)

			s = d.open(t)
			defer d.close(t, s)
			rep, err := store.VerifyAudit(ctx, s)
			if err != nil {
				t.Fatalf("VerifyAudit: %v", err)
			}
			if rep.Broken == nil {
				t.Fatalf("VerifyAudit found nothing wrong after %s", c.name)
			}
			if rep.Broken.Seq != c.seq || !strings.Contains(rep.Broken.Problem, c.problem) {
				t.Errorf("VerifyAudit: %v; want seq %d: …%s…", rep.Err(), c.seq, c.problem)
			}
		})
	}
}

func TestBadgerAuditTamper(t *testing.T) {
	runTamper(t, func(t *testing.T) auditData {
		dir := t.TempDir()
		raw := func(t *testing.T, fn func(txn *badger.Txn) error) {
			t.Helper()
			db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
			if err != nil {
				t.Fatalf("opening the directory raw: %v", err)
			}
			defer db.Close()
			if err := db.Update(fn); err != nil {
				t.Fatalf("tampering: %v", err)
			}
		}
		key := func(seq uint64) []byte { return fmt.Appendf(nil, "a/%020d", seq) }
		get := func(txn *badger.Txn, seq uint64) []byte {
			item, err := txn.Get(key(seq))
			if err != nil {
				t.Fatalf("reading entry %d: %v", seq, err)
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		return auditData{
			open: func(t *testing.T) store.Store {
				s, err := store.OpenBadger(dir, store.BadgerOptions{})
				if err != nil {
					t.Fatalf("OpenBadger: %v", err)
				}
				return s
			},
			close: func(t *testing.T, s store.Store) {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			},
			edit: func(t *testing.T, seq uint64, rehash bool) {
				raw(t, func(txn *badger.Txn) error {
					v := get(txn, seq)
					body := bytes.Replace(v[40:], []byte("person-1"), []byte("mallory"), 1)
					if bytes.Equal(body, v[40:]) {
						t.Fatalf("entry %d does not name person-1", seq)
					}
					hash := v[8:40]
					if rehash {
						sum := sha256.Sum256(body)
						hash = sum[:]
					}
					return txn.Set(key(seq), append(append(bytes.Clone(v[:8]), hash...), body...))
				})
			},
			remove: func(t *testing.T, seq uint64) {
				raw(t, func(txn *badger.Txn) error { return txn.Delete(key(seq)) })
			},
			swap: func(t *testing.T, a, b uint64) {
				raw(t, func(txn *badger.Txn) error {
					va, vb := get(txn, a), get(txn, b)
					if binary.BigEndian.Uint64(va) == 0 {
						t.Fatal("entry without a time")
					}
					if err := txn.Set(key(a), vb); err != nil {
						return err
					}
					return txn.Set(key(b), va)
				})
			},
			retime: func(t *testing.T, seq uint64) {
				raw(t, func(txn *badger.Txn) error {
					v := get(txn, seq)
					return txn.Set(key(seq), append(make([]byte, 8), v[8:]...))
				})
			},
		}
	})
}

func TestPostgresAuditTamper(t *testing.T) {
	dsn := pgtest.DSN(t)
	runTamper(t, func(t *testing.T) auditData {
		schema := pgtest.Schema(t, dsn)
		exec := func(t *testing.T, sql string, args ...any) {
			t.Helper()
			pgtest.Exec(t, dsn, "SET search_path TO "+schema+"; "+sql, args...)
		}
		return auditData{
			open: func(t *testing.T) store.Store {
				s, err := store.OpenPostgres(dsn, store.PostgresOptions{Schema: schema})
				if err != nil {
					t.Fatalf("OpenPostgres: %v", err)
				}
				return s
			},
			close: func(t *testing.T, s store.Store) {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			},
			edit: func(t *testing.T, seq uint64, rehash bool) {
				body := `convert_to(replace(convert_from(body, 'UTF8'), 'person-1', 'mallory'), 'UTF8')`
				if rehash {
					exec(t, `UPDATE audit_log SET body = `+body+`, hash = sha256(`+body+`) WHERE seq = `+fmt.Sprint(seq))
				} else {
					exec(t, `UPDATE audit_log SET body = `+body+` WHERE seq = `+fmt.Sprint(seq))
				}
			},
			remove: func(t *testing.T, seq uint64) {
				exec(t, `DELETE FROM audit_log WHERE seq = `+fmt.Sprint(seq))
			},
			swap: func(t *testing.T, a, b uint64) {
				exec(t, fmt.Sprintf(`UPDATE audit_log SET seq = -1 WHERE seq = %d; UPDATE audit_log SET seq = %d WHERE seq = %d; UPDATE audit_log SET seq = %d WHERE seq = -1`, a, a, b, b))
			},
			retime: func(t *testing.T, seq uint64) {
				exec(t, `UPDATE audit_log SET at = 0 WHERE seq = `+fmt.Sprint(seq))
			},
		}
	})
}

// FuzzVerifyLines: whatever an export file holds, VerifyLines reports
// (or fails to read) without panicking, and a report that holds has read
// every entry it counts.
func FuzzVerifyLines(f *testing.F) {
	f.Add([]byte(`{"seq":1,"prev":"","time":"2031-05-04T10:00:00Z","kind":"held","hash":"` + strings.Repeat("0", 64) + `"}` + "\n"))
	f.Add([]byte("{}\n\n{\"hash\":\"\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := store.VerifyLines(bytes.NewReader(data))
		if err != nil {
			return
		}
		if rep.Broken == nil && rep.Entries > 0 && rep.To < rep.From {
			t.Errorf("a holding report from seq %d to %d", rep.From, rep.To)
		}
	})
}
