package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/provider"
)

// A path a tolerant upstream routes to a gated endpoint is gated: upstreams
// ignore case (Express), a trailing slash (Express, Starlette's redirect),
// empty segments and dot segments (path cleaning), path parameters
// (";x=1", servlet containers), and Caddy has already percent-decoded the
// path.
func TestGatedPathsMatchAsUpstreamsRoute(t *testing.T) {
	h := &Handler{}
	for _, tc := range []struct{ path, want string }{
		{"/v1/chat/completions", "openai-chat"},
		{"/v1/chat/completions/", "openai-chat"},
		{"/v1/Chat/Completions", "openai-chat"},
		{"/V1/CHAT/COMPLETIONS/", "openai-chat"},
		{"//v1/chat//completions", "openai-chat"},
		{"/v1/chat/completions;x=1", "openai-chat"},
		{"/v1/chat;v=2/completions", "openai-chat"},
		{"/v1/chat/./completions", "openai-chat"},
		{"/v1/chat/x/../completions", "openai-chat"},
		{"/v1/chat/completions/.", "openai-chat"},
		{"/openai/deployments/gpt/chat/completions", "openai-chat"},
		{"/v1/responses", "openai-responses"},
		{"/v1/Responses/", "openai-responses"},
		{"/v1/responses;a", "openai-responses"},
		{"/v1/messages", "anthropic"},
		{"/v1//Messages//", "anthropic"},
		{"/v1/messages;x=1/", "anthropic"},
		{"/v1/completions", ""},
		{"/v1/chat/completion", ""},
		{"/v1/chat/completions/abc", ""},
		{"/v1/messages/count_tokens", ""},
		{"/v1/responses/input_tokens", ""},
		{"/v1/embeddings", ""},
		{"/", ""},
		{"", ""},
	} {
		if got := h.providerFor(canonicalPath(tc.path)); got != tc.want {
			t.Errorf("%q: provider %q, want %q", tc.path, got, tc.want)
		}
	}
}

// A clean path is taken as it is: the pass-through pays no allocation.
func TestCanonicalPathKeepsCleanPaths(t *testing.T) {
	for _, p := range []string{"/v1/chat/completions", "/v1/responses", "/", "/a-b_c/d.e"} {
		if got := canonicalPath(p); got != p {
			t.Errorf("%q became %q", p, got)
		}
		if n := testing.AllocsPerRun(10, func() { canonicalPath(p) }); n != 0 {
			t.Errorf("%q: %v allocations", p, n)
		}
	}
	for p, want := range map[string]string{
		"":                      "/",
		"/A//b/":                "/a/b",
		"/a/../../b":            "/b",
		"/a;x/b;y=1":            "/a/b",
		"/ÄBC":                  "/äbc",
		"/v1/chat/completions/": "/v1/chat/completions",
	} {
		if got := canonicalPath(p); got != want {
			t.Errorf("%q became %q, want %q", p, got, want)
		}
	}
}

// Endpoints that return tool calls the gate never rewrites are refused by
// default, each named, and pass when the operator allows them.
func TestEndpointsAroundTheGate(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		allow        string // "" passes anyway
	}{
		{"POST", "/v1/batches", "batches"},
		{"GET", "/v1/batches/batch_1", "batches"},
		{"POST", "/v1/batches/batch_1/cancel", "batches"},
		{"GET", "/v1/files/file-1/content", "batches"},
		{"GET", "/v1/Files/file-1/content/", "batches"},
		{"POST", "/v1/messages/batches", "batches"},
		{"GET", "/v1/messages/batches/msgbatch_1/results", "batches"},
		{"GET", "/v1/responses/resp_1", "stored_responses"},
		{"GET", "/v1/responses/resp_1/input_items", "stored_responses"},
		{"POST", "/v1/responses/resp_1/cancel", "stored_responses"},
		{"GET", "/v1/Responses/resp_1/", "stored_responses"},
		{"GET", "/v1/conversations/conv_1/items", "stored_responses"},
		{"GET", "/v1/conversations/conv_1/items/msg_1", "stored_responses"},
		{"GET", "/v1/chat/completions", "stored_responses"},
		{"GET", "/v1/chat/completions/chatcmpl-1", "stored_responses"},
		{"GET", "/v1/chat/completions/chatcmpl-1/messages", "stored_responses"},
		{"POST", "/v1/chat/completions/chatcmpl-1", "stored_responses"},
		{"GET", "/v1/realtime", "realtime"},
		{"POST", "/v1/realtime/calls", "realtime"},
		{"POST", "/v1/realtime/client_secrets", "realtime"},
		{"POST", "/v1/realtime/sessions", "realtime"},
		{"POST", "/v1/chat/completions", ""},
		{"POST", "/v1/responses", ""},
		{"POST", "/v1/responses/input_tokens", ""},
		{"POST", "/v1/responses/compact", ""},
		{"DELETE", "/v1/responses/resp_1", ""},
		{"DELETE", "/v1/chat/completions/chatcmpl-1", ""},
		{"GET", "/v1/conversations/conv_1", ""},
		{"POST", "/v1/conversations/conv_1/items", ""},
		{"POST", "/v1/messages/count_tokens", ""},
		{"GET", "/v1/files/file-1", ""},
		{"GET", "/v1/models", ""},
	} {
		ep := endpointFor(tc.method, canonicalPath(tc.path))
		got := ""
		if ep != nil {
			got = ep.Allow
		}
		if got != tc.allow {
			t.Errorf("%s %s: allow %q, want %q", tc.method, tc.path, got, tc.allow)
			continue
		}
		if ep == nil {
			continue
		}
		if !strings.Contains(aroundRefusal(ep, tc.method, tc.path).msg, tc.path) || !strings.Contains(aroundRefusal(ep, tc.method, tc.path).msg, "allow "+tc.allow) {
			t.Errorf("%s %s: refusal %q names neither the endpoint nor the way to allow it", tc.method, tc.path, aroundRefusal(ep, tc.method, tc.path).msg)
		}
	}
}

