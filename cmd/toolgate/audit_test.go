package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/toolgate/toolgate/internal/pgtest"
	"github.com/toolgate/toolgate/internal/testkit"
	"github.com/toolgate/toolgate/store"
)

// The audit commands against a Badger store on disk, tampered with in
// Badger's own keys as someone with access to the directory could, and
// against exports edited line by line.

// auditStart is the time of the first of the test's entries; each next
// one is an hour later.
var auditStart = time.Date(2031, 5, 4, 10, 0, 0, 0, time.UTC)

// writeAuditLog makes a Badger store in a new directory holding six
// chained entries, refusals of person-1 to person-6, an hour apart.
func writeAuditLog(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	clock := testkit.NewClock(auditStart)
	s, err := store.OpenBadger(dir, store.BadgerOptions{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	writeEvents(t, s, clock)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeEvents appends the six refusals to s, an hour apart on clock.
func writeEvents(t *testing.T, s store.Store, clock *testkit.Clock) {
	t.Helper()
	ctx := context.Background()
	for i := 1; i <= 6; i++ {
		clock.Set(auditStart.Add(time.Duration(i-1) * time.Hour))
		ev := store.Event{Kind: store.EventRefused, Owner: fmt.Sprintf("person-%d", i), Action: "delete_post", Reason: "no_owner"}
		if err := s.Audit(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if err := s.SyncAudit(ctx); err != nil { // one entry at this time
			t.Fatal(err)
		}
	}
}

// TestAuditVerifyCommandPostgres: the same on PostgreSQL, tampered with
// in the audit_log table; verify reads the chain while a replica has the
// store open.
func TestAuditVerifyCommandPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	bin := build(t)
	for _, tt := range []struct{ name, sql, want string }{
		{"holds", "", "holds: 6 entries, seq 1 to 6"},
		{"edit", `UPDATE audit_log SET body = convert_to(replace(convert_from(body, 'UTF8'), 'person-3', 'mallory3'), 'UTF8') WHERE seq = 3`,
			"audit chain broken at seq 3: its content does not match its hash (the entry was edited)"},
		{"delete", `DELETE FROM audit_log WHERE seq = 3`, "audit chain broken at seq 3: missing: the entry after seq 2 is seq 4"},
		{"reorder", `UPDATE audit_log SET seq = -1 WHERE seq = 3; UPDATE audit_log SET seq = 3 WHERE seq = 4; UPDATE audit_log SET seq = 4 WHERE seq = -1`,
			"audit chain broken at seq 3: it holds the content of seq 4 (entries were reordered)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := pgtest.Database(t, dsn)
			clock := testkit.NewClock(auditStart)
			replica, err := store.OpenPostgres(db, store.PostgresOptions{Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			defer replica.Close()
			writeEvents(t, replica, clock)
			if tt.sql != "" {
				pgtest.Exec(t, db, "SET search_path TO toolgate; "+tt.sql)
			}
			out, errOut, status := runAudit(t, bin, "verify", "--postgres", db)
			wantStatus, got := 1, errOut
			if tt.sql == "" {
				wantStatus, got = 0, out
			}
			if status != wantStatus || !strings.Contains(got, tt.want) {
				t.Errorf("status %d, want %d naming %q\nstdout %s\nstderr %s", status, wantStatus, tt.want, out, errOut)
			}
		})
	}
}

// tamperBadger changes the directory's entries in one raw transaction.
func tamperBadger(t *testing.T, dir string, fn func(txn *badger.Txn) error) {
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

func entryKey(seq uint64) []byte { return fmt.Appendf(nil, "a/%020d", seq) }

func rawEntry(t *testing.T, txn *badger.Txn, seq uint64) []byte {
	t.Helper()
	item, err := txn.Get(entryKey(seq))
	if err != nil {
		t.Fatalf("reading entry %d: %v", seq, err)
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// runAudit runs the binary and returns its standard output, standard
// error and exit status.
func runAudit(t *testing.T, bin string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"audit"}, args...)...)
	cmd.Dir = t.TempDir() // no Caddyfile here
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", args, err)
	}
	return out.String(), errOut.String(), 0
}

func TestAuditVerifyCommand(t *testing.T) {
	bin := build(t)

	t.Run("holds", func(t *testing.T) {
		dir := writeAuditLog(t)
		out, errOut, status := runAudit(t, bin, "verify", "--badger", dir)
		if status != 0 || !strings.Contains(out, "holds: 6 entries, seq 1 to 6") {
			t.Errorf("status %d\nstdout %s\nstderr %s", status, out, errOut)
		}
	})

	for _, tt := range []struct {
		name   string
		tamper func(t *testing.T, txn *badger.Txn) error
		want   string
	}{
		{"edit", func(t *testing.T, txn *badger.Txn) error {
			v := rawEntry(t, txn, 3)
			return txn.Set(entryKey(3), bytes.Replace(v, []byte("person-3"), []byte("mallory3"), 1))
		}, "audit chain broken at seq 3: its content does not match its hash (the entry was edited)"},
		{"delete", func(t *testing.T, txn *badger.Txn) error {
			return txn.Delete(entryKey(3))
		}, "audit chain broken at seq 3: missing: the entry after seq 2 is seq 4"},
		{"reorder", func(t *testing.T, txn *badger.Txn) error {
			a, b := rawEntry(t, txn, 3), rawEntry(t, txn, 4)
			if err := txn.Set(entryKey(3), b); err != nil {
				return err
			}
			return txn.Set(entryKey(4), a)
		}, "audit chain broken at seq 3: it holds the content of seq 4 (entries were reordered)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeAuditLog(t)
			tamperBadger(t, dir, func(txn *badger.Txn) error { return tt.tamper(t, txn) })
			out, errOut, status := runAudit(t, bin, "verify", "--badger", dir)
			if status != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("status %d, want 1 naming %q\nstdout %s\nstderr %s", status, tt.want, out, errOut)
			}
		})
	}

	t.Run("the store a Caddyfile names", func(t *testing.T) {
		dir := writeAuditLog(t)
		cf := filepath.Join(t.TempDir(), "Caddyfile")
		caddyfile := "{\n\ttoolgate {\n\t\tstore {env.AUDIT_TEST_DIR}\n\t\tsecret 0123456789abcdef0123\n\t\tpages https://gate.test/toolgate\n\t\taudit_retention forever\n\t}\n}\n"
		if err := os.WriteFile(cf, []byte(caddyfile), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("AUDIT_TEST_DIR", dir)
		out, errOut, status := runAudit(t, bin, "verify", "--config", cf, "--adapter", "caddyfile")
		if status != 0 || !strings.Contains(out, "audit chain of badger "+dir+" holds: 6 entries") {
			t.Errorf("status %d\nstdout %s\nstderr %s", status, out, errOut)
		}
	})

	t.Run("no store there", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nothing")
		_, errOut, status := runAudit(t, bin, "verify", "--badger", missing)
		if status != 2 || !strings.Contains(errOut, "no Badger store") {
			t.Errorf("status %d, want 2\nstderr %s", status, errOut)
		}
		if _, err := os.Stat(missing); err == nil {
			t.Error("verify made a store where there was none")
		}
	})

	t.Run("no store named", func(t *testing.T) {
		_, errOut, status := runAudit(t, bin, "verify")
		if status != 2 || !strings.Contains(errOut, "no store named") {
			t.Errorf("status %d, want 2\nstderr %s", status, errOut)
		}
	})
}

func TestAuditExportCommand(t *testing.T) {
	bin := build(t)
	dir := writeAuditLog(t)

	// 11:30 to 13:30 holds the entries of 12:00 and 13:00: seq 3 and 4.
	out, errOut, status := runAudit(t, bin, "export", "--badger", dir, "--since", "2031-05-04T11:30:00Z", "--until", "2031-05-04T13:30:00Z")
	if status != 0 {
		t.Fatalf("status %d\nstderr %s", status, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], `{"export":{"entries":2,"last_seq":4,`) || !strings.HasPrefix(lines[0], `{"seq":3,"prev":"`) || !strings.HasPrefix(lines[1], `{"seq":4,"prev":"`) ||
		!strings.Contains(lines[0], `"time":"2031-05-04T12:00:00Z","kind":"refused","owner":"person-3","action":"delete_post","reason":"no_owner","hash":"`) {
		t.Fatalf("export of 11:30 to 13:30:\n%s", out)
	}

	// The whole chain, to a file, checks out on its own; edited, cut or
	// reordered, it names the first entry that no longer fits.
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	if _, errOut, status := runAudit(t, bin, "export", "--badger", dir, "--output", file); status != 0 {
		t.Fatalf("export to a file: status %d\n%s", status, errOut)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(all) != 7 {
		t.Fatalf("export of everything: %d lines\n%s", len(all), data)
	}
	out, errOut, status = runAudit(t, bin, "verify", "--file", file)
	if status != 0 || !strings.Contains(out, "holds: 6 entries, seq 1 to 6") {
		t.Fatalf("verify of the export: status %d\n%s%s", status, out, errOut)
	}
	for _, tt := range []struct {
		name  string
		lines func() []string
		want  string
	}{
		{"edit", func() []string {
			l := append([]string(nil), all...)
			l[2] = strings.Replace(l[2], "person-3", "mallory3", 1)
			return l
		}, "audit chain broken at seq 3: its content does not match its hash"},
		{"delete", func() []string {
			return append(append([]string(nil), all[:2]...), all[3:]...)
		}, "audit chain broken at seq 3: missing: the entry after seq 2 is seq 4"},
		{"reorder", func() []string {
			l := append([]string(nil), all...)
			l[2], l[3] = l[3], l[2]
			return l
		}, "audit chain broken at seq 3: missing: the entry after seq 2 is seq 4"},
		// issue 15 §5: an export cut at its tail used to verify (exit 0).
		{"cut", func() []string {
			return append([]string(nil), all[:4]...)
		}, "audit chain broken at seq 5: missing: the export ends after seq 4 without its end line (its tail was cut)"},
		{"cut with its end line put back", func() []string {
			return append(append([]string(nil), all[:4]...), all[6])
		}, "audit chain broken at seq 5: missing: the export's end line records 6 entries, the last seq 6"},
		{"an entry after the end line", func() []string {
			return append(append([]string(nil), all...), all[5])
		}, "audit chain broken at seq 7: line 8 follows the export's end line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "audit.jsonl")
			if err := os.WriteFile(f, []byte(strings.Join(tt.lines(), "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, status := runAudit(t, bin, "verify", "--file", f)
			if status != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("status %d, want 1 naming %q\nstdout %s\nstderr %s", status, tt.want, out, errOut)
			}
		})
	}

	t.Run("bad time", func(t *testing.T) {
		_, errOut, status := runAudit(t, bin, "export", "--badger", dir, "--since", "yesterday")
		if status != 2 || !strings.Contains(errOut, `--since: "yesterday" is neither`) {
			t.Errorf("status %d\nstderr %s", status, errOut)
		}
	})
}
