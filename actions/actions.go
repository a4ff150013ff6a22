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
	// clone of it; releases use an HTTP/1.1-only clone (see Run). Both
	// keep connections alive. No redirect is ever followed: it could move
	// a signed request elsewhere.
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
	releases *http.Client // releases: pooled HTTP/1.1 connections, never replayed
}

// Connection pool bounds of both transports, where the base leaves them
// at net/http's defaults (2 idle connections per host would make most of
// a burst of concurrent releases dial anew).
const (
	maxIdlePerHost = 64
	// releaseIdleTimeout is how long a release connection may wait idle
	// before the gate closes it: shorter than common app servers' own
	// keep-alive timeouts (Node.js and uvicorn 5 s, gunicorn 2 s), so
	// the gate, not the app, is the one to close an idle connection, and
	// a release is not written on a connection the app closes at the same
	// moment (which would end as "may or may not have run").
	releaseIdleTimeout = time.Second
)

// clients builds the two HTTP clients once.
func (c *Client) clients() (reads, releases *http.Client) {
	c.once.Do(func() {
		base := c.Transport
		if base == nil {
			base = http.DefaultTransport.(*http.Transport)
		}
		rt := base.Clone()
		if rt.MaxIdleConnsPerHost == 0 {
			rt.MaxIdleConnsPerHost = maxIdlePerHost
		}
		c.reads = &http.Client{Transport: rt, CheckRedirect: noRedirect}
		c.releases = &http.Client{Transport: releaseTransport(base), CheckRedirect: noRedirect}
	})
	return c.reads, c.releases
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// releaseTransport is base with HTTP/2 off and keep-alives on.
//
// Go's HTTP/1 transport sends a request again, on a new connection, when
// a reused connection fails before the answer, if the request is
// "replayable" (net/http's shouldRetryRequest and isReplayable): its
// body is nil, http.NoBody or rewindable (GetBody set) and its method is
// GET, HEAD, OPTIONS or TRACE or it carries an Idempotency-Key, as every
// release does. A release's body is never one of those (releaseBody), so
// it is sent at most once whatever happens to the connection, while
// connections are still reused. (When nothing at all was written the
// transport may try again only for a request without a body, which a
// release never is either.)
//
// HTTP/2 stays off: its transport retries after GOAWAY, REFUSED_STREAM
// and a PROTOCOL_ERROR reset from the peer (golang/go#47635) with no
// regard for the method, for a bodyless request or one with GetBody; a
// release would be safe from that too, but one HTTP/2 connection carries
// every release in flight, and its loss leaves them all unknown.
func releaseTransport(base *http.Transport) *http.Transport {
	t := base.Clone()
	t.DisableKeepAlives = false
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP1(true)
	t.ForceAttemptHTTP2 = false
	if t.TLSClientConfig != nil { // Clone copied it; offer only HTTP/1.1 in ALPN
		t.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	if t.MaxIdleConnsPerHost == 0 {
		t.MaxIdleConnsPerHost = maxIdlePerHost
	}
	if t.IdleConnTimeout == 0 || t.IdleConnTimeout > releaseIdleTimeout {
		t.IdleConnTimeout = releaseIdleTimeout
	}
	return t
}

// releaseBody is a release's body: never nil or http.NoBody (even with
// nothing to send) and without GetBody, so no transport can send it
// twice (releaseTransport). An io.NopCloser of a *bytes.Reader is one
// net/http knows to be in memory: the headers and body go out in one
// write. Its length is set on the request; an empty one goes out as no
// body at all for GET, HEAD and DELETE (net/http reads one byte to see
// it is empty) and as an empty chunked body for POST, PUT and PATCH.
func releaseBody(req *http.Request, body []byte) {
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = nil
}

// Fetch reads a record: GET rawURL as the caller. Reads go over kept-
// alive connections (HTTP/2 where the app offers it), and Go's transport
// may send one again on a new connection when a reused one fails: a
// read changes nothing.
func (c *Client) Fetch(ctx context.Context, rawURL string, who Caller) (Response, error) {
	reads, _ := c.clients()
	return c.do(ctx, reads, http.MethodGet, rawURL, nil, nil, who, "", false)
}

// Run releases a call: method rawURL with the arguments as a JSON body
// (none for GET and HEAD), the policy's extra headers, and the hold id as
// the Idempotency-Key.
//
// It sends at most one request, over HTTP/1.1 on a kept-alive connection,
// and never repeats it, even when that connection fails (see
// releaseTransport). Its errors wrap ErrNotSent when nothing left
// (nothing ran) and ErrNoAnswer when the request may have reached the app
// (the outcome is unknown). A Response with a Status and an error is an
// answer whose body could not be read in full.
func (c *Client) Run(ctx context.Context, method, rawURL string, headers map[string]string, args []byte, who Caller, holdID string) (Response, error) {
	if method == http.MethodGet || method == http.MethodHead {
		args = nil
	}
	_, releases := c.clients()
	return c.do(ctx, releases, method, rawURL, headers, args, who, holdID, true)
}

func (c *Client) do(ctx context.Context, hc *http.Client, method, rawURL string, headers map[string]string, body []byte, who Caller, holdID string, release bool) (Response, error) {
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
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return Response{}, fmt.Errorf("%w: making request: %w", ErrNotSent, err)
	}
	if release {
		releaseBody(req, body)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/json")
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
