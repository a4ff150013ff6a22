package e2e

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate/internal/pgtest"
)

// storeOption is the store line of a test gate's toolgate options: Badger
// in dir, or, with TOOLGATE_E2E_STORE=postgres, a fresh database on the
// tests' PostgreSQL, so the whole suite can run on the shared store:
//
//	TOOLGATE_E2E_STORE=postgres go test ./e2e
func storeOption(t testing.TB, dir string) string {
	t.Helper()
	if os.Getenv("TOOLGATE_E2E_STORE") == "postgres" {
		return "store postgres " + pgtest.Database(t, pgtest.DSN(t))
	}
	return "store badger " + dir
}
