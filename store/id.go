package store

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
)

// idEncoding is RFC 4648 base32 in lower case, without padding: ids sit in
// links, where lower case reads better and "=" would need escaping.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns 128 bits from crypto/rand as 26 characters of [a-z2-7], for
// hold and step ids. An id is also the secret part of a link, so it must not
// be guessable.
func NewID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("reading random id: %w", err)
	}
	return idEncoding.EncodeToString(b[:]), nil
}
