package caddymodule

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/store"
)

// The `audit` command: `toolgate audit verify` and `toolgate audit
// export`, registered with Caddy's commands so any Caddy built with this
// module has them (`caddy audit verify`).
//
// Both read the store itself, named by --badger DIR, --postgres DSN, or
// the toolgate app of a config (--config, --adapter; Caddy's own rules,
// so a Caddyfile in the working directory is read when no flag is
// given). They change nothing but what every replica may do: chain the
// events still pending. They prune nothing (the retention belongs to the
// running gate). A Badger directory is locked by the Caddy that has it
// open: stop it first, or read a copy; PostgreSQL is read while the gate
// runs.

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "audit",
		Usage: "verify|export",
		Short: "Verifies or exports Toolgate's audit log",
		Long: `
Toolgate's audit log keeps every event of every hold's life (held, shown,
answered, released, settled, refused) in one hash chain in the store.

  audit verify  checks the chain from its start (or its last pruned entry)
                to its head and names the first broken entry; exit 0 when
                it holds, 1 when it is broken, 2 when it cannot be read.
                With --file it checks an export instead of the store.
  audit export  writes the entries of a time range as JSON Lines, and an
                end line naming how many, the last one and the head.

The store is named by --badger DIR, --postgres DSN, or the toolgate app of
a config (--config FILE, --adapter NAME; by default the Caddyfile in the
working directory).`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.AddCommand(auditVerifyCommand(), auditExportCommand())
		},
	})
}

// Exit statuses of the audit commands.
const (
	auditExitBroken = 1 // the chain is broken
	auditExitError  = 2 // the store or file could not be read, or a flag is wrong
)

// auditTimeout bounds one audit command's work with the store.
const auditTimeout = 10 * time.Minute

func auditStoreFlags(cmd *cobra.Command) {
	cmd.Flags().String("badger", "", "the Badger directory of the store (the gate must not have it open)")
	cmd.Flags().String("postgres", "", "the PostgreSQL DSN of the store (or a placeholder such as {env.TOOLGATE_DATABASE_URL})")
	cmd.Flags().StringP("config", "c", "", "a config whose toolgate app names the store")
	cmd.Flags().StringP("adapter", "a", "", "the config's adapter (caddyfile, ...)")
}

func auditVerifyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify [--badger DIR | --postgres DSN | --config FILE | --file EXPORT]",
		Short: "Checks the audit chain and names the first broken entry",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return auditExit(cmd, runVerify(cmd))
		},
	}
	auditStoreFlags(cmd)
	cmd.Flags().String("file", "", "check an export (JSON Lines) instead of the store; - reads standard input")
	return cmd
}

func auditExportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export [--since TIME] [--until TIME] [--output FILE] [store flags]",
		Short: "Writes the audit entries of a time range as JSON Lines",
		Long: `Writes the audit entries whose events happened at or after --since and
before --until, in chain order, one JSON object a line: the entry (seq, prev,
time, kind and the event's fields) with its hash as the last member.
Removing ,"hash":"..." from the end of a line gives the bytes the hash covers.
The last line, {"export":{"entries":N,"last_seq":..,"last_hash":..,"head_seq":..,
"head_hash":..}}, lets "audit verify --file" tell an export cut at its tail.

TIME is RFC 3339 (2026-12-01T18:00:00Z), a date (2026-12-01, midnight UTC),
or a duration before now (24h, 30m). Without --since from the chain's start,
without --until to its end.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return auditExit(cmd, runExport(cmd))
		},
	}
	auditStoreFlags(cmd)
	cmd.Flags().String("since", "", "the first time included")
	cmd.Flags().String("until", "", "the first time no longer included")
	cmd.Flags().StringP("output", "o", "", "the file to write (default: standard output)")
	return cmd
}

// auditError is a command's failure with its exit status.
type auditError struct {
	status int
	err    error
}

func (e *auditError) Error() string { return e.err.Error() }
func (e *auditError) Unwrap() error { return e.err }

// auditExit says a failure on standard error, on a line of its own, and
// ends with its status.
func auditExit(cmd *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	fmt.Fprintln(cmd.ErrOrStderr(), "toolgate audit: "+err.Error())
	status := auditExitError
	if ae, ok := errors.AsType[*auditError](err); ok {
		status = ae.status
	}
	if status == 1 {
		return err // Caddy's Main exits 1 on any other error
	}
	// Caddy's Main exits with the status of an error made by this
	// wrapper (for a status above 1); the function only carries it.
	return caddycmd.WrapCommandFuncForCobra(func(caddycmd.Flags) (int, error) { return status, nil })(cmd, nil)
}

func runVerify(cmd *cobra.Command) error {
	out := cmd.OutOrStdout()
	if file, _ := cmd.Flags().GetString("file"); file != "" {
		var r io.Reader = cmd.InOrStdin()
		if file != "-" {
			f, err := os.Open(file)
			if err != nil {
				return err
			}
			defer f.Close()
			r = f
		}
		rep, err := store.VerifyLines(r)
		if err != nil {
			return err
		}
		if rep.Broken != nil {
			return &auditError{auditExitBroken, rep.Err()}
		}
		fmt.Fprintf(out, "audit export holds: %d entries, seq %d to %d; last hash %s\n", rep.Entries, rep.From, rep.To, hex.EncodeToString(rep.Head.Hash))
		return nil
	}
	s, where, err := openAuditStore(cmd)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), auditTimeout)
	defer cancel()
	rep, err := store.VerifyAudit(ctx, s)
	if err != nil {
		return fmt.Errorf("verifying the audit log of %s: %w", where, err)
	}
	if rep.Broken != nil {
		return &auditError{auditExitBroken, fmt.Errorf("%s: %w", where, rep.Err())}
	}
	fmt.Fprintf(out, "audit chain of %s holds: %d entries, seq %d to %d", where, rep.Entries, rep.From, rep.To)
	if rep.Head.Pruned.Seq > 0 {
		fmt.Fprintf(out, " (seq 1 to %d pruned; the last of them, at %s, had hash %s)",
			rep.Head.Pruned.Seq, rep.Head.Pruned.Time.UTC().Format(time.RFC3339), hex.EncodeToString(rep.Head.Pruned.Hash))
	}
	fmt.Fprintf(out, "; head seq %d hash %s\n", rep.Head.Seq, hex.EncodeToString(rep.Head.Hash))
	return nil
}

func runExport(cmd *cobra.Command) error {
	now := time.Now()
	var q store.AuditQuery
	var err error
	since, _ := cmd.Flags().GetString("since")
	until, _ := cmd.Flags().GetString("until")
	if q.Since, err = parseAuditTime(since, now); err != nil {
		return fmt.Errorf("--since: %w", err)
	}
	if q.Until, err = parseAuditTime(until, now); err != nil {
		return fmt.Errorf("--until: %w", err)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return fmt.Errorf("--since %s is not before --until %s", q.Since.Format(time.RFC3339Nano), q.Until.Format(time.RFC3339Nano))
	}
	s, where, err := openAuditStore(cmd)
	if err != nil {
		return err
	}
	defer s.Close()
	w := cmd.OutOrStdout()
	if path, _ := cmd.Flags().GetString("output"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	ctx, cancel := context.WithTimeout(cmd.Context(), auditTimeout)
	defer cancel()
	if err := s.SyncAudit(ctx); err != nil {
		return fmt.Errorf("exporting the audit log of %s: %w", where, err)
	}
	// The head is read first: entries chained while the export runs are
	// left out, so its end line says what the chain was when it began.
	head, err := s.AuditHead(ctx)
	if err != nil {
		return fmt.Errorf("exporting the audit log of %s: %w", where, err)
	}
	end := store.ExportEnd{HeadSeq: head.Seq, HeadHash: hex.EncodeToString(head.Hash)}
	q.Limit = 1000
pages:
	for {
		page, err := s.AuditEntries(ctx, q)
		if err != nil {
			return fmt.Errorf("exporting the audit log of %s: %w", where, err)
		}
		for _, e := range page {
			if e.Seq > head.Seq {
				break pages
			}
			if _, err := bw.Write(e.Line()); err != nil {
				return fmt.Errorf("writing the export: %w", err)
			}
			end.Entries, end.LastSeq, end.LastHash = end.Entries+1, e.Seq, hex.EncodeToString(e.Hash)
		}
		if len(page) < q.Limit {
			break
		}
		q.After = page[len(page)-1].Seq
	}
	if _, err := bw.Write(end.Line()); err != nil {
		return fmt.Errorf("writing the export: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the export: %w", err)
	}
	if f, ok := w.(*os.File); ok && f != os.Stdout {
		if err := f.Close(); err != nil {
			return fmt.Errorf("writing the export: %w", err)
		}
	}
	return nil
}

// parseAuditTime reads --since or --until: RFC 3339, a date (midnight
// UTC), or a duration before now; "" is no bound.
func parseAuditTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := caddy.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither RFC 3339 (2026-12-01T18:00:00Z), a date (2026-12-01), nor a duration before now (24h)", s)
}

// openAuditStore opens the store the flags name, set to prune nothing,
// and says which it is (a DSN without its password).
func openAuditStore(cmd *cobra.Command) (store.Store, string, error) {
	badgerDir, _ := cmd.Flags().GetString("badger")
	dsn, _ := cmd.Flags().GetString("postgres")
	config, _ := cmd.Flags().GetString("config")
	adapter, _ := cmd.Flags().GetString("adapter")
	given := 0
	for _, v := range []string{badgerDir, dsn, config} {
		if v != "" {
			given++
		}
	}
	if given > 1 {
		return nil, "", errors.New("give one of --badger, --postgres and --config")
	}
	repl := caddy.NewReplacer()
	var dir string
	switch {
	case badgerDir != "", dsn != "":
		dir, dsn = storeLocation(repl, badgerDir, dsn)
		if dsn == "" && badgerDir == "" {
			return nil, "", errors.New("--postgres: the DSN is empty once resolved (is the environment variable set?)")
		}
	default:
		cfg, file, _, err := caddycmd.LoadConfig(config, adapter)
		if err != nil {
			return nil, "", fmt.Errorf("loading the config: %w", err)
		}
		if cfg == nil {
			return nil, "", errors.New("no store named: give --badger DIR, --postgres DSN or --config FILE (no Caddyfile in the working directory)")
		}
		var c struct {
			Apps struct {
				Toolgate *App `json:"toolgate"`
			} `json:"apps"`
		}
		if err := json.Unmarshal(cfg, &c); err != nil {
			return nil, "", fmt.Errorf("reading the config %s: %w", file, err)
		}
		if c.Apps.Toolgate == nil {
			return nil, "", fmt.Errorf("the config %s has no toolgate app (global option toolgate { store ... })", file)
		}
		dir, dsn = storeLocation(repl, c.Apps.Toolgate.Store, c.Apps.Toolgate.Postgres)
		if c.Apps.Toolgate.Postgres != "" && dsn == "" {
			return nil, "", fmt.Errorf("the config %s: store postgres: the DSN %q is empty once resolved (is the environment variable set?)", file, c.Apps.Toolgate.Postgres)
		}
	}
	if dsn != "" {
		db, err := store.OpenPostgres(dsn, store.PostgresOptions{
			RetentionInterval: 100 * 365 * 24 * time.Hour, // prunes nothing while it runs
			AuditRetention:    -1,
		})
		if err != nil {
			return nil, "", err
		}
		return db, "postgres " + db.Target(), nil
	}
	// Badger creates a store where there is none: a mistyped directory
	// would verify as an empty chain.
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		return nil, "", fmt.Errorf("no Badger store in %q: %w", dir, err)
	}
	db, err := store.OpenBadger(dir, store.BadgerOptions{AuditRetention: -1})
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, "", fmt.Errorf("%w (a running Caddy has this store open: stop it, or verify a copy of the directory)", err)
		}
		return nil, "", err
	}
	return db, "badger " + dir, nil
}
