package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The PostgreSQL schema lives in the module: pgschema/NNN_what.sql, one
// file per version, applied in order. A version is never edited once
// released; a change is a new file.
//
//go:embed pgschema/*.sql
var pgschemaFS embed.FS

// migration is one version of the schema.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded versions in order. Their numbers must be
// 1, 2, 3, … with no gap (a test checks it).
func migrations() ([]migration, error) {
	files, err := fs.Glob(pgschemaFS, "pgschema/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, f := range files {
		name := path.Base(f)
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("schema file %q: want NNN_name.sql", name)
		}
		b, err := pgschemaFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("schema file %q: version %d, want %d", m.name, m.version, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the version of the PostgreSQL schema this build
// creates and reads.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrate creates the schema, or upgrades it to this build's version, in
// one transaction under an advisory lock on the schema's name: replicas
// starting together wait for each other, and the first one does the work.
// DDL is transactional in PostgreSQL, so a failed upgrade leaves the
// previous version whole. A schema newer than this build is refused
// rather than used.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("reading the embedded schema: %w", err)
	}
	ident := pgx.Identifier{schema}.Sanitize()
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(schema, "schema")); err != nil {
			return fmt.Errorf("locking schema %s: %w", ident, err)
		}
		// CREATE SCHEMA asks for the database's CREATE privilege even when
		// the schema exists, so it runs only when it does not: an operator
		// may create the schema and grant only it.
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
			return fmt.Errorf("looking for schema %s: %w", ident, err)
		}
		if !exists {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
				return fmt.Errorf("creating schema %s: %w", ident, err)
			}
		}
		if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+ident+".schema_version (version integer NOT NULL)"); err != nil {
			return fmt.Errorf("creating %s.schema_version: %w", ident, err)
		}
		var version int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+ident+".schema_version").Scan(&version); err != nil {
			return fmt.Errorf("reading %s.schema_version: %w", ident, err)
		}
		if version > len(ms) {
			return fmt.Errorf("schema %s is at version %d, newer than this build's %d: run a newer toolgate", ident, version, len(ms))
		}
		// The files name their tables unqualified: the search path is the
		// schema (as on every connection of the store, where it was set
		// before the schema existed).
		if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+ident); err != nil {
			return fmt.Errorf("setting the search path: %w", err)
		}
		for _, m := range ms[version:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("upgrading schema %s to version %d (%s): %w", ident, m.version, m.name, err)
			}
		}
		if version == len(ms) {
			return nil
		}
		if _, err := tx.Exec(ctx, "DELETE FROM "+ident+".schema_version"); err != nil {
			return fmt.Errorf("recording schema version: %w", err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+ident+".schema_version (version) VALUES ($1)", len(ms)); err != nil {
			return fmt.Errorf("recording schema version: %w", err)
		}
		return nil
	})
}
