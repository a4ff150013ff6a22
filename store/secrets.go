package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/jackc/pgx/v5"
)

// Replicas that share a store must share its secret: a hold answered on
// one is checked on another with the per-hold tokens and requestStates
// the secret signs, and the app verifies every release with it. A
// replica started with another secret would answer 409 where the others
// do not, and send releases the app cannot verify. So the store keeps
// the fingerprints of the secrets in use, and a start whose secrets match
// none of them is refused (ErrSecretMismatch).
//
// Rotation: a start with a new secret and the old one among its previous
// secrets matches (the old fingerprint is known) and records both; a
// start with the new secret alone, once every replica has it, records it
// alone, and from then on a replica still on the old secret is refused.

// ErrSecretMismatch is what CheckSecrets returns when none of a start's
// secrets is one the store knows.
var ErrSecretMismatch = errors.New("the secret matches none the store's other replicas use")

// SecretFingerprint is the fingerprint of a secret the store keeps: the
// hex HMAC-SHA256, keyed by the secret, of a fixed text. It tells secrets
// apart and gives nothing of them away.
func SecretFingerprint(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("toolgate secret fingerprint"))
	return hex.EncodeToString(m.Sum(nil))
}

// SecretKeeper is a store that keeps the fingerprints of its secrets.
type SecretKeeper interface {
	// CheckSecrets compares the fingerprints of a starting gate's secrets
	// (its signing secret first, then the previous secrets it still
	// accepts) with the ones the store records. When the store records
	// none, or one of them is among fingerprints, it records fingerprints
	// in their place and returns nil; otherwise it changes nothing and
	// returns an error wrapping ErrSecretMismatch. One atomic step, so
	// replicas starting together agree.
	CheckSecrets(ctx context.Context, fingerprints []string) error
}

// secretsMatch decides CheckSecrets from what the store records.
func secretsMatch(known, fingerprints []string) error {
	if len(known) == 0 || slices.ContainsFunc(known, func(k string) bool { return slices.Contains(fingerprints, k) }) {
		return nil
	}
	short := func(fps []string) string {
		out := make([]string, len(fps))
		for i, f := range fps {
			out[i] = f[:min(len(f), 12)]
		}
		return strings.Join(out, ", ")
	}
	return fmt.Errorf("%w (fingerprints: the store knows %s; this config has %s): give every replica the same secret, or list the one in use in previous_secrets to rotate",
		ErrSecretMismatch, short(known), short(fingerprints))
}

// secretsKey is the Badger key of the fingerprints.
var secretsKey = []byte("k/secrets")

// CheckSecrets implements SecretKeeper.
func (b *Badger) CheckSecrets(ctx context.Context, fingerprints []string) error {
	return b.update(ctx, func(w *writeTxn) error {
		var known []string
		item, err := w.Get(secretsKey)
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
		case err != nil:
			return unavailable(err)
		default:
			v, err := item.ValueCopy(nil)
			if err != nil {
				return unavailable(err)
			}
			if err := json.Unmarshal(v, &known); err != nil {
				return fmt.Errorf("reading the secrets' fingerprints: %w", err)
			}
		}
		if err := secretsMatch(known, fingerprints); err != nil {
			return err
		}
		v, _ := json.Marshal(fingerprints)
		return w.set(secretsKey, v, 0)
	})
}

// CheckSecrets implements SecretKeeper.
func (p *Postgres) CheckSecrets(ctx context.Context, fingerprints []string) error {
	return p.run(ctx, "checking the secret", false, func(ctx context.Context) error {
		return p.tx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `LOCK TABLE secret_fingerprints IN EXCLUSIVE MODE`); err != nil {
				return db(err)
			}
			rows, err := tx.Query(ctx, `SELECT fingerprint FROM secret_fingerprints ORDER BY recorded, fingerprint`)
			if err != nil {
				return db(err)
			}
			known, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return db(err)
			}
			if err := secretsMatch(known, fingerprints); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM secret_fingerprints`); err != nil {
				return db(err)
			}
			now := time.Now().UnixNano()
			for i, f := range fingerprints {
				if _, err := tx.Exec(ctx, `INSERT INTO secret_fingerprints (fingerprint, recorded) VALUES ($1, $2) ON CONFLICT DO NOTHING`, f, now+int64(i)); err != nil {
					return db(err)
				}
			}
			return nil
		})
	})
}

var (
	_ SecretKeeper = (*Badger)(nil)
	_ SecretKeeper = (*Postgres)(nil)
)
