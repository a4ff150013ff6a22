package interceptor

import (
	"net/http"
	"strings"
)

// IsWebSocketUpgrade reports whether r asks to switch to WebSocket: an
// HTTP/1.1 Upgrade naming websocket, or an HTTP/2 (or 3) extended CONNECT
// with a :protocol. The Responses API has a WebSocket mode (GET
// /v1/responses, openai-go ResponseService.Connect) whose events no adapter
// reads; a gated route must refuse it, or calls would go around the gate.
func IsWebSocketUpgrade(r *http.Request) bool {
	if r.Method == http.MethodConnect && r.Header.Get(":protocol") != "" {
		return true
	}
	for _, v := range r.Header.Values("Upgrade") {
		for p := range strings.SplitSeq(v, ",") {
			p = strings.TrimSpace(p)
			if i := strings.IndexByte(p, '/'); i >= 0 {
				p = p[:i]
			}
			if strings.EqualFold(p, "websocket") {
				return true
			}
		}
	}
	return false
}
