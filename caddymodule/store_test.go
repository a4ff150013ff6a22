package caddymodule

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/toolgate/toolgate/store"
)

// The store's Caddyfile forms and their JSON: a Badger directory (with or
// without the word badger) or a PostgreSQL DSN, kept as written so a
// placeholder is resolved at load.
func TestCaddyfileStore(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"store badger /var/lib/toolgate", `"store":"/var/lib/toolgate"`},
		{"store /var/lib/toolgate", `"store":"/var/lib/toolgate"`},
		{"store postgres {env.TOOLGATE_DATABASE_URL}", `"postgres":"{env.TOOLGATE_DATABASE_URL}"`},
		{`store postgres "host=db.internal dbname=toolgate sslmode=verify-full"`, `"postgres":"host=db.internal dbname=toolgate sslmode=verify-full"`},
	} {
		cfg, err := adapt(t, "{\n toolgate {\n "+tt.line+"\n secret {env.TOOLGATE_SECRET}\n pages https://gate.example.com/toolgate\n }\n}\n:80 {\n respond ok\n}")
		if err != nil {
			t.Errorf("%s: %v", tt.line, err)
			continue
		}
		app, _ := json.Marshal(cfg["apps"].(map[string]any)["toolgate"])
		if !strings.Contains(string(app), tt.want) {
			t.Errorf("%s: app JSON %s lacks %s", tt.line, app, tt.want)
		}
		if strings.Contains(tt.line, "postgres") && strings.Contains(string(app), `"store"`) {
			t.Errorf("%s: app JSON %s also names a Badger store", tt.line, app)
		}
	}
	for _, line := range []string{
		"store",
		"store postgres",
		"store badger",
		"store postgres a b",
		"store mysql mysql://db",
		"store /a /b",
	} {
		_, err := adapt(t, "{\n toolgate {\n "+line+"\n }\n}\n:80 {\n respond ok\n}")
		if err == nil || !strings.Contains(err.Error(), "store: want [badger] <path>, or postgres <dsn>") {
			t.Errorf("%q: error = %v, want the store's forms named", line, err)
		}
	}
	_, err := adapt(t, "{\n toolgate {\n store /a\n store postgres b\n }\n}\n:80 {\n respond ok\n}")
	if err == nil || !strings.Contains(err.Error(), "store already specified") {
		t.Errorf("two stores: %v", err)
	}
}

// provisioned provisions the app from its JSON, as Caddy does at load
// (opening nothing), and validates it.
func provisioned(t *testing.T, config string) (*App, error) {
	t.Helper()
	var a App
	if err := json.Unmarshal([]byte(config), &a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: t.Context()})
	t.Cleanup(cancel)
	if err := a.Provision(ctx); err != nil {
		return &a, err
	}
	return &a, a.Validate()
}

// The DSN's placeholders are resolved at load; one that resolves to
// nothing is refused, never replaced by a store of this machine's own
// (which the other replicas would not see); a Badger directory and a DSN
// together are refused.
func TestAppPostgresDSN(t *testing.T) {
	const base = `"secret":"0123456789abcdef0123","pages":"https://gate.example.com/toolgate",`
	t.Setenv("TOOLGATE_TEST_DSN", "postgres://gate:pw@db.internal:5433/holds")
	a, err := provisioned(t, `{`+base+`"postgres":"{env.TOOLGATE_TEST_DSN}"}`)
	if err != nil {
		t.Fatalf("provisioning: %v", err)
	}
	if a.dsn != "postgres://gate:pw@db.internal:5433/holds" || a.dir != "" {
		t.Errorf("dsn %q, dir %q; want the resolved DSN and no directory", a.dsn, a.dir)
	}

	_, err = provisioned(t, `{`+base+`"postgres":"{env.TOOLGATE_TEST_UNSET_DSN}"}`)
	if err == nil || !strings.Contains(err.Error(), "{env.TOOLGATE_TEST_UNSET_DSN}") || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an unset DSN: %v, want a refusal naming the placeholder", err)
	}
	_, err = provisioned(t, `{`+base+`"postgres":"postgres://db.internal/holds","store":"/var/lib/toolgate"}`)
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("a directory and a DSN: %v, want a refusal", err)
	}
}

// Caddy starts its apps in no fixed order, so the HTTP server may serve a
// gated request before the toolgate app has opened its store (at every
// start and config reload). Such a request waits for the store instead of
// being refused; once the app has stopped, it is refused at once.
func TestAppStoreWaitsForStart(t *testing.T) {
	a, err := provisioned(t, `{"secret":"0123456789abcdef0123","pages":"https://gate.example.com/toolgate","store":`+strconvQuote(t.TempDir())+`}`)
	if err != nil {
		t.Fatalf("provisioning: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := (*appStore)(a).Get(t.Context(), "aaaaaaaaaaaaaaaaaaaaaaaaaa")
		got <- err
	}()
	if err := a.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	select {
	case err := <-got:
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a Get sent before Start = %v, want the store's answer (ErrNotFound)", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a Get sent before Start did not return a minute after it")
	}
	if err := a.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := (*appStore)(a).Get(t.Context(), "aaaaaaaaaaaaaaaaaaaaaaaaaa"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a Get after Stop = %v, want ErrUnavailable", err)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
