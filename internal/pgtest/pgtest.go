// Package pgtest gives tests a PostgreSQL to run against: the shared one
// named by TOOLGATE_TEST_POSTGRES (a fresh schema or database per test, so
// tests run in parallel and leave nothing behind), or a cluster of their
// own that they may stop and start.
//
// Without TOOLGATE_TEST_POSTGRES a test skips, saying so loudly; in CI
// (the CI variable set) it fails instead: CI must run every case. Start a
// throwaway cluster with `source .ci/postgres`.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the environment variable holding the tests' DSN.
const EnvDSN = "TOOLGATE_TEST_POSTGRES"

// DSN returns the tests' PostgreSQL DSN, or skips the test (fails it in
// CI) when none is set.
func DSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn != "" {
		return dsn
	}
	if os.Getenv("CI") != "" {
		tb.Fatalf("%s is not set, and CI must run the PostgreSQL cases: source .ci/postgres first", EnvDSN)
	}
	tb.Log("!!!!! SKIPPING the PostgreSQL cases: " + EnvDSN + " is not set (run `source .ci/postgres` to start a throwaway cluster) !!!!!")
	tb.SkipNow()
	return ""
}

// Name returns a fresh lower-case identifier with the given prefix.
func Name(tb testing.TB, prefix string) string {
	tb.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatalf("reading random name: %v", err)
	}
	return prefix + hex.EncodeToString(b[:])
}

// Schema returns the name of a fresh schema (not created: the store
// creates it) and drops it, with everything in it, when the test ends.
func Schema(tb testing.TB, dsn string) string {
	tb.Helper()
	name := Name(tb, "test_")
	tb.Cleanup(func() { execSQL(tb, dsn, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE") })
	return name
}

// Database creates a fresh, empty database on dsn's server, returns the
// DSN that points at it, and drops it when the test ends.
func Database(tb testing.TB, dsn string) string {
	tb.Helper()
	name := Name(tb, "test_")
	ident := pgx.Identifier{name}.Sanitize()
	execSQL(tb, dsn, "CREATE DATABASE "+ident)
	tb.Cleanup(func() { execSQL(tb, dsn, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)") })
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatalf("%s is not a URL: %v", EnvDSN, err)
	}
	u.Path = "/" + name
	return u.String()
}

// Exec runs one statement on dsn, failing the test on an error.
func Exec(tb testing.TB, dsn, sql string, args ...any) {
	tb.Helper()
	execSQL(tb, dsn, sql, args...)
}

func execSQL(tb testing.TB, dsn, sql string, args ...any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Errorf("connecting to postgres: %v", err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		tb.Errorf("%s: %v", sql, err)
	}
}

// QueryInt runs a query returning one integer on dsn.
func QueryInt(tb testing.TB, dsn, sql string, args ...any) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("connecting to postgres: %v", err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
	return n
}