// Request parameters that carry calls around the gate: legacy Chat
// functions and background responses, found under any spelling a server
// would read.
func TestRequestParametersAroundTheGate(t *testing.T) {
	for _, tc := range []struct {
		provider, body, allow string
	}{
		{"openai-chat", `{"model":"m","functions":[{"name":"delete_post"}]}`, "legacy_functions"},
		{"openai-chat", `{"model":"m","function_call":{"name":"delete_post"}}`, "legacy_functions"},
		{"openai-chat", `{"model":"m","function_call":"auto"}`, "legacy_functions"},
		{"openai-chat", `{"model":"m","Functions":[{"name":"x"}]}`, "legacy_functions"},
		{"openai-chat", `{"model":"m","\u0066unctions":[{"name":"x"}]}`, "legacy_functions"},
		{"openai-chat", `{"model":"m","functions":null,"functions":[{"name":"x"}]}`, "legacy_functions"},
		{"openai-chat", `{"model":"m","functions":[],"function_call":"none"}`, ""},
		{"openai-chat", `{"model":"m","functions":null}`, ""},
		{"openai-chat", `{"model":"m","messages":[{"role":"assistant","function_call":{"name":"x","arguments":"{}"}}]}`, ""},
		{"openai-chat", `{"model":"m","messages":[{"role":"user","content":"list \"functions\" and \"FUNCTION_CALL\""}]}`, ""},
		{"openai-chat", `{"model":"m","FUNCTION_CALL":{"name":"x"}}`, "legacy_functions"},
		{"openai-chat", `{"model":"m","fUnCtIoNs":[{"name":"x"}]}`, "legacy_functions"},
		{"openai-responses", `{"model":"m","background":"yes"}`, "stored_responses"},
		{"openai-responses", `{"model":"m","background":1}`, "stored_responses"},
		{"openai-responses", `{"model":"m","\u0062ackground":true}`, "stored_responses"},
		{"openai-responses", `{"model":"m","background":true}`, "stored_responses"},
		{"openai-responses", `{"model":"m","background":false,"Background":true}`, "stored_responses"},
		{"openai-responses", `{"model":"m","background":false}`, ""},
		{"openai-responses", `{"model":"m","functions":[{"name":"x"}]}`, ""},
		{"anthropic", `{"model":"m","background":true,"functions":[1]}`, ""},
	} {
		p := paramFor(tc.provider, []byte(tc.body))
		got := ""
		if p != nil {
			got = p.Allow
		}
		if got != tc.allow {
			t.Errorf("%s %s: allow %q, want %q", tc.provider, tc.body, got, tc.allow)
		}
	}
}

// The handler refuses each by default and lets each through when allowed;
// an unknown name fails provisioning.
func TestAllowNames(t *testing.T) {
	for _, name := range provider.AllowNames {
		h := &Handler{Allow: []string{name}}
		if err := h.checkAllow(); err != nil || !h.allows(name) {
			t.Errorf("%s: %v", name, err)
		}
		if (&Handler{}).allows(name) {
			t.Errorf("%s allowed by default", name)
		}
	}
	if err := (&Handler{Allow: []string{"batch"}}).checkAllow(); err == nil || !strings.Contains(err.Error(), `"batch"`) {
		t.Errorf("unknown name: %v", err)
	}
}

