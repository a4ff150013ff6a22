package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCaddyfileReleaseAndIdentityOptions: the global options of the
// sweeper and the cap, and the pages' tenant, reach the JSON config.
func TestCaddyfileReleaseAndIdentityOptions(t *testing.T) {
	for _, tt := range []struct{ maxWaiting, want string }{
		{"25", `"max_waiting":25`},
		{"0", `"max_waiting":-1`}, // no cap; 0 in JSON is the default
	} {
		cfg, err := adapt(t, `{
	toolgate {
		secret {env.TOOLGATE_SECRET}
		pages https://gate.example.com/toolgate
		max_waiting `+tt.maxWaiting+`
		sweep_interval 30s
	}
}
gate.example.com {
	toolgate_pages {
		answerer {http.request.header.X-Person}
		tenant {http.request.header.X-Tenant}
	}
}`)
		if err != nil {
			t.Fatal(err)
		}
		app, _ := json.Marshal(cfg["apps"].(map[string]any)["toolgate"])
		for _, want := range []string{tt.want, `"sweep_interval":30000000000`} {
			if !strings.Contains(string(app), want) {
				t.Errorf("app JSON %s lacks %s", app, want)
			}
		}
		servers, _ := json.Marshal(cfg["apps"].(map[string]any)["http"])
		if want := `{"answerer":"{http.request.header.X-Person}","handler":"toolgate_pages","tenant":"{http.request.header.X-Tenant}"}`; !strings.Contains(string(servers), want) {
			t.Errorf("pages JSON lacks %s: %s", want, servers)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"max_waiting lots", "max_waiting"},
		{"max_waiting -3", "max_waiting"},
		{"sweep_interval 0", "sweep_interval: want a positive duration"},
		{"sweep_interval often", "sweep_interval"},
	} {
		_, err := adapt(t, "{\n toolgate {\n "+tt.in+"\n }\n}\n:80 {\n respond ok\n}")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error = %v, want it to contain %q", tt.in, err, tt.want)
		}
	}
	if _, err := adapt(t, ":80 {\n toolgate_pages {\n tenant a\n tenant b\n }\n}"); err == nil || !strings.Contains(err.Error(), "tenant already specified") {
		t.Errorf("a second tenant: %v", err)
	}
}
