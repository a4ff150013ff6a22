package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestCaddyfileAuditRetention(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{"audit_retention 8760h", `"audit_retention":31536000000000000`, ""},
		{"audit_retention forever", `"audit_retention":-1`, ""},
		{"audit_retention 0s", "", "want a positive duration, or forever"},
		{"audit_retention -1h", "", "want a positive duration, or forever"},
		{"audit_retention", "", "wrong argument count"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			cfg, err := adapt(t, "{\n\ttoolgate {\n\t\t"+tt.in+"\n\t}\n}\n")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			app, _ := json.Marshal(cfg["apps"].(map[string]any)["toolgate"])
			if !strings.Contains(string(app), tt.want) {
				t.Errorf("app JSON %s lacks %s", app, tt.want)
			}
		})
	}
}

func TestParseAuditTime(t *testing.T) {
	now := time.Date(2031, 5, 4, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                          {},
		"2031-05-01T08:30:00+02:00": time.Date(2031, 5, 1, 6, 30, 0, 0, time.UTC),
		"2031-05-01":                time.Date(2031, 5, 1, 0, 0, 0, 0, time.UTC),
		"36h":                       now.Add(-36 * time.Hour),
		"2d":                        now.Add(-48 * time.Hour),
	} {
		got, err := parseAuditTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseAuditTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"yesterday", "-1h", "0s", "2031-13-01"} {
		if _, err := parseAuditTime(in, now); err == nil {
			t.Errorf("parseAuditTime(%q) took it", in)
		}
	}
}

// The options of issue 15 §4 and §5 in the Caddyfile, and their mistakes.
func TestCaddyfileRotationAndPolicyPoll(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{"previous_secrets {env.OLD} old-secret-0123456789", `"previous_secrets":["{env.OLD}","old-secret-0123456789"]`, ""},
		{"previous_secrets", "", "wrong argument count"},
		{"policy_poll 500ms", `"policy_poll":500000000`, ""},
		{"policy_poll off", `"policy_poll":-1`, ""},
		{"policy_poll 0s", "", "want a positive duration, or off"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			cfg, err := adapt(t, "{\n\ttoolgate {\n\t\t"+tt.in+"\n\t}\n}\n")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			app, _ := json.Marshal(cfg["apps"].(map[string]any)["toolgate"])
			if !strings.Contains(string(app), tt.want) {
				t.Errorf("app JSON %s lacks %s", app, tt.want)
			}
		})
	}
}
