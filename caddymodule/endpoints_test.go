package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"
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
			got = ep.allow
		}
		if got != tc.allow {
			t.Errorf("%s %s: allow %q, want %q", tc.method, tc.path, got, tc.allow)
			continue
		}
		if ep == nil {
			continue
		}
		if !strings.Contains(ep.refusal(tc.method, tc.path).msg, tc.path) || !strings.Contains(ep.refusal(tc.method, tc.path).msg, "allow "+tc.allow) {
			t.Errorf("%s %s: refusal %q names neither the endpoint nor the way to allow it", tc.method, tc.path, ep.refusal(tc.method, tc.path).msg)
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
			got = p.allow
		}
		if got != tc.allow {
			t.Errorf("%s %s: allow %q, want %q", tc.provider, tc.body, got, tc.allow)
		}
	}
}

// The handler refuses each by default and lets each through when allowed;
// an unknown name fails provisioning.
func TestAllowNames(t *testing.T) {
	for _, name := range allowNames {
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

// FuzzRouteChecks: the canonical path is canonical and stable, and the
// byte filter in front of the parameter check never hides a parameter the
// full scan finds.
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
		for _, provider := range []string{"openai-chat", "openai-responses", "anthropic"} {
			if got, full := paramFor(provider, body), scanParams(provider, body); got != full && paramWords[provider] != nil {
				t.Fatalf("%s %q: filtered %v, full scan %v", provider, body, got, full)
			}
		}
	})
}
