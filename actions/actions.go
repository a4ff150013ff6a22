// Package actions makes the gate's requests to the app: the record GET a
// card is built from, and the release of a confirmed call to the action's
// endpoint. Every request runs as the person (their id and tenant in
// headers) and carries an HMAC-SHA256 signature the app can check, so the
// app can trust those headers without trusting the network.
package actions

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Headers the gate sets on every request to the app.
const (
	HeaderPerson    = "X-Toolgate-Person"
	HeaderTenant    = "X-Toolgate-Tenant"
	HeaderTimestamp = "X-Toolgate-Timestamp"
	HeaderSignature = "X-Toolgate-Signature"
	HeaderHold      = "X-Toolgate-Hold"
	// HeaderIdempotency carries the hold id on a release, so an app that
	// sees the same key twice can answer the second from the first.
	HeaderIdempotency = "Idempotency-Key"
)

// Caller is who a request runs as.
type Caller struct {
	Person string
	Tenant string
}

// Response is the app's answer, with the body cut at the client's MaxBody.
type Response struct {
	Status int
	Body   []byte
}

// Errors of a request the app did not answer; callers test with
// errors.Is. They tell apart what the gate knows of a release.
var (
	// ErrNotSent: no connection to the app was made (a dial or TLS
	// failure, a bad URL), so no byte of the request left: nothing ran.
	ErrNotSent = errors.New("request not sent")
	// ErrNoAnswer: the request may have reached the app, but no answer
	// came back (the connection dropped, the timeout passed): the action
	// may or may not have run.
	ErrNoAnswer = errors.New("no answer from the app")
)

// Client sends signed requests to the app. The zero value is not usable:
// Secret must be set. A Client must not be copied after first use.
type Client struct {
	// Transport is the base of the transports used (proxy, dialer, TLS
	// roots); nil means http.DefaultTransport's settings. Reads use a
	// clone of it; releases use a clone with keep-alives and HTTP/2 off
	// (see Run). No redirect is ever followed: it could move a signed
	// request elsewhere.
	Transport *http.Transport
	// Secret keys the signature.
	Secret []byte
	// Previous are secrets being rotated out: during a rotation each
	// request also carries a signature by each of them (Signature), so an
	// app still on the old secret verifies it.
	Previous [][]byte
	// Timeout bounds each request. Default 10s.
	Timeout time.Duration
	// MaxBody caps the response body read. Default 1 MiB.
	MaxBody int64
	// Now is the clock for timestamps; default time.Now.
	Now func() time.Time

	once     sync.Once
	reads    *http.Client // record reads: pooled connections, replays harmless
	releases *http.Client // releases: one fresh HTTP/1.1 connection each
}

