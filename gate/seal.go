package gate

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
)

// Sealing keeps what must not outlive its use unreadable on disk: the
// person's form values (stored by the claim, needed by the release,
// dropped by Settle) and a read's reply (the app's answer, stored by the
// settlement, needed once by the model, dropped by DropReply once the
// history restoration has delivered it). The store's files keep old
// versions of a record after it is overwritten (Badger's value log until
// garbage collection; PostgreSQL's dead row versions until vacuum and its
// WAL until the segment is recycled), so dropping a field is not enough:
// what they keep must be ciphertext whose key is gone.
//
// Where the key lives. Each sealed value has a key of its own:
// HKDF-SHA256 of the gate's secret, with a random 32-byte salt, for that
// purpose and hold id; the value is AES-256-GCM under it, with the purpose
// and hold id as additional data (a sealed value cannot stand for another
// hold's). The salt is stored in the sealed value itself; the secret is
// never stored (it is in the gate's configuration: the Caddyfile's
// `secret`, usually from the environment). A per-hold key row stored apart
// and deleted on settle was considered and not taken: on PostgreSQL its
// deleted row version and its WAL record stay readable exactly as long as
// the ciphertext's, so storing the salt apart adds nothing; and a key held
// in memory alone cannot serve replicas (the release and the restoration
// may run on another one) or a restart (the sweeper releases answered
// holds).
//
// What it gives: whoever reads the store's files (a copy of the data
// directory, a backup, a stolen disk) without the secret reads nothing of
// the values or replies, now or later. What it does not give: someone who
// holds the secret and the files before vacuum, WAL recycling or value-log
// garbage collection has removed the old versions can still unseal them
// (the salt is in those old versions too). Keep the secret out of the
// store's host backups. A rotated secret makes values sealed under the old
// one unreadable: a form answered before the rotation and released after
// it runs nothing ("the gate lost the person's answer").

// What a sealed value is for; part of its key and of its additional data.
const (
	sealValues = "values" // the person's form values (submitted)
	// sealReply: the app's answer to a read, for the model; for a card
	// confirmed over MCP with corrections, the corrections, kept until
	// the client's retry runs them (edit.go).
	sealReply = "reply"
)

// sealVersion starts every sealed value.
const sealVersion = 1

const saltLen = 32

// errUnsealable: a sealed value that cannot be opened (another secret,
// another hold, damaged, or not sealed at all).
var errUnsealable = errors.New("sealed value cannot be opened")

// seal encrypts plain for purpose of hold id: version, salt, nonce,
// ciphertext.
func (g *Gate) seal(purpose, id string, plain []byte) ([]byte, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	aead, err := g.sealKey(purpose, id, salt)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := append([]byte{sealVersion}, salt...)
	out = append(out, nonce...)
	return aead.Seal(out, nonce, plain, sealAD(purpose, id)), nil
}

// unseal opens what seal made for purpose of hold id.
func (g *Gate) unseal(purpose, id string, sealed []byte) ([]byte, error) {
	if len(sealed) < 1+saltLen || sealed[0] != sealVersion {
		return nil, errUnsealable
	}
	salt := sealed[1 : 1+saltLen]
	aead, err := g.sealKey(purpose, id, salt)
	if err != nil {
		return nil, err
	}
	rest := sealed[1+saltLen:]
	if len(rest) < aead.NonceSize() {
		return nil, errUnsealable
	}
	plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], sealAD(purpose, id))
	if err != nil {
		return nil, errUnsealable
	}
	return plain, nil
}

// sealKey derives the AEAD of one sealed value.
func (g *Gate) sealKey(purpose, id string, salt []byte) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, g.sealSecret, salt, "toolgate seal "+purpose+" "+id, 32)
	if err != nil {
		return nil, fmt.Errorf("deriving seal key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func sealAD(purpose, id string) []byte {
	return []byte("toolgate " + purpose + "\x00" + id)
}

// sealValuesJSON seals a claim's values as the store keeps them: a JSON
// string (Hold.Values is JSON).
func (g *Gate) sealValuesJSON(id string, plain []byte) (json.RawMessage, error) {
	sealed, err := g.seal(sealValues, id, plain)
	if err != nil {
		return nil, err
	}
	return json.Marshal(sealed) // []byte: a base64 string
}

// unsealValuesJSON opens what sealValuesJSON made. Values stored before
// sealing (a JSON object, from a gate of an earlier version answered
// before the upgrade) read as they are.
func (g *Gate) unsealValuesJSON(id string, stored json.RawMessage) ([]byte, error) {
	var sealed []byte
	if err := json.Unmarshal(stored, &sealed); err != nil {
		var legacy map[string]json.RawMessage
		if json.Unmarshal(stored, &legacy) == nil {
			return stored, nil
		}
		return nil, errUnsealable
	}
	return g.unseal(sealValues, id, sealed)
}
