package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/toolgate/toolgate/internal/freeport"
)

// Cluster is a PostgreSQL cluster of one test's own, in a temporary
// directory on a free loopback port, which the test may stop and start
// (an outage) while clients keep their DSN. As root, initdb and the server
// run as the postgres user, as .ci/postgres does.
type Cluster struct {
	DSN  string // postgres://toolgate@127.0.0.1:<port>/toolgate_test?sslmode=disable
	Port int

	tb  testing.TB
	bin string   // the PostgreSQL binaries' directory
	dir string   // owns data/ and the server's socket and log
	as  []string // the command prefix that runs as the postgres user, or none
}

// StartCluster initialises and starts a cluster, and stops and removes it
// when the test ends. It skips (fails in CI) like DSN when the tests have
// no PostgreSQL, and fails when the binaries cannot be found.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	DSN(tb) // the same skip rule: no PostgreSQL for the tests, no cluster
	bin, err := binDir()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "toolgate-pg-")
	if err != nil {
		tb.Fatalf("making the cluster's directory: %v", err)
	}
	c := &Cluster{tb: tb, bin: bin, dir: dir}
	tb.Cleanup(func() {
		c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
		os.RemoveAll(dir)
	})
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			tb.Fatalf("running PostgreSQL as root needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			tb.Fatalf("handing the cluster's directory to postgres: %v", err)
		}
		c.as = []string{"runuser", "-u", "postgres", "--"}
	}
	c.Port = freePort(tb)
	c.DSN = fmt.Sprintf("postgres://toolgate@127.0.0.1:%d/toolgate_test?sslmode=disable", c.Port)
	if out, err := c.run("initdb", "-D", c.data(), "-U", "toolgate", "--auth=trust", "-E", "UTF8"); err != nil {
		tb.Fatalf("initdb: %v\n%s", err, out)
	}
	c.Start()
	if out, err := c.run("createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port), "-U", "toolgate", "toolgate_test"); err != nil {
		tb.Fatalf("createdb: %v\n%s", err, out)
	}
	return c
}

// Start starts the server (again) on its port, waiting until it accepts
// connections.
func (c *Cluster) Start() {
	c.tb.Helper()
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=on -c max_connections=200", c.Port, c.dir)
	if out, err := c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		c.tb.Fatalf("starting postgres: %v\n%s", err, out)
	}
}

// Stop stops the server the way a crash would (immediate: no checkpoint,
// every connection cut); what was committed survives, from the WAL.
func (c *Cluster) Stop() {
	c.tb.Helper()
	if out, err := c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop"); err != nil {
		c.tb.Fatalf("stopping postgres: %v\n%s", err, out)
	}
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) run(name string, args ...string) ([]byte, error) {
	argv := append(append(append([]string{}, c.as...), filepath.Join(c.bin, name)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// binDir finds the PostgreSQL binaries: TOOLGATE_PG_BIN (.ci/postgres
// exports it), else Debian's /usr/lib/postgresql/<version>/bin.
func binDir() (string, error) {
	if d := os.Getenv("TOOLGATE_PG_BIN"); d != "" {
		return d, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(found) == 0 {
		return "", fmt.Errorf("no PostgreSQL binaries: set TOOLGATE_PG_BIN or install Debian's postgresql package")
	}
	return filepath.Dir(found[len(found)-1]), nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort(tb testing.TB) int { return freeport.Get(tb) }