// clients builds the two HTTP clients once.
func (c *Client) clients() (reads, releases *http.Client) {
	c.once.Do(func() {
		base := c.Transport
		if base == nil {
			base = http.DefaultTransport.(*http.Transport)
		}
		c.reads = &http.Client{Transport: base.Clone(), CheckRedirect: noRedirect}
		c.releases = &http.Client{Transport: releaseTransport(base), CheckRedirect: noRedirect}
	})
	return c.reads, c.releases
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// releaseTransport is base with keep-alives and HTTP/2 off, so one
// confirmation is at most one request to the app. Go's HTTP/1 transport
// silently sends a request again when a reused connection turns out dead,
// and a request with an Idempotency-Key header counts as safe to repeat
// (net/http's isReplayable): the app would see the release twice. On a
// fresh connection it never does (shouldRetryRequest needs a reused one).
// The HTTP/2 transport retries after GOAWAY, REFUSED_STREAM and a
// PROTOCOL_ERROR reset from the peer (golang/go#47635), the last of which
// does not prove the app did not act; HTTP/1.1 has none of these. A
// release costs one connection setup, once per confirmation.
func releaseTransport(base *http.Transport) *http.Transport {
	t := base.Clone()
	t.DisableKeepAlives = true
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP1(true)
	t.ForceAttemptHTTP2 = false
	if t.TLSClientConfig != nil { // Clone copied it; offer only HTTP/1.1 in ALPN
		t.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	return t
}

// Fetch reads a record: GET rawURL as the caller.
func (c *Client) Fetch(ctx context.Context, rawURL string, who Caller) (Response, error) {
	reads, _ := c.clients()
	return c.do(ctx, reads, http.MethodGet, rawURL, nil, nil, who, "")
}

// Run releases a call: method rawURL with the arguments as a JSON body
// (none for GET), the policy's extra headers, and the hold id as the
// Idempotency-Key.
//
// It sends at most one request, on a connection of its own, and never
// repeats it. Its errors wrap ErrNotSent when nothing left (nothing ran)
// and ErrNoAnswer when the request may have reached the app (the outcome
// is unknown). A Response with a Status and an error is an answer whose
// body could not be read in full.
func (c *Client) Run(ctx context.Context, method, rawURL string, headers map[string]string, args []byte, who Caller, holdID string) (Response, error) {
	if method == http.MethodGet || method == http.MethodHead {
		args = nil
	}
	_, releases := c.clients()
	return c.do(ctx, releases, method, rawURL, headers, args, who, holdID)
}

func (c *Client) do(ctx context.Context, hc *http.Client, method, rawURL string, headers map[string]string, body []byte, who Caller, holdID string) (Response, error) {
	if len(c.Secret) == 0 {
		return Response{}, fmt.Errorf("%w: no signing secret configured", ErrNotSent)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u, err := url.Parse(rawURL)
	if err != nil {
		return Response{}, fmt.Errorf("%w: parsing url: %w", ErrNotSent, err)
	}
	// Until the transport has a connection, no byte of the request left.
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }})
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("%w: making request: %w", ErrNotSent, err)
	}
	// Without GetBody a request with a body is never sent twice by any
	// transport (a second defence next to releaseTransport).
	req.GetBody = nil
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	} else {
		req.Body = http.NoBody
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(HeaderPerson, who.Person)
	if who.Tenant != "" {
		req.Header.Set(HeaderTenant, who.Tenant)
	}
	if holdID != "" {
		req.Header.Set(HeaderIdempotency, holdID)
		req.Header.Set(HeaderHold, holdID)
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	ts := now().Unix()
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, c.Signature(method, u.RequestURI(), ts, body))

	resp, err := hc.Do(req)
	if err != nil {
		why := ErrNoAnswer
		if !connected.Load() {
			why = ErrNotSent
		}
		return Response{}, fmt.Errorf("%w: %s %s: %w", why, method, u.Redacted(), err)
	}
	defer resp.Body.Close()
	max := c.MaxBody
	if max <= 0 {
		max = 1 << 20
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max))
	if err != nil {
		return Response{Status: resp.StatusCode}, fmt.Errorf("reading response of %s %s: %w", method, u.Redacted(), err)
	}
	return Response{Status: resp.StatusCode, Body: b}, nil
}

// Sign returns the signature header value for a request: "v1=" and the
// hex HMAC-SHA256, keyed by secret, of
//
//	method "\n" requestURI "\n" timestamp "\n" body
//
// where requestURI is the path and query as sent (e.g. "/posts/7?x=1") and
// timestamp the decimal Unix seconds of the X-Toolgate-Timestamp header.
func Sign(secret []byte, method, requestURI string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, secret)
	io.WriteString(m, method)
	m.Write([]byte{'\n'})
	io.WriteString(m, requestURI)
	m.Write([]byte{'\n'})
	io.WriteString(m, strconv.FormatInt(timestamp, 10))
	m.Write([]byte{'\n'})
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// Signature is the signature header value of a request: Sign by the
// secret, then, during a rotation, a comma and Sign by each previous
// secret ("v1=<hex>,v1=<hex>"). An app accepts the request when any one
// of the comma-separated signatures matches its secret, so it may move
// to the new secret at any time while the gate still lists the old one.
func (c *Client) Signature(method, requestURI string, timestamp int64, body []byte) string {
	sig := Sign(c.Secret, method, requestURI, timestamp, body)
	for _, p := range c.Previous {
		sig += "," + Sign(p, method, requestURI, timestamp, body)
	}
	return sig
}

// Verify checks a request the gate signed, as an app written in Go would:
// the signature must match the body and the timestamp must be within skew
// of now (a replay of an old request fails).
func Verify(secret []byte, r *http.Request, body []byte, now time.Time, skew time.Duration) error {
	ts, err := strconv.ParseInt(r.Header.Get(HeaderTimestamp), 10, 64)
	if err != nil {
		return errors.New("missing or malformed timestamp")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > skew || d < -skew {
		return errors.New("timestamp outside the allowed skew")
	}
	want := Sign(secret, r.Method, r.URL.RequestURI(), ts, body)
	// During a rotation the header lists one signature per secret.
	for _, got := range strings.Split(r.Header.Get(HeaderSignature), ",") {
		if hmac.Equal([]byte(want), []byte(strings.TrimSpace(got))) {
			return nil
		}
	}
	return errors.New("signature mismatch")
}