// The Caddyfile's allow takes the JSON key's names, refuses others, and
// is given once.
func TestCaddyfileAllow(t *testing.T) {
	cfg, err := adapt(t, `api.example.com {
	toolgate {
		policy /etc/toolgate/blog.yaml
		allow batches realtime
	}
	reverse_proxy https://api.openai.com
}`)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := json.Marshal(cfg); !strings.Contains(string(s), `"allow":["batches","realtime"]`) {
		t.Errorf("config %s lacks the allow list", s)
	}
	for in, want := range map[string]string{
		"allow batch":                       `unknown "batch"`,
		"allow":                             "wrong argument count",
		"allow batches\n\t\tallow realtime": "already specified",
	} {
		_, err := adapt(t, "api.example.com {\n\ttoolgate {\n\t\tpolicy p.yaml\n\t\t"+in+"\n\t}\n}")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// FuzzRouteChecks: the canonical path is canonical and stable, and no
// route check fails on any path, method or body.
func FuzzRouteChecks(f *testing.F) {
	f.Add("/v1/Chat//completions;x=1/", "POST", []byte(`{"functions":[{"name":"x"}]}`))
	f.Add("/v1/responses/../responses", "POST", []byte(`{"Background":true}`))
	f.Add("/v1/files/f/content", "GET", []byte(`{"\u0066unctions":[1]}`))
	f.Add("", "DELETE", []byte(`{"function_call":"none"}`))
	f.Fuzz(func(t *testing.T, path, method string, body []byte) {
		c := canonicalPath(path)
		if canonicalPath(c) != c || !strings.HasPrefix(c, "/") || strings.Contains(c, "//") || strings.ContainsRune(c, ';') ||
			(c != "/" && strings.HasSuffix(c, "/")) || strings.ToLower(c) != c || strings.Contains(c+"/", "/./") || strings.Contains(c+"/", "/../") {
			t.Fatalf("%q → %q is not canonical", path, c)
		}
		endpointFor(method, c)
		if (&Handler{}).unknownPost(upperMethod(method), c, path, "") == nil && upperMethod(method) == "POST" && (foreignPath(c) || !knownPath(c)) {
			t.Fatalf("POST %q: an unknown path passed", path)
		}
		for _, name := range provider.Names() {
			paramFor(name, body) // the filter against the full scan: interceptor's FuzzAroundParam
		}
	})
}

// A gated endpoint's path is read as its end says, whatever the route's
// Provider: an OpenAI-compatible server (vLLM) answers /v1/messages in
// Anthropic's shape and /v1/responses in the Responses shape; the fixed
// Provider reads the other paths.
func TestFixedProviderReadsGatedPathsByTheirEnd(t *testing.T) {
	for _, provider := range []string{"openai-chat", "openai-responses", "anthropic"} {
		h := &Handler{Provider: provider}
		for path, want := range map[string]string{
			"/v1/chat/completions": "openai-chat",
			"/v1/responses":        "openai-responses",
			"/v1/messages":         "anthropic",
			"/generate":            provider,
			"/v1/embeddings":       provider,
		} {
			if got := h.providerFor(canonicalPath(path)); got != want {
				t.Errorf("provider %s, %s: read as %q, want %q", provider, path, got, want)
			}
		}
	}
}

// A POST to a path that is neither gated nor known to answer without
// calls is refused, on every route, unless allowed by name; so are the
// paths of the providers the gate has no adapter for (a ':' method no
// provider serves or knows), even where a fixed Provider or a gated end
// would read them.
func TestUnknownPostPaths(t *testing.T) {
	for _, tc := range []struct {
		provider, method, path string
		refused                bool
	}{
		{"", "POST", "/v1beta/models/gemini-2.5-flash:generateContent", false}, // the gemini provider's
		{"", "POST", "/v1beta/models/gemini-2.5-flash:countTokens", false},
		{"", "POST", "/v1/projects/p/locations/l/publishers/google/models/m:computeTokens", true},
		{"openai-chat", "POST", "/v1/models/m:fooBar", true},
		{"", "POST", "/v1/threads/thread_1/runs", true},
		{"", "POST", "/v1/threads/runs", true},
		{"", "POST", "/v1/threads/t/runs/r/submit_tool_outputs", true},
		{"", "POST", "/api/chat", true},
		{"", "POST", "/api/generate", true},
		{"", "POST", "/model/m/invoke", true},
		{"", "POST", "/model/m/converse-stream", true},
		{"", "POST", "/v2/agents/run", true},
		{"", "POST", "/v1/threads/thread_1/messages", true},
		{"openai-chat", "POST", "/api/chat", true},
		{"openai-chat", "POST", "/v1beta/models/g:streamGenerateContent", false}, // read as gemini's
		{"openai-chat", "POST", "/model/m/converse", true},
		{"openai-chat", "POST", "/v2/generate", false},
		{"", "post", "/api/chat", true},
		{"", "GET", "/api/chat", false},
		{"", "POST", "/v1/chat/completions", false},
		{"", "POST", "/v1/embeddings", false},
		{"", "POST", "/v1/moderations", false},
		{"", "POST", "/v1/completions", false},
		{"", "POST", "/v1/messages/count_tokens", false},
		{"", "POST", "/v1/responses/input_tokens", false},
		{"", "POST", "/v1/audio/transcriptions", false},
		{"", "POST", "/v1/files", false},
		{"", "POST", "/v1/conversations/conv_1/items", false},
	} {
		h := &Handler{Provider: tc.provider}
		path := canonicalPath(tc.path)
		ref := h.unknownPost(upperMethod(tc.method), path, tc.path, h.providerFor(path))
		if (ref != nil) != tc.refused {
			t.Errorf("provider %q, %s %s: refused %v, want %v", tc.provider, tc.method, tc.path, ref != nil, tc.refused)
			continue
		}
		if ref != nil && (ref.status != 403 || !strings.Contains(ref.msg, "allow_paths "+tc.path)) {
			t.Errorf("%s %s: refusal %d %q does not name allow_paths", tc.method, tc.path, ref.status, ref.msg)
		}
		if !tc.refused {
			continue
		}
		h.AllowPaths = []string{tc.path}
		if err := h.checkAllowPaths(); err != nil {
			t.Fatal(err)
		}
		if ref := h.unknownPost(upperMethod(tc.method), path, tc.path, h.providerFor(path)); ref != nil {
			t.Errorf("%s %s allowed by name: still refused", tc.method, tc.path)
		}
	}
	h := &Handler{AllowPaths: []string{"/v1beta/models/*", "/API/Chat/"}}
	if err := h.checkAllowPaths(); err != nil {
		t.Fatal(err)
	}
	for path, allowed := range map[string]bool{
		"/v1beta/models/g:generateContent": true,
		"/v1beta/models":                   true,
		"/v1beta/modelsx/g":                false,
		"/api/chat":                        true,
		"/api/chat/x":                      false,
	} {
		if got := h.allowsPath(canonicalPath(path)); got != allowed {
			t.Errorf("allow_paths %v, %s: allowed %v, want %v", h.AllowPaths, path, got, allowed)
		}
	}
	for _, bad := range []string{"api/chat", "/v1/*/runs", ""} {
		if err := (&Handler{AllowPaths: []string{bad}}).checkAllowPaths(); err == nil {
			t.Errorf("allow_paths %q: no error", bad)
		}
	}
}

// Methods compare in any case: Caddy forwards "get" as it came, and a
// tolerant upstream routes it as GET.
func TestEndpointMethodsInAnyCase(t *testing.T) {
	for _, tc := range []struct{ method, path, allow string }{
		{"get", "/v1/chat/completions", "stored_responses"},
		{"Get", "/v1/conversations/conv_1/items", "stored_responses"},
		{"post", "/v1/responses/input_tokens", ""},
		{"delete", "/v1/responses/resp_1", ""},
		{"post", "/v1/responses/resp_1/cancel", "stored_responses"},
	} {
		got := ""
		if ep := endpointFor(tc.method, canonicalPath(tc.path)); ep != nil {
			got = ep.Allow
		}
		if got != tc.allow {
			t.Errorf("%s %s: allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
	var m string
	if n := testing.AllocsPerRun(10, func() { m = upperMethod("POST") }); n != 0 || m != "POST" {
		t.Errorf("upperMethod of an upper-case method: %v allocations", n)
	}
}

// The Caddyfile's allow_paths takes paths and "/*" prefixes, refuses
// others, and is given once.
func TestCaddyfileAllowPaths(t *testing.T) {
	cfg, err := adapt(t, `api.example.com {
	toolgate {
		policy /etc/toolgate/blog.yaml
		allow_paths /api/chat /v1beta/models/*
	}
	reverse_proxy http://127.0.0.1:11434
}`)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := json.Marshal(cfg); !strings.Contains(string(s), `"allow_paths":["/api/chat","/v1beta/models/*"]`) {
		t.Errorf("config %s lacks the allow_paths list", s)
	}
	for in, want := range map[string]string{
		"allow_paths api/chat":               "want an absolute path",
		"allow_paths /v1/*/runs":             "want an absolute path",
		"allow_paths":                        "wrong argument count",
		"allow_paths /a\n\t\tallow_paths /b": "already specified",
	} {
		_, err := adapt(t, "api.example.com {\n\ttoolgate {\n\t\tpolicy p.yaml\n\t\t"+in+"\n\t}\n}")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
