package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

func adapt(t *testing.T, in string) (map[string]any, error) {
	t.Helper()
	out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(in), nil)
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg, nil
}

func TestCaddyfileAdapts(t *testing.T) {
	cfg, err := adapt(t, `{
	toolgate {
		store badger /var/lib/toolgate
		secret {env.TOOLGATE_SECRET}
		pages https://gate.example.com/toolgate
		ttl 10m
		retention 2h
		action_timeout 3s
	}
}
api.example.com {
	reverse_proxy https://api.openai.com
	toolgate {
		policy /etc/toolgate/blog.yaml
		owner {http.request.header.X-User-Id}
		tenant {http.request.header.X-Tenant}
		max_request_body 1000
	}
}
gate.example.com {
	toolgate_pages {
		answerer {http.request.header.X-Person}
	}
}`)
	if err != nil {
		t.Fatal(err)
	}
	app, _ := json.Marshal(cfg["apps"].(map[string]any)["toolgate"])
	want := `{"action_timeout":3000000000,"pages":"https://gate.example.com/toolgate","retention":7200000000000,"secret":"{env.TOOLGATE_SECRET}","store":"/var/lib/toolgate","ttl":600000000000}`
	if string(app) != want {
		t.Errorf("app JSON\n got %s\nwant %s", app, want)
	}
	servers, _ := json.Marshal(cfg["apps"].(map[string]any)["http"])
	s := string(servers)
	gate := `{"handler":"toolgate","max_request_body":1000,"owner":"{http.request.header.X-User-Id}","policy":"/etc/toolgate/blog.yaml","tenant":"{http.request.header.X-Tenant}"}`
	proxy := `"handler":"reverse_proxy"`
	if !strings.Contains(s, gate) {
		t.Errorf("handler JSON missing %s in %s", gate, s)
	}
	// Written after reverse_proxy, the gate still runs first: its
	// directive order puts it after encode, before reverse_proxy.
	if gi, pi := strings.Index(s, gate), strings.Index(s, proxy); gi < 0 || pi < 0 || gi > pi {
		t.Errorf("toolgate does not wrap reverse_proxy: %s", s)
	}
	if !strings.Contains(s, `{"answerer":"{http.request.header.X-Person}","handler":"toolgate_pages"}`) {
		t.Errorf("pages handler JSON: %s", s)
	}
}

func TestCaddyfileAdaptsMCP(t *testing.T) {
	cfg, err := adapt(t, `mcp.example.com {
	reverse_proxy 127.0.0.1:3001
	toolgate_mcp {
		policy /etc/toolgate/blog.yaml
		tenant {http.request.header.X-Tenant}
		state_ttl 2m
		confirm_wait 0
		max_response_body 2000
	}
}`)
	if err != nil {
		t.Fatal(err)
	}
	servers, _ := json.Marshal(cfg["apps"].(map[string]any)["http"])
	s := string(servers)
	mcp := `{"confirm_wait":-1,"handler":"toolgate_mcp","max_response_body":2000,"policy":"/etc/toolgate/blog.yaml","state_ttl":120000000000,"tenant":"{http.request.header.X-Tenant}"}`
	if gi, pi := strings.Index(s, mcp), strings.Index(s, `"handler":"reverse_proxy"`); gi < 0 || pi < 0 || gi > pi {
		t.Errorf("toolgate_mcp missing or not before reverse_proxy (want %s) in %s", mcp, s)
	}
}

func TestCaddyfileErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"unknown global key", "{\n toolgate {\n colour red\n }\n}\n:80 {\n respond ok\n}", `unrecognized subdirective "colour"`},
		{"duplicate global key", "{\n toolgate {\n ttl 1m\n ttl 2m\n }\n}\n:80 {\n respond ok\n}", "ttl already specified"},
		{"bad duration", "{\n toolgate {\n ttl soon\n }\n}\n:80 {\n respond ok\n}", "ttl"},
		{"unknown handler key", ":80 {\n toolgate {\n policy p.yaml\n mode x\n }\n}", `unrecognized subdirective "mode"`},
		{"duplicate handler key", ":80 {\n toolgate {\n policy a.yaml\n policy b.yaml\n }\n}", "policy already specified"},
		{"no policy", ":80 {\n toolgate {\n owner {http.auth.user.id}\n }\n}", "policy is required"},
		{"bad size", ":80 {\n toolgate {\n policy p.yaml\n max_request_body lots\n }\n}", "max_request_body"},
		{"unknown pages key", ":80 {\n toolgate_pages {\n who x\n }\n}", `unrecognized subdirective "who"`},
		{"mcp without policy", ":80 {\n toolgate_mcp {\n owner x\n }\n}", "policy is required"},
		{"mcp unknown key", ":80 {\n toolgate_mcp {\n policy p.yaml\n provider openai-chat\n }\n}", `unrecognized subdirective "provider"`},
		{"bad resume wait", ":80 {\n toolgate {\n policy p.yaml\n resume_wait later\n }\n}", "resume_wait"},
		{"zero keep-alive", ":80 {\n toolgate {\n policy p.yaml\n resume_keepalive 0\n }\n}", "resume_keepalive: want a positive duration"},
		{"zero poll", ":80 {\n toolgate {\n policy p.yaml\n resume_poll 0s\n }\n}", "resume_poll: want a positive duration"},
		{"bad stream cap", ":80 {\n toolgate {\n policy p.yaml\n resume_max_streams 0\n }\n}", "resume_max_streams: want a positive whole number"},
		{"two resume waits", ":80 {\n toolgate {\n policy p.yaml\n resume_wait 1m\n resume_wait 2m\n }\n}", "resume_wait already specified"},
		{"mcp bad state ttl", ":80 {\n toolgate_mcp {\n policy p.yaml\n state_ttl never\n }\n}", "state_ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := adapt(t, tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestCaddyfileResumeOptions(t *testing.T) {
	cfg, err := adapt(t, `api.example.com {
	reverse_proxy https://api.openai.com
	toolgate {
		policy /etc/toolgate/blog.yaml
		resume_wait 2m
		resume_keepalive 10s
		resume_max_streams 50
		resume_poll 500ms
	}
}`)
	if err != nil {
		t.Fatal(err)
	}
	servers, _ := json.Marshal(cfg["apps"].(map[string]any)["http"])
	want := `{"handler":"toolgate","policy":"/etc/toolgate/blog.yaml","resume_keepalive":10000000000,"resume_max_streams":50,"resume_poll":500000000,"resume_wait":120000000000}`
	if !strings.Contains(string(servers), want) {
		t.Errorf("handler JSON missing %s in %s", want, servers)
	}
}

func TestValidateApp(t *testing.T) {
	for _, tt := range []struct {
		name string
		app  App
		want string
	}{
		{"no secret", App{Pages: "https://g.example/t"}, "secret"},
		{"short secret", App{secret: []byte("short"), Pages: "https://g.example/t"}, "secret"},
		{"no pages", App{secret: []byte("0123456789abcdef")}, "pages"},
		{"relative pages", App{secret: []byte("0123456789abcdef"), Pages: "/toolgate"}, "absolute"},
		{"pages with query", App{secret: []byte("0123456789abcdef"), Pages: "https://g.example/t?x=1"}, "query"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.app.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	ok := App{secret: []byte("0123456789abcdef"), Pages: "https://g.example/toolgate"}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid app refused: %v", err)
	}
}
