package caddymodule

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// Without a running toolgate app every route answers 503, saying so;
// the checks of the request come first.
func TestAdminWithoutApp(t *testing.T) {
	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/toolgate/holds", 503},
		{"GET", "/toolgate/holds/abc", 503},
		{"POST", "/toolgate/holds/abc/expire", 503},
		{"PUT", "/toolgate/holds", 405},
		{"GET", "/toolgate/holds/abc/expire", 405},
		{"POST", "/toolgate/holds/abc/run", 404},
	} {
		var handler caddy.AdminHandler
		for _, r := range (Admin{}).Routes() {
			if r.Pattern == "/toolgate/holds" && tt.path == r.Pattern || r.Pattern == "/toolgate/holds/" && tt.path != "/toolgate/holds" {
				handler = r.Handler
			}
		}
		err := handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(tt.method, tt.path, nil))
		ae, ok := errors.AsType[caddy.APIError](err)
		if !ok || ae.HTTPStatus != tt.status {
			t.Errorf("%s %s: %v, want status %d", tt.method, tt.path, err, tt.status)
		}
		if tt.status == http.StatusServiceUnavailable && (ae.Err == nil || ae.Err.Error() != "no toolgate app is running") {
			t.Errorf("%s %s: %v", tt.method, tt.path, ae.Err)
		}
	}
}
