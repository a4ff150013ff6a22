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
	"net/url"
	"strconv"
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

// Client sends signed requests to the app. The zero value is not usable:
// Secret must be set.
type Client struct {
	// HTTP is the client used; nil means a client with no redirects
	// followed (a redirect could move a signed request elsewhere).
	HTTP *http.Client
	// Secret keys the signature.
	Secret []byte
	// Timeout bounds each request. Default 10s.
	Timeout time.Duration
	// MaxBody caps the response body read. Default 1 MiB.
	MaxBody int64
	// Now is the clock for timestamps; default time.Now.
	Now func() time.Time
}

var noRedirects = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Fetch reads a record: GET rawURL as the caller.
func (c *Client) Fetch(ctx context.Context, rawURL string, who Caller) (Response, error) {
	return c.do(ctx, http.MethodGet, rawURL, nil, nil, who, "")
}

// Run releases a call: method rawURL with the arguments as a JSON body
// (none for GET), the policy's extra headers, and the hold id as the
// Idempotency-Key.
func (c *Client) Run(ctx context.Context, method, rawURL string, headers map[string]string, args []byte, who Caller, holdID string) (Response, error) {
	if method == http.MethodGet || method == http.MethodHead {
		args = nil
	}
	return c.do(ctx, method, rawURL, headers, args, who, holdID)
}

func (c *Client) do(ctx context.Context, method, rawURL string, headers map[string]string, body []byte, who Caller, holdID string) (Response, error) {
	if len(c.Secret) == 0 {
		return Response{}, errors.New("no signing secret configured")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u, err := url.Parse(rawURL)
	if err != nil {
		return Response{}, fmt.Errorf("parsing url: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("making request: %w", err)
	}
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
	req.Header.Set(HeaderSignature, Sign(c.Secret, method, u.RequestURI(), ts, body))

	hc := c.HTTP
	if hc == nil {
		hc = noRedirects
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Response{}, fmt.Errorf("%s %s: %w", method, u.Redacted(), err)
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
	if !hmac.Equal([]byte(want), []byte(r.Header.Get(HeaderSignature))) {
		return errors.New("signature mismatch")
	}
	return nil
}
