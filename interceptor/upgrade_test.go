package interceptor

import (
	"net/http"
	"testing"
)

func TestIsWebSocketUpgrade(t *testing.T) {
	for _, tc := range []struct {
		method string
		header http.Header
		want   bool
	}{
		{"GET", http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}, true},
		{"GET", http.Header{"Upgrade": {"h2c, WebSocket/13"}}, true},
		{"CONNECT", http.Header{":protocol": {"websocket"}}, true},
		{"POST", http.Header{"Content-Type": {"application/json"}}, false},
		{"GET", http.Header{"Upgrade": {"h2c"}}, false},
	} {
		r, err := http.NewRequest(tc.method, "http://x/v1/responses", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header = tc.header
		if got := IsWebSocketUpgrade(r); got != tc.want {
			t.Errorf("%s %v = %v", tc.method, tc.header, got)
		}
	}
}
