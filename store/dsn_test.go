package store_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/store"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name, dsn, password string
	}{
		{"url", "postgres://alice:pa55word@db.internal:5432/holds", "pa55word"},
		{"postgresql scheme", "postgresql://alice:pa55word@db.internal/holds", "pa55word"},
		{"escaped in url", "postgres://alice:p%40ss%2Fw0rd@db.internal/holds", "p@ss/w0rd"},
		{"unescaped at sign", "postgres://alice:p@ssw0rd@db.internal/holds", "p@ssw0rd"},
		{"query password", "postgres://alice@db.internal/holds?sslmode=require&password=pa55word", "pa55word"},
		{"query sslpassword", "postgres://alice@db.internal/holds?sslpassword=k3ypass&sslmode=verify-full", "k3ypass"},
		{"key=value", "host=db.internal user=alice password=pa55word dbname=holds", "pa55word"},
		{"key=value quoted", "host=db.internal password='pa55 w\\'ord' dbname=holds", "pa55 w'ord"},
		{"key=value spaced", "host=db.internal password = pa55word dbname=holds", "pa55word"},
		{"key in capitals", "host=db.internal PASSWORD=pa55word", "pa55word"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := "cannot parse " + tt.dsn + ": saw " + tt.password + " and " + url.QueryEscape(tt.password)
			got := store.Redact(text, tt.dsn)
			if strings.Contains(got, tt.password) || strings.Contains(got, url.QueryEscape(tt.password)) {
				t.Errorf("Redact left the password in %q", got)
			}
			if !strings.Contains(got, "db.internal") {
				t.Errorf("Redact removed the host: %q", got)
			}
		})
	}
}

// FuzzRedactDSN builds DSNs of every form around a password and checks
// that neither redact nor a failed open ever shows it, whatever else the
// DSN holds (a broken port, stray characters).
func FuzzRedactDSN(f *testing.F) {
	f.Add("alice", "pa55word", "db.internal", "holds", "5432", uint8(0))
	f.Add("bob", "p@ss:w/rd?x=1&y", "10.0.0.1", "db", "x", uint8(1))
	f.Add("", "it's 'quoted'", "h", "d", "", uint8(2))
	f.Add("u", "sp ace\\", "[::1]", "d b", "1", uint8(3))
	f.Fuzz(func(t *testing.T, user, password, host, dbname, port string, form uint8) {
		// A password that is part of the rest of the DSN cannot be told
		// apart from it; nor can one so short it is everywhere.
		if len(password) < 4 || strings.Contains(user+host+dbname+port, password) ||
			strings.Contains("postgres postgresql:// host= port= user= password= sslpassword= dbname= cannot parse opening reading the DSN invalid failed to", password) {
			t.Skip()
		}
		var dsn string
		switch form % 4 {
		case 0: // a URL, escaped as it should be
			u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: host + ":" + port, Path: "/" + dbname}
			dsn = u.String()
		case 1: // a URL written by hand, nothing escaped
			dsn = "postgres://" + user + ":" + password + "@" + host + ":" + port + "/" + dbname
		case 2: // key=value, quoted
			q := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
			dsn = "host='" + q.Replace(host) + "' port=" + port + " user='" + q.Replace(user) + "' password='" + q.Replace(password) + "' dbname='" + q.Replace(dbname) + "'"
		case 3: // a URL with the password in the query
			dsn = "postgres://" + user + "@" + host + ":" + port + "/" + dbname + "?password=" + url.QueryEscape(password)
		}
		got := store.Redact("dsn "+dsn+" saw "+password, dsn)
		if strings.Contains(got, password) {
			t.Fatalf("Redact(%q) = %q: holds the password", dsn, got)
		}
		// An open of a DSN that does not parse fails before it dials
		// anything; one that parses would dial, so it is left out.
		if _, err := pgxpool.ParseConfig(dsn); err != nil {
			_, err := store.OpenPostgres(dsn, store.PostgresOptions{Timeout: time.Second})
			if err != nil && strings.Contains(err.Error(), password) {
				t.Fatalf("OpenPostgres(%q) = %q: holds the password", dsn, err)
			}
		}
	})
}
